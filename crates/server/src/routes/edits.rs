//! The rest of Letta's agent routes the SDKs call: message modify and reset, passage modify,
//! message search (0.1.x `POST /v1/agents/messages/search`, 1.x `POST /v1/messages/search`)
//! and the counts.

use super::{agent_state, shared::agent_id};
use crate::config::AppState;
use crate::errors::{ApiError, ApiResult};
use crate::json::{Body, Params};
use crate::shapes;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use engram_core::{Message, MessageId, PassageId, Role, Timestamp};
use engram_service::{MessageQuery, letta};
use serde::Deserialize;
use serde_json::{Value, json};

fn unprocessable(detail: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_input", detail)
}

/// Letta's `UpdateSystemMessage | UpdateUserMessage | UpdateReasoningMessage |
/// UpdateAssistantMessage`: `content` (text or text parts) or, for reasoning, `reasoning`.
#[derive(Debug, Deserialize)]
pub struct MessagePatchIn {
    message_type: Option<String>,
    content: Option<Value>,
    reasoning: Option<String>,
}

fn text_of(content: &Value) -> ApiResult<String> {
    match content {
        Value::String(s) => Ok(s.clone()),
        Value::Array(parts) => Ok(parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n")),
        _ => Err(unprocessable(
            "content must be a string or a list of text parts",
        )),
    }
}

/// `PATCH /v1/agents/{agent_id}/messages/{message_id}`: rewrites a message's text (or an
/// assistant message's reasoning); answers the message as Letta shows it.
pub async fn modify_message(
    State(s): State<AppState>,
    Path((id, message)): Path<(String, String)>,
    Body(p): Body<MessagePatchIn>,
) -> ApiResult<Json<Value>> {
    let agent = agent_id(id);
    let message = MessageId::from(message);
    let kind = p.message_type.as_deref().unwrap_or("user_message");
    let current = s.engram.recall().get(&agent, &message).await?;
    let wanted = match kind {
        "system_message" => Role::System,
        "user_message" => Role::User,
        "assistant_message" | "reasoning_message" => Role::Assistant,
        other => {
            return Err(unprocessable(format!(
                "message_type '{other}' cannot be modified; use system_message, user_message, \
                 reasoning_message or assistant_message"
            )));
        }
    };
    if current.agent_id == agent && current.role != wanted {
        return Err(ApiError::bad_request(format!(
            "message {message} is not a {kind}"
        )));
    }
    let (content, reasoning) = if kind == "reasoning_message" {
        let r = p
            .reasoning
            .ok_or_else(|| unprocessable("a reasoning_message update needs `reasoning`"))?;
        (None, Some(r))
    } else {
        let c = p
            .content
            .as_ref()
            .ok_or_else(|| unprocessable(format!("a {kind} update needs `content`")))?;
        (Some(text_of(c)?), None)
    };
    let m = s
        .engram
        .recall()
        .edit(&agent, &message, content.as_deref(), reasoning.as_deref())
        .await?;
    let style = s.engram.agents().get(&agent).await?.agent.loop_style;
    let shown = letta::letta_messages(&m, style);
    let pick = shown
        .iter()
        .find(|v| v["message_type"] == kind)
        .or_else(|| shown.first())
        .cloned()
        .unwrap_or_else(|| json!({"id": m.id, "message_type": kind, "content": m.content}));
    Ok(Json(pick))
}

/// A JSON body that may be absent (0.1.x sends some of these PATCHes without one).
fn optional_body<T: Default + serde::de::DeserializeOwned>(bytes: &[u8]) -> ApiResult<T> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(bytes).map_err(|e| unprocessable(format!("bad request body: {e}")))
}

/// `PATCH /v1/agents/{agent_id}/reset-messages`: empties the context window (the messages stay
/// in recall memory); answers the agent. Letta's `add_default_initial_messages` (body or
/// query) is accepted and has no effect: Engram's context starts empty either way.
pub async fn reset_messages(
    State(s): State<AppState>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> ApiResult<Json<Value>> {
    let _: Value = optional_body(&body)?;
    let id = agent_id(id);
    s.engram.recall().reset(&id).await?;
    let state = s.engram.agents().get(&id).await?;
    agent_state::render(&s.engram, &state).await
}

/// Body of a passage modify: the fields of Letta's `PassageUpdate` Engram has.
#[derive(Debug, Default, Deserialize)]
pub struct PassagePatchIn {
    text: Option<String>,
    tags: Option<Vec<String>>,
}

/// `PATCH /v1/agents/{agent_id}/archival-memory/{memory_id}`: new text and/or tags (embedded
/// again when the agent has an embedding model); answers `[passage]` as Letta's did.
pub async fn modify_passage(
    State(s): State<AppState>,
    Path((id, passage)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> ApiResult<Json<Vec<Value>>> {
    let p: PassagePatchIn = optional_body(&body)?;
    if p.text.is_none() && p.tags.is_none() {
        return Err(unprocessable("give `text` and/or `tags` to change"));
    }
    let passage = s
        .engram
        .archival()
        .edit(
            &agent_id(id),
            &PassageId::from(passage),
            p.text.as_deref(),
            p.tags,
        )
        .await?;
    Ok(Json(vec![shapes::passage(&passage)]))
}

/// Letta's `MessageSearchRequest` (both SDK generations; `agent_id` is 1.x's).
#[derive(Debug, Default, Deserialize)]
pub struct SearchIn {
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    roles: Option<Vec<String>>,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    start_date: Option<String>,
    #[serde(default)]
    end_date: Option<String>,
}

/// RFC 3339, or a naive ISO time meaning UTC (what Python's `isoformat()` gives).
fn parse_time(name: &str, v: Option<&str>) -> ApiResult<Option<Timestamp>> {
    let Some(v) = v else { return Ok(None) };
    chrono::DateTime::parse_from_rfc3339(v)
        .map(|t| t.to_utc())
        .or_else(|_| {
            chrono::NaiveDateTime::parse_from_str(v, "%Y-%m-%dT%H:%M:%S%.f").map(|t| t.and_utc())
        })
        .map(Some)
        .map_err(|_| unprocessable(format!("{name} must be an ISO 8601 date-time, got '{v}'")))
}

fn role_of(r: &str) -> ApiResult<Role> {
    match r {
        "user" => Ok(Role::User),
        "assistant" => Ok(Role::Assistant),
        "system" => Ok(Role::System),
        "tool" => Ok(Role::Tool),
        other => Err(unprocessable(format!("unknown role '{other}'"))),
    }
}

/// Recall search over one agent (`agent_id`) or all, best first (Engram's hybrid recall
/// search over each agent's messages, merged by score: scores are in `0..=1` for every agent).
async fn search(s: &AppState, req: &SearchIn) -> ApiResult<Vec<(Message, f64)>> {
    let limit = req.limit.unwrap_or(50).min(1000);
    let q = MessageQuery {
        query: req.query.clone().unwrap_or_default(),
        roles: req
            .roles
            .iter()
            .flatten()
            .map(|r| role_of(r))
            .collect::<ApiResult<_>>()?,
        start: parse_time("start_date", req.start_date.as_deref())?,
        end: parse_time("end_date", req.end_date.as_deref())?,
        limit,
    };
    let agents = match &req.agent_id {
        Some(a) => vec![agent_id(a.clone())],
        None => s
            .engram
            .agents()
            .list()
            .await?
            .into_iter()
            .map(|a| a.id)
            .collect(),
    };
    let mut hits = Vec::new();
    for a in &agents {
        hits.extend(
            s.engram
                .recall()
                .search(a, &q)
                .await?
                .into_iter()
                .map(|h| (h.message, h.score)),
        );
    }
    hits.sort_by(|a, b| b.1.total_cmp(&a.1));
    hits.truncate(limit);
    Ok(hits)
}

fn role_name(r: Role) -> &'static str {
    match r {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// `POST /v1/agents/messages/search` (0.1.x): `[MessageSearchResult]` —
/// `{embedded_text, message, fts_rank, vector_rank, rrf_score}`.
pub async fn search_v01(
    State(s): State<AppState>,
    Body(req): Body<SearchIn>,
) -> ApiResult<Json<Vec<Value>>> {
    let hits = search(&s, &req).await?;
    Ok(Json(
        hits.iter()
            .enumerate()
            .map(|(rank, (m, score))| {
                json!({
                    "embedded_text": m.content,
                    "message": {
                        "id": m.id,
                        "agent_id": m.agent_id,
                        "role": role_name(m.role),
                        "content": [{"type": "text", "text": m.content}],
                        "name": m.tool_name,
                        "tool_call_id": m.tool_call_id,
                        "created_at": shapes::time(&m.created_at),
                    },
                    "fts_rank": rank + 1,
                    "vector_rank": null,
                    "rrf_score": score,
                })
            })
            .collect(),
    ))
}

/// `POST /v1/messages/search` (1.x): the messages as Letta shows them, each with
/// `message_id` and `agent_id`.
pub async fn search_v1(
    State(s): State<AppState>,
    Body(req): Body<SearchIn>,
) -> ApiResult<Json<Vec<Value>>> {
    let hits = search(&s, &req).await?;
    let mut out = Vec::new();
    for (m, _) in &hits {
        let style = s.engram.agents().get(&m.agent_id).await?.agent.loop_style;
        for mut v in letta::letta_messages(m, style) {
            v["message_id"] = json!(m.id);
            v["agent_id"] = json!(m.agent_id);
            v["created_at"] = json!(shapes::time(&m.created_at));
            out.push(v);
        }
    }
    Ok(Json(out))
}

/// Query of `GET /v1/blocks/count`.
#[derive(Deserialize)]
pub struct LabelQuery {
    label: Option<String>,
}

/// `GET /v1/blocks/count`: how many blocks (with `label`, when given).
pub async fn count_blocks(
    State(s): State<AppState>,
    Params(q): Params<LabelQuery>,
) -> ApiResult<Json<usize>> {
    Ok(Json(
        s.engram.blocks().list(q.label.as_deref()).await?.len(),
    ))
}

/// `GET /v1/agents/{agent_id}/archival-memory/count`: passages in archival memory.
pub async fn count_passages(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<u64>> {
    Ok(Json(
        s.engram.agents().memory_counts(&agent_id(id)).await?.1,
    ))
}

/// `GET /v1/agents/{agent_id}/messages/count`: messages in recall memory (all of them).
pub async fn count_messages(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<u64>> {
    Ok(Json(
        s.engram.agents().memory_counts(&agent_id(id)).await?.0,
    ))
}

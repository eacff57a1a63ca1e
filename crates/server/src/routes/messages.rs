//! `/v1/agents/{id}/messages`: send (whole response or SSE stream), list with cursors, cancel.

use super::shared::agent_id;
use crate::config::AppState;
use crate::errors::{ApiError, ApiResult};
use crate::json::{Body, Params};
use crate::paging::Cursor;
use crate::sse::ChunkMapper;
use axum::Json;
use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use engram_core::{AgentId, ApprovalDecision, LoopStyle, MessageId};
use engram_service::{Engram, MessagePage, Order, Run, RunRequest, letta};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use std::convert::Infallible;

/// One message of a request: `content` is text or a list of `{type: "text", text}` parts; or
/// Letta's approval message `{type: "approval", approve, reason?, approval_request_id?}` /
/// `{type: "approval", approvals: [{type: "approval", tool_call_id, approve, reason?}]}`.
#[derive(Debug, Deserialize)]
pub struct MessageIn {
    role: Option<String>,
    #[serde(default)]
    content: Value,
    #[serde(rename = "type")]
    kind: Option<String>,
    approve: Option<bool>,
    reason: Option<String>,
    /// The `approval_request_message` this decision answers (its message id); a decision for a
    /// request that no longer waits is refused, so a retried approve cannot run a newer call.
    approval_request_id: Option<String>,
    approvals: Option<Vec<Value>>,
}

/// Letta's `LettaRequest` / `LettaStreamingRequest` (the fields Engram acts on).
#[derive(Debug, Deserialize)]
pub struct SendIn {
    messages: Option<Vec<MessageIn>>,
    /// 1.x shorthand for one user message.
    input: Option<Value>,
    #[serde(default)]
    stream_tokens: bool,
    /// 1.x: `messages.create(streaming=True)` streams from the same route.
    #[serde(default)]
    streaming: bool,
}

fn text_of(content: &Value) -> ApiResult<String> {
    match content {
        Value::String(s) => Ok(s.clone()),
        Value::Array(parts) => Ok(parts
            .iter()
            .filter(|p| p["type"] == "text" || p.get("type").is_none())
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n")),
        _ => Err(ApiError::new(
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_input",
            "message content must be a string or a list of text parts",
        )),
    }
}

impl SendIn {
    /// The approval decisions of the request, in order, when it is Letta's approval message
    /// (`None` for an ordinary user message). A request may not mix the two.
    fn approvals(&self) -> ApiResult<Option<Vec<ApprovalDecision>>> {
        let msgs = self.messages.as_deref().unwrap_or_default();
        if !msgs.iter().any(|m| m.kind.as_deref() == Some("approval")) {
            return Ok(None);
        }
        if msgs.len() != 1 || self.input.is_some() {
            return Err(ApiError::bad_request(
                "send the approval message on its own, without user messages",
            ));
        }
        let m = &msgs[0];
        if let Some(list) = &m.approvals {
            let mut out = Vec::new();
            for a in list {
                if a["type"] != "approval" {
                    return Err(ApiError::bad_request(
                        "only approvals are accepted here; Engram runs approved tools itself \
                         (client-side tool returns are not supported)",
                    ));
                }
                let approve = a["approve"].as_bool().ok_or_else(|| {
                    ApiError::bad_request("each approval needs approve: true or false")
                })?;
                // The call is named, so a stale or retried decision cannot decide a newer call.
                let call = a["tool_call_id"].as_str().ok_or_else(|| {
                    ApiError::bad_request("each approval needs the tool_call_id it decides")
                })?;
                out.push(ApprovalDecision {
                    tool_call_id: Some(call.to_owned()),
                    approve,
                    reason: a["reason"].as_str().map(str::to_owned),
                });
            }
            if out.is_empty() {
                return Err(ApiError::bad_request(
                    "the approval message lists no approvals",
                ));
            }
            return Ok(Some(out));
        }
        let approve = m.approve.ok_or_else(|| {
            ApiError::bad_request("the approval message needs approve: true or false")
        })?;
        Ok(Some(vec![ApprovalDecision {
            tool_call_id: None,
            approve,
            reason: m.reason.clone(),
        }]))
    }

    /// The user's text: every message joined (Engram runs one user turn per request).
    fn text(&self) -> ApiResult<String> {
        let mut texts = Vec::new();
        for m in self.messages.iter().flatten() {
            match m.role.as_deref().unwrap_or("user") {
                "user" => texts.push(text_of(&m.content)?),
                other => {
                    return Err(ApiError::bad_request(format!(
                        "role '{other}' is not supported here; send user messages"
                    )));
                }
            }
        }
        if let Some(input) = &self.input {
            texts.push(text_of(input)?);
        }
        let text = texts.join("\n");
        if text.trim().is_empty() {
            return Err(ApiError::bad_request(
                "the request has no user message text",
            ));
        }
        Ok(text)
    }
}

/// `POST …/messages`: runs the agent's turn and answers Letta's `LettaResponse`
/// (`{messages, stop_reason, usage}`); with `streaming: true` answers as [`stream`] does.
/// A run that failed part-way still answers 200, with its stop reason and an `error` object.
pub async fn create(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Body(req): Body<SendIn>,
) -> ApiResult<Response> {
    if req.streaming {
        return stream(State(s), Path(id), Body(req)).await;
    }
    let id = agent_id(id);
    let request = request_of(&req)?;
    check_request(&s.engram, &id, &req).await?;
    let (style, run) = started(&s.engram, &id, request).await?;
    let outcome = run.outcome().await?;
    let mut body = letta::response(&outcome, style);
    if outcome.stop_reason == engram_core::StopReason::RequiresApproval
        && let (Some(p), Some(list)) = (
            s.engram.runs().pending_approval(&id).await?,
            body["messages"].as_array_mut(),
        )
    {
        letta::mark_pending(list, &p, true);
    }
    if let Some(error) = &outcome.error {
        body["error"] = json!({"error_type": error.code, "message": error.message});
    }
    Ok(Json(body).into_response())
}

/// `POST …/messages/stream`: the run as SSE `data:` chunks (see [`crate::sse`]), then
/// `data: [DONE]`. Errors found before the run starts (unknown agent, no provider set up)
/// are ordinary HTTP errors; later ones are `error_message` chunks.
pub async fn stream(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Body(req): Body<SendIn>,
) -> ApiResult<Response> {
    let id = agent_id(id);
    let request = request_of(&req)?;
    check_request(&s.engram, &id, &req).await?;
    let (style, run) = started(&s.engram, &id, request).await?;
    let mut mapper = ChunkMapper::new(style, req.stream_tokens);
    let chunks = run
        .events
        .flat_map(move |e| futures::stream::iter(mapper.map(e)))
        .map(|chunk| Ok::<_, Infallible>(Event::default().data(chunk.to_string())))
        .chain(futures::stream::once(async {
            Ok(Event::default().data("[DONE]"))
        }));
    Ok(Sse::new(chunks)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// Starts the run, reading meanwhile the agent's loop style, which shapes the answer (one
/// round trip less per message on a database server). Errors: the run's, as
/// `Runs::start` says; `not_found` for an unknown agent.
async fn started(
    engram: &Engram,
    agent: &AgentId,
    request: RunRequest,
) -> engram_core::Result<(LoopStyle, Run)> {
    let (agent, run) = tokio::try_join!(
        engram.agents().settings(agent),
        engram.runs().start(agent, request)
    )?;
    Ok((agent.loop_style, run))
}

/// Refuses an approval message whose `approval_request_id` names a request that no longer
/// waits (it was decided already, or the run moved on to another call): 409, nothing runs.
async fn check_request(engram: &Engram, agent: &AgentId, req: &SendIn) -> ApiResult<()> {
    let named = req
        .messages
        .iter()
        .flatten()
        .filter_map(|m| m.approval_request_id.as_deref());
    for request in named {
        let waiting = engram.runs().pending_approval(agent).await?;
        if waiting
            .as_ref()
            .is_none_or(|p| p.message_id.as_str() != request)
        {
            return Err(engram_core::Error::Conflict(format!(
                "approval request {request} is not waiting any more; read the messages again"
            ))
            .into());
        }
    }
    Ok(())
}

/// What a send request asks for: a user message, or decisions about calls waiting for
/// approval (applied in order; each lets the paused run go on).
fn request_of(req: &SendIn) -> ApiResult<RunRequest> {
    Ok(match req.approvals()? {
        Some(decisions) => RunRequest::Approvals { decisions },
        None => RunRequest::Message { text: req.text()? },
    })
}

/// Query of `GET …/messages`.
#[derive(Deserialize)]
pub struct ListQuery {
    #[serde(flatten)]
    cursor: Cursor,
}

/// `GET …/messages`: Letta messages, newest first unless `order=asc`, paged by message-id
/// cursors (`after`, `before`) and `limit` (default 100).
pub async fn list(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Params(q): Params<ListQuery>,
) -> ApiResult<Json<Vec<Value>>> {
    let id = agent_id(id);
    let style: LoopStyle = s.engram.agents().settings(&id).await?.loop_style;
    let page = MessagePage {
        after: q.cursor.after.clone().map(MessageId::from),
        before: q.cursor.before.clone().map(MessageId::from),
        limit: q.cursor.limit.unwrap_or(100),
        order: if q.cursor.descending(true) {
            Order::Desc
        } else {
            Order::Asc
        },
    };
    let messages = s.engram.recall().page(&id, &page).await?;
    let mut out: Vec<Value> = messages
        .iter()
        .flat_map(|m| letta::letta_messages(m, style))
        .collect();
    // A call waiting for approval shows as Letta shows it.
    if let Some(p) = s.engram.runs().pending_approval(&id).await? {
        letta::mark_pending(&mut out, &p, false);
    }
    Ok(Json(out))
}

/// `POST …/messages/cancel`: stops the agent's runs; `{"cancelled": n}`.
pub async fn cancel(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let id = agent_id(id);
    s.engram.agents().get(&id).await?;
    Ok(Json(
        json!({"cancelled": s.engram.runs().cancel_agent(&id)}),
    ))
}

//! `/v1/agents`: create, list, retrieve, modify, delete — in Letta's request and `AgentState`
//! shapes.

use super::blocks::BlockIn;
use super::{agent_state, shared::agent_id, shared::deleted};
use crate::access::Principal;
use crate::config::AppState;
use crate::errors::{ApiError, ApiResult};
use crate::json::{Body, Params};
use crate::paging::Cursor;
use crate::shapes;
use axum::extract::{Path, RawQuery, State};
use axum::{Extension, Json};
use engram_core::{
    AgentId, AgentPatch, BlockId, EmbeddingConfig, LlmConfig, LoopStyle, NewAgent, NewBlock,
};
use engram_service::builtin_tools::default_tools;
use engram_service::{AgentList, Engram};
use serde::Deserialize;
use serde_json::Value;

/// Letta's `llm_config` as clients send it (only what Engram uses).
#[derive(Debug, Default, Deserialize)]
pub struct LlmConfigIn {
    model: Option<String>,
    handle: Option<String>,
    model_endpoint_type: Option<String>,
    model_endpoint: Option<String>,
    context_window: Option<u32>,
    max_tokens: Option<u32>,
    temperature: Option<f32>,
}

/// Letta's `embedding_config` as clients send it.
#[derive(Debug, Default, Deserialize)]
pub struct EmbeddingConfigIn {
    embedding_model: Option<String>,
    handle: Option<String>,
    embedding_endpoint_type: Option<String>,
    embedding_endpoint: Option<String>,
}

/// The fields of Letta's `CreateAgentRequest` / `UpdateAgent` that Engram acts on; others are
/// accepted and ignored.
#[derive(Debug, Default, Deserialize)]
pub struct AgentIn {
    name: Option<String>,
    description: Option<String>,
    system: Option<String>,
    agent_type: Option<String>,
    model: Option<String>,
    embedding: Option<String>,
    llm_config: Option<LlmConfigIn>,
    embedding_config: Option<EmbeddingConfigIn>,
    context_window_limit: Option<u32>,
    max_tokens: Option<u32>,
    memory_blocks: Option<Vec<BlockIn>>,
    block_ids: Option<Vec<String>>,
    tools: Option<Vec<String>>,
    tool_ids: Option<Vec<String>>,
    include_base_tools: Option<bool>,
    tool_rules: Option<Vec<engram_core::ToolRule>>,
    max_steps: Option<u32>,
    tags: Option<Vec<String>>,
    /// Letta's switch for background memory passes.
    enable_sleeptime: Option<bool>,
    /// User turns between passes (Letta sets it on the group's `manager_config`; accepted here
    /// too).
    sleeptime_agent_frequency: Option<u32>,
}

fn prefixed(endpoint_type: Option<&str>, model: &str) -> String {
    if model.contains('/') {
        model.to_owned()
    } else {
        format!("{}/{model}", endpoint_type.unwrap_or("openai"))
    }
}

/// Applies `enable_sleeptime` and `sleeptime_agent_frequency` when given.
async fn apply_sleeptime(
    engram: &Engram,
    agent: &AgentId,
    (enable, frequency): (Option<bool>, Option<u32>),
) -> ApiResult<()> {
    if enable.is_none() && frequency.is_none() {
        return Ok(());
    }
    let mut s = engram.sleeptime().settings(agent).await?;
    s.enabled = enable.unwrap_or(s.enabled);
    s.frequency = frequency.unwrap_or(s.frequency);
    engram.sleeptime().set_settings(agent, &s).await?;
    Ok(())
}

impl AgentIn {
    fn loop_style(&self) -> ApiResult<Option<LoopStyle>> {
        self.agent_type
            .as_deref()
            .map(|t| {
                shapes::loop_style(t).ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "agent_type '{t}' is not supported; use memgpt_agent, memgpt_v2_agent \
                         or letta_v1_agent"
                    ))
                })
            })
            .transpose()
    }

    /// The model settings asked for, on top of `base` (an existing agent's) when given.
    fn llm(&self, base: Option<&LlmConfig>) -> Option<LlmConfig> {
        let cfg = self.llm_config.as_ref();
        let handle = self.model.clone().or_else(|| {
            cfg.and_then(|c| {
                c.handle.clone().or_else(|| {
                    c.model
                        .as_deref()
                        .map(|m| prefixed(c.model_endpoint_type.as_deref(), m))
                })
            })
        });
        let touched = handle.is_some()
            || cfg.is_some()
            || self.context_window_limit.is_some()
            || self.max_tokens.is_some();
        if !touched {
            return None;
        }
        let mut llm = match (handle, base) {
            (Some(h), Some(b)) if h == b.model => b.clone(),
            (Some(h), _) => LlmConfig::new(h),
            (None, Some(b)) => b.clone(),
            (None, None) => return None,
        };
        if let Some(c) = cfg {
            if c.model_endpoint.is_some() {
                llm.base_url.clone_from(&c.model_endpoint);
            }
            llm.context_window = c.context_window.unwrap_or(llm.context_window);
            llm.max_tokens = c.max_tokens.or(llm.max_tokens);
            llm.temperature = c.temperature.or(llm.temperature);
        }
        llm.context_window = self.context_window_limit.unwrap_or(llm.context_window);
        llm.max_tokens = self.max_tokens.or(llm.max_tokens);
        Some(llm)
    }

    fn embedding(&self) -> Option<EmbeddingConfig> {
        let cfg = self.embedding_config.as_ref();
        let handle = self.embedding.clone().or_else(|| {
            cfg.and_then(|c| {
                c.handle.clone().or_else(|| {
                    c.embedding_model
                        .as_deref()
                        .filter(|m| *m != "none")
                        .map(|m| prefixed(c.embedding_endpoint_type.as_deref(), m))
                })
            })
        })?;
        Some(EmbeddingConfig {
            model: handle,
            base_url: cfg.and_then(|c| c.embedding_endpoint.clone()),
        })
    }

    /// The tool list: `tools` and `tool_ids` by name, plus the loop's base tools unless
    /// `include_base_tools` is false. `None` when nothing was said (keep or default).
    async fn tools(&self, engram: &Engram, style: LoopStyle) -> ApiResult<Option<Vec<String>>> {
        if self.tools.is_none() && self.tool_ids.is_none() && self.include_base_tools.is_none() {
            return Ok(None);
        }
        let mut named = self.tools.clone().unwrap_or_default();
        for id in self.tool_ids.iter().flatten() {
            named.push(super::tools::resolve(engram, id).await?.name);
        }
        let mut all = if self.include_base_tools.unwrap_or(true) {
            default_tools(style)
        } else {
            Vec::new()
        };
        for name in named {
            if !all.contains(&name) {
                all.push(name);
            }
        }
        Ok(Some(all))
    }
}

/// `POST /v1/agents/`.
pub async fn create(
    State(s): State<AppState>,
    principal: Option<Extension<Principal>>,
    Body(req): Body<AgentIn>,
) -> ApiResult<Json<Value>> {
    let user = principal.as_ref().and_then(|Extension(p)| p.user());
    let style = req.loop_style()?.unwrap_or_default();
    let (llm, embedding, tools) = (
        req.llm(None),
        req.embedding(),
        req.tools(&s.engram, style).await?,
    );
    let sleeptime = (req.enable_sleeptime, req.sleeptime_agent_frequency);
    let new = NewAgent {
        name: req
            .name
            .unwrap_or_else(|| format!("agent-{}", chrono::Utc::now().format("%Y%m%d-%H%M%S"))),
        description: req.description.unwrap_or_default(),
        system: req.system,
        llm,
        embedding,
        loop_style: style,
        max_steps: req.max_steps,
        tools,
        tool_rules: req.tool_rules.clone().unwrap_or_default(),
        blocks: req
            .memory_blocks
            .unwrap_or_default()
            .into_iter()
            .map(NewBlock::from)
            .collect(),
        block_ids: req
            .block_ids
            .unwrap_or_default()
            .into_iter()
            .map(BlockId::from)
            .collect(),
    };
    let state = match user {
        // Theirs, with only blocks they may already change.
        Some(user) => {
            let blocks = new.block_ids.clone();
            s.engram
                .users()
                .create_agent(&user.id, &blocks, s.engram.agents().create(new))
                .await?
        }
        None => s.engram.agents().create(new).await?,
    };
    if let Some(tags) = &req.tags {
        s.engram.agents().set_tags(&state.agent.id, tags).await?;
    }
    apply_sleeptime(&s.engram, &state.agent.id, sleeptime).await?;
    agent_state::render(&s.engram, &state).await
}

/// Query of `GET /v1/agents/` and `/v1/agents/count`.
#[derive(Deserialize)]
pub struct AgentQuery {
    #[serde(flatten)]
    cursor: Cursor,
    name: Option<String>,
    query_text: Option<String>,
    #[serde(default)]
    match_all_tags: bool,
}

/// `tags` may repeat (`tags=a&tags=b`), which a struct cannot read: taken from the raw query.
fn tags_of(raw: Option<&str>) -> ApiResult<Vec<String>> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw.unwrap_or_default())
        .map_err(|e| ApiError::bad_request(format!("bad query string: {e}")))?;
    Ok(pairs
        .into_iter()
        .filter(|(k, _)| k == "tags" || k == "tags[]")
        .map(|(_, v)| v)
        .collect())
}

/// The filters and page of a list: `name` exactly, `query_text` as a case-insensitive
/// substring of the name, `tags` any of them (all with `match_all_tags`), Letta's cursors;
/// oldest first unless `order=desc`. All of it runs in SQL.
fn agent_list(q: &AgentQuery, tags: Vec<String>, principal: Option<&Principal>) -> AgentList {
    AgentList {
        name: q.name.clone(),
        query_text: q.query_text.clone(),
        tags,
        match_all_tags: q.match_all_tags,
        after: q.cursor.after.clone().map(AgentId::from),
        before: q.cursor.before.clone().map(AgentId::from),
        limit: q.cursor.limit.unwrap_or(DEFAULT_AGENT_LIMIT),
        ascending: !q.cursor.descending(false),
        user: principal.and_then(Principal::user).map(|u| u.id.clone()),
    }
}

/// How many agents a list answers when the caller does not say.
const DEFAULT_AGENT_LIMIT: usize = 50;

/// `GET /v1/agents/`: oldest first unless `order=desc`, filtered as [`agent_list`] says.
pub async fn list(
    State(s): State<AppState>,
    principal: Option<Extension<Principal>>,
    Params(q): Params<AgentQuery>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Vec<Value>>> {
    let agents = s
        .engram
        .agents()
        .page(&agent_list(
            &q,
            tags_of(raw.as_deref())?,
            principal.as_ref().map(|Extension(p)| p),
        ))
        .await?;
    let mut out = Vec::with_capacity(agents.len());
    for a in agents {
        let state = s.engram.agents().get(&a.id).await?;
        out.push(agent_state::render(&s.engram, &state).await?.0);
    }
    Ok(Json(out))
}

/// `GET /v1/agents/count`: how many agents the same filters as the list keep.
pub async fn count(
    State(s): State<AppState>,
    principal: Option<Extension<Principal>>,
    Params(q): Params<AgentQuery>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<u64>> {
    let list = agent_list(
        &q,
        tags_of(raw.as_deref())?,
        principal.as_ref().map(|Extension(p)| p),
    );
    Ok(Json(s.engram.agents().count(&list).await?))
}

/// `GET /v1/agents/{agent_id}`.
pub async fn retrieve(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let state = s.engram.agents().get(&agent_id(id)).await?;
    agent_state::render(&s.engram, &state).await
}

/// `PATCH /v1/agents/{agent_id}`: name, description, system, model settings, tools, loop.
pub async fn modify(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Body(req): Body<AgentIn>,
) -> ApiResult<Json<Value>> {
    let id = agent_id(id);
    let current = s.engram.agents().settings(&id).await?;
    let style = req.loop_style()?;
    let patch = AgentPatch {
        name: req.name.clone(),
        description: req.description.clone(),
        system: req.system.clone(),
        llm: req.llm(Some(&current.llm)),
        embedding: req.embedding().map(Some),
        loop_style: style,
        max_steps: req.max_steps,
        tools: req
            .tools(&s.engram, style.unwrap_or(current.loop_style))
            .await?,
        tool_rules: req.tool_rules.clone(),
    };
    s.engram.agents().update(&id, &patch).await?;
    if let Some(tags) = &req.tags {
        s.engram.agents().set_tags(&id, tags).await?;
    }
    apply_sleeptime(
        &s.engram,
        &id,
        (req.enable_sleeptime, req.sleeptime_agent_frequency),
    )
    .await?;
    let state = s.engram.agents().get(&id).await?;
    agent_state::render(&s.engram, &state).await
}

/// `DELETE /v1/agents/{agent_id}`.
pub async fn delete(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    s.engram.agents().delete(&agent_id(id)).await?;
    Ok(deleted())
}

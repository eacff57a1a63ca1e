//! Letta's `/v1/groups/` for sleep-time passes: each agent whose passes are on shows as a group
//! of `manager_type` `sleeptime` (see `shapes::sleeptime_group`), so clients that tune Letta's
//! sleep-time agent through its group — how often it runs — tune Engram's passes.
//!
//! `GET /v1/groups/` lists them, `GET /v1/groups/{group_id}` reads one, `PATCH` changes its
//! `manager_config.sleeptime_agent_frequency` and `DELETE` turns the agent's passes off (the
//! agent and its memory stay). Other manager types (round robin, supervisor, dynamic) are not
//! groups Engram has: filtering by them lists none, and creating any group is refused.

use super::shared::deleted;
use crate::config::AppState;
use crate::errors::{ApiError, ApiResult};
use crate::json::Body;
use crate::shapes;
use axum::Json;
use axum::extract::{Path, Query, State};
use engram_core::AgentId;
use engram_service::Engram;
use serde::Deserialize;
use serde_json::Value;

/// Query of `GET /v1/groups/`.
#[derive(Deserialize)]
pub struct GroupQuery {
    manager_type: Option<String>,
    limit: Option<usize>,
}

/// The agent behind a group id (`group-…` is derived from `agent-…`).
fn agent_of(group_id: &str) -> ApiResult<AgentId> {
    group_id
        .strip_prefix("group-")
        .map(|rest| AgentId::from(format!("agent-{rest}")))
        .ok_or_else(|| ApiError::not_found(format!("group not found: {group_id}")))
}

/// The group of `agent`, or `None` when its passes are off.
async fn group(engram: &Engram, agent: &AgentId) -> ApiResult<Option<Value>> {
    let settings = engram.sleeptime().settings(agent).await?;
    if !settings.enabled {
        return Ok(None);
    }
    let state = engram.agents().get(agent).await?;
    let backlog = engram.sleeptime().backlog(agent).await?;
    Ok(Some(shapes::sleeptime_group(
        &state,
        &settings,
        backlog.turns,
        backlog.last_read.as_ref(),
    )))
}

/// One group by id; `404` when the agent is unknown or its passes are off.
async fn group_by_id(engram: &Engram, group_id: &str) -> ApiResult<Value> {
    let agent = agent_of(group_id)?;
    group(engram, &agent)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("group not found: {group_id}")))
}

/// `GET /v1/groups/`: every agent's sleep-time group, oldest agent first.
pub async fn list(
    State(s): State<AppState>,
    Query(q): Query<GroupQuery>,
) -> ApiResult<Json<Value>> {
    if q.manager_type.as_deref().is_some_and(|t| t != "sleeptime") {
        return Ok(Json(Value::Array(Vec::new())));
    }
    let mut out = Vec::new();
    for agent in s.engram.agents().list().await? {
        if q.limit.is_some_and(|n| out.len() >= n) {
            break;
        }
        if let Some(g) = group(&s.engram, &agent.id).await? {
            out.push(g);
        }
    }
    Ok(Json(Value::Array(out)))
}

/// `GET /v1/groups/{group_id}`.
pub async fn retrieve(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    group_by_id(&s.engram, &id).await.map(Json)
}

/// The body of `PATCH /v1/groups/{group_id}`: Letta's `GroupUpdate`. Its other fields
/// (`description`, `agent_ids`, `shared_block_ids`) are accepted and ignored: a sleep-time
/// group's are derived from its agent.
#[derive(Deserialize)]
pub struct GroupPatch {
    manager_config: Option<ManagerConfig>,
}

/// Letta's `SleeptimeManagerUpdate` (the part Engram keeps).
#[derive(Deserialize)]
pub struct ManagerConfig {
    manager_type: Option<String>,
    sleeptime_agent_frequency: Option<u32>,
}

/// `PATCH /v1/groups/{group_id}`: a new `sleeptime_agent_frequency` (user turns between
/// passes, at least 1).
pub async fn modify(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Body(patch): Body<GroupPatch>,
) -> ApiResult<Json<Value>> {
    let agent = agent_of(&id)?;
    group_by_id(&s.engram, &id).await?;
    if let Some(cfg) = patch.manager_config {
        if cfg
            .manager_type
            .as_deref()
            .is_some_and(|t| t != "sleeptime")
        {
            return Err(ApiError::bad_request(
                "this group's manager_type is sleeptime; Engram has no other kind of group",
            ));
        }
        if let Some(n) = cfg.sleeptime_agent_frequency {
            if n == 0 {
                return Err(ApiError::bad_request(
                    "sleeptime_agent_frequency is a number of user turns: at least 1",
                ));
            }
            let mut settings = s.engram.sleeptime().settings(&agent).await?;
            settings.frequency = n;
            s.engram.sleeptime().set_settings(&agent, &settings).await?;
        }
    }
    group_by_id(&s.engram, &id).await.map(Json)
}

/// `DELETE /v1/groups/{group_id}`: turns the agent's sleep-time passes off.
pub async fn delete(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let agent = agent_of(&id)?;
    group_by_id(&s.engram, &id).await?;
    let mut settings = s.engram.sleeptime().settings(&agent).await?;
    settings.enabled = false;
    s.engram.sleeptime().set_settings(&agent, &settings).await?;
    Ok(deleted())
}

/// `POST /v1/groups/`: Engram makes sleep-time groups itself (`enable_sleeptime` on an agent)
/// and has no other kind.
pub async fn create() -> ApiResult<Json<Value>> {
    Err(ApiError::bad_request(
        "Engram has no multi-agent groups to create; turn an agent's sleep-time passes on with enable_sleeptime",
    ))
}

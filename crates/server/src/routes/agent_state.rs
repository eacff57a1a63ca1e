//! The answer of every route that changes an agent: its state in Letta's `AgentState` shape,
//! with the ids of its in-context messages, its tools, its tags and its sleep-time settings;
//! and, beyond Letta's fields, `warnings` when its chat model is not set up (no provider, no
//! key), so a client learns it when it makes or reads the agent, not when a message fails.

use crate::errors::ApiResult;
use crate::shapes;
use axum::Json;
use engram_service::{AgentState, Engram};
use serde_json::Value;

/// An agent state with its in-context message ids, as Letta shows it.
pub(crate) async fn render(engram: &Engram, state: &AgentState) -> ApiResult<Json<Value>> {
    let ids: Vec<String> = engram
        .recall()
        .in_context_ids(&state.agent.id)
        .await?
        .into_iter()
        .map(|id| id.to_string())
        .collect();
    let tools = engram
        .tools()
        .of_agent(&state.agent.id)
        .await?
        .iter()
        .map(shapes::any_tool)
        .collect();
    let mut v = shapes::agent_state(state, &ids, tools);
    v["tags"] = serde_json::json!(engram.agents().tags(&state.agent.id).await?);
    let sleeptime = engram.sleeptime().settings(&state.agent.id).await?;
    v["enable_sleeptime"] = sleeptime.enabled.into();
    if sleeptime.enabled {
        let backlog = engram.sleeptime().backlog(&state.agent.id).await?;
        v["multi_agent_group"] =
            shapes::sleeptime_group(state, &sleeptime, backlog.turns, backlog.last_read.as_ref());
    }
    if let Some(problem) = engram.agents().model_problem(&state.agent.id).await? {
        v["warnings"] = serde_json::json!([format!(
            "model {} is not usable yet: {}",
            problem.model, problem.detail
        )]);
    }
    Ok(Json(v))
}

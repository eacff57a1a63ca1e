//! Tools (Engram's built-ins, as Letta `Tool`s) and the health check.

use super::agent_id;
use crate::AppState;
use crate::errors::{ApiError, ApiResult};
use crate::json::Params;
use crate::paging::{Cursor, page};
use crate::shapes;
use axum::Json;
use axum::extract::{Path, State};
use serde::Deserialize;
use serde_json::{Value, json};

/// `GET /v1/health/`: `{version, status}`.
pub async fn health() -> Json<Value> {
    Json(json!({"version": env!("CARGO_PKG_VERSION"), "status": "ok"}))
}

/// Query of `GET /v1/tools/`.
#[derive(Deserialize)]
pub struct ToolQuery {
    #[serde(flatten)]
    cursor: Cursor,
    name: Option<String>,
}

/// `GET /v1/tools/`: the built-in tools, filtered by `name`, paged.
pub async fn list(Params(q): Params<ToolQuery>) -> Json<Vec<Value>> {
    let mut tools = shapes::all_tools();
    if let Some(name) = &q.name {
        tools.retain(|t| t["name"] == name.as_str());
    }
    Json(page(
        tools,
        |t| t["id"].as_str().unwrap_or_default(),
        &q.cursor,
        false,
        usize::MAX,
    ))
}

/// `GET /v1/tools/{tool_id}`.
pub async fn retrieve(Path(id): Path<String>) -> ApiResult<Json<Value>> {
    shapes::tool_name(&id)
        .and_then(shapes::tool)
        .map(Json)
        .ok_or_else(|| ApiError::not_found(format!("tool not found: {id}")))
}

/// `GET /v1/agents/{agent_id}/tools`: the agent's tools.
pub async fn for_agent(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<Value>>> {
    let state = s.engram.get_agent(&agent_id(id))?;
    Ok(Json(
        state
            .agent
            .tools
            .iter()
            .filter_map(|n| shapes::tool(n))
            .collect(),
    ))
}

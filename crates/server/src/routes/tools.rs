//! Tools (built-ins and user Python tools, as Letta `Tool`s), attaching them to agents, and the
//! health check.

use super::{agent_state, shared::agent_id, shared::deleted};
use crate::config::AppState;
use crate::errors::{ApiError, ApiResult};
use crate::json::{Body, Params};
use crate::paging::{Cursor, page};
use crate::shapes;
use axum::Json;
use axum::extract::{Path, State};
use engram_core::{NewTool, Tool, ToolId};
use engram_service::{Engram, ToolPatch};
use serde::Deserialize;
use serde_json::{Value, json};

/// `GET /v1/health/`: `{version, status}`.
pub async fn health() -> Json<Value> {
    Json(json!({"version": env!("CARGO_PKG_VERSION"), "status": "ok"}))
}

/// `GET /healthz`: 200 `{"status": "ok"}` when the engine's database answers, else 503 with
/// what failed — for a load balancer in front of replicas. No token: it reveals nothing.
pub async fn healthz(
    axum::extract::State(s): axum::extract::State<crate::config::AppState>,
) -> (axum::http::StatusCode, Json<Value>) {
    match s.engram.health().await {
        Ok(()) => (
            axum::http::StatusCode::OK,
            Json(json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")})),
        ),
        Err(e) => (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "unavailable", "detail": e.to_string()})),
        ),
    }
}

/// A tool by REST id: the stable ids of built-ins (see [`shapes::tool_id`]) or a user tool's.
pub(crate) async fn resolve(engram: &Engram, id: &str) -> ApiResult<Tool> {
    match shapes::tool_name(id) {
        Some(name) => Ok(engram.tools().find(name).await?),
        None => Ok(engram.tools().get(&ToolId::from(id)).await?),
    }
}

/// Query of `GET /v1/tools/`.
#[derive(Deserialize)]
pub struct ToolQuery {
    #[serde(flatten)]
    cursor: Cursor,
    name: Option<String>,
}

/// `GET /v1/tools/`: built-in and user tools, filtered by `name`, paged.
pub async fn list(
    State(s): State<AppState>,
    Params(q): Params<ToolQuery>,
) -> ApiResult<Json<Vec<Value>>> {
    let mut tools: Vec<Value> = s
        .engram
        .tools()
        .list()
        .await?
        .iter()
        .map(shapes::any_tool)
        .collect();
    if let Some(name) = &q.name {
        tools.retain(|t| t["name"] == name.as_str());
    }
    Ok(Json(page(
        tools,
        |t| t["id"].as_str().unwrap_or_default(),
        &q.cursor,
        false,
        usize::MAX,
    )))
}

/// `GET /v1/tools/{tool_id}`.
pub async fn retrieve(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    Ok(Json(shapes::any_tool(&resolve(&s.engram, &id).await?)))
}

/// The fields of Letta's `ToolCreate` / `ToolUpdate` that Engram acts on (what `letta-client`'s
/// `tools.upsert_from_function` and `tools.upsert` send); the rest (`pip_requirements`,
/// `args_json_schema`, …) is accepted and ignored.
#[derive(Debug, Default, Deserialize)]
pub struct ToolIn {
    source_code: Option<String>,
    description: Option<String>,
    tags: Option<Vec<String>>,
    source_type: Option<String>,
    json_schema: Option<Value>,
    return_char_limit: Option<usize>,
}

impl ToolIn {
    fn check_language(&self) -> ApiResult<()> {
        match self.source_type.as_deref() {
            None | Some("python") => Ok(()),
            Some(other) => Err(ApiError::bad_request(format!(
                "source_type '{other}' is not supported: Engram runs Python tools only"
            ))),
        }
    }

    fn into_new(self) -> ApiResult<NewTool> {
        self.check_language()?;
        let source_code = self
            .source_code
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| ApiError::bad_request("source_code is required"))?;
        Ok(NewTool {
            source_code,
            name: None,
            description: self.description,
            json_schema: self.json_schema.filter(Value::is_object),
            return_char_limit: self.return_char_limit,
            tags: self.tags.unwrap_or_default(),
            // Network and unsandboxed runs are the local user's to grant, never a client's.
            ..NewTool::default()
        })
    }
}

/// `POST /v1/tools/` and `PUT /v1/tools/` (upsert by the function's name).
pub async fn upsert(State(s): State<AppState>, Body(req): Body<ToolIn>) -> ApiResult<Json<Value>> {
    let new = req.into_new()?;
    // The service keeps schema generation (a python3 process) off the async workers.
    let tool = s.engram.tools().upsert(new).await?;
    Ok(Json(shapes::any_tool(&tool)))
}

/// `PATCH /v1/tools/{tool_id}`.
pub async fn modify(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Body(req): Body<ToolIn>,
) -> ApiResult<Json<Value>> {
    req.check_language()?;
    let tool = resolve(&s.engram, &id).await?;
    let patch = ToolPatch {
        name: req
            .json_schema
            .as_ref()
            .and_then(|j| j["name"].as_str())
            .map(str::to_owned),
        description: req.description,
        source_code: req.source_code,
        json_schema: req.json_schema.filter(Value::is_object),
        return_char_limit: req.return_char_limit,
        tags: req.tags,
    };
    let tool = s.engram.tools().update(&tool.id, patch).await?;
    Ok(Json(shapes::any_tool(&tool)))
}

/// `DELETE /v1/tools/{tool_id}`.
pub async fn delete(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let tool = resolve(&s.engram, &id).await?;
    s.engram.tools().delete(&tool.id).await?;
    Ok(deleted())
}

/// `GET /v1/agents/{agent_id}/tools`: the agent's tools.
pub async fn for_agent(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<Value>>> {
    let tools = s.engram.tools().of_agent(&agent_id(id)).await?;
    Ok(Json(tools.iter().map(shapes::any_tool).collect()))
}

/// `PATCH /v1/agents/{agent_id}/tools/attach/{tool_id}`: the agent state after attaching.
pub async fn attach(
    State(s): State<AppState>,
    Path((id, tool)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let agent = agent_id(id);
    let tool = resolve(&s.engram, &tool).await?;
    s.engram.tools().attach(&agent, &tool.id).await?;
    agent_state::render(&s.engram, &s.engram.agents().get(&agent).await?).await
}

/// `PATCH /v1/agents/{agent_id}/tools/detach/{tool_id}`: the agent state after detaching.
pub async fn detach(
    State(s): State<AppState>,
    Path((id, tool)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let agent = agent_id(id);
    let tool = resolve(&s.engram, &tool).await?;
    s.engram.tools().detach(&agent, &tool.id).await?;
    agent_state::render(&s.engram, &s.engram.agents().get(&agent).await?).await
}

//! Letta's `/v1/mcp-servers/` routes (letta-client 1.x `client.mcp_servers`): list, create,
//! retrieve, delete, and a server's tools (`GET …/tools`, `POST …/refresh`), answered as
//! Letta `Tool`s that attach with `PATCH /v1/agents/{id}/tools/attach/{tool_id}`.
//!
//! A server's shape is Letta's (`id`, `server_name`, `mcp_server_type`, `command`, `args`,
//! `server_url`) plus Engram's `active` and `source`; environment values and tokens are
//! never answered (only `env_keys` and `has_auth_token`).

use super::shared::deleted;
use crate::config::AppState;
use crate::errors::{ApiError, ApiResult};
use crate::json::Body;
use crate::shapes;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use engram_core::{McpServer, McpTransport, NewMcpServer, NewMcpTransport};
use engram_service::commands::require_user;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// A server as Letta's `McpServer`, without secrets.
fn server(s: &McpServer) -> Value {
    let mut v = json!({
        "id": s.id,
        "server_name": s.name,
        "active": s.active,
        "source": s.source,
        "created_at": shapes::time(&s.created_at),
        "updated_at": shapes::time(&s.updated_at),
    });
    match &s.transport {
        McpTransport::Stdio {
            command,
            args,
            env_keys,
        } => {
            v["mcp_server_type"] = json!("stdio");
            v["command"] = json!(command);
            v["args"] = json!(args);
            v["env_keys"] = json!(env_keys);
        }
        McpTransport::StreamableHttp { url, has_token, .. } => {
            v["mcp_server_type"] = json!("streamable_http");
            v["server_url"] = json!(url);
            v["has_auth_token"] = json!(has_token);
        }
    }
    v
}

/// The transport part of a create request: Letta 1.x nests it in `config`, older clients put
/// it beside `server_name`.
#[derive(Deserialize)]
pub struct ConfigIn {
    #[serde(alias = "type")]
    mcp_server_type: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    server_url: Option<String>,
    auth_header: Option<String>,
    auth_token: Option<String>,
    token: Option<String>,
    #[serde(default)]
    custom_headers: Option<BTreeMap<String, String>>,
}

/// `POST /v1/mcp-servers/` body.
#[derive(Deserialize)]
pub struct CreateIn {
    server_name: String,
    config: Option<ConfigIn>,
    #[serde(flatten)]
    flat: ConfigIn,
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "invalid_input", message)
}

fn transport(c: ConfigIn) -> ApiResult<NewMcpTransport> {
    if c.custom_headers.as_ref().is_some_and(|h| !h.is_empty()) {
        return Err(bad(
            "custom_headers are not supported; give a bearer token as auth_token",
        ));
    }
    if c.auth_header
        .as_deref()
        .is_some_and(|h| !h.eq_ignore_ascii_case("authorization"))
    {
        return Err(bad(
            "only the Authorization header is supported (a bearer token)",
        ));
    }
    match (c.mcp_server_type.as_deref(), c.command, c.server_url) {
        (Some("sse"), ..) => Err(bad(
            "SSE-only MCP servers are not supported; use the server's streamable-HTTP URL",
        )),
        (_, Some(command), None) => Ok(NewMcpTransport::Stdio {
            command,
            args: c.args,
            env: c.env,
        }),
        (_, None, Some(url)) => {
            let token = c
                .auth_token
                .or(c.token)
                .map(|t| t.strip_prefix("Bearer ").map(str::to_owned).unwrap_or(t));
            Ok(NewMcpTransport::StreamableHttp { url, token })
        }
        _ => Err(bad(
            "give either `command` (stdio) or `server_url` (streamable HTTP)",
        )),
    }
}

/// `GET /v1/mcp-servers/`.
pub async fn list(State(s): State<AppState>) -> ApiResult<Json<Vec<Value>>> {
    Ok(Json(s.engram.mcp().list()?.iter().map(server).collect()))
}

/// `POST /v1/mcp-servers/`: adds an active server (needs the API token: it runs a program
/// or reaches a URL as the user).
pub async fn create(
    State(s): State<AppState>,
    Body(body): Body<CreateIn>,
) -> ApiResult<Json<Value>> {
    require_user(s.authenticated, "adding an MCP server")?;
    let config = body.config.unwrap_or(body.flat);
    let new = NewMcpServer {
        name: body.server_name,
        transport: transport(config)?,
    };
    Ok(Json(server(&s.engram.mcp().add_server(new)?)))
}

/// `GET /v1/mcp-servers/{id}` (id or name).
pub async fn retrieve(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    Ok(Json(server(&s.engram.mcp().get(&id)?)))
}

/// `DELETE /v1/mcp-servers/{id}`: the server, its tools (detached everywhere) and secrets.
pub async fn delete(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    s.engram.mcp().remove(&id).await?;
    Ok(deleted())
}

/// `GET /v1/mcp-servers/{id}/tools` and `POST …/refresh`: connects, lists the server's tools,
/// stores them, and answers them as Letta `Tool`s (502/504 naming the server when it cannot
/// be reached).
pub async fn tools(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<Value>>> {
    let tools = s.engram.mcp().list_tools(&id).await?;
    Ok(Json(tools.iter().map(shapes::any_tool).collect()))
}

// Letta 0.1.x (`letta-client` 0.1: `client.tools.list_mcp_servers()` …): the same servers under
// `/v1/tools/mcp/servers`, keyed by name, in the older config shapes.

/// A server as Letta 0.1's `StdioServerConfig` / `StreamableHTTPServerConfig` (no secrets:
/// `env` and `auth_token` are never answered).
fn config_v01(s: &McpServer) -> Value {
    match &s.transport {
        McpTransport::Stdio { command, args, .. } => json!({
            "server_name": s.name, "type": "stdio", "command": command, "args": args, "env": null,
        }),
        McpTransport::StreamableHttp { url, .. } => json!({
            "server_name": s.name, "type": "streamable_http", "server_url": url,
            "auth_header": null, "auth_token": null, "custom_headers": null,
        }),
    }
}

fn configs_v01(s: &AppState) -> ApiResult<Vec<Value>> {
    Ok(s.engram.mcp().list()?.iter().map(config_v01).collect())
}

/// `GET /v1/tools/mcp/servers`: `{server_name: config}`.
pub async fn list_v01(State(s): State<AppState>) -> ApiResult<Json<Value>> {
    let map: serde_json::Map<String, Value> = s
        .engram
        .mcp()
        .list()?
        .iter()
        .map(|m| (m.name.clone(), config_v01(m)))
        .collect();
    Ok(Json(Value::Object(map)))
}

/// `PUT /v1/tools/mcp/servers`: adds a server; answers every server's config.
pub async fn create_v01(
    State(s): State<AppState>,
    Body(body): Body<CreateIn>,
) -> ApiResult<Json<Vec<Value>>> {
    require_user(s.authenticated, "adding an MCP server")?;
    let new = NewMcpServer {
        name: body.server_name,
        transport: transport(body.config.unwrap_or(body.flat))?,
    };
    s.engram.mcp().add_server(new)?;
    Ok(Json(configs_v01(&s)?))
}

/// `DELETE /v1/tools/mcp/servers/{name}`: answers the remaining servers' configs.
pub async fn delete_v01(
    State(s): State<AppState>,
    Path(name): Path<String>,
) -> ApiResult<Json<Vec<Value>>> {
    s.engram.mcp().remove(&name).await?;
    Ok(Json(configs_v01(&s)?))
}

/// `GET /v1/tools/mcp/servers/{name}/tools`: the server's tools as MCP lists them
/// (`{name, description, inputSchema}`, the server's own names).
pub async fn tools_v01(
    State(s): State<AppState>,
    Path(name): Path<String>,
) -> ApiResult<Json<Vec<Value>>> {
    let tools = s.engram.mcp().list_tools(&name).await?;
    Ok(Json(
        tools
            .iter()
            .filter_map(|t| {
                let m = t.mcp.as_ref()?;
                Some(json!({"name": m.tool_name, "description": t.description,
                            "inputSchema": t.json_schema["parameters"]}))
            })
            .collect(),
    ))
}

/// `POST /v1/tools/mcp/servers/{name}/{tool}`: the Engram tool for the server's tool `tool`
/// (listing the server first), as a Letta `Tool` to attach.
pub async fn add_tool_v01(
    State(s): State<AppState>,
    Path((name, tool)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let tools = s.engram.mcp().list_tools(&name).await?;
    let found = tools
        .iter()
        .find(|t| t.mcp.as_ref().is_some_and(|m| m.tool_name == tool))
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_input",
                format!("MCP server '{name}' has no tool '{tool}'"),
            )
        })?;
    Ok(Json(shapes::any_tool(found)))
}

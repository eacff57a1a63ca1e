//! `/app/…` commands for MCP servers (Settings → MCP servers): list, add, remove, accept or
//! deactivate, import an `mcpServers` block, and list a server's tools. Same names and
//! arguments as the desktop shell's commands.

use crate::AppState;
use crate::app::{AppResult, Args, done};
use axum::Router;
use axum::extract::State;
use axum::routing::post;
use engram_core::{Error, NewMcpServer};
use serde::{Deserialize, Serialize};

/// The routes, merged into the API beside [`crate::app::routes`].
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/app/list_mcp_servers", post(list_mcp_servers))
        .route("/app/add_mcp_server", post(add_mcp_server))
        .route("/app/remove_mcp_server", post(remove_mcp_server))
        .route("/app/set_mcp_server_active", post(set_mcp_server_active))
        .route("/app/import_mcp_servers", post(import_mcp_servers))
        .route("/app/list_mcp_tools", post(list_mcp_tools))
        .route("/app/stored_mcp_tools", post(stored_mcp_tools))
}

/// Refuses acts that start programs as the user when requests carry no token.
pub(crate) fn require_token(s: &AppState, what: &str) -> engram_core::Result<()> {
    if s.authenticated {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "{what} runs a program with your rights, so it needs the API token; this server runs without one (--no-auth): use the CLI or the desktop app"
        )))
    }
}

#[derive(Deserialize)]
struct NoArgs {}

#[derive(Deserialize)]
struct AddArg {
    server: NewMcpServer,
}

#[derive(Deserialize)]
struct ServerArg {
    /// Server id or name.
    server: String,
}

#[derive(Deserialize)]
struct ActiveArg {
    server: String,
    active: bool,
}

#[derive(Deserialize)]
struct ImportArg {
    /// The `mcpServers` JSON block as pasted.
    text: String,
    /// Where it came from (e.g. a file name); default `pasted config`.
    #[serde(default)]
    source: Option<String>,
}

async fn list_mcp_servers(
    State(s): State<AppState>,
    Args(_): Args<NoArgs>,
) -> AppResult<impl Serialize> {
    done(s.engram.list_mcp_servers())
}

async fn add_mcp_server(
    State(s): State<AppState>,
    Args(a): Args<AddArg>,
) -> AppResult<impl Serialize> {
    require_token(&s, "adding an MCP server")?;
    done(s.engram.add_mcp_server(a.server))
}

async fn remove_mcp_server(
    State(s): State<AppState>,
    Args(a): Args<ServerArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.remove_mcp_server(&a.server).await)
}

async fn set_mcp_server_active(
    State(s): State<AppState>,
    Args(a): Args<ActiveArg>,
) -> AppResult<impl Serialize> {
    if a.active {
        require_token(&s, "accepting an MCP server")?;
    }
    done(s.engram.set_mcp_server_active(&a.server, a.active).await)
}

async fn import_mcp_servers(
    State(s): State<AppState>,
    Args(a): Args<ImportArg>,
) -> AppResult<impl Serialize> {
    let source = a.source.unwrap_or_else(|| "pasted config".to_owned());
    done(s.engram.import_mcp_servers(&a.text, &source))
}

async fn list_mcp_tools(
    State(s): State<AppState>,
    Args(a): Args<ServerArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.list_mcp_tools(&a.server).await)
}

async fn stored_mcp_tools(
    State(s): State<AppState>,
    Args(a): Args<ServerArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.stored_mcp_tools(&a.server))
}

//! Engram's memory as an MCP server: `engram mcp serve --agent ID_OR_NAME`.
//!
//! A thin transport over [`engram_service::mcp_memory`]: it lists the tools (`memory` in the
//! shape of Anthropic's memory tool, `search_memory`, `add_memory`, `search_conversation`),
//! parses their arguments, calls one service method and hands back its text (refusals as tool
//! errors, `isError: true`). Each block is also an MCP resource, and subscribed clients are told
//! when one changes, whoever changed it ([`notify`]).
//!
//! Two ways in: [`serve_stdio`] (the client launched this process, so the launch is its
//! permission) and [`serve_http`] (streamable HTTP on loopback only: foreign `Host`/`Origin` get
//! 403 as on the REST API, then each request needs a configured client's bearer token, 401
//! otherwise).

mod handler;
mod http;
pub mod notify;
mod seen;
mod tools;
pub mod uri;

pub use handler::MemoryServer;
pub use http::{HttpServer, ServeError, serve_http};
pub use uri::URI_PREFIX;

use engram_service::Engram;
use engram_service::mcp_memory::MemoryClient;
use rmcp::ServiceExt as _;
use std::sync::Arc;

/// Serves `client`'s memory on stdin/stdout until the client goes away. Without `fixed_name`
/// the client's writes are recorded under the name it introduced itself with
/// (`clientInfo.name`), else under `client.name`.
///
/// Errors: [`ServeError::Session`] when the session cannot start or breaks.
pub async fn serve_stdio(
    engram: Arc<Engram>,
    client: MemoryClient,
    fixed_name: bool,
) -> Result<(), ServeError> {
    let subscribers = notify::Subscribers::start(engram.clone(), &client);
    let server = MemoryServer::new(
        engram,
        Some(client),
        fixed_name,
        subscribers,
        Arc::default(),
    );
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| ServeError::Session(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| ServeError::Session(e.to_string()))?;
    Ok(())
}

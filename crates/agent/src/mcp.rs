//! Tools of MCP servers, as the loop sees them: a call goes to an [`McpCaller`] (the service
//! implements it over `engram_mcp::Hub`, with the server's config and secrets), and whatever
//! goes wrong — server inactive, down, crashed, too slow, tool failed — comes back as the line
//! of a `Failed` result that names the server.

use engram_core::{AgentId, McpToolSource};
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;

/// The future an [`McpCaller`] returns: `Ok(text)` for the model, or the error whose message is
/// the line of a `Failed` result.
pub type McpCall<'a> = Pin<Box<dyn Future<Output = Result<String, McpCallError>> + Send + 'a>>;

/// Why a tool call to an MCP server failed. Each message is the line the model reads; it names
/// the server.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum McpCallError {
    /// The server cannot be used now: unknown, not active (awaiting the user's approval), or
    /// its configuration or secrets are incomplete. The message says which and what to do.
    #[error("{0}")]
    Unusable(String),
    /// The server ran the tool, and the tool reported a failure.
    #[error("MCP server '{server}': tool '{tool}' failed: {text}")]
    ToolFailed {
        /// The server's name.
        server: String,
        /// The tool's name on that server.
        tool: String,
        /// What the tool said.
        text: String,
    },
    /// The server could not be reached or did not answer (down, crashed, too slow).
    #[error("{0}")]
    Server(String),
}

/// Calls tools on MCP servers for the loop.
pub trait McpCaller: Send + Sync {
    /// Calls `source.tool_name` on `source.server_id` with `arguments` for `agent`.
    /// Errors: [`McpCallError`], whose message is the line the model reads.
    fn call<'a>(
        &'a self,
        agent: &'a AgentId,
        source: &'a McpToolSource,
        arguments: Map<String, Value>,
    ) -> McpCall<'a>;
}

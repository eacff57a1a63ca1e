//! Tools of MCP servers, as the loop sees them: a call goes to an [`McpCaller`] (the service
//! implements it over `engram_mcp::Hub`, with the server's config and secrets), and whatever
//! goes wrong — server inactive, down, crashed, too slow, tool failed — comes back as the line
//! of a `Failed` result that names the server.

use engram_core::{AgentId, McpToolSource};
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;

/// The future an [`McpCaller`] returns: `Ok(text)` for the model, or `Err(line)` for a
/// `Failed` result.
pub type McpCall<'a> = Pin<Box<dyn Future<Output = Result<String, String>> + Send + 'a>>;

/// Calls tools on MCP servers for the loop.
pub trait McpCaller: Send + Sync {
    /// Calls `source.tool_name` on `source.server_id` with `arguments` for `agent`.
    /// `Err` is the line the model reads (it names the server).
    fn call<'a>(
        &'a self,
        agent: &'a AgentId,
        source: &'a McpToolSource,
        arguments: Map<String, Value>,
    ) -> McpCall<'a>;
}

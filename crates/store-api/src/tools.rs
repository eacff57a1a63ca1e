//! User tools: the Python and MCP tools a person adds (built-in tools are not rows), unique by
//! name. Agents name the tools they may call (their `tools` list and `tool_rules`), so
//! renaming or deleting a tool rewrites those in the same transaction
//! ([`engram_core::tool::rewrite_tool_refs`]).

use async_trait::async_trait;
use engram_core::{Result, Tool, ToolId};

/// User tools on any backend.
///
/// A tool comes back with its trust computed (`source_hash`, `trusted`: the SHA-256 of its
/// source against the hash the person trusted) and `available` set: whether it can run on
/// this machine is for the service to say.
#[async_trait]
pub trait ToolStore: Send + Sync {
    /// Creates the tool, or replaces the one with the same name (its id and `created_at` are
    /// kept). Returns it as stored. Errors: `Storage`.
    async fn upsert_tool(&self, tool: &Tool) -> Result<Tool>;

    /// Replaces the tool `id` with `tool`; its name may change, and agents that named the old
    /// one get the new one in their tool lists and rules, in the same transaction.
    ///
    /// Errors: `NotFound("tool")`; `Conflict` when another tool has the new name.
    async fn replace_tool(&self, id: &ToolId, tool: &Tool) -> Result<Tool>;

    /// Trusts the tool's current source: stores `expected_hash` as the trusted hash when it is
    /// the SHA-256 (hex, either case) of the source stored now, so a person trusts exactly the
    /// code they were shown.
    ///
    /// Errors: `NotFound("tool")`; `Invalid` for a tool without source; `Conflict` naming the
    /// current hash when the source changed since it was shown.
    async fn trust_tool(&self, id: &ToolId, expected_hash: &str) -> Result<Tool>;

    /// Withdraws trust: the tool does not run until trusted again. Errors: `NotFound("tool")`.
    async fn untrust_tool(&self, id: &ToolId) -> Result<Tool>;

    /// One tool by id. Errors: `NotFound("tool")`.
    async fn get_tool(&self, id: &ToolId) -> Result<Tool>;

    /// One tool by name, if there is one.
    async fn tool_by_name(&self, name: &str) -> Result<Option<Tool>>;

    /// Every user tool, by name (byte order).
    async fn list_tools(&self) -> Result<Vec<Tool>>;

    /// The user tools among `names`, in `names` order; names without a tool are skipped.
    async fn tools_named(&self, names: &[String]) -> Result<Vec<Tool>>;

    /// Deletes the tool and takes it (and the rules about it) off every agent, in one
    /// transaction. Errors: `NotFound("tool")`.
    async fn delete_tool(&self, id: &ToolId) -> Result<()>;
}

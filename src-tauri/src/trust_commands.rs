//! The window's trust commands (DESIGN.md §8b): trusting a tool's reviewed source and an
//! agent's endpoints. Same names and arguments as `/app/{command}`
//! (`crates/server/src/app_trust.rs`).

use crate::Desktop;
use crate::error::IpcResult;
use engram_core::{AgentId, EndpointKind, Tool};
use engram_service::AgentEndpoints;
use tauri::State;

/// Trusts a tool's current source (by id or name) when it hashes to `expected_hash`, the
/// SHA-256 shown with the code the user reviewed.
#[tauri::command(rename_all = "snake_case")]
pub fn trust_tool(d: State<'_, Desktop>, tool: String, expected_hash: String) -> IpcResult<Tool> {
    Ok(d.engram.trust_tool(&tool, &expected_hash)?)
}

/// Withdraws trust from a tool: it stops running until trusted again.
#[tauri::command(rename_all = "snake_case")]
pub fn untrust_tool(d: State<'_, Desktop>, tool: String) -> IpcResult<Tool> {
    Ok(d.engram.untrust_tool(&tool)?)
}

/// Where the agent's model calls go, and what an imported file asked for.
#[tauri::command(rename_all = "snake_case")]
pub fn agent_endpoints(d: State<'_, Desktop>, agent_id: AgentId) -> IpcResult<AgentEndpoints> {
    Ok(d.engram.agent_endpoints(&agent_id)?)
}

/// Sets (or clears, with no `base_url`) the agent's own base URL for a model.
#[tauri::command(rename_all = "snake_case")]
pub fn set_agent_base_url(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    kind: EndpointKind,
    base_url: Option<String>,
) -> IpcResult<AgentEndpoints> {
    Ok(d.engram
        .set_agent_base_url(&agent_id, kind, base_url.as_deref())?)
}

/// Accepts the endpoint an imported file asked for (`kind` absent: all of them).
#[tauri::command(rename_all = "snake_case")]
pub fn accept_endpoint(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    kind: Option<EndpointKind>,
) -> IpcResult<AgentEndpoints> {
    Ok(d.engram.accept_endpoint(&agent_id, kind)?)
}

/// Drops an endpoint an imported file asked for, unused (`kind` absent: the chat model's).
#[tauri::command(rename_all = "snake_case")]
pub fn dismiss_endpoint(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    kind: Option<EndpointKind>,
) -> IpcResult<AgentEndpoints> {
    Ok(d.engram
        .dismiss_endpoint(&agent_id, kind.unwrap_or(EndpointKind::Llm))?)
}

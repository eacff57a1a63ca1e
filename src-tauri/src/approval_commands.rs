//! The window's commands for tool calls a person approves: the per-agent "ask before running"
//! setting, the pending call, and the decision (streaming the run that goes on). Same names
//! and arguments as `/app/{command}` (`crates/server/src/app_approval.rs`).

use crate::Desktop;
use crate::error::IpcResult;
use engram_core::{Agent, AgentId, ApprovalDecision, PendingApproval, RunEvent};
use engram_service::RunRequest;
use tauri::State;
use tauri::ipc::Channel;

/// The tool call the agent's run waits on, if any.
#[tauri::command(rename_all = "snake_case")]
pub fn pending_approval(
    d: State<'_, Desktop>,
    agent_id: AgentId,
) -> IpcResult<Option<PendingApproval>> {
    Ok(d.engram.pending_approval(&agent_id)?)
}

/// Approves or denies the pending call and streams the run that goes on over `on_event`;
/// resolves when it ends.
#[tauri::command(rename_all = "snake_case")]
pub async fn resolve_approval(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    decision: ApprovalDecision,
    on_event: Channel<RunEvent>,
) -> IpcResult<()> {
    let decisions = vec![decision];
    let run = d
        .engram
        .start_run(&agent_id, RunRequest::Approvals { decisions })
        .await?;
    crate::chat_commands::stream(run, &on_event).await
}

/// Turns "ask before running" on or off for one of the agent's tools.
#[tauri::command(rename_all = "snake_case")]
pub fn set_tool_approval(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    tool: String,
    on: bool,
) -> IpcResult<Agent> {
    Ok(d.engram.set_tool_approval(&agent_id, &tool, on)?)
}

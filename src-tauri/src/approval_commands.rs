//! The window's commands for tool calls a person approves: the per-agent "ask before running"
//! setting, the pending call, and the decision (streaming the run that goes on). Same names
//! and arguments as `/app/{command}` (`crates/server/src/app_approval.rs`).

use crate::Desktop;
use crate::error::IpcResult;
use engram_core::{Agent, AgentId, ApprovalDecision, PendingApproval, RunEvent};
use tauri::State;
use tauri::ipc::Channel;
use tokio_util::sync::CancellationToken;

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
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let run = async {
        let outcome = d
            .engram
            .resolve_approval(&agent_id, decision, &tx, CancellationToken::new())
            .await;
        drop(tx);
        outcome
    };
    let forward = async {
        while let Some(event) = rx.recv().await {
            let _ = on_event.send(event);
        }
    };
    let (outcome, ()) = tokio::join!(run, forward);
    outcome?;
    Ok(())
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

//! The chat window's commands for a list that jumps (`message_window`) and for joining a run
//! already in flight after a reload (`attach_run`). Same names and arguments as
//! `/app/{command}` (`crates/server/src/app_chat.rs`).

use crate::Desktop;
use crate::error::IpcResult;
use engram_core::{AgentId, RunEvent};
use engram_service::{MessageWindow, WindowAt};
use tauri::State;
use tauri::ipc::Channel;

/// A window of the conversation at `at` (newest, start, before/after/around a message, a
/// date), at most `limit` messages, oldest first.
#[tauri::command(rename_all = "snake_case")]
pub fn message_window(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    at: WindowAt,
    limit: usize,
) -> IpcResult<MessageWindow> {
    Ok(d.engram.message_window(&agent_id, &at, limit)?)
}

/// Joins the agent's run in flight: streams what it sent so far, then the rest over
/// `on_event`, and resolves `true` after `done`; resolves `false` at once when the agent is
/// not running.
#[tauri::command(rename_all = "snake_case")]
pub async fn attach_run(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    on_event: Channel<RunEvent>,
) -> IpcResult<bool> {
    d.engram.get_agent(&agent_id)?;
    let Some(mut run) = d.engram.attach_run(&agent_id) else {
        return Ok(false);
    };
    for event in run.so_far {
        let _ = on_event.send(event);
    }
    while let Some(event) = run.events.recv().await {
        let _ = on_event.send(event);
    }
    Ok(true)
}

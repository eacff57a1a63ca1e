//! The window's message actions (issue #10): regenerate and edit & resend (streamed over a
//! channel like `send_message`), their previews of what will be undone, deleting a message,
//! a new conversation, and what stored runs left behind (how each ended, the edit under each
//! tool call). Same names and arguments as `/app/{command}` (`crates/server/src/app_turns.rs`).

use crate::Desktop;
use crate::chat_commands::stream;
use crate::error::IpcResult;
use engram_core::{AgentId, MessageId, RunEvent, RunId};
use engram_service::{RunRecord, RunRequest, ToolEdit, TurnRollback};
use tauri::State;
use tauri::ipc::Channel;

/// What regenerating the last turn would undo.
#[tauri::command(rename_all = "snake_case")]
pub fn regenerate_preview(d: State<'_, Desktop>, agent_id: AgentId) -> IpcResult<TurnRollback> {
    Ok(d.engram.regenerate_preview(&agent_id)?)
}

/// What editing and resending `message_id` would undo.
#[tauri::command(rename_all = "snake_case")]
pub fn rollback_preview(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    message_id: MessageId,
) -> IpcResult<TurnRollback> {
    Ok(d.engram.rollback_preview(&agent_id, &message_id)?)
}

/// Rolls back the last turn and runs it again, streaming the new run.
#[tauri::command(rename_all = "snake_case")]
pub async fn regenerate(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    on_event: Channel<RunEvent>,
) -> IpcResult<()> {
    let run = d
        .engram
        .start_run(&agent_id, RunRequest::Regenerate)
        .await?;
    stream(run, &on_event).await
}

/// Replaces a user message and runs from there, streaming the new run.
#[tauri::command(rename_all = "snake_case")]
pub async fn edit_and_resend(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    message_id: MessageId,
    text: String,
    on_event: Channel<RunEvent>,
) -> IpcResult<()> {
    let request = RunRequest::EditAndResend { message_id, text };
    let run = d.engram.start_run(&agent_id, request).await?;
    stream(run, &on_event).await
}

/// Deletes a message (an assistant message with its tool results); returns the ids removed.
#[tauri::command(rename_all = "snake_case")]
pub fn delete_message(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    message_id: MessageId,
) -> IpcResult<Vec<MessageId>> {
    Ok(d.engram.delete_message(&agent_id, &message_id)?)
}

/// Starts a new conversation: the context window restarts, recall keeps every message.
#[tauri::command(rename_all = "snake_case")]
pub fn reset_messages(d: State<'_, Desktop>, agent_id: AgentId) -> IpcResult<usize> {
    Ok(d.engram.reset_messages(&agent_id)?)
}

/// How the agent's runs ended (only `run_ids` when given).
#[tauri::command(rename_all = "snake_case")]
pub fn run_records(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    run_ids: Option<Vec<RunId>>,
) -> IpcResult<Vec<RunRecord>> {
    Ok(d.engram.run_records(&agent_id, run_ids.as_deref())?)
}

/// The block edits the tool calls of `run_ids` made, from stored history.
#[tauri::command(rename_all = "snake_case")]
pub fn run_edits(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    run_ids: Option<Vec<RunId>>,
) -> IpcResult<Vec<ToolEdit>> {
    Ok(d.engram
        .run_edits(&agent_id, run_ids.as_deref().unwrap_or_default())?)
}

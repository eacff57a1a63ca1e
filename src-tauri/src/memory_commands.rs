//! The window's block management, compiled-context view and model picker commands
//! (issue #10). Same names and arguments as `/app/{command}`
//! (`crates/server/src/app_memory.rs`).

use crate::Desktop;
use crate::error::IpcResult;
use engram_core::{AgentId, Block, BlockId, EditId, NewBlock};
use engram_service::{AgentState, ChatModel, ContextView, ModelWindow};
use engram_service::{SharedBlock, UndoPlan};
use tauri::State;

/// Creates a block and attaches it to the agent, in one transaction.
#[tauri::command(rename_all = "snake_case")]
pub fn create_agent_block(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    new: NewBlock,
) -> IpcResult<Block> {
    Ok(d.engram.create_agent_block(&agent_id, &new)?)
}

/// Every block with the agents it is attached to.
#[tauri::command(rename_all = "snake_case")]
pub fn shared_blocks(d: State<'_, Desktop>) -> IpcResult<Vec<SharedBlock>> {
    Ok(d.engram.shared_blocks()?)
}

/// Attaches an existing block to the agent (shared memory).
#[tauri::command(rename_all = "snake_case")]
pub fn attach_block(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    block_id: BlockId,
) -> IpcResult<AgentState> {
    Ok(d.engram.attach_block(&agent_id, &block_id)?)
}

/// Detaches a block from the agent; the block stays for the others.
#[tauri::command(rename_all = "snake_case")]
pub fn detach_block(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    block_id: BlockId,
) -> IpcResult<AgentState> {
    Ok(d.engram.detach_block(&agent_id, &block_id)?)
}

/// Deletes a block for every agent it is attached to.
#[tauri::command(rename_all = "snake_case")]
pub fn delete_block(d: State<'_, Desktop>, block_id: BlockId) -> IpcResult<()> {
    Ok(d.engram.delete_block(&block_id)?)
}

/// What undoing an edit would do now (nothing is written).
#[tauri::command(rename_all = "snake_case")]
pub fn block_undo_plan(d: State<'_, Desktop>, edit_id: EditId) -> IpcResult<UndoPlan> {
    Ok(d.engram.block_undo_plan(&edit_id)?)
}

/// Restores the whole value before an edit, dropping later edits; with `version`, only if the
/// block is still at it.
#[tauri::command(rename_all = "snake_case")]
pub fn restore_block_edit(
    d: State<'_, Desktop>,
    edit_id: EditId,
    version: Option<u64>,
) -> IpcResult<Block> {
    Ok(d.engram.restore_block_edit(&edit_id, version)?)
}

/// The agent's next request as the model will receive it, with tokens per part.
#[tauri::command(rename_all = "snake_case")]
pub fn context_view(d: State<'_, Desktop>, agent_id: AgentId) -> IpcResult<ContextView> {
    Ok(d.engram.context_view(&agent_id)?)
}

/// The provider's chat models with their context windows (embedding models left out).
#[tauri::command(rename_all = "snake_case")]
pub async fn chat_models(d: State<'_, Desktop>, name: String) -> IpcResult<Vec<ChatModel>> {
    Ok(d.engram.chat_models(&name).await?)
}

/// The context windows stored per model.
#[tauri::command(rename_all = "snake_case")]
pub fn model_windows(d: State<'_, Desktop>) -> IpcResult<Vec<ModelWindow>> {
    Ok(d.engram.model_windows()?)
}

/// Stores a model's context window (tokens).
#[tauri::command(rename_all = "snake_case")]
pub fn set_model_window(
    d: State<'_, Desktop>,
    handle: String,
    context_window: u32,
) -> IpcResult<()> {
    Ok(d.engram.set_model_window(&handle, context_window)?)
}

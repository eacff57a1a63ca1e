//! `/app/…` commands of the memory panel's block management, the compiled-context view and
//! the model picker (issue #10). Same names and arguments as the desktop shell's commands
//! (`src-tauri/src/memory_commands.rs`).

use crate::AppState;
use crate::app::{AppResult, Args, done};
use axum::Router;
use axum::extract::State;
use axum::routing::post;
use engram_core::{AgentId, BlockId, EditId, NewBlock};
use serde::{Deserialize, Serialize};

/// The routes, merged into [`crate::app::routes`].
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/app/create_agent_block", post(create_agent_block))
        .route("/app/shared_blocks", post(shared_blocks))
        .route("/app/attach_block", post(attach_block))
        .route("/app/detach_block", post(detach_block))
        .route("/app/delete_block", post(delete_block))
        .route("/app/block_undo_plan", post(block_undo_plan))
        .route("/app/restore_block_edit", post(restore_block_edit))
        .route("/app/context_view", post(context_view))
        .route("/app/chat_models", post(chat_models))
        .route("/app/model_windows", post(model_windows))
        .route("/app/set_model_window", post(set_model_window))
}

#[derive(Deserialize)]
struct NoArgs {}

#[derive(Deserialize)]
struct AgentArg {
    agent_id: AgentId,
}

#[derive(Deserialize)]
struct NewBlockArg {
    agent_id: AgentId,
    new: NewBlock,
}

#[derive(Deserialize)]
struct AgentBlockArg {
    agent_id: AgentId,
    block_id: BlockId,
}

#[derive(Deserialize)]
struct BlockIdArg {
    block_id: BlockId,
}

#[derive(Deserialize)]
struct EditArg {
    edit_id: EditId,
    #[serde(default)]
    version: Option<u64>,
}

#[derive(Deserialize)]
struct NameArg {
    name: String,
}

#[derive(Deserialize)]
struct WindowArg {
    handle: String,
    context_window: u32,
}

async fn create_agent_block(
    State(s): State<AppState>,
    Args(a): Args<NewBlockArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.create_agent_block(&a.agent_id, &a.new))
}

async fn shared_blocks(
    State(s): State<AppState>,
    Args(_): Args<NoArgs>,
) -> AppResult<impl Serialize> {
    done(s.engram.shared_blocks())
}

async fn attach_block(
    State(s): State<AppState>,
    Args(a): Args<AgentBlockArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.attach_block(&a.agent_id, &a.block_id))
}

async fn detach_block(
    State(s): State<AppState>,
    Args(a): Args<AgentBlockArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.detach_block(&a.agent_id, &a.block_id))
}

async fn delete_block(State(s): State<AppState>, Args(a): Args<BlockIdArg>) -> AppResult<()> {
    done(s.engram.delete_block(&a.block_id))
}

async fn block_undo_plan(
    State(s): State<AppState>,
    Args(a): Args<EditArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.block_undo_plan(&a.edit_id))
}

async fn restore_block_edit(
    State(s): State<AppState>,
    Args(a): Args<EditArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.restore_block_edit(&a.edit_id, a.version))
}

async fn context_view(
    State(s): State<AppState>,
    Args(a): Args<AgentArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.context_view(&a.agent_id))
}

async fn chat_models(
    State(s): State<AppState>,
    Args(a): Args<NameArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.chat_models(&a.name).await)
}

async fn model_windows(
    State(s): State<AppState>,
    Args(_): Args<NoArgs>,
) -> AppResult<impl Serialize> {
    done(s.engram.model_windows())
}

async fn set_model_window(State(s): State<AppState>, Args(a): Args<WindowArg>) -> AppResult<()> {
    done(s.engram.set_model_window(&a.handle, a.context_window))
}

//! `/app/…` message actions (issue #10): regenerate and edit & resend (each streamed as Server-
//! Sent Events like `send_message`), their previews of what will be undone, deleting a
//! message, starting a new conversation (the context window restarts; recall keeps the old
//! messages), and what stored runs left behind (how each ended, the edit under each tool
//! call). Same names and arguments as the desktop shell's commands.

use crate::AppState;
use crate::app::{AppResult, Args, done};
use crate::app_chat::start;
use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use engram_core::{AgentId, MessageId, RunId};
use engram_service::RunRequest;
use serde::{Deserialize, Serialize};

/// The routes, merged into [`crate::app::routes`].
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/app/regenerate_preview", post(regenerate_preview))
        .route("/app/rollback_preview", post(rollback_preview))
        .route("/app/regenerate", post(regenerate))
        .route("/app/edit_and_resend", post(edit_and_resend))
        .route("/app/delete_message", post(delete_message))
        .route("/app/reset_messages", post(reset_messages))
        .route("/app/run_records", post(run_records))
        .route("/app/run_edits", post(run_edits))
}

#[derive(Deserialize)]
struct AgentArg {
    agent_id: AgentId,
}

#[derive(Deserialize)]
struct MessageArg {
    agent_id: AgentId,
    message_id: MessageId,
}

#[derive(Deserialize)]
struct ResendArg {
    agent_id: AgentId,
    message_id: MessageId,
    text: String,
}

#[derive(Deserialize)]
struct RunsArg {
    agent_id: AgentId,
    #[serde(default)]
    run_ids: Option<Vec<RunId>>,
}

async fn regenerate_preview(
    State(s): State<AppState>,
    Args(a): Args<AgentArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.regenerate_preview(&a.agent_id))
}

async fn rollback_preview(
    State(s): State<AppState>,
    Args(a): Args<MessageArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.rollback_preview(&a.agent_id, &a.message_id))
}

async fn regenerate(
    State(s): State<AppState>,
    Args(a): Args<AgentArg>,
) -> Result<Response, crate::app::AppError> {
    start(s, a.agent_id, RunRequest::Regenerate).await
}

async fn edit_and_resend(
    State(s): State<AppState>,
    Args(a): Args<ResendArg>,
) -> Result<Response, crate::app::AppError> {
    let request = RunRequest::EditAndResend {
        message_id: a.message_id,
        text: a.text,
    };
    start(s, a.agent_id, request).await
}

async fn delete_message(
    State(s): State<AppState>,
    Args(a): Args<MessageArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.delete_message(&a.agent_id, &a.message_id))
}

async fn reset_messages(
    State(s): State<AppState>,
    Args(a): Args<AgentArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.reset_messages(&a.agent_id))
}

async fn run_records(
    State(s): State<AppState>,
    Args(a): Args<RunsArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.run_records(&a.agent_id, a.run_ids.as_deref()))
}

async fn run_edits(State(s): State<AppState>, Args(a): Args<RunsArg>) -> AppResult<impl Serialize> {
    done(
        s.engram
            .run_edits(&a.agent_id, a.run_ids.as_deref().unwrap_or_default()),
    )
}

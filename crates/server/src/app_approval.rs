//! `/app/…` commands for tool calls a person approves: the per-agent "ask before running"
//! setting, the pending call, and the decision (answered as Server-Sent Events, like
//! `send_message`, since the paused run goes on). Same names and arguments as the desktop
//! shell's commands.

use crate::AppState;
use crate::app::{AppError, AppResult, Args, done};
use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use engram_core::{AgentId, ApprovalDecision};
use engram_service::RunRequest;
use serde::{Deserialize, Serialize};

/// The routes, merged into [`crate::app::routes`].
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/app/pending_approval", post(pending_approval))
        .route("/app/resolve_approval", post(resolve_approval))
        .route("/app/set_tool_approval", post(set_tool_approval))
}

#[derive(Deserialize)]
struct AgentArg {
    agent_id: AgentId,
}

#[derive(Deserialize)]
struct DecisionArg {
    agent_id: AgentId,
    decision: ApprovalDecision,
}

#[derive(Deserialize)]
struct RuleArg {
    agent_id: AgentId,
    tool: String,
    on: bool,
}

async fn pending_approval(
    State(s): State<AppState>,
    Args(a): Args<AgentArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.pending_approval(&a.agent_id))
}

/// The run going on after the decision, as SSE (one `RunEvent` per event, ending after
/// `done`); errors found before it starts (nothing pending, another call named) are ordinary
/// error responses.
async fn resolve_approval(
    State(s): State<AppState>,
    Args(a): Args<DecisionArg>,
) -> Result<Response, AppError> {
    let decisions = vec![a.decision];
    let request = RunRequest::Approvals { decisions };
    crate::app_chat::start(s, a.agent_id, request).await
}

async fn set_tool_approval(
    State(s): State<AppState>,
    Args(a): Args<RuleArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.set_tool_approval(&a.agent_id, &a.tool, a.on))
}

//! `/app/…` commands of the chat window: windows of the conversation for a list that jumps
//! (`message_window`) and joining a run already in flight after a reload (`attach_run`).
//! Same names and arguments as the desktop shell's commands.

use crate::AppState;
use crate::app::{AppResult, Args, done};
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use engram_core::AgentId;
use engram_service::WindowAt;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use std::convert::Infallible;

/// The routes, merged into [`crate::app::routes`].
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/app/message_window", post(message_window))
        .route("/app/attach_run", post(attach_run))
}

#[derive(Deserialize)]
struct WindowArgs {
    agent_id: AgentId,
    at: WindowAt,
    limit: usize,
}

#[derive(Deserialize)]
struct AgentArg {
    agent_id: AgentId,
}

async fn message_window(
    State(s): State<AppState>,
    Args(a): Args<WindowArgs>,
) -> AppResult<impl Serialize> {
    done(s.engram.message_window(&a.agent_id, &a.at, a.limit))
}

/// The agent's run in flight as SSE (what it streamed so far, then the rest, ending after
/// `done`), or JSON `null` when the agent is not running. 404 for an unknown agent.
async fn attach_run(
    State(s): State<AppState>,
    Args(a): Args<AgentArg>,
) -> Result<Response, crate::app::AppError> {
    s.engram.get_agent(&a.agent_id)?;
    let Some(run) = s.engram.attach_run(&a.agent_id) else {
        return Ok(Json(serde_json::Value::Null).into_response());
    };
    let mut rest = run.events;
    let stream = futures::stream::iter(run.so_far)
        .chain(futures::stream::poll_fn(move |cx| rest.poll_recv(cx)))
        .map(|event| Event::default().json_data(&event))
        .filter_map(|e| async move { e.ok().map(Ok::<_, Infallible>) });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

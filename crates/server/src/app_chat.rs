//! `/app/attach_run`, joining a run already in flight after a reload (the one `/app` command
//! answered by hand: it streams, or answers `null`), and the SSE answer of every run command.
//! Same name and arguments (`engram_service::commands::AttachRunArgs`) as the desktop
//! shell's command.

use crate::access::Principal;
use crate::config::AppState;
use crate::errors::AppError;
use crate::json::Args;
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Extension, Json, Router};
use engram_core::AgentId;
use engram_service::commands::AttachRunArgs;
use engram_service::{RunEvents, RunRequest};
use futures::StreamExt;
use std::convert::Infallible;

/// The routes, merged into [`crate::app::routes`].
pub(crate) fn routes() -> Router<AppState> {
    Router::new().route("/app/attach_run", post(attach_run))
}

/// The agent's run in flight as SSE (what it streamed so far, then the rest, ending after
/// `done`), or JSON `null` when the agent is not running. 404 for an unknown agent.
async fn attach_run(
    State(s): State<AppState>,
    principal: Option<Extension<Principal>>,
    Args(a): Args<AttachRunArgs>,
) -> Result<Response, AppError> {
    if let Some(user) = principal.as_ref().and_then(|Extension(p)| p.user()) {
        let def = engram_service::commands::find("attach_run")
            .ok_or_else(|| engram_core::Error::Internal("attach_run is not listed".into()))?;
        let args = serde_json::json!({ "agent_id": a.agent_id });
        if let Some(refused) = crate::access::app_refusal(&s, user, def, &args).await {
            return Ok(refused);
        }
    }
    s.engram.agents().get(&a.agent_id).await?;
    let Some(events) = s.engram.runs().attach(&a.agent_id) else {
        return Ok(Json(serde_json::Value::Null).into_response());
    };
    Ok(sse(events))
}

/// Starts `request` and answers the run as SSE ([`sse`]); errors that kept it from starting
/// (a conflict, nothing to regenerate, no provider) are ordinary `{code, message}` responses.
/// Every streaming `/app` command (`send_message`, `regenerate`, `edit_and_resend`,
/// `resolve_approval`) is this over one `Runs::start`.
pub(crate) async fn start(
    s: AppState,
    agent: AgentId,
    request: RunRequest,
) -> Result<Response, AppError> {
    let run = s.engram.runs().start(&agent, request).await?;
    Ok(sse(run.events))
}

/// A run's events as Server-Sent Events, one [`RunEvent`](engram_core::RunEvent) as JSON per
/// event, ending after `done`. The run goes on if the browser goes away (stop it with
/// `cancel_run`), so the stored conversation stays whole.
pub(crate) fn sse(events: RunEvents) -> Response {
    let stream = events
        .map(|event| Event::default().json_data(&event))
        .filter_map(|e| async move { e.ok().map(Ok::<_, Infallible>) });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

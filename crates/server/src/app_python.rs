//! `/app/…` commands for the Python tools run in: its status, and setting one up with
//! letta-client (progress arrives as `python_setup` notices). Same names and arguments as the
//! desktop shell's commands.

use crate::AppState;
use crate::app::{AppResult, Args, done};
use axum::Router;
use axum::extract::State;
use axum::routing::post;
use engram_core::Error;
use serde::{Deserialize, Serialize};

/// The routes, merged into [`crate::app::routes`].
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/app/tool_python", post(tool_python))
        .route("/app/set_up_tool_python", post(set_up_tool_python))
}

#[derive(Deserialize)]
struct NoArgs {}

#[derive(Deserialize)]
struct SetupArgs {
    #[serde(default)]
    requirement: Option<String>,
}

async fn tool_python(
    State(s): State<AppState>,
    Args(_): Args<NoArgs>,
) -> AppResult<impl Serialize> {
    let engram = s.engram.clone();
    done(
        tokio::task::spawn_blocking(move || engram.tool_python())
            .await
            .map_err(|e| Error::Internal(format!("python status: {e}"))),
    )
}

async fn set_up_tool_python(
    State(s): State<AppState>,
    Args(a): Args<SetupArgs>,
) -> AppResult<impl Serialize> {
    // pip runs the install code of what it installs, with the user's rights.
    crate::app_mcp::require_token(&s, "setting up the tools' Python")?;
    let engram = s.engram.clone();
    done(
        tokio::task::spawn_blocking(move || {
            engram.set_up_tool_python(a.requirement.as_deref(), &mut |_| {})
        })
        .await
        .map_err(|e| Error::Internal(format!("python setup: {e}")))
        .and_then(|r| r),
    )
}

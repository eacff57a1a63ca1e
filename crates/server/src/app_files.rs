//! `/app/export_agents`: an export (one agent or all; Agent File, Markdown or the JSON report)
//! as a file name and contents, which the browser build saves as a download. The desktop
//! shell has the same command, plus ones that save and open through native dialogs.

use crate::AppState;
use crate::app::{AppResult, Args, done};
use axum::Router;
use axum::extract::State;
use axum::routing::post;
use engram_core::AgentId;
use engram_service::{ExportFile, ExportFormat};
use serde::Deserialize;

/// The routes, merged into [`crate::app::routes`].
pub(crate) fn routes() -> Router<AppState> {
    Router::new().route("/app/export_agents", post(export_agents))
}

#[derive(Deserialize)]
struct ExportArgs {
    /// `None` (or absent) exports every agent.
    #[serde(default)]
    agent_ids: Option<Vec<AgentId>>,
    format: ExportFormat,
}

async fn export_agents(
    State(s): State<AppState>,
    Args(a): Args<ExportArgs>,
) -> AppResult<ExportFile> {
    let engram = s.engram.clone();
    done(
        tokio::task::spawn_blocking(move || engram.export_agents(a.agent_ids.as_deref(), a.format))
            .await
            .map_err(|e| engram_core::Error::Internal(format!("export: {e}")))
            .and_then(|r| r),
    )
}

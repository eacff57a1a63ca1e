//! `/app/…` commands for archival search's reranker (the window's search settings). Same names
//! and arguments as the desktop shell's commands (`src-tauri/src/search_commands.rs`); the
//! shell's folder dialog (`pick_rerank_model_dir`) has no route: the browser build types the
//! folder into `set_rerank_model_dir`.

use crate::AppState;
use crate::app::{AppResult, Args, done};
use axum::Router;
use axum::extract::State;
use axum::routing::post;
use engram_service::RerankerStatus;
use serde::Deserialize;

/// The routes, merged into [`crate::app::routes`].
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/app/reranker_status", post(reranker_status))
        .route("/app/set_rerank_model_dir", post(set_rerank_model_dir))
        .route("/app/set_rerank_enabled", post(set_rerank_enabled))
}

#[derive(Deserialize)]
struct NoArgs {}

#[derive(Deserialize)]
struct DirArg {
    /// The weights folder; `null` (or absent) removes it.
    #[serde(default)]
    dir: Option<String>,
}

#[derive(Deserialize)]
struct EnabledArg {
    enabled: bool,
}

async fn reranker_status(
    State(s): State<AppState>,
    Args(_): Args<NoArgs>,
) -> AppResult<RerankerStatus> {
    done(Ok(s.engram.reranker_status()))
}

async fn set_rerank_model_dir(
    State(s): State<AppState>,
    Args(a): Args<DirArg>,
) -> AppResult<RerankerStatus> {
    done(s.engram.set_rerank_folder(a.dir.as_deref()))
}

async fn set_rerank_enabled(
    State(s): State<AppState>,
    Args(a): Args<EnabledArg>,
) -> AppResult<RerankerStatus> {
    done(s.engram.set_rerank_enabled(a.enabled))
}

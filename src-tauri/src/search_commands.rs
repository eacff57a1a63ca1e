//! The reranker's folder dialog: `pick_rerank_model_dir` asks for the weights folder in the
//! native folder dialog (the browser build types the folder into `set_rerank_model_dir`, a
//! call the service answers on both transports).
//!
//! Native dialogs cannot be driven by WebDriver, so debug builds take the folder the dialog
//! would return from `ENGRAM_TEST_OPEN_DIR` when set; release builds never read it.

use crate::error::IpcResult;
use crate::state::Desktop;
use engram_core::Error;
use engram_service::RerankerStatus;
use tauri::{AppHandle, Manager, Runtime, State};
use tauri_plugin_dialog::{Dialog, DialogExt};

/// Asks for the reranker's weights folder in the native folder dialog and sets it. Returns the
/// new status, or `None` when the user cancelled.
#[tauri::command(rename_all = "snake_case")]
pub async fn pick_rerank_model_dir<R: Runtime>(
    app: AppHandle<R>,
    d: State<'_, Desktop>,
) -> IpcResult<Option<RerankerStatus>> {
    let test_dir = if cfg!(debug_assertions) {
        std::env::var("ENGRAM_TEST_OPEN_DIR").ok()
    } else {
        None
    };
    let dir = match test_dir {
        Some(d) => Some(d),
        None => {
            if app.try_state::<Dialog<R>>().is_none() {
                return Err(Error::Internal("this window has no file dialogs".into()).into());
            }
            let dialog = app
                .dialog()
                .file()
                .set_title("Choose the reranker's weights folder");
            tokio::task::spawn_blocking(move || dialog.blocking_pick_folder())
                .await
                .map_err(|e| Error::Internal(format!("folder dialog: {e}")))?
                .map(|p| {
                    p.into_path()
                        .map(|p| p.display().to_string())
                        .map_err(|e| Error::invalid(format!("cannot use that folder: {e}")))
                })
                .transpose()?
        }
    };
    let Some(dir) = dir else { return Ok(None) };
    Ok(Some(d.engram.models().set_rerank_folder(Some(&dir))?))
}

//! The native folder dialogs: `pick_rerank_model_dir` asks for the reranker's weights folder,
//! `pick_watch_dir` for the directory a folder of documents follows (the browser build types
//! the path into `set_rerank_model_dir` or `watch_folder`, calls the service answers on both
//! transports).
//!
//! Native dialogs cannot be driven by WebDriver, so debug builds take the folder the dialog
//! would return from `ENGRAM_TEST_OPEN_DIR` when set; release builds never read it.

use crate::args::Args;
use crate::error::IpcResult;
use crate::state::Desktop;
use engram_core::{Error, FolderWatch, Result};
use engram_service::RerankerStatus;
use engram_service::commands::PickWatchDirArgs;
use tauri::{AppHandle, Manager, Runtime, State};
use tauri_plugin_dialog::{Dialog, DialogExt};

/// Asks for a folder in the native folder dialog titled `title`. Returns its path, or `None`
/// when the user cancelled. Errors: `internal` when the window has no dialogs; `invalid` for
/// a pick that is not a local path.
async fn pick_folder<R: Runtime>(app: &AppHandle<R>, title: &str) -> Result<Option<String>> {
    if cfg!(debug_assertions)
        && let Ok(dir) = std::env::var("ENGRAM_TEST_OPEN_DIR")
    {
        return Ok(Some(dir));
    }
    if app.try_state::<Dialog<R>>().is_none() {
        return Err(Error::Internal("this window has no file dialogs".into()));
    }
    let dialog = app.dialog().file().set_title(title);
    tokio::task::spawn_blocking(move || dialog.blocking_pick_folder())
        .await
        .map_err(|e| Error::Internal(format!("folder dialog: {e}")))?
        .map(|p| {
            p.into_path()
                .map(|p| p.display().to_string())
                .map_err(|e| Error::invalid(format!("cannot use that folder: {e}")))
        })
        .transpose()
}

/// Asks for the reranker's weights folder in the native folder dialog and sets it. Returns the
/// new status, or `None` when the user cancelled.
#[tauri::command(rename_all = "snake_case")]
pub async fn pick_rerank_model_dir<R: Runtime>(
    app: AppHandle<R>,
    d: State<'_, Desktop>,
) -> IpcResult<Option<RerankerStatus>> {
    if let Some(remote) = d.remote.current() {
        return Err(crate::remote_link::not_while_remote(
            "A reranker folder on this computer",
            &remote,
        ));
    }
    let Some(dir) = pick_folder(&app, "Choose the reranker's weights folder").await? else {
        return Ok(None);
    };
    Ok(Some(d.engram.models().set_rerank_folder(Some(&dir))?))
}

/// Asks for the directory the folder `folder_id` (the one argument) should follow in the native folder dialog
/// and links it (as `watch_folder`). Returns the link, or `None` when the user cancelled.
#[tauri::command(rename_all = "snake_case")]
pub async fn pick_watch_dir<R: Runtime>(
    app: AppHandle<R>,
    d: State<'_, Desktop>,
    args: Args<PickWatchDirArgs>,
) -> IpcResult<Option<FolderWatch>> {
    let PickWatchDirArgs { folder_id } = args.0;
    if let Some(remote) = d.remote.current() {
        return Err(crate::remote_link::not_while_remote(
            "Following a directory of this computer",
            &remote,
        ));
    }
    // The folder is checked first: no dialog for a folder that is gone.
    d.engram.folders().get(&folder_id)?;
    let Some(dir) = pick_folder(&app, "Choose the directory this folder follows").await? else {
        return Ok(None);
    };
    Ok(Some(
        d.engram
            .folders()
            .watch(&folder_id, std::path::Path::new(&dir))?,
    ))
}

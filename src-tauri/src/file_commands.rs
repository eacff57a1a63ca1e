//! Exports and imports through the native save and open dialogs. The shell shows the dialog
//! itself, so the path always comes from the user's choice, never from the window's
//! JavaScript; the service writes or reads the file. (`export_agents`, a call the service
//! answers on both transports, returns the export instead, for the window to use as it likes.)
//!
//! Native dialogs cannot be driven by WebDriver, so debug builds (the desktop smoke test runs
//! one) take the path the dialog would return from `ENGRAM_TEST_SAVE_PATH` /
//! `ENGRAM_TEST_OPEN_PATH` when set; release builds never read them.

use crate::args::Args;
use crate::error::IpcResult;
use crate::state::Desktop;
use engram_core::Error;
use engram_service::commands::ExportAgentsArgs;
use engram_service::{ExportFile, ExportFormat, ImportReport};
use std::path::PathBuf;
use tauri::{AppHandle, Manager, Runtime, State};
use tauri_plugin_dialog::{Dialog, DialogExt};

/// The path a test build's dialog "returns", from `var`.
fn test_path(var: &str) -> Option<PathBuf> {
    if cfg!(debug_assertions) {
        std::env::var_os(var).map(PathBuf::from)
    } else {
        None
    }
}

fn no_dialog() -> Error {
    Error::Internal("this window has no file dialogs".into())
}

/// Asks where to save the export in the native save dialog and writes it there. Returns the
/// path written, or `None` when the user cancelled.
#[tauri::command(rename_all = "snake_case")]
pub async fn export_to_file<R: Runtime>(
    app: AppHandle<R>,
    d: State<'_, Desktop>,
    args: Args<ExportAgentsArgs>,
) -> IpcResult<Option<String>> {
    let ExportAgentsArgs { agent_ids, format } = args.0;
    // On a server, the file is made there and saved here.
    let fetched: Option<ExportFile> = match d.remote.current() {
        Some(remote) => Some(
            serde_json::from_value(
                remote
                    .call(
                        "export_agents",
                        &serde_json::json!({"agent_ids": agent_ids, "format": format}),
                    )
                    .await?,
            )
            .map_err(|e| Error::Internal(format!("the server's export: {e}")))?,
        ),
        None => None,
    };
    let engram = d.engram.clone();
    // The name to offer needs the export's stem; the file itself is written after the choice.
    let offered = if let Some(file) = &fetched {
        file.file_name.clone()
    } else {
        let e = engram.clone();
        let ids = agent_ids.clone();
        tokio::task::spawn_blocking(move || {
            tokio::runtime::Handle::current()
                .block_on(e.agent_files().export_all(ids.as_deref(), format))
        })
        .await
        .map_err(|e| Error::Internal(format!("export: {e}")))??
        .file_name
    };
    let path = match test_path("ENGRAM_TEST_SAVE_PATH") {
        Some(p) => Some(p),
        None => {
            if app.try_state::<Dialog<R>>().is_none() {
                return Err(no_dialog().into());
            }
            let (label, ext) = match format {
                ExportFormat::Af => ("Agent File", "af"),
                ExportFormat::Markdown => ("Markdown", "md"),
                ExportFormat::Json => ("JSON report", "json"),
            };
            let dialog = app
                .dialog()
                .file()
                .set_title("Export agents")
                .set_file_name(offered)
                .add_filter(label, &[ext]);
            tokio::task::spawn_blocking(move || dialog.blocking_save_file())
                .await
                .map_err(|e| Error::Internal(format!("save dialog: {e}")))?
                .map(|p| {
                    p.into_path()
                        .map_err(|e| Error::invalid(format!("cannot save there: {e}")))
                })
                .transpose()?
        }
    };
    let Some(path) = path else { return Ok(None) };
    if let Some(file) = fetched {
        std::fs::write(&path, file.contents)
            .map_err(|e| Error::invalid(format!("cannot write {}: {e}", path.display())))?;
        return Ok(Some(path.display().to_string()));
    }
    let written = tokio::task::spawn_blocking(move || {
        tokio::runtime::Handle::current().block_on(engram.agent_files().export_all_to(
            agent_ids.as_deref(),
            format,
            &path,
        ))
    })
    .await
    .map_err(|e| Error::Internal(format!("export: {e}")))??;
    Ok(Some(written.display().to_string()))
}

/// Asks for an agent file in the native open dialog and imports it. Returns the import
/// report, or `None` when the user cancelled.
#[tauri::command(rename_all = "snake_case")]
pub async fn import_from_file<R: Runtime>(
    app: AppHandle<R>,
    d: State<'_, Desktop>,
) -> IpcResult<Option<ImportReport>> {
    let path = match test_path("ENGRAM_TEST_OPEN_PATH") {
        Some(p) => Some(p),
        None => {
            if app.try_state::<Dialog<R>>().is_none() {
                return Err(no_dialog().into());
            }
            let dialog = app
                .dialog()
                .file()
                .set_title("Import an agent file")
                .add_filter("Agent File", &["af", "json"]);
            tokio::task::spawn_blocking(move || dialog.blocking_pick_file())
                .await
                .map_err(|e| Error::Internal(format!("open dialog: {e}")))?
                .map(|p| {
                    p.into_path()
                        .map_err(|e| Error::invalid(format!("cannot open that file: {e}")))
                })
                .transpose()?
        }
    };
    let Some(path) = path else { return Ok(None) };
    if let Some(remote) = d.remote.current() {
        // Read here, imported there.
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let contents = read_agent_file(&path)?;
        let report = remote
            .call(
                "import_agent_file",
                &serde_json::json!({"contents": contents, "file_name": name}),
            )
            .await?;
        return Ok(Some(serde_json::from_value(report).map_err(|e| {
            Error::Internal(format!("the server's import report: {e}"))
        })?));
    }
    let engram = d.engram.clone();
    Ok(Some(
        tokio::task::spawn_blocking(move || {
            tokio::runtime::Handle::current().block_on(engram.agent_files().import_at(&path))
        })
        .await
        .map_err(|e| Error::Internal(format!("import: {e}")))??,
    ))
}

/// An agent file's text, read for a server to import (at most the engine's limit).
/// Errors: `invalid_input` naming the file.
fn read_agent_file(path: &std::path::Path) -> IpcResult<String> {
    use std::io::Read as _;
    let limit = engram_service::AGENT_FILE_MAX_BYTES;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(limit + 1).read_to_end(&mut bytes))
        .map_err(|e| Error::invalid(format!("cannot read {}: {e}", path.display())))?;
    if bytes.len() as u64 > limit {
        return Err(Error::invalid(format!(
            "{} is over {limit} bytes, the largest agent file Engram reads",
            path.display()
        ))
        .into());
    }
    String::from_utf8(bytes)
        .map_err(|_| Error::invalid(format!("{} is not text (UTF-8)", path.display())).into())
}

//! The window's commands for the Python tools run in: its status, and setting one up with
//! letta-client (progress arrives as `python_setup` notices). Same names and arguments as
//! `/app/{command}` (`crates/server/src/app_python.rs`).

use crate::Desktop;
use crate::error::IpcResult;
use engram_core::Error;
use engram_service::ToolPython;
use tauri::State;

/// Which Python tools run in, and whether it has letta-client.
#[tauri::command(rename_all = "snake_case")]
pub async fn tool_python(d: State<'_, Desktop>) -> IpcResult<ToolPython> {
    let engram = d.engram.clone();
    Ok(tokio::task::spawn_blocking(move || engram.tool_python())
        .await
        .map_err(|e| Error::Internal(format!("python status: {e}")))?)
}

/// Sets up a Python for tools in the data directory with letta-client (or `requirement`).
#[tauri::command(rename_all = "snake_case")]
pub async fn set_up_tool_python(
    d: State<'_, Desktop>,
    requirement: Option<String>,
) -> IpcResult<ToolPython> {
    let engram = d.engram.clone();
    let status = tokio::task::spawn_blocking(move || {
        engram.set_up_tool_python(requirement.as_deref(), &mut |_| {})
    })
    .await
    .map_err(|e| Error::Internal(format!("python setup: {e}")))??;
    Ok(status)
}

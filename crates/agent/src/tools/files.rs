//! `open_files`: the file tool that moves windows. An open file's window (numbered lines) is
//! compiled into the context window (`compile::files_section`) from the next step on; at most
//! [`MAX_OPEN_FILES`] stay open, the least recently used closing first, and the result says
//! which closed.

use super::args::Args;
use super::context::ToolContext;
use engram_core::{FileStatus, FolderFile};
use engram_store_api::FolderStore;
use serde_json::Value;

/// The most files an agent has open at once.
pub const MAX_OPEN_FILES: usize = 5;
/// Lines a window shows when the model does not say.
pub const DEFAULT_WINDOW_LINES: u32 = 100;
/// The most lines one window shows (it is also cut at `engram_store::MAX_WINDOW_CHARS`).
pub const MAX_WINDOW_LINES: u32 = 400;

/// The agent's folders, or why there are none to use (in words for the model).
pub(super) fn folders<'a>(ctx: &ToolContext<'a>) -> Result<&'a dyn FolderStore, String> {
    ctx.folders
        .ok_or_else(|| "Files are not available here: this Engram keeps no folders.".to_owned())
}

/// Finds the readable file the agent calls `name`, or says why not (in words for the model).
pub(super) async fn readable(ctx: &ToolContext<'_>, name: &str) -> Result<FolderFile, String> {
    let folders = folders(ctx)?;
    let found = folders
        .agent_file(&ctx.agent.id, name)
        .await
        .map_err(|e| e.to_string())?;
    let Some(file) = found else {
        let names: Vec<String> = folders
            .agent_files(&ctx.agent.id)
            .await
            .map_err(|e| e.to_string())?
            .into_iter()
            .take(20)
            .map(|f| f.file_name)
            .collect();
        return Err(format!(
            "No file named '{name}' in your folders. Files: {}.",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        ));
    };
    match file.status {
        FileStatus::Completed | FileStatus::Embedding => Ok(file),
        FileStatus::Error => Err(format!(
            "'{name}' could not be read: {}",
            file.error.as_deref().unwrap_or("unknown error")
        )),
        other => Err(format!(
            "'{name}' is still being read ({}); try again shortly.",
            other.as_str()
        )),
    }
}

/// `open_files(file_requests=[{file_name, offset?, length?}], close_all_others?)`: opens each
/// file with a window of `length` lines from line `offset` (1-based), after closing the
/// others when asked. Files it cannot open are reported; the rest still open.
pub(super) async fn open(ctx: &mut ToolContext<'_>, args: &Args) -> Result<String, String> {
    let folders = folders(ctx)?;
    let requests = match args.value("file_requests") {
        Some(Value::Array(r)) => r.clone(),
        Some(Value::Object(o)) => vec![Value::Object(o.clone())],
        Some(other) => {
            return Err(format!(
                "Argument 'file_requests' must be a list of {{file_name, offset, length}}, not {other}."
            ));
        }
        None => return Err("Missing required argument 'file_requests'.".into()),
    };
    if requests.is_empty() {
        return Err("Argument 'file_requests' is empty; name at least one file.".into());
    }
    if requests.len() > MAX_OPEN_FILES {
        return Err(format!(
            "At most {MAX_OPEN_FILES} files can be open at once; you asked for {}.",
            requests.len()
        ));
    }
    let agent = &ctx.agent.id;
    let mut lines = Vec::new();
    let mut opened = 0;
    if args.opt_bool("close_all_others")?.unwrap_or(false) {
        let n = folders
            .close_all_files(agent)
            .await
            .map_err(|e| e.to_string())?;
        if n > 0 {
            lines.push(format!("Closed {n} file(s) first."));
        }
    }
    for r in &requests {
        let Some(name) = r.get("file_name").and_then(Value::as_str) else {
            lines.push(format!("Skipped {r}: it names no 'file_name'."));
            continue;
        };
        let int = |key: &str| r.get(key).and_then(Value::as_i64);
        let offset = int("offset").unwrap_or(1).clamp(1, i64::from(u32::MAX)) as u32;
        let asked = int("length").unwrap_or(i64::from(DEFAULT_WINDOW_LINES));
        let length = asked.clamp(1, i64::from(MAX_WINDOW_LINES)) as u32;
        let file = match readable(ctx, name).await {
            Ok(f) => f,
            Err(e) => {
                lines.push(e);
                continue;
            }
        };
        let closed = folders
            .open_file(agent, &file.id, offset, length, MAX_OPEN_FILES)
            .await
            .map_err(|e| e.to_string())?;
        let last = (offset + length - 1).min(file.lines.max(1));
        let mut line = format!(
            "Opened {name}: lines {offset}-{last} of {} are in your context now",
            file.lines
        );
        if asked > i64::from(MAX_WINDOW_LINES) {
            line.push_str(&format!(
                " (a window shows at most {MAX_WINDOW_LINES} lines)"
            ));
        }
        line.push('.');
        if !closed.is_empty() {
            let all = folders
                .agent_files(agent)
                .await
                .map_err(|e| e.to_string())?;
            let names: Vec<&str> = closed
                .iter()
                .filter_map(|id| all.iter().find(|f| &f.file_id == id))
                .map(|f| f.file_name.as_str())
                .collect();
            line.push_str(&format!(
                " Closed {} to stay within {MAX_OPEN_FILES} open files (least recently used).",
                names.join(", ")
            ));
        }
        lines.push(line);
        opened += 1;
    }
    if opened == 0 {
        return Err(lines.join("\n"));
    }
    Ok(lines.join("\n"))
}

//! The Python user tools run in, and a Python Engram sets up for them on request.
//!
//! Tools written like Letta's tutorials import `letta_client` to call Engram back, so the
//! interpreter needs that package. Engram uses, in order: `ENGRAM_PYTHON`; the virtual
//! environment it set up in `<data dir>/python` ([`Tools::set_up_python`]); `python3` on
//! `PATH`.

use engram_core::{Error, Result};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What [`Tools::set_up_python`](crate::Tools::set_up_python) installs by default: the `letta-client` generation
/// Letta's published tutorials are written for (`client.agents.blocks.modify(…)`).
pub const LETTA_CLIENT_REQUIREMENT: &str = "letta-client==0.1.324";

/// Where Engram keeps the Python it sets up, inside the data directory.
pub const TOOL_VENV_DIR: &str = "python";

/// The interpreter of the virtual environment at `venv`.
pub(crate) fn venv_python(venv: &Path) -> PathBuf {
    if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    }
}

/// Which Python tools run in, and what it has.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct ToolPython {
    /// The interpreter: a name searched on `PATH`, or a path.
    pub program: String,
    /// Whether it is the one Engram set up (`<data dir>/python`).
    pub managed: bool,
    /// The `letta_client` version it imports, or `None` when it has none.
    pub letta_client: Option<String>,
    /// Why it cannot run tools at all, or `None` when it can.
    pub unavailable: Option<String>,
}

/// Runs `cmd`, passing each line of its output to `progress`; `what` names it in errors.
pub(crate) fn run(cmd: &mut Command, what: &str, progress: &mut dyn FnMut(&str)) -> Result<()> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::invalid(format!("{what} could not start: {e}")))?;
    // stderr is read on a thread of its own so neither pipe can fill up and stall the child.
    let stderr = child.stderr.take().map(|e| {
        std::thread::spawn(move || {
            BufReader::new(e)
                .lines()
                .map_while(std::result::Result::ok)
                .collect::<Vec<_>>()
        })
    });
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out)
            .lines()
            .map_while(std::result::Result::ok)
        {
            progress(&line);
        }
    }
    let status = child
        .wait()
        .map_err(|e| Error::Internal(format!("{what}: {e}")))?;
    let errors = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    if status.success() {
        return Ok(());
    }
    let tail: Vec<&str> = errors
        .iter()
        .rev()
        .take(5)
        .rev()
        .map(String::as_str)
        .collect();
    Err(Error::invalid(format!(
        "{what} failed ({status}): {}",
        tail.join(" / ")
    )))
}

//! The Python user tools run in, and a Python Engram sets up for them on request.
//!
//! Tools written like Letta's tutorials import `letta_client` to call Engram back, so the
//! interpreter needs that package. Engram uses, in order: `ENGRAM_PYTHON`; the virtual
//! environment it set up in `<data dir>/python` ([`Engram::set_up_tool_python`]); `python3` on
//! `PATH`.

use crate::Engram;
use engram_core::{Error, Result};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What [`Engram::set_up_tool_python`] installs by default: the `letta-client` generation
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

impl Engram {
    /// The Python tools run in and whether it has `letta_client` (starts it once: blocks for
    /// tens of milliseconds).
    pub fn tool_python(&self) -> ToolPython {
        let program = self.python.program();
        let managed = Path::new(&program) == venv_python(&self.home.join(TOOL_VENV_DIR));
        let version = Command::new(&program)
            .args([
                "-I",
                "-c",
                "import letta_client, importlib.metadata as m; print(m.version('letta-client'))",
            ])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
        ToolPython {
            program: program.to_string_lossy().into_owned(),
            managed,
            letta_client: version.filter(|v| !v.is_empty()),
            unavailable: self.python.unavailable_reason(),
        }
    }

    /// Sets up a Python for tools in `<data dir>/python`: a virtual environment made by the
    /// system's `python3` with `requirement` installed by pip (default
    /// [`LETTA_CLIENT_REQUIREMENT`]), then makes it the interpreter tools run in (unless
    /// `ENGRAM_PYTHON` names another). Each line pip prints goes to `progress`. Running it again
    /// updates the environment. Every line is also sent as a `PythonSetup` notice. Blocks for
    /// as long as pip takes (often a minute): transports call it off their async threads.
    ///
    /// Errors: `invalid_input` when `python3` or its `venv` module is missing, or pip fails
    /// (the message carries pip's last lines).
    pub fn set_up_tool_python(
        &self,
        requirement: Option<&str>,
        progress: &mut dyn FnMut(&str),
    ) -> Result<ToolPython> {
        // One requirement, never pip options (`--index-url`, `-r FILE`, `-e URL`).
        if let Some(r) = requirement
            && (r.trim().is_empty() || r.trim_start().starts_with('-'))
        {
            return Err(Error::invalid(format!(
                "'{r}' is not a requirement (e.g. `letta-client==1.2.3`); pip options are not accepted"
            )));
        }
        // Every line also goes out as a notice, for windows showing the setup.
        let progress = &mut |line: &str| {
            self.notify(crate::Notice::PythonSetup {
                line: line.to_owned(),
            });
            progress(line);
        };
        let venv = self.home.join(TOOL_VENV_DIR);
        progress(&format!(
            "Creating a Python environment in {}",
            venv.display()
        ));
        run(
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
            "python3 -m venv (install Python 3 and its venv module, e.g. `apt install python3-venv`)",
            progress,
        )?;
        let requirement = requirement.unwrap_or(LETTA_CLIENT_REQUIREMENT);
        progress(&format!("Installing {requirement}"));
        let python = venv_python(&venv);
        run(
            Command::new(&python).args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--progress-bar",
                "off",
                requirement,
            ]),
            "pip install",
            progress,
        )?;
        if !self.python_from_env {
            self.python.use_program(&python);
        }
        self.notify(crate::Notice::ToolsChanged);
        let status = self.tool_python();
        progress("Done");
        Ok(status)
    }
}

/// Runs `cmd`, passing each line of its output to `progress`; `what` names it in errors.
fn run(cmd: &mut Command, what: &str, progress: &mut dyn FnMut(&str)) -> Result<()> {
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

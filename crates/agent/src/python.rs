//! Where user tools run: one [`PythonRunner`], found lazily on first use.
//!
//! Discovery starts `python3` once (tens of milliseconds), so it is deferred until a Python
//! tool is listed or called, and remembered — including the reason it failed, which is shown
//! next to every Python tool — until the interpreter is changed ([`PythonHost::use_program`],
//! e.g. after Engram set up a Python of its own for tools).

use crate::tool_api::ToolApi;
use engram_tools::{PythonRunner, Unavailable};
use std::ffi::OsString;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The Python interpreter user tools run in, the limits of one call, and the way a call
/// reaches Engram's API back.
pub struct PythonHost {
    program: RwLock<OsString>,
    timeout: Duration,
    /// The `bwrap` program to use instead of the machine's default (`$ENGRAM_BWRAP`, else
    /// `bwrap` on `PATH`, found once per process).
    bwrap: Option<OsString>,
    runner: RwLock<Option<Result<PythonRunner, Unavailable>>>,
    tool_api: RwLock<Option<Arc<dyn ToolApi>>>,
}

impl std::fmt::Debug for PythonHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PythonHost")
            .field("program", &self.program)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Default for PythonHost {
    fn default() -> Self {
        Self::new("python3", PythonRunner::DEFAULT_TIMEOUT)
    }
}

impl PythonHost {
    /// A host that will look for `program` (a name searched on `PATH`, or a path) and give
    /// each call `timeout`.
    pub fn new(program: impl Into<OsString>, timeout: Duration) -> Self {
        Self {
            program: RwLock::new(program.into()),
            timeout,
            bwrap: None,
            runner: RwLock::new(None),
            tool_api: RwLock::new(None),
        }
    }

    /// Installs the way tool calls reach Engram's API (see [`ToolApi`]).
    pub fn set_tool_api(&self, api: Arc<dyn ToolApi>) {
        *self.tool_api.write().unwrap_or_else(|p| p.into_inner()) = Some(api);
    }

    /// The installed [`ToolApi`], if a transport installed one.
    pub fn tool_api(&self) -> Option<Arc<dyn ToolApi>> {
        self.tool_api
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Uses the bubblewrap at `program` (a name on `PATH` or a path) for the sandbox, checked
    /// on first use like the interpreter; a missing one makes every call of a tool that may
    /// not run unsandboxed fail with the reason.
    pub fn with_bwrap(mut self, program: impl Into<OsString>) -> Self {
        self.bwrap = Some(program.into());
        self
    }

    /// The interpreter tools run in: a name searched on `PATH`, or a path.
    pub fn program(&self) -> OsString {
        self.program
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Runs tools in `program` from now on (found again on next use); a call in flight keeps
    /// the interpreter it started with.
    pub fn use_program(&self, program: impl Into<OsString>) {
        *self.program.write().unwrap_or_else(|p| p.into_inner()) = program.into();
        *self.runner.write().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// The runner, or why Python tools cannot run here. Blocks on first use while `python3`
    /// starts; async callers use [`runner_async`](Self::runner_async).
    pub fn runner(&self) -> Result<PythonRunner, Unavailable> {
        if let Some(found) = self.known() {
            return found;
        }
        let program = self.program();
        let found = PythonRunner::discover_at(&program).map(|r| {
            let r = r.with_timeout(self.timeout);
            match &self.bwrap {
                Some(bwrap) => r.with_sandbox(engram_tools::Sandbox::probe(bwrap)),
                None => r,
            }
        });
        let mut slot = self.runner.write().unwrap_or_else(|p| p.into_inner());
        // Keep what was found unless the interpreter changed meanwhile.
        if self.program() == program {
            *slot = Some(found.clone());
        }
        found
    }

    fn known(&self) -> Option<Result<PythonRunner, Unavailable>> {
        self.runner
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Same, discovering on a blocking thread so the async runtime is never held up.
    pub async fn runner_async(self: &Arc<Self>) -> Result<PythonRunner, Unavailable> {
        if let Some(found) = self.known() {
            return found;
        }
        let host = self.clone();
        tokio::task::spawn_blocking(move || host.runner())
            .await
            .unwrap_or_else(|e| {
                Err(Unavailable {
                    reason: format!("looking for python3 failed: {e}"),
                })
            })
    }

    /// Why Python tools cannot run, or `None` when they can (blocks on first use).
    pub fn unavailable_reason(&self) -> Option<String> {
        self.runner().err().map(|u| u.reason)
    }

    /// Why tools cannot run sandboxed here (e.g. "bubblewrap (`bwrap`) is not installed…"),
    /// or `None` when they can or when Python itself is missing (blocks on first use).
    pub fn sandbox_unavailable_reason(&self) -> Option<String> {
        let runner = self.runner().ok()?;
        runner.sandbox().err().map(|u| u.reason.clone())
    }
}

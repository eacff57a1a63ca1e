//! Where user tools run: one [`PythonRunner`], found lazily on first use.
//!
//! Discovery starts `python3` once (tens of milliseconds), so it is deferred until a Python
//! tool is listed or called, and remembered — including the reason it failed, which is shown
//! next to every Python tool.

use crate::tool_api::ToolApi;
use engram_tools::{PythonRunner, Unavailable};
use std::ffi::OsString;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

/// The Python interpreter user tools run in, the limits of one call, and the way a call
/// reaches Engram's API back.
pub struct PythonHost {
    program: OsString,
    timeout: Duration,
    runner: OnceLock<Result<PythonRunner, Unavailable>>,
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
            program: program.into(),
            timeout,
            runner: OnceLock::new(),
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

    /// The runner, or why Python tools cannot run here. Blocks on first use while `python3`
    /// starts; async callers use [`runner_async`](Self::runner_async).
    pub fn runner(&self) -> Result<&PythonRunner, &Unavailable> {
        self.runner
            .get_or_init(|| {
                PythonRunner::discover_at(&self.program).map(|r| r.with_timeout(self.timeout))
            })
            .as_ref()
    }

    /// Same, discovering on a blocking thread so the async runtime is never held up.
    pub async fn runner_async(self: &Arc<Self>) -> Result<PythonRunner, Unavailable> {
        if let Some(found) = self.runner.get() {
            return found.clone();
        }
        let host = self.clone();
        tokio::task::spawn_blocking(move || host.runner().cloned().map_err(Clone::clone))
            .await
            .unwrap_or_else(|e| {
                Err(Unavailable {
                    reason: format!("looking for python3 failed: {e}"),
                })
            })
    }

    /// Why Python tools cannot run, or `None` when they can (blocks on first use).
    pub fn unavailable_reason(&self) -> Option<String> {
        self.runner().err().map(|u| u.reason.clone())
    }
}

//! Running the Python harness: in the sandbox (or, when allowed, a scrubbed process), with a
//! timeout and capped output.

use crate::capture::{Capture, Stream, drain};
use crate::room::{self, Confinement, Layout};
use crate::{ToolError, ToolOutcome, ToolRun, ToolSchema, ToolStatus, Unavailable};
use engram_sandbox::{Limits, Sandbox};
use serde::Deserialize;
use serde_json::json;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tracing::{debug, instrument, warn};

/// The harness the child runs (see its header for the request and result shapes), after the
/// sandbox's local API bridge, which it starts before any tool code.
fn harness() -> String {
    format!(
        "{}\n{}",
        engram_sandbox::BRIDGE_PY,
        include_str!("harness.py")
    )
}

/// Largest result file read back, in bytes (return value plus block updates).
const MAX_RESULT_BYTES: u64 = 8 * 1024 * 1024;

/// How long to wait for the pipes to close after the child was killed or exited (a grandchild
/// could hold them open).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Oldest Python the harness supports.
const MIN_PYTHON: (u32, u32) = (3, 8);

/// What the interpreter tells about itself: version, real path, then the directories it reads
/// (prefix, base and exec prefixes, site-packages), one a line.
const INTROSPECT: &str = "import sys, site\n\
print(sys.version_info[0], sys.version_info[1])\n\
print(sys.executable)\n\
dirs = [sys.prefix, sys.base_prefix, sys.exec_prefix, getattr(sys, 'base_exec_prefix', sys.prefix)]\n\
try:\n    dirs += site.getsitepackages()\nexcept Exception:\n    pass\n\
for d in dict.fromkeys(dirs): print(d)";

/// Runs user tools written in Python, one fresh `python3` process per call, in the sandbox.
#[derive(Clone, Debug)]
pub struct PythonRunner {
    python: PathBuf,
    /// The interpreter's directories, readable inside the sandbox.
    python_paths: Vec<PathBuf>,
    sandbox: Result<Sandbox, engram_sandbox::Unavailable>,
    limits: Limits,
    timeout: Duration,
    max_output: usize,
}

impl PythonRunner {
    /// Default time a call may take: 30 seconds.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
    /// Default cap on the stdout and stderr kept per call, together: 1 MiB (bytes).
    pub const DEFAULT_MAX_OUTPUT: usize = 1024 * 1024;

    /// Finds `python3` on `PATH` and checks that it runs and is Python 3.8 or newer; finds
    /// the machine's sandbox too ([`Sandbox::detect`]).
    ///
    /// Blocks while `python3` starts (a few tens of milliseconds); call it once at startup or
    /// from `spawn_blocking`. The runner keeps the interpreter's real path (`sys.executable`),
    /// so shims such as pyenv's, which need `HOME`, are not in the way of the scrubbed
    /// environment later, and the interpreter's prefix and site-packages, which the sandbox
    /// shows read-only (so installed packages such as `letta_client` import).
    pub fn discover() -> Result<PythonRunner, Unavailable> {
        Self::discover_at("python3")
    }

    /// Like [`discover`](Self::discover) for a given program name or path.
    pub fn discover_at(program: impl AsRef<OsStr>) -> Result<PythonRunner, Unavailable> {
        let program = program.as_ref();
        let shown = program.to_string_lossy();
        let output = std::process::Command::new(program)
            .args(["-c", INTROSPECT])
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| Unavailable {
                reason: if e.kind() == std::io::ErrorKind::NotFound {
                    format!("`{shown}` was not found on PATH; install Python 3.8 or newer to use Python tools")
                } else {
                    format!("`{shown}` could not be started: {e}")
                },
            })?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(Unavailable {
                reason: format!(
                    "`{shown}` did not run ({}){}",
                    output.status,
                    last_line(&stderr)
                        .map(|l| format!(": {l}"))
                        .unwrap_or_default()
                ),
            });
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        let mut lines = stdout.lines();
        let version: Vec<u32> = lines
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        let (major, minor) = match version[..] {
            [major, minor] => (major, minor),
            _ => {
                return Err(Unavailable {
                    reason: format!("`{shown}` does not look like Python (it printed {stdout:?})"),
                });
            }
        };
        if (major, minor) < MIN_PYTHON {
            return Err(Unavailable {
                reason: format!(
                    "`{shown}` is Python {major}.{minor}; Python tools need {}.{} or newer",
                    MIN_PYTHON.0, MIN_PYTHON.1
                ),
            });
        }
        let python = match lines.next().map(str::trim) {
            Some(exe) if !exe.is_empty() => PathBuf::from(exe),
            _ => PathBuf::from(program),
        };
        let python_paths: Vec<PathBuf> = lines
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .collect();
        debug!(python = %python.display(), major, minor, ?python_paths, "found Python");
        let mut runner = PythonRunner::with_python(python);
        runner.python_paths = python_paths;
        Ok(runner)
    }

    /// A runner for the interpreter at `path`, unchecked, with the default timeout, cap and
    /// limits and the machine's sandbox. Its prefix is taken to be the directory above the
    /// interpreter's `bin` (use [`discover_at`](Self::discover_at) to ask the interpreter).
    pub fn with_python(path: impl Into<PathBuf>) -> PythonRunner {
        let python = path.into();
        let python_paths = python
            .parent()
            .and_then(Path::parent)
            .map(|prefix| vec![prefix.to_path_buf()])
            .unwrap_or_default();
        PythonRunner {
            python,
            python_paths,
            sandbox: Sandbox::detect(),
            limits: Limits::default(),
            timeout: Self::DEFAULT_TIMEOUT,
            max_output: Self::DEFAULT_MAX_OUTPUT,
        }
    }

    /// Sets how long one call (or schema reading) may take before the process is killed.
    pub fn with_timeout(mut self, timeout: Duration) -> PythonRunner {
        self.timeout = timeout;
        self
    }

    /// Sets how many bytes of stdout and stderr, together, are kept per call; the rest is
    /// read and dropped so the child never blocks on a full pipe.
    pub fn with_max_output(mut self, bytes: usize) -> PythonRunner {
        self.max_output = bytes;
        self
    }

    /// Sets the resource limits of a sandboxed call (default [`Limits::default`]: 60 CPU
    /// seconds, 1 GiB of address space, 64 processes, 64 MiB files and `/tmp`).
    pub fn with_limits(mut self, limits: Limits) -> PythonRunner {
        self.limits = limits;
        self
    }

    /// Replaces the sandbox (e.g. with the result of [`Sandbox::probe`], or a reason to
    /// behave as a machine without one).
    pub fn with_sandbox(
        mut self,
        sandbox: Result<Sandbox, engram_sandbox::Unavailable>,
    ) -> PythonRunner {
        self.sandbox = sandbox;
        self
    }

    /// The interpreter this runner starts.
    pub fn python(&self) -> &Path {
        &self.python
    }

    /// The sandbox calls run in, or why there is none (then only tools allowed to run
    /// unsandboxed run).
    pub fn sandbox(&self) -> Result<&Sandbox, &engram_sandbox::Unavailable> {
        self.sandbox.as_ref()
    }

    /// The time limit of one call.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The cap on kept output, in bytes.
    pub fn max_output(&self) -> usize {
        self.max_output
    }

    /// The resource limits of a sandboxed call.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Generates the schema of function `name` (or of the source's only public function when
    /// `None`) from its signature and Google-style docstring, as Letta does.
    ///
    /// The source is parsed with Python's `ast` in a child process and never executed (in the
    /// sandbox when there is one; parsing runs no tool code, so it needs none).
    /// Annotations map `str`→`string`, `int`→`integer`, `float`→`number`, `bool`→`boolean`,
    /// `list`/`List[X]`→`array` (with `items`), `dict`→`object`, `Literal[...]`→`enum`;
    /// `Optional[X]` and `X | None` are `X` and not required; unknown or missing annotations
    /// leave the type open.
    #[instrument(skip_all, fields(name = name.unwrap_or("")))]
    pub async fn schema(&self, source: &str, name: Option<&str>) -> Result<ToolSchema, ToolError> {
        let request = json!({"mode": "schema", "source": source, "name": name});
        let confinement = match &self.sandbox {
            Ok(sandbox) => self.sandboxed(sandbox, false, None),
            Err(_) => Confinement::Unsandboxed,
        };
        let exec = self.exec(&request, confinement).await?;
        if exec.timed_out {
            return Err(ToolError::Timeout(self.timeout.as_secs().max(1)));
        }
        match exec.parse::<ToolSchema>() {
            Ok(HarnessResult::Ok(schema)) => Ok(schema),
            Ok(HarnessResult::Error(line)) => Err(ToolError::Source(line)),
            Err(why) => Err(ToolError::Protocol(why)),
        }
    }

    /// Runs one call. Never errors: every failure (an exception, a timeout, a limit broken, no
    /// interpreter, no sandbox for a tool that needs one) is a [`ToolStatus::Failed`] outcome
    /// whose message the model (and the user) can read.
    #[instrument(skip_all, fields(tool = %call.name, agent = %call.agent_id, network = call.network))]
    pub async fn run(&self, call: &ToolRun) -> ToolOutcome {
        let confinement = match &self.sandbox {
            Ok(sandbox) => self.sandboxed(sandbox, call.network, call.bridge.clone()),
            Err(_) if call.allow_unsandboxed => {
                debug!("no sandbox; the tool is allowed to run without one");
                Confinement::Unsandboxed
            }
            Err(none) => {
                return ToolOutcome::failed(format!(
                    "Tool '{}' was not run: no sandbox is available here ({}). If you trust this tool with your user account's full access, you can allow it to run unsandboxed (`engram tool set {} --unsandboxed on`).",
                    call.name, none.reason, call.name
                ));
            }
        };
        let blocks: Vec<_> = call
            .blocks
            .iter()
            .map(|b| json!({"label": b.label, "value": b.value, "limit": b.limit, "read_only": b.read_only}))
            .collect();
        let request = json!({
            "mode": "run",
            "source": call.source,
            "name": call.name,
            "arguments": call.arguments,
            "agent": {"id": call.agent_id, "name": call.agent_name},
            "blocks": blocks,
        });
        let exec = match self.exec(&request, confinement).await {
            Ok(exec) => exec,
            Err(e) => {
                warn!(error = %e, "could not start python");
                return ToolOutcome::failed(format!(
                    "The tool could not be started: {} failed: {e}",
                    self.python.display()
                ));
            }
        };
        let cpu_exceeded = exec.result.is_none()
            && exec.status.and_then(|s| s.code()) == Some(engram_sandbox::CPU_EXCEEDED_STATUS);
        let (status, message, block_updates) = if exec.timed_out {
            (
                ToolStatus::Failed,
                format!(
                    "The tool did not finish within {} s and was stopped.",
                    format_secs(self.timeout)
                ),
                Vec::new(),
            )
        } else if cpu_exceeded {
            (
                ToolStatus::Failed,
                format!(
                    "The tool used more than its {} s of CPU time and was stopped.",
                    self.limits.cpu_seconds.unwrap_or_default()
                ),
                Vec::new(),
            )
        } else {
            match exec.parse::<RunResult>() {
                Ok(HarnessResult::Ok(result)) => match check_updates(&call.blocks, &result.updates)
                {
                    Ok(()) => (ToolStatus::Ok, result.value, result.updates),
                    Err(why) => (ToolStatus::Failed, why, Vec::new()),
                },
                Ok(HarnessResult::Error(line)) => (ToolStatus::Failed, line, Vec::new()),
                Err(why) => (ToolStatus::Failed, why, Vec::new()),
            }
        };
        let mut message = message;
        if exec.truncated {
            message.push_str(&format!(
                "\n[output truncated: the tool printed more than {} bytes; the rest was dropped]",
                self.max_output
            ));
        }
        ToolOutcome {
            status,
            message,
            block_updates,
            stdout: String::from_utf8_lossy(&exec.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&exec.stderr).into_owned(),
            output_truncated: exec.truncated,
        }
    }

    fn sandboxed<'a>(
        &'a self,
        sandbox: &'a Sandbox,
        network: bool,
        bridge: Option<engram_sandbox::Bridge>,
    ) -> Confinement<'a> {
        Confinement::Sandboxed {
            sandbox,
            python_paths: &self.python_paths,
            limits: self.limits,
            network,
            bridge,
        }
    }

    /// Runs the harness on one request in a fresh temp dir and collects what it left.
    async fn exec(
        &self,
        request: &serde_json::Value,
        confinement: Confinement<'_>,
    ) -> std::io::Result<Exec> {
        let layout = Layout::new(&harness())?;
        let mut child = room::command(&self.python, &layout, confinement)?.spawn()?;

        let shared = Arc::new(Capture::new(self.max_output));
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(tokio::spawn(drain(out, shared.clone(), Stream::Stdout)));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(tokio::spawn(drain(err, shared.clone(), Stream::Stderr)));
        }
        let stdin = child.stdin.take();
        let body = serde_json::to_vec(request).map_err(std::io::Error::other)?;

        let finished = tokio::time::timeout(self.timeout, async {
            if let Some(mut stdin) = stdin {
                // A tool that exits early closes the pipe; its exit status tells the story.
                if let Err(e) = stdin.write_all(&body).await {
                    debug!(error = %e, "request not fully written");
                }
                drop(stdin);
            }
            child.wait().await
        })
        .await;
        let (status, timed_out) = match finished {
            Ok(status) => (Some(status?), false),
            Err(_) => {
                warn!(
                    timeout_s = self.timeout.as_secs_f64(),
                    "tool timed out; killing it"
                );
                // In the sandbox this is bubblewrap: its room and every process in it go too.
                child.kill().await?;
                (None, true)
            }
        };
        // One deadline for both pipes, not one grace period each.
        let deadline = tokio::time::Instant::now() + DRAIN_GRACE;
        for reader in readers {
            let abort = reader.abort_handle();
            if tokio::time::timeout_at(deadline, reader).await.is_err() {
                // A grandchild still holds the pipe; keep what was read.
                abort.abort();
            }
        }

        let result = if timed_out {
            None
        } else {
            read_result(&layout.result())
        };
        Ok(Exec {
            result,
            status,
            timed_out,
            truncated: shared.truncated(),
            stdout: shared.take(Stream::Stdout),
            stderr: shared.take(Stream::Stderr),
        })
    }
}

/// What the harness process left behind.
struct Exec {
    /// The result file: `None` when absent, `Err` when unreadable or too large.
    result: Option<Result<Vec<u8>, String>>,
    /// Exit status; `None` after a timeout.
    status: Option<ExitStatus>,
    timed_out: bool,
    truncated: bool,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

impl Exec {
    /// Decodes the result file, or says why there is none in a line the model can read.
    fn parse<T: for<'de> Deserialize<'de>>(&self) -> Result<HarnessResult<T>, String> {
        match &self.result {
            Some(Ok(bytes)) => serde_json::from_slice(bytes)
                .map_err(|e| format!("The tool's result could not be read: {e}")),
            Some(Err(why)) => Err(why.clone()),
            None => {
                let status = self
                    .status
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "unknown status".into());
                let stderr = String::from_utf8_lossy(&self.stderr);
                Err(format!(
                    "The tool's process ended ({status}) without a result{}",
                    last_line(&stderr)
                        .map(|l| format!(": {l}"))
                        .unwrap_or_default()
                ))
            }
        }
    }
}

/// The harness's answer: `{"ok": ...}` or `{"error": "Type: message"}`.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum HarnessResult<T> {
    Ok(T),
    Error(String),
}

#[derive(Deserialize)]
struct RunResult {
    #[serde(rename = "return")]
    value: String,
    updates: Vec<(String, String)>,
}

fn read_result(path: &Path) -> Option<Result<Vec<u8>, String>> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.len() > MAX_RESULT_BYTES {
        return Some(Err(format!(
            "The tool's result is too large ({} bytes; at most {MAX_RESULT_BYTES}).",
            meta.len()
        )));
    }
    Some(std::fs::read(path).map_err(|e| format!("The tool's result could not be read: {e}")))
}

/// Checks the harness's block updates again: the tool's code shares the harness's process and
/// could have bypassed its checks.
fn check_updates(
    blocks: &[engram_core::Block],
    updates: &[(String, String)],
) -> Result<(), String> {
    for (label, value) in updates {
        let Some(block) = blocks.iter().find(|b| &b.label == label) else {
            return Err(format!(
                "The tool changed memory block '{label}', which this agent does not have."
            ));
        };
        if block.read_only {
            return Err(format!(
                "Memory block '{label}' is read-only and cannot be changed."
            ));
        }
        engram_core::memory::check_limit(&block.value, value, block.limit)
            .map_err(|e| format!("{e} (block '{label}')"))?;
    }
    Ok(())
}

fn last_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).rfind(|l| !l.is_empty())
}

/// `1` for whole seconds, `1.5` otherwise.
fn format_secs(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        d.as_secs().to_string()
    } else {
        format!("{}", (d.as_secs_f64() * 1000.0).round() / 1000.0)
    }
}

//! Spawning the Python harness: scrubbed environment, temp dir, timeout, capped output.

use crate::{ToolError, ToolOutcome, ToolRun, ToolSchema, ToolStatus, Unavailable};
use serde::Deserialize;
use serde_json::json;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tracing::{debug, instrument, warn};

/// The harness the child runs; see its header for the request and result shapes.
const HARNESS: &str = include_str!("harness.py");

/// Largest result file read back, in bytes (return value plus block updates).
const MAX_RESULT_BYTES: u64 = 8 * 1024 * 1024;

/// How long to wait for the pipes to close after the child was killed or exited (a grandchild
/// could hold them open).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Oldest Python the harness supports.
const MIN_PYTHON: (u32, u32) = (3, 8);

/// Runs user tools written in Python, one fresh `python3` process per call.
#[derive(Clone, Debug)]
pub struct PythonRunner {
    python: PathBuf,
    timeout: Duration,
    max_output: usize,
}

impl PythonRunner {
    /// Default time a call may take: 30 seconds.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
    /// Default cap on the stdout and stderr kept per call, together: 1 MiB (bytes).
    pub const DEFAULT_MAX_OUTPUT: usize = 1024 * 1024;

    /// Finds `python3` on `PATH` and checks that it runs and is Python 3.8 or newer.
    ///
    /// Blocks while `python3` starts (a few tens of milliseconds); call it once at startup or
    /// from `spawn_blocking`. The runner keeps the interpreter's real path (`sys.executable`),
    /// so shims such as pyenv's, which need `HOME`, are not in the way of the scrubbed
    /// environment later.
    pub fn discover() -> Result<PythonRunner, Unavailable> {
        Self::discover_at("python3")
    }

    /// Like [`discover`](Self::discover) for a given program name or path.
    pub fn discover_at(program: impl AsRef<OsStr>) -> Result<PythonRunner, Unavailable> {
        let program = program.as_ref();
        let shown = program.to_string_lossy();
        let output = std::process::Command::new(program)
            .args([
                "-c",
                "import sys; print(sys.version_info[0], sys.version_info[1]); print(sys.executable)",
            ])
            .stdin(Stdio::null())
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
        debug!(python = %python.display(), major, minor, "found Python");
        Ok(PythonRunner::with_python(python))
    }

    /// A runner for the interpreter at `path`, unchecked, with the default timeout and cap.
    pub fn with_python(path: impl Into<PathBuf>) -> PythonRunner {
        PythonRunner {
            python: path.into(),
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

    /// The interpreter this runner starts.
    pub fn python(&self) -> &Path {
        &self.python
    }

    /// The time limit of one call.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The cap on kept output, in bytes.
    pub fn max_output(&self) -> usize {
        self.max_output
    }

    /// Generates the schema of function `name` (or of the source's only public function when
    /// `None`) from its signature and Google-style docstring, as Letta does.
    ///
    /// The source is parsed with Python's `ast` in a child process and never executed.
    /// Annotations map `str`→`string`, `int`→`integer`, `float`→`number`, `bool`→`boolean`,
    /// `list`/`List[X]`→`array` (with `items`), `dict`→`object`, `Literal[...]`→`enum`;
    /// `Optional[X]` and `X | None` are `X` and not required; unknown or missing annotations
    /// leave the type open.
    #[instrument(skip_all, fields(name = name.unwrap_or("")))]
    pub async fn schema(&self, source: &str, name: Option<&str>) -> Result<ToolSchema, ToolError> {
        let request = json!({"mode": "schema", "source": source, "name": name});
        let exec = self.exec(&request).await?;
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
    /// interpreter) is a [`ToolStatus::Failed`] outcome whose message the model can read.
    #[instrument(skip_all, fields(tool = %call.name, agent = %call.agent_id))]
    pub async fn run(&self, call: &ToolRun) -> ToolOutcome {
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
        let exec = match self.exec(&request).await {
            Ok(exec) => exec,
            Err(e) => {
                warn!(error = %e, "could not start python");
                return ToolOutcome::failed(format!(
                    "The tool could not be started: {} failed: {e}",
                    self.python.display()
                ));
            }
        };
        let (status, message, block_updates) = if exec.timed_out {
            (
                ToolStatus::Failed,
                format!(
                    "The tool did not finish within {} s and was stopped.",
                    format_secs(self.timeout)
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

    /// Runs the harness on one request in a fresh temp dir and collects what it left.
    async fn exec(&self, request: &serde_json::Value) -> std::io::Result<Exec> {
        let dir = tempfile::Builder::new().prefix("engram-tool-").tempdir()?;
        let harness = dir.path().join("harness.py");
        let result_path = dir.path().join("result.json");
        let work = dir.path().join("work");
        std::fs::write(&harness, HARNESS)?;
        std::fs::create_dir(&work)?;

        let mut command = Command::new(&self.python);
        // -I: ignore PYTHON* variables and user site-packages, keep the script dir off sys.path;
        // -B: write no .pyc; -X utf8: UTF-8 I/O whatever the locale.
        command
            .args(["-I", "-B", "-X", "utf8"])
            .arg(&harness)
            .arg(&result_path)
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .env("HOME", &work)
            .env("LANG", "C.UTF-8")
            .env("PYTHONIOENCODING", "utf-8")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .current_dir(&work)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(windows)]
        if let Some(root) = std::env::var_os("SYSTEMROOT") {
            // Python on Windows cannot start without it.
            command.env("SYSTEMROOT", root);
        }
        let mut child = command.spawn()?;

        let shared = Arc::new(Capture {
            budget: AtomicUsize::new(self.max_output),
            truncated: AtomicBool::new(false),
            stdout: Mutex::default(),
            stderr: Mutex::default(),
        });
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
            read_result(&result_path)
        };
        let take =
            |m: &Mutex<Vec<u8>>| std::mem::take(&mut *m.lock().unwrap_or_else(|e| e.into_inner()));
        Ok(Exec {
            result,
            status,
            timed_out,
            truncated: shared.truncated.load(Ordering::SeqCst),
            stdout: take(&shared.stdout),
            stderr: take(&shared.stderr),
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

struct Capture {
    /// Bytes of stdout and stderr still to keep.
    budget: AtomicUsize,
    truncated: AtomicBool,
    stdout: Mutex<Vec<u8>>,
    stderr: Mutex<Vec<u8>>,
}

#[derive(Clone, Copy)]
enum Stream {
    Stdout,
    Stderr,
}

/// Reads `pipe` to its end, keeping bytes while the shared budget lasts.
async fn drain(mut pipe: impl AsyncRead + Unpin, capture: Arc<Capture>, stream: Stream) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let left = capture
            .budget
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                Some(left.saturating_sub(n))
            })
            .unwrap_or(0);
        let keep = left.min(n);
        if keep > 0 {
            let target = match stream {
                Stream::Stdout => &capture.stdout,
                Stream::Stderr => &capture.stderr,
            };
            target
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend_from_slice(&buf[..keep]);
        }
        if keep < n {
            capture.truncated.store(true, Ordering::SeqCst);
        }
    }
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

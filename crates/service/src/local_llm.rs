//! The built-in chat models (`local/<name>`): GGUF files the user registered, run by
//! `engram-llm-worker` in a child process this module supervises. The worker serves an
//! OpenAI-compatible API on 127.0.0.1 behind a token made for it; agents reach it through the
//! ordinary OpenAI-compatible client. It is started on the first message for its model, reused
//! while it lives, started again after a crash (a llama.cpp assertion aborts only the worker)
//! and stopped after an idle time, so its memory comes back.
//!
//! Registered models live in the settings table under [`MODELS_SETTING`] as one JSON list.

use crate::EnvLookup;
use async_trait::async_trait;
use engram_core::error::ProviderFault;
use engram_core::{Error, Result};
use engram_providers::{
    ChatModel, ChatRequest, ChatResponse, Delta, ProviderConfig, ProviderError, ProviderKind,
};
use engram_store::Store;
use rand::RngCore;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};

/// The provider part of built-in chat model handles.
pub const LOCAL_CHAT_PROVIDER: &str = "local";

/// The environment variable naming the worker program (default: `engram-llm-worker` beside
/// the running executable, or in its parent folder).
pub const LLM_WORKER_ENV: &str = "ENGRAM_LLM_WORKER";

/// The environment variable with the seconds an unused worker keeps running (default 300).
pub const LLM_IDLE_ENV: &str = "ENGRAM_LLM_IDLE";

/// The environment variable with the CPU threads a worker uses (default: the worker's own
/// choice, about the physical cores).
pub const LLM_THREADS_ENV: &str = "ENGRAM_LLM_THREADS";

/// The settings key of the registered models (a JSON list of [`LocalChatModel`]).
pub const MODELS_SETTING: &str = "local_chat_models";

/// The context size (tokens) a model gets when none is asked for, unless it was trained on
/// less: enough for an agent's memory and recent messages, small enough for a laptop.
pub const DEFAULT_CONTEXT: u32 = 4096;

/// How long an unused worker keeps its model loaded.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(300);

/// How long a worker may take to load its model and say where it listens.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// The worker program's file name.
const WORKER_BIN: &str = "engram-llm-worker";

/// A GGUF chat model registered with `engram model add`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct LocalChatModel {
    /// The name in handles: the file name without extension, lowercased, other characters than
    /// letters, digits, `-` and `_` made `-` (`smollm2-135m-instruct-q4_1`).
    pub name: String,
    /// The handle agents use: `local/<name>`.
    pub handle: String,
    /// The GGUF file (absolute path).
    pub path: String,
    /// The context size the worker runs it with, in **tokens**: the model's training context,
    /// at most [`DEFAULT_CONTEXT`] unless set; also the context window of agents on it.
    pub context_window: u32,
    /// The context the model was trained on, in tokens (from the GGUF header).
    pub trained_context: u32,
    /// The file's size in bytes.
    #[ts(type = "number")]
    pub bytes: u64,
}

/// The handle name of a GGUF file: its stem, lowercased, with every character other than a
/// letter, digit, `-` or `_` made `-`.
pub fn model_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    stem.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// What the GGUF header says: the architecture and its training context (tokens).
/// Errors: `invalid_input` when the file is not a readable GGUF model.
pub(crate) fn read_gguf(path: &Path) -> Result<(String, u32)> {
    use candle_core::quantized::gguf_file::{Content, Value};
    let not_gguf = |why: String| {
        Error::invalid(format!(
            "{} is not a GGUF model Engram can read: {why}",
            path.display()
        ))
    };
    let file = std::fs::File::open(path).map_err(|e| not_gguf(e.to_string()))?;
    let content =
        Content::read(&mut std::io::BufReader::new(file)).map_err(|e| not_gguf(e.to_string()))?;
    let arch = content
        .metadata
        .get("general.architecture")
        .and_then(|v| v.to_string().ok())
        .cloned()
        .ok_or_else(|| not_gguf("no general.architecture".into()))?;
    let ctx = match content.metadata.get(&format!("{arch}.context_length")) {
        Some(Value::I32(n)) => u32::try_from(*n).ok(),
        Some(Value::I64(n)) => u32::try_from(*n).ok(),
        Some(v) => v.to_u64().ok().and_then(|n| u32::try_from(n).ok()),
        None => None,
    }
    .filter(|n| *n > 0)
    .ok_or_else(|| not_gguf(format!("no {arch}.context_length")))?;
    Ok((arch, ctx))
}

/// The registered models. A malformed stored list reads as empty.
pub(crate) fn stored(store: &Store) -> Result<Vec<LocalChatModel>> {
    Ok(store
        .settings()
        .get(MODELS_SETTING)?
        .and_then(|v| serde_json::from_str(&v).ok())
        .unwrap_or_default())
}

pub(crate) fn store_all(store: &Store, models: &[LocalChatModel]) -> Result<()> {
    let text = serde_json::to_string(models).map_err(|e| Error::invalid(e.to_string()))?;
    store.settings().set(MODELS_SETTING, &text)
}

/// `name` without a `local/` prefix.
pub(crate) fn bare(name: &str) -> &str {
    let name = name.trim();
    name.strip_prefix("local/").unwrap_or(name)
}

/// The running workers, one per model, and how to start them.
pub(crate) struct LocalLlms {
    store: Store,
    env: EnvLookup,
    idle: Duration,
    workers: tokio::sync::Mutex<HashMap<String, Arc<Worker>>>,
    /// A weak handle on itself, for the idle timers.
    this: Weak<LocalLlms>,
}

/// One running worker.
struct Worker {
    /// The model it runs, as registered when it started.
    model: LocalChatModel,
    child: Mutex<tokio::process::Child>,
    /// The OpenAI-compatible client pointed at it, with its token.
    client: Arc<dyn ChatModel>,
    /// Requests in flight, and when the last one ended.
    use_state: Mutex<(usize, Instant)>,
    /// The last lines it wrote to stderr (why it failed, when it does).
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Worker {
    /// `Some(how it ended)` once the process has exited.
    fn exited(&self) -> Option<String> {
        let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
        match child.try_wait() {
            Ok(Some(status)) => Some(describe_exit(status)),
            Ok(None) => None,
            Err(e) => Some(e.to_string()),
        }
    }

    fn kill(&self) {
        let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
        let _ = child.start_kill();
    }

    fn last_stderr(&self) -> Option<String> {
        let lines = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        lines.last().cloned()
    }
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = match sig {
                6 => " (aborted)",
                9 => " (killed)",
                11 => " (segmentation fault)",
                4 => " (illegal instruction: this CPU lacks an instruction the build uses)",
                _ => "",
            };
            return format!("signal {sig}{name}");
        }
    }
    status.to_string()
}

/// Marks a worker in use while alive.
struct Lease(Arc<Worker>);

impl Lease {
    fn new(worker: Arc<Worker>) -> Self {
        worker.use_state.lock().unwrap_or_else(|p| p.into_inner()).0 += 1;
        Self(worker)
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut state = self.0.use_state.lock().unwrap_or_else(|p| p.into_inner());
        state.0 = state.0.saturating_sub(1);
        state.1 = Instant::now();
    }
}

impl LocalLlms {
    pub(crate) fn new(store: Store, env: EnvLookup) -> Arc<Self> {
        let idle = env(LLM_IDLE_ENV)
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .map_or(DEFAULT_IDLE, Duration::from_secs_f64);
        Arc::new_cyclic(|this| Self {
            store,
            env,
            idle,
            workers: tokio::sync::Mutex::new(HashMap::new()),
            this: this.clone(),
        })
    }

    /// The registered model `name` (with or without `local/`). Errors:
    /// `provider_not_configured` naming the command that registers one.
    pub(crate) fn model(&self, name: &str) -> Result<LocalChatModel> {
        let name = bare(name);
        stored(&self.store)?
            .into_iter()
            .find(|m| m.name == name)
            .ok_or_else(|| {
                Error::provider(
                    ProviderFault::NotConfigured,
                    format!(
                        "local/{name} is not a registered model: add its GGUF file with `engram model add FILE` (`engram model list` shows those there are)"
                    ),
                )
            })
    }

    /// The chat model for `local/<name>`: a client that starts the worker when it is first
    /// asked something.
    pub(crate) fn chat_model(&self, name: &str) -> Result<Arc<dyn ChatModel>> {
        let model = self.model(name)?;
        let llms = self.this.upgrade().ok_or_else(|| {
            Error::provider(ProviderFault::NotConfigured, "Engram is shutting down")
        })?;
        Ok(Arc::new(LocalChat { llms, model }))
    }

    /// The worker program. Errors: `provider_not_configured` when it is not there.
    fn worker_program(&self) -> std::result::Result<PathBuf, ProviderError> {
        if let Some(p) = (self.env)(LLM_WORKER_ENV) {
            return Ok(PathBuf::from(p));
        }
        let file = format!("{WORKER_BIN}{}", std::env::consts::EXE_SUFFIX);
        let exe = std::env::current_exe().ok();
        let dirs = exe
            .iter()
            .flat_map(|e| e.ancestors().skip(1).take(2))
            .map(Path::to_path_buf);
        for dir in dirs {
            let candidate = dir.join(&file);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
        Err(ProviderError::new(
            ProviderFault::NotConfigured,
            format!(
                "the built-in model's worker ({file}) is not installed beside {}; reinstall Engram or set {LLM_WORKER_ENV} to its path",
                exe.map_or_else(|| "Engram".to_owned(), |e| e.display().to_string())
            ),
        ))
    }

    /// A live worker for `model`, started (or started again) when needed, leased for one
    /// request. A worker for an older registration of the model (another file or context) is
    /// replaced.
    async fn lease(&self, model: &LocalChatModel) -> std::result::Result<Lease, ProviderError> {
        let mut workers = self.workers.lock().await;
        if let Some(w) = workers.get(&model.name) {
            match w.exited() {
                None if w.model == *model => return Ok(Lease::new(w.clone())),
                None => w.kill(),
                Some(how) => {
                    tracing::info!(model = %model.handle, %how, "the worker had stopped; starting it again")
                }
            }
            workers.remove(&model.name);
        }
        let worker = Arc::new(self.spawn(model).await?);
        workers.insert(model.name.clone(), worker.clone());
        self.watch_idle(&worker);
        Ok(Lease::new(worker))
    }

    async fn spawn(&self, model: &LocalChatModel) -> std::result::Result<Worker, ProviderError> {
        let program = self.worker_program()?;
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut cmd = tokio::process::Command::new(&program);
        cmd.arg("--model")
            .arg(&model.path)
            .arg("--ctx")
            .arg(model.context_window.to_string())
            .arg("--name")
            .arg(&model.name)
            .arg("--exit-with-stdin")
            .args(
                (self.env)(LLM_THREADS_ENV)
                    .and_then(|t| t.trim().parse::<u32>().ok())
                    .filter(|t| *t > 0)
                    .map(|t| vec!["--threads".to_owned(), t.to_string()])
                    .unwrap_or_default(),
            )
            .env("ENGRAM_WORKER_TOKEN", &token)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let failed = |why: String| {
            ProviderError::new(
                ProviderFault::Unreachable,
                format!("the built-in model {} could not start: {why}", model.handle),
            )
        };
        let mut child = cmd
            .spawn()
            .map_err(|e| failed(format!("cannot run {}: {e}", program.display())))?;
        let stderr = Arc::new(Mutex::new(Vec::<String>::new()));
        if let Some(err) = child.stderr.take() {
            let keep = stderr.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(err).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::debug!(target: "engram_llm_worker", "{line}");
                    let mut kept = keep.lock().unwrap_or_else(|p| p.into_inner());
                    if kept.len() >= 20 {
                        kept.remove(0);
                    }
                    kept.push(line);
                }
            });
        }
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| failed("no output".into()))?;
        let mut lines = BufReader::new(stdout).lines();
        let listening = tokio::time::timeout(START_TIMEOUT, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(url) = line.trim().strip_prefix("listening on ") {
                    return Some(url.to_owned());
                }
            }
            None
        })
        .await;
        let last_err = || {
            let lines = stderr.lock().unwrap_or_else(|p| p.into_inner());
            lines
                .iter()
                .rev()
                .find(|l| !l.trim().is_empty())
                .cloned()
                .unwrap_or_default()
        };
        let base_url = match listening {
            Ok(Some(url)) => url,
            Ok(None) => {
                // Let the stderr reader catch the last words.
                tokio::time::sleep(Duration::from_millis(100)).await;
                let status = child.try_wait().ok().flatten().map(describe_exit);
                return Err(failed(format!(
                    "the worker exited{}: {}",
                    status.map(|s| format!(" ({s})")).unwrap_or_default(),
                    last_err()
                )));
            }
            Err(_) => {
                let _ = child.start_kill();
                return Err(failed(format!(
                    "the worker did not load the model within {} s",
                    START_TIMEOUT.as_secs()
                )));
            }
        };
        // The worker listens on loopback only; anything else is refused.
        if !crate::origins::is_loopback(&base_url) {
            let _ = child.start_kill();
            return Err(failed(format!(
                "the worker named a non-loopback address {base_url}"
            )));
        }
        // Nothing more comes on stdout, but keep it read so the worker never blocks on it.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let mut config = ProviderConfig::new(
            ProviderKind::OpenAi,
            base_url.clone(),
            Some(SecretString::from(token)),
        );
        // A dead worker is not retried against; it is started again on the next message.
        config.retry.max_retries = 0;
        config.timeouts.connect = Duration::from_secs(5);
        // A long prompt on a slow CPU can take minutes before the first token.
        config.timeouts.read = Duration::from_secs(600);
        let client = engram_providers::chat_model(config)?;
        tracing::info!(model = %model.handle, %base_url, "built-in model started");
        Ok(Worker {
            model: model.clone(),
            child: Mutex::new(child),
            client,
            use_state: Mutex::new((0, Instant::now())),
            stderr,
        })
    }

    /// Stops `worker` once it has been unused for the idle time (or forgets it once it died).
    fn watch_idle(&self, worker: &Arc<Worker>) {
        let this = self.this.clone();
        let watched = Arc::downgrade(worker);
        let idle = self.idle;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep((idle / 4).max(Duration::from_millis(200))).await;
                let (Some(llms), Some(worker)) = (this.upgrade(), watched.upgrade()) else {
                    return;
                };
                let (busy, since) = *worker.use_state.lock().unwrap_or_else(|p| p.into_inner());
                let dead = worker.exited().is_some();
                if dead || (busy == 0 && since.elapsed() >= idle) {
                    let mut workers = llms.workers.lock().await;
                    if workers
                        .get(&worker.model.name)
                        .is_some_and(|w| Arc::ptr_eq(w, &worker))
                    {
                        workers.remove(&worker.model.name);
                    }
                    drop(workers);
                    if !dead {
                        tracing::info!(model = %worker.model.handle, "built-in model idle; stopping it");
                    }
                    worker.kill();
                    return;
                }
            }
        });
    }

    /// Stops the worker of model `name`, if one runs.
    pub(crate) async fn stop(&self, name: &str) {
        if let Some(w) = self.workers.lock().await.remove(name) {
            w.kill();
        }
    }

    /// The process id of the worker running model `name`, if one runs (for status and tests).
    pub(crate) async fn pid(&self, name: &str) -> Option<u32> {
        let workers = self.workers.lock().await;
        let w = workers.get(bare(name))?;
        if w.exited().is_some() {
            return None;
        }
        w.child.lock().unwrap_or_else(|p| p.into_inner()).id()
    }
}

/// The chat model of one registered GGUF: the OpenAI-compatible client of its worker, with
/// the worker started on demand and its crashes said as such.
struct LocalChat {
    llms: Arc<LocalLlms>,
    model: LocalChatModel,
}

#[async_trait]
impl ChatModel for LocalChat {
    async fn complete(
        &self,
        req: &ChatRequest,
        on_delta: &(dyn Fn(Delta) + Send + Sync),
    ) -> std::result::Result<ChatResponse, ProviderError> {
        let lease = self.llms.lease(&self.model).await?;
        let result = lease.0.client.complete(req, on_delta).await;
        let Err(error) = result else {
            return result;
        };
        if !matches!(
            error.fault,
            ProviderFault::Unreachable | ProviderFault::Timeout | ProviderFault::BadResponse
        ) {
            return Err(error);
        }
        // A connection that broke because the process died: the exit is seen within moments.
        for _ in 0..20 {
            if let Some(how) = lease.0.exited() {
                let why = lease
                    .0
                    .last_stderr()
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| format!("; it said: {}", l.trim()))
                    .unwrap_or_default();
                return Err(ProviderError::new(
                    ProviderFault::Unreachable,
                    format!(
                        "the built-in model {} stopped in the middle of the answer ({how}{why}); the part that arrived is kept, and the model starts again with the next message",
                        self.model.handle
                    ),
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Engram;

    #[test]
    fn handles_come_from_the_file_name() {
        assert_eq!(
            model_name(Path::new("/m/SmolLM2-135M-Instruct.Q4_1.gguf")),
            "smollm2-135m-instruct-q4_1"
        );
        assert_eq!(model_name(Path::new("qwen 2.5 (7b).gguf")), "qwen-2-5--7b-");
        assert_eq!(model_name(Path::new("plain")), "plain");
    }

    #[test]
    fn files_that_are_not_gguf_are_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let engram = Engram::open_for_test(dir.path());
        let bogus = dir.path().join("notes.gguf");
        std::fs::write(&bogus, b"not a model at all").unwrap();
        let err = engram.models().add_local(&bogus, None).unwrap_err();
        assert!(err.to_string().contains("not a GGUF model"), "{err}");
        let err = engram
            .models()
            .add_local(&dir.path().join("missing.gguf"), None)
            .unwrap_err();
        assert!(err.to_string().contains("cannot read"), "{err}");
        assert!(engram.models().list_local().unwrap().is_empty());
    }

    #[test]
    fn unregistered_handles_name_the_command_that_registers_them() {
        let dir = tempfile::tempdir().unwrap();
        let engram = Engram::open_for_test(dir.path());
        let err = engram.resolver.llms.chat_model("local/nope").err().unwrap();
        assert!(err.to_string().contains("engram model add"), "{err}");
        assert_eq!(engram.local_window("local/nope"), None);
        assert_eq!(engram.local_window("openai/gpt-4o"), None);
    }
}

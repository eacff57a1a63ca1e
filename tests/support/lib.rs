//! Harness shared by Engram's whole-system tests and benchmarks: a data directory in a temp dir,
//! the engine opened on it with an in-memory keychain, agents pointed at the scripted model
//! server, runs with their events collected, and the `engram` binary.

use engram_core::{AgentId, LlmConfig, LoopStyle, NewAgent, NewBlock, Role, RunEvent, ToolReturn};
use engram_mock_llm::MockLlm;
use engram_secrets::{MemoryStore, SecretStore};
use engram_service::{Engram, Options};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub use engram_agent::RunOutcome;

pub mod archival;
pub mod corpus;
pub mod llama_server;
pub mod locomo;
pub mod model;
pub mod rest;
pub mod serve;

/// A data directory that disappears with the value, and the engine opened on it.
pub struct Home {
    /// The temp dir (kept alive for the test).
    pub dir: tempfile::TempDir,
    /// The engine.
    pub engram: Arc<Engram>,
}

impl Home {
    /// A fresh data directory with an in-memory keychain and an empty environment.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let engram = open(dir.path(), Arc::new(MemoryStore::default()));
        Self { dir, engram }
    }

    /// A fresh data directory whose engine sees only the environment variables in `vars`
    /// (e.g. `ENGRAM_TOOL_TIMEOUT`, `ENGRAM_PYTHON`).
    pub fn with_env(vars: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let engram = Engram::open(Options {
            home: Some(dir.path().to_owned()),
            secrets: Arc::new(MemoryStore::default()),
            env: Arc::new(move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())),
        })
        .expect("open engram");
        Self { dir, engram }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Creates an agent on the scripted server `mock` with `persona` and `human` blocks.
    pub async fn agent(&self, mock: &MockLlm, style: LoopStyle) -> AgentId {
        self.agent_with(mock, style, |_| {}).await
    }

    /// Same, letting the test adjust the request first (context window, blocks, tools…).
    pub async fn agent_with(
        &self,
        mock: &MockLlm,
        style: LoopStyle,
        adjust: impl FnOnce(&mut NewAgent),
    ) -> AgentId {
        let mut llm = LlmConfig::new("openai/mock-small");
        llm.base_url = Some(mock.base_url());
        llm.context_window = 32_000;
        let mut new = NewAgent {
            name: "Sam".into(),
            llm: Some(llm),
            loop_style: style,
            blocks: vec![
                NewBlock::new("persona", "I am Sam, a friendly companion who remembers."),
                NewBlock::new("human", ""),
            ],
            ..NewAgent::default()
        };
        adjust(&mut new);
        self.engram
            .agents()
            .create(new)
            .await
            .expect("create agent")
            .agent
            .id
    }

    /// An agent on the scripted server `mock` made from template `template`.
    pub async fn agent_from_template(
        &self,
        mock: &MockLlm,
        style: LoopStyle,
        template: &str,
    ) -> AgentId {
        let mut llm = LlmConfig::new("openai/mock-small");
        llm.base_url = Some(mock.base_url());
        llm.context_window = 32_000;
        let new = NewAgent {
            name: "Tasker".into(),
            llm: Some(llm),
            loop_style: style,
            ..NewAgent::default()
        };
        self.engram
            .agents()
            .create_from_template(template, new)
            .await
            .expect("create agent from template")
            .agent
            .id
    }

    /// Sends `text` and returns the outcome with every event the run emitted.
    pub async fn chat(&self, agent: &AgentId, text: &str) -> (RunOutcome, Vec<RunEvent>) {
        chat(&self.engram, agent, text, CancellationToken::new()).await
    }

    /// The value of the agent's block `label`.
    pub fn block(&self, agent: &AgentId, label: &str) -> String {
        self.engram
            .store()
            .blocks()
            .by_label(agent, label)
            .expect("block")
            .value
    }
}

impl Default for Home {
    fn default() -> Self {
        Self::new()
    }
}

/// Opens the engine on `dir` with an in-memory keychain and only the environment variables
/// in `vars`.
pub fn open_with_env(dir: &Path, vars: &[(&str, &str)]) -> Arc<Engram> {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    Engram::open(Options {
        home: Some(dir.to_owned()),
        secrets: Arc::new(MemoryStore::default()),
        env: Arc::new(move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())),
    })
    .expect("open engram")
}

/// Opens the engine on `dir` with `secrets` and no environment.
pub fn open(dir: &Path, secrets: Arc<dyn SecretStore>) -> Arc<Engram> {
    Engram::open(Options {
        home: Some(dir.to_owned()),
        secrets,
        env: Arc::new(|_| None),
    })
    .expect("open engram")
}

/// Runs one message, collecting events until the run's `Done`.
pub async fn chat(
    engram: &Engram,
    agent: &AgentId,
    text: &str,
    cancel: CancellationToken,
) -> (RunOutcome, Vec<RunEvent>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let outcome = engram
        .runs()
        .send_message(agent, text, &tx, cancel)
        .await
        .expect("run starts");
    drop(tx);
    let mut events = Vec::new();
    while let Some(e) = rx.recv().await {
        events.push(e);
    }
    (outcome, events)
}

/// The workspace binary `name` built alongside the tests (`cargo test` builds the workspace's
/// binaries into the same target directory as the test executables); `package` names the
/// crate that builds it, for the message when it is missing.
pub fn workspace_bin(name: &str, package: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // `ENGRAM_TEST_BIN_DIR` names another folder holding them (a copy kept apart from a
    // target dir that several checkouts share).
    let dir = match std::env::var_os("ENGRAM_TEST_BIN_DIR") {
        Some(d) => PathBuf::from(d),
        None => exe
            .parent()
            .and_then(Path::parent)
            .expect("target dir")
            .to_owned(),
    };
    let bin = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} is missing: build it with `cargo build -p {package} --bins`",
        bin.display()
    );
    bin
}

/// The `engram` binary built alongside the tests.
pub fn engram_bin() -> PathBuf {
    workspace_bin("engram", "engram-cli")
}

/// The scripted MCP server `mock-mcp` built alongside the tests.
pub fn mock_mcp_bin() -> PathBuf {
    workspace_bin("mock-mcp", "engram-mcp")
}

/// Runs the `engram` CLI on `home` with an in-memory keychain and no provider environment.
pub fn cli(home: &Path, args: &[&str]) -> Output {
    cli_command(home).args(args).output().expect("run engram")
}

/// The `engram` command prepared for `home`, for tests that need stdin or to kill it.
pub fn cli_command(home: &Path) -> Command {
    let mut cmd = Command::new(engram_bin());
    cmd.arg("--home")
        .arg(home)
        .env("ENGRAM_SECRETS", "memory")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ENGRAM_HOME");
    cmd
}

/// Creates agent "Sam" on the scripted model with the `engram` CLI in `home`; its id.
pub fn cli_agent(home: &Path, mock: &MockLlm) -> AgentId {
    let url = mock.base_url();
    let out = cli(
        home,
        &[
            "agent",
            "create",
            "--name",
            "Sam",
            "--model",
            "openai/mock-small",
            "--base-url",
            &url,
        ],
    );
    AgentId::from(stdout_ok(&out).trim())
}

/// Standard output of a successful CLI run; panics with stderr otherwise.
pub fn stdout_ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "engram failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every tool-result envelope the scripted server saw in the last chat request, as JSON.
pub fn last_tool_results(mock: &MockLlm) -> Vec<serde_json::Value> {
    let requests = mock.chat_requests();
    let Some(last) = requests.last() else {
        return Vec::new();
    };
    last.body["messages"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .filter(|m| m["role"] == "tool")
                .filter_map(|m| {
                    m["content"]
                        .as_str()
                        .and_then(|c| serde_json::from_str(c).ok())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Serves the REST API (and the UI's `/app` routes) over `engram` on a free loopback port
/// until the test ends; returns `http://127.0.0.1:PORT`.
pub async fn serve(engram: Arc<Engram>, config: engram_server::ServerConfig) -> String {
    let listener = engram_server::bind("127.0.0.1", 0)
        .await
        .expect("bind a loopback port");
    let base = format!("http://{}", listener.local_addr().expect("local addr"));
    tokio::spawn(engram_server::serve(
        listener,
        engram,
        config,
        std::future::pending(),
    ));
    base
}

/// The tool results of a run, as (tool name, envelope), in order.
pub fn results(out: &RunOutcome) -> Vec<(String, ToolReturn)> {
    out.messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| {
            (
                m.tool_name.clone().unwrap_or_default(),
                ToolReturn::parse(&m.content).expect("a tool envelope"),
            )
        })
        .collect()
}

/// Every tool call of the run got exactly one result, in the model's order.
pub fn assert_all_answered(out: &RunOutcome) {
    let calls: Vec<&str> = out
        .messages
        .iter()
        .flat_map(|m| m.tool_calls.iter().map(|c| c.id.as_str()))
        .collect();
    let answered: Vec<&str> = out
        .messages
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    assert_eq!(calls, answered, "each call answered once, in order");
}

/// A crash in the middle of a run: starts the real `engram` with `args` on `home`, waits until
/// the scripted model has had `calls` requests (at most 10 s), then kills the process.
/// Panics when the run never got that far (`what` says which run, for the message).
pub async fn kill_after_calls(
    home: &Path,
    args: &[&str],
    mock: &MockLlm,
    calls: usize,
    what: &str,
) {
    let mut child = cli_command(home)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..200 {
        if mock.chat_requests().len() >= calls {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(mock.chat_requests().len(), calls, "{what}");
    child.kill().unwrap();
    child.wait().unwrap();
}

/// SQLite's own integrity check of the database in `home` passes (after a crash).
pub fn assert_database_intact(home: &Path) {
    let db = rusqlite::Connection::open(home.join(engram_service::DB_FILE)).unwrap();
    let check: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}

//! llama.cpp's own `llama-server` (built from source by .ci/fetch-llama-server.sh; tests/run.sh
//! sets `ENGRAM_LLAMA_SERVER`) serving the same GGUF as the built-in model's tests, used the way
//! a user runs a local server: as an OpenAI-compatible provider with no key. Agents of both
//! loop styles hold the ten-message conversation; every message ends with a reply or a clear
//! error in bounded time, and the server's own log shows that no request Engram sent was
//! refused as invalid.

use crate::local_model::{converse_with, gguf};
use engram_core::{AgentId, LlmConfig, LoopStyle, NewAgent, NewBlock};
use engram_service::ProviderSetup;
use engram_suite::Home;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `llama-server` binary. Fails (never skips) without it: tests/run.sh builds it.
fn llama_server() -> PathBuf {
    let path = std::env::var("ENGRAM_LLAMA_SERVER").unwrap_or_else(|_| {
        panic!("ENGRAM_LLAMA_SERVER is not set: run `bash .ci/fetch-llama-server.sh` and export its output (tests/run.sh does)")
    });
    let path = PathBuf::from(path);
    assert!(path.is_file(), "{} is missing", path.display());
    path
}

/// A running `llama-server` on 127.0.0.1, its log in a file; killed when dropped.
struct Server {
    child: Child,
    port: u16,
    log: tempfile::NamedTempFile,
}

impl Server {
    /// Starts the server on the test GGUF with a 4,096-token context, one slot (so the whole
    /// context is one conversation's) and one thread, and waits until it has loaded the model.
    async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let log = tempfile::NamedTempFile::new().expect("log file");
        let child = Command::new(llama_server())
            .args(["-m", gguf().to_str().unwrap()])
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["-c", "4096", "-np", "1", "-t", "1", "--jinja"])
            .args(["--alias", "smollm2"])
            .stdout(Stdio::null())
            .stderr(log.reopen().expect("log file"))
            .spawn()
            .expect("start llama-server");
        let server = Self { child, port, log };
        server.wait_ready().await;
        server
    }

    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Polls `/health` until it answers 200 (503 while the model loads).
    async fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(120);
        let url = format!("http://127.0.0.1:{}/health", self.port);
        loop {
            let ok = reqwest::get(&url)
                .await
                .is_ok_and(|r| r.status().is_success());
            if ok {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "llama-server did not become ready: {}",
                self.log_text()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// The HTTP status of every chat request the server answered, from its log.
    fn chat_statuses(&self) -> Vec<u16> {
        self.log_text()
            .lines()
            .filter(|l| l.contains("done request: POST /v1/chat/completions"))
            .filter_map(|l| l.split_whitespace().last()?.parse().ok())
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sets the server up as a keyless provider and creates an agent of `style` on it, its
/// answers capped at 48 tokens and decoded greedily, as the built-in model's tests do.
fn agent(home: &Home, server: &Server, style: LoopStyle) -> AgentId {
    let info = home
        .engram
        .set_provider(ProviderSetup {
            name: "llamacpp".into(),
            base_url: Some(server.base_url()),
            ..ProviderSetup::default()
        })
        .expect("a provider without a key");
    assert!(!info.key_set, "no key was given or needed");
    let mut llm = LlmConfig::new("llamacpp/smollm2");
    llm.context_window = 4096;
    llm.max_tokens = Some(48);
    llm.temperature = Some(0.0);
    let new = NewAgent {
        name: "Sam".into(),
        llm: Some(llm),
        loop_style: style,
        embedding: None,
        blocks: vec![
            NewBlock::new("persona", "I am Sam, a friendly companion who remembers."),
            NewBlock::new("human", ""),
        ],
        ..NewAgent::default()
    };
    home.engram
        .create_agent(new)
        .expect("create agent")
        .agent
        .id
}

async fn converse(style: LoopStyle) {
    let server = Server::start().await;
    let home = Home::new();
    let agent = agent(&home, &server, style);
    converse_with(&home, &agent, &format!("llama-server {style:?}")).await;
    let statuses = server.chat_statuses();
    assert!(
        statuses.len() >= 10,
        "every message reached the server: {statuses:?}\n{}",
        server.log_text()
    );
    assert!(
        statuses.iter().all(|s| *s == 200),
        "a request was refused: {statuses:?}\n{}",
        server.log_text()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_loop_agent_holds_a_conversation_on_llama_server() {
    converse(LoopStyle::ToolLoop).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_classic_agent_holds_a_conversation_on_llama_server() {
    converse(LoopStyle::Classic).await;
}

//! The official MCP Python SDK (PyPI `mcp` 2.x) as a client of `engram mcp serve`, over stdio
//! (a `ClientSession` that launches the server) and over streamable HTTP (a `Client` with a
//! bearer token): the memory tool's commands with their refusals, archival and recall search,
//! a block read as a resource and its change notification after an agent edits it, and over
//! HTTP a read-only client, a wrong token (401) and a foreign Origin (403).
//!
//! The venv comes from `.ci/mcp-venv.sh` (tests/run.sh exports `ENGRAM_MCP_PYTHON`; the test
//! runs the script itself otherwise). Build the binary first: `cargo build -p engram-cli`.

use engram_core::{AgentId, Editor, LoopStyle, NewBlock};
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_suite::{Home, cli, cli_command, engram_bin, stdout_ok};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

/// The venv's python with the MCP SDK.
pub fn mcp_python() -> PathBuf {
    if let Some(p) = std::env::var_os("ENGRAM_MCP_PYTHON") {
        return PathBuf::from(p);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(root.join(".ci/mcp-venv.sh"))
        .output()
        .expect("run .ci/mcp-venv.sh");
    assert!(
        out.status.success(),
        "could not install the MCP SDK: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/mcp_memory_client.py")
}

/// Agent "Sam" with a `human` block holding a repeated line and a small `project` block, and a
/// past conversation about oolong in recall memory.
pub(crate) async fn setup(mock: &MockLlm, home: &Home) -> AgentId {
    let agent = home
        .agent_with(mock, LoopStyle::ToolLoop, |a| {
            a.blocks = vec![
                NewBlock::new("human", "Name: Bob\nLikes: tea\nLikes: tea"),
                NewBlock {
                    limit: Some(60),
                    ..NewBlock::new("project", "Ship the MCP server.")
                },
            ];
        })
        .await;
    mock.push(Reply::text("Oolong it is."));
    home.chat(&agent, "my favourite tea is oolong").await;
    agent
}

/// Reads the client's lines until READY (sent on), the rest after.
pub(crate) fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

pub(crate) fn wait_for(
    rx: &mpsc::Receiver<String>,
    prefix: &str,
    seen: &mut Vec<String>,
) -> String {
    loop {
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(90))
            .unwrap_or_else(|_| panic!("no {prefix} line; saw {seen:#?}"));
        seen.push(line.clone());
        if line.starts_with(prefix) {
            return line;
        }
    }
}

/// Runs the client to READY, lets the agent edit `human`, and checks the client was told.
/// Returns every line the client printed.
async fn drive(
    mut child: Child,
    mock: &MockLlm,
    home: &Home,
    agent: &AgentId,
    writer: &str,
) -> Vec<String> {
    let rx = lines_of(&mut child);
    let mut seen = Vec::new();
    wait_for(&rx, "READY", &mut seen);
    mock.push(Reply::ToolCalls(vec![Call::new(
        "core_memory_append",
        json!({"label": "human", "content": "Agent note: oolong"}),
    )]));
    mock.push(Reply::text("Noted."));
    home.chat(agent, "remember the oolong").await;
    let notified = wait_for(&rx, "NOTIFIED", &mut seen);
    assert!(notified.contains("Agent note: oolong"), "{notified}");
    assert!(notified.contains("Name: Robert"), "{notified}");
    wait_for(&rx, "DONE", &mut seen);
    let status = child.wait().expect("client exits");
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read as _;
        let _ = e.read_to_string(&mut stderr);
    }
    assert!(status.success(), "client failed: {seen:#?}\n{stderr}");
    for step in [
        "list_tools",
        "view",
        "create",
        "str_replace",
        "insert_limit",
        "archival",
        "recall",
        "read_resource",
    ] {
        assert!(
            seen.contains(&format!("ok {step}")),
            "{step} missing: {seen:#?}"
        );
    }
    let history = home.engram.blocks().history(agent, "human").await.unwrap();
    let editors: Vec<&Editor> = history.iter().map(|e| &e.editor).collect();
    assert!(
        editors.contains(&&Editor::Client {
            name: writer.into()
        }),
        "{editors:?}"
    );
    assert!(
        editors.iter().any(|e| matches!(e, Editor::Agent { .. })),
        "{editors:?}"
    );
    seen
}

#[tokio::test]
async fn the_python_sdk_over_stdio() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = setup(&mock, &home).await;
    let child = Command::new(mcp_python())
        .arg(script())
        .args(["stdio", &engram_bin().display().to_string()])
        .arg(home.path())
        .arg("Sam")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the python client");
    let seen = drive(child, &mock, &home, &agent, "py-stdio").await;
    // A ClientSession shakes hands the pre-2026 way: notifications come by resources/subscribe.
    assert!(
        seen.contains(&"protocol 2025-11-25".to_owned()),
        "{seen:#?}"
    );
}

#[tokio::test]
async fn the_python_sdk_over_http_with_tokens() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = setup(&mock, &home).await;
    stdout_ok(&cli(home.path(), &["mcp", "client", "add", "py-writer"]));
    stdout_ok(&cli(
        home.path(),
        &["mcp", "client", "add", "py-reader", "--read-only"],
    ));
    let mut server = cli_command(home.path())
        .args([
            "mcp",
            "serve",
            "--http",
            "--port",
            "0",
            "--show-tokens",
            "--agent",
            "Sam",
        ])
        .env("ENGRAM_MCP_MEMORY_POLL_MS", "100")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start engram mcp serve --http");
    let mut lines = BufReader::new(server.stdout.take().expect("stdout")).lines();
    let url = lines.next().unwrap().unwrap();
    let url = url
        .strip_prefix("listening on ")
        .expect("address line")
        .to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let mut tokens = std::collections::HashMap::new();
    for _ in 0..2 {
        let line = lines.next().unwrap().unwrap();
        let (name, token) = line
            .strip_prefix("token ")
            .and_then(|l| l.split_once(": "))
            .expect("token line");
        tokens.insert(name.to_owned(), token.to_owned());
    }
    let child = Command::new(mcp_python())
        .arg(script())
        .args(["http", &url, &tokens["py-writer"], &tokens["py-reader"]])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the python client");
    let seen = drive(child, &mock, &home, &agent, "py-writer").await;
    // A Client negotiates 2026-07-28: notifications come by subscriptions/listen.
    assert!(
        seen.contains(&"protocol 2026-07-28".to_owned()),
        "{seen:#?}"
    );
    for step in ["ok read_only", "ok http_guard"] {
        assert!(seen.contains(&step.to_owned()), "{step} missing: {seen:#?}");
    }
    let _ = server.kill();
    let _ = server.wait();
    let list = stdout_ok(&cli(home.path(), &["mcp", "client", "list"]));
    assert!(
        list.contains("py-writer  [read-write]  last write"),
        "{list}"
    );
    assert!(
        list.contains("py-reader  [read-only]  no writes yet"),
        "{list}"
    );
}

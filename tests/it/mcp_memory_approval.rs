//! Writes that wait for the user's approval, end to end: the official MCP Python SDK launches
//! `engram mcp serve --approve-writes` over stdio, and the test answers each write as the window
//! does, through `pending_client_writes` and `decide_client_write` on the REST API of another
//! engine on the same data directory. Approved → applied with the client as author and the
//! client gets the tool's result (the server answered a `view` and the agent ran meanwhile);
//! denied → a tool error and the block unchanged; approved after a person changed the text →
//! the usual "not found" refusal, nothing overwritten; unanswered → a tool error when the
//! short timeout passes, and nothing waits any more.

use crate::mcp_memory_python::{lines_of, mcp_python, setup, wait_for};
use engram_core::Editor;
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_secrets::MemoryStore;
use engram_server::{Auth, ServerConfig};
use engram_suite::rest::TOKEN;
use engram_suite::{Home, cli, engram_bin, open, serve, stdout_ok};
use secrecy::SecretString;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the server lets a write wait: short, so the unanswered write ends soon.
const TIMEOUT_SECS: &str = "12";

async fn app(base: &str, command: &str, args: Value) -> (reqwest::StatusCode, Value) {
    let resp = reqwest::Client::new()
        .post(format!("{base}/app/{command}"))
        .bearer_auth(TOKEN)
        .json(&args)
        .send()
        .await
        .expect("request");
    let status = resp.status();
    (status, resp.json().await.expect("JSON body"))
}

/// Waits until a write to `path` is pending, as the window's poll sees it.
async fn pending(base: &str, path: &str) -> Value {
    let start = Instant::now();
    loop {
        let (status, list) = app(base, "pending_client_writes", json!({})).await;
        assert!(status.is_success(), "{list}");
        if let Some(w) = list
            .as_array()
            .and_then(|l| l.iter().find(|w| w["path"] == path))
        {
            return w.clone();
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no pending write to {path}: {list}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn decide(base: &str, id: &Value, approve: bool, reason: Option<&str>) -> Value {
    let (status, outcome) = app(
        base,
        "decide_client_write",
        json!({"id": id, "approve": approve, "reason": reason}),
    )
    .await;
    assert!(status.is_success(), "{outcome}");
    outcome
}

#[tokio::test]
async fn writes_wait_for_the_user_and_apply_only_when_approved() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = setup(&mock, &home).await;
    let window = open(home.path(), Arc::new(MemoryStore::default()));
    let base = serve(
        window,
        ServerConfig::new(Auth::Token(SecretString::from(TOKEN))),
    )
    .await;
    let mut child = Command::new(mcp_python())
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/mcp_memory_approval.py"))
        .arg(engram_bin())
        .arg(home.path())
        .args(["Sam", TIMEOUT_SECS])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the python client");
    let rx = lines_of(&mut child);
    let mut seen = Vec::new();

    // 1. The window shows who wants to change what; the agent runs meanwhile; approve.
    let w = pending(&base, "/memories/human.md").await;
    assert_eq!(w["client"], "py-approve", "{w}");
    assert_eq!(w["agent_name"], "Sam", "{w}");
    assert_eq!(w["action"], "str_replace", "{w}");
    assert_eq!(w["label"], "human", "{w}");
    assert!(w["before"].as_str().unwrap().contains("Name: Bob"), "{w}");
    assert!(w["after"].as_str().unwrap().contains("Name: Robert"), "{w}");
    assert_eq!(
        home.block(&agent, "human"),
        "Name: Bob\nLikes: tea\nLikes: tea"
    );
    wait_for(&rx, "ok view_while_waiting", &mut seen);
    mock.push(Reply::ToolCalls(vec![Call::new(
        "core_memory_append",
        json!({"label": "human", "content": "Agent note: oolong"}),
    )]));
    mock.push(Reply::text("Noted."));
    home.chat(&agent, "remember the oolong").await;
    let outcome = decide(&base, &w["id"], true, None).await;
    assert_eq!(outcome["status"], "applied", "{outcome}");
    wait_for(&rx, "ok approved", &mut seen);
    let human = home.block(&agent, "human");
    assert!(
        human.contains("Name: Robert") && human.contains("Agent note: oolong"),
        "both edits are kept: {human}"
    );
    let history = home.engram.blocks().history(&agent, "human").await.unwrap();
    assert!(
        history.iter().any(|e| e.editor
            == Editor::Client {
                name: "py-approve".into()
            }),
        "{history:?}"
    );

    // 2. Denied from the terminal (`engram mcp client pending|deny`): the client is told
    //    why; nothing changes.
    let w = pending(&base, "/memories/project.md").await;
    let id = w["id"].as_str().unwrap();
    let listed = stdout_ok(&cli(home.path(), &["mcp", "client", "pending"]));
    assert!(
        listed.contains(id)
            && listed.contains("py-approve")
            && listed.contains("/memories/project.md"),
        "{listed}"
    );
    let said = stdout_ok(&cli(
        home.path(),
        &["mcp", "client", "deny", id, "--reason", "not now"],
    ));
    assert!(said.starts_with("denied: "), "{said}");
    wait_for(&rx, "ok denied", &mut seen);
    assert_eq!(home.block(&agent, "project"), "Ship the MCP server.");
    let (status, again) = app(
        &base,
        "decide_client_write",
        json!({"id": w["id"], "approve": true}),
    )
    .await;
    assert_eq!(status, reqwest::StatusCode::CONFLICT, "{again}");

    // 3. A person changes the text first: approving applies to memory as it is now, so the
    //    write is refused, not forced.
    let w = pending(&base, "/memories/human.md").await;
    let now = home
        .block(&agent, "human")
        .replace("Name: Robert", "Name: Bobby");
    home.engram
        .blocks()
        .set_value(&agent, "human", &now)
        .await
        .unwrap();
    let outcome = decide(&base, &w["id"], true, None).await;
    assert_eq!(outcome["status"], "refused", "{outcome}");
    wait_for(&rx, "ok conflict", &mut seen);
    assert!(home.block(&agent, "human").contains("Name: Bobby"));

    // 4. Nobody answers: the write is withdrawn when the timeout passes.
    pending(&base, "archival memory").await;
    wait_for(&rx, "ok timed_out", &mut seen);
    let (_, list) = app(&base, "pending_client_writes", json!({})).await;
    assert_eq!(list, json!([]), "nothing waits any more");
    wait_for(&rx, "DONE", &mut seen);
    let status = child.wait().expect("client exits");
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read as _;
        let _ = e.read_to_string(&mut stderr);
    }
    assert!(status.success(), "client failed: {seen:#?}\n{stderr}");
    let notes = home
        .engram
        .archival()
        .list(&agent, &engram_store::PassageList::default())
        .await
        .unwrap();
    assert!(
        !notes.iter().any(|p| p.text.contains("nobody approved")),
        "the unanswered note was not saved"
    );
}

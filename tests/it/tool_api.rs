//! The door a running tool calls Engram's API through: a Unix socket per tool call that serves
//! only the call's own agent, records block edits as the tool call's, refuses every other route
//! in words the tool's author can act on, and is gone when the call ends.

use engram_agent::{ToolApi, ToolScope};
use engram_core::{Editor, NewAgent, NewBlock};
use engram_suite::Home;
use std::path::Path;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

/// One HTTP/1.1 request over the Unix socket at `socket`: `(status, body)`.
async fn request(socket: &Path, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = UnixStream::connect(socket).await.expect("connect");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost:8283\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    let status = raw
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status line");
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

async fn agent(home: &Home, name: &str) -> engram_core::AgentId {
    home.engram
        .agents()
        .create(NewAgent {
            name: name.into(),
            blocks: vec![
                NewBlock::new("tasks", "[]"),
                NewBlock {
                    read_only: true,
                    ..NewBlock::new("rules", "Be kind.")
                },
            ],
            ..NewAgent::default()
        })
        .await
        .unwrap()
        .agent
        .id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_door_serves_only_its_own_agent_and_closes_with_the_call() {
    let home = Home::new();
    let (own, other) = (agent(&home, "Own").await, agent(&home, "Other").await);
    let Home { dir: _dir, engram } = home;
    let api = engram_server::tool_api::install(&engram).unwrap();
    let door = api
        .open(ToolScope {
            agent_id: own.clone(),
            tool_call_id: "call_push_1".into(),
        })
        .unwrap();
    let socket = door.socket.clone();
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(socket.parent().unwrap())
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o700, "the sockets' directory is private");

    let blocks = format!("/v1/agents/{own}/core-memory/blocks/tasks");
    let (status, body) = request(&socket, "GET", &blocks, "").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"[]\""), "{body}");

    // No token needed, and the edit is the tool call's.
    let (status, body) = request(&socket, "PATCH", &blocks, r#"{"value": "[\"a\"]"}"#).await;
    assert_eq!(status, 200, "{body}");
    let history = engram.blocks().history(&own, "tasks").await.unwrap();
    assert_eq!(
        history[0].editor,
        Editor::Agent {
            agent_id: own.clone(),
            tool_call_id: Some("call_push_1".into())
        }
    );

    // Reading the agent is fine; changing the agent itself is the user's.
    let (status, body) = request(&socket, "GET", &format!("/v1/agents/{own}"), "").await;
    assert_eq!(status, 200, "{body}");
    let evil = r#"{"llm_config": {"model": "x", "model_endpoint_type": "openai", "model_endpoint": "https://evil.example/v1"}, "system": "obey", "tool_ids": []}"#;
    for (method, path, body) in [
        (
            "GET",
            format!("/v1/agents/{other}/core-memory/blocks/tasks"),
            "{}",
        ),
        ("GET", "/v1/agents/".to_owned(), "{}"),
        ("GET", "/v1/tools/".to_owned(), "{}"),
        ("POST", format!("/v1/agents/{own}/messages"), "{}"),
        ("PATCH", format!("/v1/agents/{own}"), evil),
        ("DELETE", format!("/v1/agents/{own}"), "{}"),
        ("PATCH", format!("/v1/agents/{own}/reset-messages"), "{}"),
        (
            "PATCH",
            format!("/v1/agents/{own}/core-memory/blocks/attach/block-x"),
            "{}",
        ),
        (
            "PATCH",
            format!("/v1/agents/{own}/tools/attach/tool-x"),
            "{}",
        ),
        (
            "PATCH",
            format!("/v1/agents/{own}/core-memory/blocks/rules"),
            r#"{"value": "Obey."}"#,
        ),
        (
            "PATCH",
            blocks.clone(),
            r#"{"value": "[]", "limit": 99999}"#,
        ),
    ] {
        let (status, answer) = request(&socket, method, &path, body).await;
        assert_eq!(status, 403, "{method} {path}: {answer}");
        assert!(answer.contains("detail"), "{answer}");
    }
    let agent = engram.agents().get(&own).await.unwrap().agent;
    assert!(
        !agent
            .llm
            .base_url
            .as_deref()
            .is_some_and(|u| u.contains("evil")),
        "the tool changed its agent's endpoint"
    );
    assert_eq!(
        engram.blocks().by_label(&own, "rules").await.unwrap().value,
        "Be kind."
    );
    assert_eq!(
        engram
            .blocks()
            .by_label(&other, "tasks")
            .await
            .unwrap()
            .value,
        "[]",
        "the other agent is untouched"
    );

    drop(door);
    assert!(!socket.exists(), "the socket is removed with the call");
    assert!(UnixStream::connect(&socket).await.is_err());
}

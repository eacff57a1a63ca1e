//! The hub against real MCP servers: the `mock-mcp` binary over stdio and the same server over
//! streamable HTTP on 127.0.0.1.

use engram_mcp::hub::{Launch, ServerSpec};
use engram_mcp::{Hub, McpError, mock};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Duration;

fn stdio(name: &str) -> ServerSpec {
    ServerSpec {
        id: format!("mcp_server-{name}"),
        name: name.to_owned(),
        launch: Launch::Stdio {
            command: env!("CARGO_BIN_EXE_mock-mcp").to_owned(),
            args: vec![],
            env: vec![],
        },
    }
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

fn hub(timeout_ms: u64, idle_ms: u64) -> Arc<Hub> {
    Arc::new(Hub::new(
        Duration::from_millis(timeout_ms),
        Duration::from_millis(idle_ms),
    ))
}

#[tokio::test]
async fn a_stdio_server_lists_its_tools_with_schemas_and_answers_calls() {
    let hub = hub(20_000, 60_000);
    let spec = stdio("mock");
    let tools = hub.list_tools(&spec).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for n in ["add", "crash", "echo", "fail", "sleep"] {
        assert!(names.contains(&n), "{names:?}");
    }
    let echo = tools.iter().find(|t| t.name == "echo").unwrap();
    assert_eq!(echo.description, "Repeat the given text back.");
    assert_eq!(echo.input_schema["properties"]["text"]["type"], "string");
    let out = hub
        .call_tool(&spec, "add", args(json!({"a": 2, "b": 40})))
        .await
        .unwrap();
    assert_eq!((out.is_error, out.text.as_str()), (false, "42"));
    let failed = hub.call_tool(&spec, "fail", Map::new()).await.unwrap();
    assert!(failed.is_error);
    assert_eq!(failed.text, "the tool failed on purpose");
}

#[tokio::test]
async fn a_crash_mid_call_names_the_server_and_the_next_call_restarts_it() {
    let hub = hub(20_000, 60_000);
    let spec = stdio("crashy");
    let err = hub.call_tool(&spec, "crash", Map::new()).await.unwrap_err();
    assert!(matches!(err, McpError::Lost { .. }), "{err:?}");
    assert!(err.to_string().contains("'crashy'"), "{err}");
    assert!(!hub.is_connected(&spec.id).await);
    let out = hub
        .call_tool(&spec, "echo", args(json!({"text": "back"})))
        .await
        .unwrap();
    assert_eq!(out.text, "echo: back");
}

#[tokio::test]
async fn a_slow_call_times_out_and_the_server_is_restarted() {
    let hub = hub(1_500, 60_000);
    let spec = stdio("slow");
    hub.list_tools(&spec).await.unwrap();
    let err = hub
        .call_tool(&spec, "sleep", args(json!({"seconds": 30})))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, McpError::Timeout { server, .. } if server == "slow"),
        "{err:?}"
    );
    assert!(!hub.is_connected(&spec.id).await);
    let out = hub
        .call_tool(&spec, "add", args(json!({"a": 1, "b": 1})))
        .await
        .unwrap();
    assert_eq!(out.text, "2");
}

#[tokio::test]
async fn an_idle_stdio_server_is_stopped_and_started_again_on_use() {
    let hub = hub(20_000, 300);
    let spec = stdio("idle");
    hub.list_tools(&spec).await.unwrap();
    assert!(hub.is_connected(&spec.id).await);
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    assert!(!hub.is_connected(&spec.id).await, "still running when idle");
    let out = hub
        .call_tool(&spec, "echo", args(json!({"text": "again"})))
        .await
        .unwrap();
    assert_eq!(out.text, "echo: again");
}

#[tokio::test]
async fn a_missing_program_is_a_start_error_naming_the_server() {
    let hub = hub(5_000, 60_000);
    let spec = ServerSpec {
        id: "x".into(),
        name: "ghost".into(),
        launch: Launch::Stdio {
            command: "/nonexistent/engram-no-such-server".into(),
            args: vec![],
            env: vec![],
        },
    };
    let err = hub.list_tools(&spec).await.unwrap_err();
    assert!(matches!(err, McpError::Start { .. }), "{err:?}");
    assert!(err.to_string().contains("'ghost'"), "{err}");
}

#[tokio::test]
async fn http_servers_get_their_own_bearer_token_and_no_other() {
    let a = mock::serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let b = mock::serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let hub = hub(20_000, 60_000);
    let with_token = ServerSpec {
        id: "a".into(),
        name: "a".into(),
        launch: Launch::Http {
            url: a.url(),
            bearer: Some("secret-a".into()),
        },
    };
    let without = ServerSpec {
        id: "b".into(),
        name: "b".into(),
        launch: Launch::Http {
            url: b.url(),
            bearer: None,
        },
    };
    let out = hub
        .call_tool(&with_token, "echo", args(json!({"text": "hi"})))
        .await
        .unwrap();
    assert_eq!(out.text, "echo: hi");
    assert_eq!(hub.list_tools(&without).await.unwrap().len(), 5);
    let seen_a = a.seen_authorizations();
    let seen_b = b.seen_authorizations();
    assert!(!seen_a.is_empty() && !seen_b.is_empty());
    assert!(
        seen_a
            .iter()
            .all(|h| h.as_deref() == Some("Bearer secret-a")),
        "{seen_a:?}"
    );
    assert!(seen_b.iter().all(Option::is_none), "{seen_b:?}");
}

#[tokio::test]
async fn an_http_server_that_is_down_is_named() {
    let a = mock::serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let url = a.url();
    a.stop();
    drop(a);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let hub = hub(5_000, 60_000);
    let spec = ServerSpec {
        id: "down".into(),
        name: "down".into(),
        launch: Launch::Http { url, bearer: None },
    };
    let err = hub.list_tools(&spec).await.unwrap_err();
    assert!(err.to_string().contains("'down'"), "{err}");
}

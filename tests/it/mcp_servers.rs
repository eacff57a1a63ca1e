//! MCP servers through the whole engine: the real `mock-mcp` server (rmcp's server side) over
//! stdio and streamable HTTP on 127.0.0.1, its tools listed, stored and attached, and called by
//! the scripted model through the real provider code and loop. Faults: a crash mid-call, a
//! timeout, a server that is not active yet.

use engram_core::{LoopStyle, McpTransport, NewMcpServer, NewMcpTransport, ToolStatus};
use engram_mock_llm::{Call, ChatView, MockLlm, Reply, Script};
use engram_service::Notice;
use engram_suite::{Home, assert_all_answered, mock_mcp_bin, results};
use serde_json::{Value, json};

fn stdio_server(name: &str) -> NewMcpServer {
    NewMcpServer {
        name: name.into(),
        transport: NewMcpTransport::Stdio {
            command: mock_mcp_bin().display().to_string(),
            args: vec![],
            env: Default::default(),
        },
    }
}

/// A model that makes `calls` once per user message, then answers "done".
fn calls_once(calls: Vec<(&'static str, Value)>) -> Script {
    Script::rules(move |view: &ChatView| {
        if view.messages.last().is_some_and(|m| m.is_real_user()) {
            Reply::ToolCalls(
                calls
                    .iter()
                    .map(|(n, a)| Call::new(*n, a.clone()))
                    .collect(),
            )
        } else {
            Reply::text("done")
        }
    })
}

/// Adds `server`, lists its tools and attaches `tools` (Engram names) to a new agent.
async fn agent_with_mcp(
    home: &Home,
    mock: &MockLlm,
    server: NewMcpServer,
    tools: &[&str],
) -> engram_core::AgentId {
    let agent = home.agent(mock, LoopStyle::ToolLoop).await;
    let server = home.engram.mcp().add_server(server).expect("add server");
    let listed = home
        .engram
        .mcp()
        .list_tools(&server.name)
        .await
        .expect("list");
    for name in tools {
        let tool = listed
            .iter()
            .find(|t| t.name == *name)
            .unwrap_or_else(|| panic!("{name} not listed"));
        home.engram
            .tools()
            .attach(&agent, &tool.id)
            .await
            .expect("attach");
    }
    agent
}

#[tokio::test]
async fn a_server_tool_is_listed_attached_and_called_by_the_model() {
    let mock = MockLlm::start(calls_once(vec![("files__echo", json!({"text": "hello"}))])).await;
    let home = Home::new();
    let agent = agent_with_mcp(&home, &mock, stdio_server("files"), &["files__echo"]).await;

    let tools = home.engram.mcp().stored_tools("files").unwrap();
    let echo = tools.iter().find(|t| t.name == "files__echo").unwrap();
    assert_eq!(
        echo.json_schema["parameters"]["properties"]["text"]["type"],
        "string"
    );
    assert_eq!(echo.mcp.as_ref().unwrap().tool_name, "echo");
    assert!(echo.available);

    let (out, _) = home.chat(&agent, "say hello through the server").await;
    assert_all_answered(&out);
    let r = results(&out);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].0, "files__echo");
    assert_eq!(r[0].1.status, ToolStatus::Ok);
    assert_eq!(r[0].1.message, "echo: hello");
    // The model was offered the tool with the server's schema.
    let first = &mock.chat_requests()[0].body;
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"files__echo"), "{offered:?}");
}

#[tokio::test]
async fn a_crash_mid_call_is_a_failed_result_naming_the_server_and_the_next_run_works() {
    let mock = MockLlm::start(Script::rules(|view: &ChatView| {
        let last = view.messages.last();
        match last {
            Some(m) if m.is_real_user() && m.text.contains("crash") => Reply::ToolCalls(vec![
                Call::new("box__crash", json!({})),
                Call::new("box__add", json!({"a": 1, "b": 2})),
            ]),
            Some(m) if m.is_real_user() => {
                Reply::ToolCalls(vec![Call::new("box__add", json!({"a": 20, "b": 22}))])
            }
            _ => Reply::text("done"),
        }
    }))
    .await;
    let home = Home::new();
    let mut notices = home.engram.notices();
    let agent = agent_with_mcp(
        &home,
        &mock,
        stdio_server("box"),
        &["box__crash", "box__add"],
    )
    .await;

    let (out, _) = home.chat(&agent, "please crash").await;
    assert_all_answered(&out);
    let r = results(&out);
    assert_eq!(r[0].1.status, ToolStatus::Failed);
    assert!(
        r[0].1.message.contains("MCP server 'box'"),
        "{}",
        r[0].1.message
    );
    // The parallel call after the crash restarted the server and ran.
    assert_eq!(
        (r[1].1.status, r[1].1.message.as_str()),
        (ToolStatus::Ok, "3")
    );
    let mut failed = None;
    while let Ok(n) = notices.try_recv() {
        if let Notice::McpServerFailed {
            server, message, ..
        } = n
        {
            failed = Some((server, message));
        }
    }
    let (server, message) = failed.expect("a notice for the UI");
    assert_eq!(server, "box");
    assert!(message.contains("'box'"), "{message}");
    // The request after the failure was valid: every call answered before the next call.
    let requests = mock.chat_requests();
    let after = &requests[requests.len() - 1].body["messages"];
    let tool_msgs = after
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .count();
    assert_eq!(tool_msgs, 2);

    let (out, _) = home.chat(&agent, "add please").await;
    assert_all_answered(&out);
    assert_eq!(results(&out)[0].1.message, "42");
}

#[tokio::test]
async fn a_call_that_takes_too_long_fails_with_the_timeout() {
    let mock = MockLlm::start(calls_once(vec![("slow__sleep", json!({"seconds": 60}))])).await;
    let home = Home::with_env(&[("ENGRAM_MCP_TIMEOUT", "1.5")]);
    let agent = agent_with_mcp(&home, &mock, stdio_server("slow"), &["slow__sleep"]).await;
    let started = std::time::Instant::now();
    let (out, _) = home.chat(&agent, "wait a minute").await;
    assert!(started.elapsed().as_secs() < 30);
    assert_all_answered(&out);
    let r = results(&out);
    assert_eq!(r[0].1.status, ToolStatus::Failed);
    assert!(
        r[0].1
            .message
            .contains("MCP server 'slow' did not answer within"),
        "{}",
        r[0].1.message
    );
}

#[tokio::test]
async fn a_pasted_config_is_inactive_until_accepted() {
    let mock = MockLlm::start(calls_once(vec![("pasted__echo", json!({"text": "x"}))])).await;
    let home = Home::new();
    let block = json!({"mcpServers": {"pasted": {
        "command": mock_mcp_bin().display().to_string(),
        "args": [],
        "env": {"SOME_KEY": "very-secret-env-value"}
    }}})
    .to_string();
    let servers = home
        .engram
        .mcp()
        .import(&block, "claude_desktop_config.json")
        .unwrap();
    assert_eq!(servers.len(), 1);
    assert!(!servers[0].active);
    assert_eq!(servers[0].source, "claude_desktop_config.json");
    assert!(matches!(&servers[0].transport,
        McpTransport::Stdio { env_keys, .. } if env_keys == &["SOME_KEY".to_owned()]));
    let err = home.engram.mcp().list_tools("pasted").await.unwrap_err();
    assert!(err.to_string().contains("not active"), "{err}");
    assert!(!home.engram.mcp().connected("pasted").await.unwrap());

    home.engram.mcp().set_active("pasted", true).await.unwrap();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    let tools = home.engram.mcp().list_tools("pasted").await.unwrap();
    let echo = tools.iter().find(|t| t.name == "pasted__echo").unwrap();
    home.engram.tools().attach(&agent, &echo.id).await.unwrap();

    // Deactivated again: the call is refused without starting anything.
    home.engram.mcp().set_active("pasted", false).await.unwrap();
    let (out, _) = home.chat(&agent, "echo").await;
    let r = results(&out);
    assert_eq!(r[0].1.status, ToolStatus::Failed);
    assert!(r[0].1.message.contains("not active"), "{}", r[0].1.message);
    assert!(!home.engram.mcp().connected("pasted").await.unwrap());

    // The env value went to the keychain, not the database.
    home.engram.checkpoint().unwrap();
    let db = std::fs::read(home.path().join(engram_service::DB_FILE)).unwrap();
    assert!(!String::from_utf8_lossy(&db).contains("very-secret-env-value"));
}

#[tokio::test]
async fn an_http_server_gets_its_token_from_the_keychain_and_removal_detaches_its_tools() {
    let http = engram_mcp::mock::serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let mock = MockLlm::start(calls_once(vec![("web__add", json!({"a": 2, "b": 3}))])).await;
    let home = Home::new();
    let server = NewMcpServer {
        name: "web".into(),
        transport: NewMcpTransport::StreamableHttp {
            url: http.url(),
            token: Some("tok-123".into()),
        },
    };
    let agent = agent_with_mcp(&home, &mock, server, &["web__add"]).await;
    let (out, _) = home.chat(&agent, "add").await;
    assert_eq!(results(&out)[0].1.message, "5");
    let seen = http.seen_authorizations();
    assert!(!seen.is_empty());
    assert!(
        seen.iter().all(|h| h.as_deref() == Some("Bearer tok-123")),
        "{seen:?}"
    );
    let listed = home.engram.mcp().list().unwrap();
    assert!(matches!(
        &listed[0].transport,
        McpTransport::StreamableHttp {
            has_token: true,
            ..
        }
    ));
    home.engram.checkpoint().unwrap();
    let db = std::fs::read(home.path().join(engram_service::DB_FILE)).unwrap();
    assert!(!String::from_utf8_lossy(&db).contains("tok-123"));

    home.engram.mcp().remove("web").await.unwrap();
    let names: Vec<String> = home
        .engram
        .tools()
        .of_agent(&agent)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(!names.contains(&"web__add".to_owned()), "{names:?}");
    assert!(home.engram.tools().find("web__add").await.is_err());
    assert!(home.engram.mcp().list().unwrap().is_empty());
}

#[tokio::test]
async fn a_server_tool_under_approval_waits_and_names_its_server() {
    let mock = MockLlm::start(calls_once(vec![("files__echo", json!({"text": "hi"}))])).await;
    let home = Home::new();
    let agent = agent_with_mcp(&home, &mock, stdio_server("files"), &["files__echo"]).await;
    home.engram
        .tools()
        .set_approval(&agent, "files__echo", true)
        .await
        .expect("ask before running");

    let (out, _) = home.chat(&agent, "say hi").await;
    assert_eq!(out.stop_reason.as_str(), "requires_approval");
    assert!(results(&out).is_empty(), "nothing ran before the decision");
    let pending = home
        .engram
        .runs()
        .pending_approval(&agent)
        .await
        .unwrap()
        .expect("the call waits");
    assert_eq!(pending.tool_call.name, "files__echo");
    assert_eq!(pending.server.as_deref(), Some("files"));
}

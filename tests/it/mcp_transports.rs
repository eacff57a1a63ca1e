//! MCP servers through every transport over the real binaries and HTTP: Letta's
//! `/v1/mcp-servers/` routes (add, list, tools, attach, a message that calls the tool, delete),
//! `engram mcp …` on the real CLI, and agent files (export writes the server without secrets;
//! import stores it inactive).

use engram_core::{LoopStyle, McpTransport, NewMcpServer, NewMcpTransport};
use engram_mock_llm::{Call, ChatView, Reply, Script};
use engram_suite::rest::{RestApi, TOKEN};
use engram_suite::{Home, cli, cli_command, mock_mcp_bin, stdout_ok};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::io::Write as _;
use std::process::Stdio;

fn mock_mcp() -> String {
    mock_mcp_bin().display().to_string()
}

#[tokio::test]
async fn letta_mcp_server_routes_add_list_attach_call_and_delete() {
    let api = RestApi::start(Script::rules(|view: &ChatView| {
        if view.messages.last().is_some_and(|m| m.is_real_user()) {
            Reply::ToolCalls(vec![Call::new("files__add", json!({"a": 4, "b": 5}))])
        } else {
            Reply::text("done")
        }
    }))
    .await;
    // letta-client 1.x nests the transport in `config`.
    let created = api
        .ok(
            Method::POST,
            "/v1/mcp-servers/",
            Some(json!({"server_name": "files", "config": {"mcp_server_type": "stdio", "command": mock_mcp(), "args": [], "env": {"ROOT": "secret-root"}}})),
        )
        .await;
    assert_eq!(created["server_name"], "files");
    assert_eq!(created["mcp_server_type"], "stdio");
    assert_eq!(created["env_keys"], json!(["ROOT"]));
    assert!(!created.to_string().contains("secret-root"), "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("mcp_server-"));

    let list = api.ok(Method::GET, "/v1/mcp-servers", None).await;
    assert_eq!(list.as_array().unwrap().len(), 1);
    let tools = api
        .ok(Method::GET, &format!("/v1/mcp-servers/{id}/tools"), None)
        .await;
    let add = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "files__add")
        .expect("files__add listed")
        .clone();
    assert_eq!(add["tool_type"], "external_mcp");
    assert_eq!(add["metadata_"]["mcp"]["tool_name"], "add");
    assert_eq!(
        add["json_schema"]["parameters"]["properties"]["a"]["type"],
        "integer"
    );

    let agent = api.agent("Ada", vec![], json!({})).await;
    let tool_id = add["id"].as_str().unwrap();
    api.ok(
        Method::PATCH,
        &format!("/v1/agents/{agent}/tools/attach/{tool_id}"),
        None,
    )
    .await;
    let reply = api
        .ok(
            Method::POST,
            &format!("/v1/agents/{agent}/messages"),
            Some(json!({"messages": [{"role": "user", "content": "add them"}]})),
        )
        .await;
    let ret = reply["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["message_type"] == "tool_return_message")
        .expect("a tool return");
    assert_eq!(ret["status"], "success");
    assert!(ret["tool_return"].to_string().contains('9'), "{ret}");

    // Bad input is a clear 400, an unknown server a 404.
    let (status, body) = api
        .call(
            Method::POST,
            "/v1/mcp-servers/",
            Some(json!({"server_name": "bad-name", "command": "x"})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _) = api
        .call(Method::GET, "/v1/mcp-servers/nope/tools", None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    api.ok(Method::DELETE, &format!("/v1/mcp-servers/{id}"), None)
        .await;
    let tools = api
        .ok(Method::GET, &format!("/v1/agents/{agent}/tools"), None)
        .await;
    assert!(!tools.to_string().contains("files__add"), "{tools}");
    // Without the token nothing is reachable at all.
    let resp = api
        .http
        .get(format!("{}/v1/mcp-servers/", api.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let _ = TOKEN;
}

#[tokio::test]
async fn without_a_token_the_api_refuses_to_add_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let engram = engram_suite::open(
        dir.path(),
        std::sync::Arc::new(engram_secrets::MemoryStore::default()),
    );
    let base = engram_suite::serve(
        engram,
        engram_server::ServerConfig::new(engram_server::Auth::Disabled),
    )
    .await;
    let resp = reqwest::Client::new()
        .post(format!("{base}/v1/mcp-servers/"))
        .json(&json!({"server_name": "files", "command": mock_mcp()}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let body: Value = resp.json().await.unwrap();
    assert!(body.to_string().contains("--no-auth"), "{body}");
    let listed: Value = reqwest::get(format!("{base}/v1/mcp-servers/"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed, json!([]));
}

#[test]
fn the_cli_adds_tests_imports_accepts_and_removes_servers() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let id = stdout_ok(&cli(h, &["mcp", "add", "files", "--", &mock_mcp()]));
    assert!(id.trim().starts_with("mcp_server-"), "{id}");
    let tested = stdout_ok(&cli(h, &["mcp", "test", "files"]));
    assert!(tested.starts_with("ok: 5 tools"), "{tested}");
    assert!(
        tested.contains("files__echo  Repeat the given text back."),
        "{tested}"
    );
    let listed = stdout_ok(&cli(h, &["tool", "list"]));
    assert!(listed.contains("  files__echo  (mcp: files)"), "{listed}");

    // A name that cannot be one is refused, saying why.
    let bad = cli(h, &["mcp", "add", "my-files", "--", &mock_mcp()]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("cannot name an MCP server"));

    // A pasted Claude Desktop config: stored inactive until accepted.
    let config = h.join("claude_desktop_config.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"other-files": {"command": mock_mcp(), "args": []}}}).to_string(),
    )
    .unwrap();
    let imported = stdout_ok(&cli(h, &["mcp", "import", config.to_str().unwrap()]));
    assert!(imported.contains("inactive: other_files"), "{imported}");
    let refused = cli(h, &["mcp", "test", "other_files"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not active"));
    stdout_ok(&cli(h, &["mcp", "accept", "other_files"]));
    assert!(stdout_ok(&cli(h, &["mcp", "test", "other_files"])).contains("other_files__add"));

    // An HTTP server's token comes on stdin and never reaches the database.
    let mut child = cli_command(h)
        .args([
            "mcp",
            "add",
            "web",
            "--url",
            "http://127.0.0.1:9/mcp",
            "--token-stdin",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"tok-from-stdin\n")
        .unwrap();
    stdout_ok(&child.wait_with_output().unwrap());
    let list = stdout_ok(&cli(h, &["mcp", "list"]));
    assert!(
        list.contains("web  http   http://127.0.0.1:9/mcp (token set)"),
        "{list}"
    );
    assert!(
        list.lines().any(|l| l.starts_with("files  stdio")),
        "{list}"
    );
    let db = std::fs::read(h.join(engram_service::DB_FILE)).unwrap();
    assert!(!String::from_utf8_lossy(&db).contains("tok-from-stdin"));

    stdout_ok(&cli(h, &["mcp", "remove", "files"]));
    let list = stdout_ok(&cli(h, &["mcp", "list"]));
    assert!(
        !list.lines().any(|l| l.starts_with("files  stdio")),
        "{list}"
    );
    assert!(
        list.lines().any(|l| l.starts_with("other_files  stdio")),
        "{list}"
    );
    let names = |out: String| -> Vec<String> {
        out.lines()
            .filter_map(|l| l.split_whitespace().nth(1).map(str::to_owned))
            .collect()
    };
    let left = names(stdout_ok(&cli(h, &["tool", "list"])));
    assert!(!left.contains(&"files__echo".to_owned()), "{left:?}");
    assert!(left.contains(&"other_files__echo".to_owned()), "{left:?}");
}

#[tokio::test]
async fn agent_files_carry_the_server_without_secrets_and_import_it_inactive() {
    let mock = engram_mock_llm::MockLlm::start(Script::Brain).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    let mut env = std::collections::BTreeMap::new();
    env.insert("API_KEY".to_owned(), "very-secret".to_owned());
    home.engram
        .mcp()
        .add_server(NewMcpServer {
            name: "files".into(),
            transport: NewMcpTransport::Stdio {
                command: mock_mcp(),
                args: vec!["--stdio".into()],
                env,
            },
        })
        .unwrap();
    let tools = home.engram.mcp().list_tools("files").await.unwrap();
    let echo = tools.iter().find(|t| t.name == "files__echo").unwrap();
    home.engram.tools().attach(&agent, &echo.id).await.unwrap();

    let bytes = home.engram.agent_files().export(&[agent]).await.unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(!text.contains("very-secret"));
    let file: Value = serde_json::from_str(&text).unwrap();
    let servers = file["mcp_servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0]["server_name"], "files");
    assert_eq!(servers[0]["stdio_config"]["command"], mock_mcp());
    assert_eq!(servers[0]["stdio_config"]["args"], json!(["--stdio"]));
    let tool = file["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "files__echo")
        .unwrap();
    assert_eq!(tool["tool_type"], "external_mcp");
    assert_eq!(tool["metadata_"]["mcp"]["server_id"], servers[0]["id"]);

    // Another Engram imports it: the server is stored, inactive, and nothing runs.
    let other = Home::new();
    let report = other
        .engram
        .agent_files()
        .import_named(&bytes, "shared.af")
        .await
        .unwrap();
    let stored = other.engram.mcp().list().unwrap();
    assert_eq!(stored.len(), 1);
    assert!(!stored[0].active);
    assert_eq!(stored[0].source, "shared.af");
    assert!(
        matches!(&stored[0].transport, McpTransport::Stdio { command, .. } if *command == mock_mcp())
    );
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("stored inactive")),
        "{:?}",
        report.warnings
    );
    assert!(!other.engram.mcp().connected("files").await.unwrap());
}

#[tokio::test]
async fn letta_01_mcp_routes_under_tools_work_too() {
    let api = RestApi::start(Script::Brain).await;
    let configs = api
        .ok(
            Method::PUT,
            "/v1/tools/mcp/servers",
            Some(json!({"server_name": "files", "type": "stdio", "command": mock_mcp(), "args": [], "env": {"K": "hidden-value"}})),
        )
        .await;
    assert_eq!(configs[0]["server_name"], "files");
    assert!(!configs.to_string().contains("hidden-value"));
    let by_name = api.ok(Method::GET, "/v1/tools/mcp/servers", None).await;
    assert_eq!(by_name["files"]["command"], mock_mcp());
    let tools = api
        .ok(Method::GET, "/v1/tools/mcp/servers/files/tools", None)
        .await;
    let echo = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "echo")
        .expect("echo, by the server's name");
    assert_eq!(echo["inputSchema"]["properties"]["text"]["type"], "string");
    let tool = api
        .ok(Method::POST, "/v1/tools/mcp/servers/files/echo", None)
        .await;
    assert_eq!(tool["name"], "files__echo");
    let (status, _) = api
        .call(Method::POST, "/v1/tools/mcp/servers/files/nope", None)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let left = api
        .ok(Method::DELETE, "/v1/tools/mcp/servers/files", None)
        .await;
    assert_eq!(left, json!([]));
}

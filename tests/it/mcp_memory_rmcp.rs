//! rmcp's client (the Rust MCP SDK) against `engram mcp serve` over stdio: the memory tool,
//! archival memory, a resource and its change notification after an agent edit; and two
//! writers at once — an agent run and an MCP client editing the same block — where both edits
//! land and the history names both authors.

use super::mcp_memory_python::setup;
use engram_core::{Editor, LoopStyle, NewBlock};
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_suite::{Home, engram_bin};
use rmcp::model::{
    CallToolRequestParams, ReadResourceRequestParams, ResourceContents,
    ResourceUpdatedNotificationParam, SubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use tokio::sync::mpsc;

/// A client that passes on every resource-updated notification.
struct Listener(mpsc::UnboundedSender<String>);

impl ClientHandler for Listener {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(params.uri);
    }
}

type Client = RunningService<RoleClient, Listener>;

async fn connect(home: &Path, name: &str) -> (Client, mpsc::UnboundedReceiver<String>) {
    let mut cmd = tokio::process::Command::new(engram_bin());
    cmd.arg("--home")
        .arg(home)
        .args(["mcp", "serve", "--agent", "Sam", "--client", name])
        .env("ENGRAM_SECRETS", "memory")
        .env("ENGRAM_MCP_MEMORY_POLL_MS", "100")
        .env_remove("ENGRAM_HOME");
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start engram mcp serve");
    let (tx, rx) = mpsc::unbounded_channel();
    let client = Listener(tx).serve(transport).await.expect("handshake");
    (client, rx)
}

/// Calls `tool` and returns (text, is_error).
async fn call(client: &Client, tool: &str, args: Value) -> (String, bool) {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .expect("tools/call");
    let text = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<String>();
    (text, result.is_error == Some(true))
}

async fn read(client: &Client, uri: &str) -> String {
    let result = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .expect("resources/read");
    match &result.contents[0] {
        ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("not text: {other:?}"),
    }
}

const HUMAN: &str = "engram-memory:///memories/human.md";

#[tokio::test]
async fn rmcp_client_edits_searches_and_hears_an_agent_edit() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = setup(&mock, &home).await;
    let (client, mut updates) = connect(home.path(), "rust-client").await;

    let tools = client.list_all_tools().await.expect("tools/list");
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "add_memory",
            "memory",
            "search_conversation",
            "search_memory"
        ]
    );

    let (listing, _) = call(
        &client,
        "memory",
        json!({"command": "view", "path": "/memories"}),
    )
    .await;
    assert!(listing.contains("/memories/project.md"), "{listing}");
    let (created, err) = call(
        &client,
        "memory",
        json!({"command": "create", "path": "/memories/notes.md", "file_text": "Standup at 9."}),
    )
    .await;
    assert!(!err, "{created}");
    let (ok, err) = call(&client, "memory", json!({"command": "str_replace", "path": "/memories/human.md", "old_str": "Name: Bob", "new_str": "Name: Robert"})).await;
    assert!(!err, "{ok}");
    let (missing, err) = call(&client, "memory", json!({"command": "str_replace", "path": "/memories/human.md", "old_str": "Alice", "new_str": "x"})).await;
    assert!(err && missing.contains("was not found"), "{missing}");
    let (twice, err) = call(&client, "memory", json!({"command": "str_replace", "path": "/memories/human.md", "old_str": "Likes: tea", "new_str": "x"})).await;
    assert!(err && twice.contains("occurs 2 times"), "{twice}");
    let (over, err) = call(&client, "memory", json!({"command": "insert", "path": "/memories/project.md", "insert_line": 0, "insert_text": "y".repeat(50)})).await;
    assert!(
        err && over.contains("Exceeds 60 character limit (requested 71)"),
        "{over}"
    );
    let (view, _) = call(
        &client,
        "memory",
        json!({"command": "view", "path": "/memories/human.md", "view_range": [1, 1]}),
    )
    .await;
    assert!(
        view.contains("     1\tName: Robert\n") && !view.contains("Likes"),
        "{view}"
    );

    let (saved, err) = call(
        &client,
        "add_memory",
        json!({"text": "Backups run at 3am nightly."}),
    )
    .await;
    assert!(!err, "{saved}");
    let (found, _) = call(
        &client,
        "search_memory",
        json!({"query": "when do backups run"}),
    )
    .await;
    let hits: Value = serde_json::from_str(&found).expect("JSON hits");
    assert_eq!(hits[0]["text"], "Backups run at 3am nightly.");

    assert!(read(&client, HUMAN).await.starts_with("Name: Robert"));
    #[allow(deprecated)] // rmcp's client shakes hands before 2026-07-28 here
    client
        .subscribe(SubscribeRequestParams::new(HUMAN))
        .await
        .expect("resources/subscribe");
    mock.push(Reply::ToolCalls(vec![Call::new(
        "core_memory_append",
        json!({"label": "human", "content": "Agent note: decaf after 6pm"}),
    )]));
    mock.push(Reply::text("Noted."));
    home.chat(&agent, "no caffeine late please").await;
    let uri = tokio::time::timeout(Duration::from_secs(10), updates.recv())
        .await
        .expect("a resources/updated notification within 10 s")
        .expect("notification");
    assert_eq!(uri, HUMAN);
    assert!(
        read(&client, HUMAN)
            .await
            .contains("Agent note: decaf after 6pm")
    );
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn an_agent_run_and_an_mcp_client_edit_one_block_at_once() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home
        .agent_with(&mock, LoopStyle::ToolLoop, |a| {
            a.blocks = vec![NewBlock::new("human", "Name: Bob\nCity: Paris")];
        })
        .await;
    let (client, _) = connect(home.path(), "editor-assistant").await;
    // The model answers after 800 ms: the client's edit lands while the agent's run is under
    // way, after its context (with "Name: Bob") went to the model.
    mock.push(Reply::Delayed(
        Duration::from_millis(800),
        Box::new(Reply::ToolCalls(vec![Call::new(
            "memory_replace",
            json!({"label": "human", "old_str": "City: Paris", "new_str": "City: Lyon"}),
        )])),
    ));
    mock.push(Reply::text("Updated."));
    let mcp_edit = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        call(&client, "memory", json!({"command": "str_replace", "path": "/memories/human.md", "old_str": "Name: Bob", "new_str": "Name: Robert"})).await
    };
    let ((_, _), (text, err)) = tokio::join!(home.chat(&agent, "I moved to Lyon"), mcp_edit);
    assert!(!err, "{text}");

    let first = &mock.chat_requests()[0].body;
    assert!(
        first.to_string().contains("Name: Bob"),
        "the run started before the client's edit"
    );
    assert_eq!(home.block(&agent, "human"), "Name: Robert\nCity: Lyon");
    let history = home.engram.blocks().history(&agent, "human").await.unwrap();
    let editors: Vec<&Editor> = history.iter().map(|e| &e.editor).collect();
    assert_eq!(editors.len(), 2, "{editors:?}");
    assert!(
        editors.contains(&&Editor::Client {
            name: "editor-assistant".into()
        }),
        "{editors:?}"
    );
    assert!(
        editors.iter().any(|e| matches!(e, Editor::Agent { .. })),
        "{editors:?}"
    );
    // The client's edit is undone like any other, leaving the agent's.
    let by_client = history
        .iter()
        .find(|e| matches!(e.editor, Editor::Client { .. }))
        .unwrap();
    home.engram
        .blocks()
        .undo(&by_client.id, None)
        .await
        .unwrap();
    assert_eq!(home.block(&agent, "human"), "Name: Bob\nCity: Lyon");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn rmcp_client_over_http_on_a_session_with_a_token() {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use std::io::{BufRead as _, BufReader};

    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = setup(&mock, &home).await;
    engram_suite::stdout_ok(&engram_suite::cli(
        home.path(),
        &[
            "mcp",
            "client",
            "add",
            "rust-http",
            "--read-only-agent",
            "Sam",
        ],
    ));
    engram_suite::stdout_ok(&engram_suite::cli(
        home.path(),
        &["mcp", "client", "add", "rust-writer"],
    ));
    let mut server = engram_suite::cli_command(home.path())
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
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("engram mcp serve --http");
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let url = lines.next().unwrap().unwrap().replace("listening on ", "");
    let mut tokens = std::collections::HashMap::new();
    for _ in 0..2 {
        let line = lines.next().unwrap().unwrap();
        let (name, token) = line
            .strip_prefix("token ")
            .unwrap()
            .split_once(": ")
            .unwrap();
        tokens.insert(name.to_owned(), token.to_owned());
    }
    let connect = |token: &str| {
        let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
            .auth_header(token.to_owned());
        let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
        let (tx, rx) = mpsc::unbounded_channel();
        async move { (Listener(tx).serve(transport).await.expect("handshake"), rx) }
    };

    // Read-only for this agent: views work, writes are refused with a clear error.
    let (reader, _) = connect(&tokens["rust-http"]).await;
    let (shown, err) = call(
        &reader,
        "memory",
        json!({"command": "view", "path": "/memories/human.md"}),
    )
    .await;
    assert!(!err && shown.contains("Name: Bob"), "{shown}");
    let (refused, err) = call(&reader, "add_memory", json!({"text": "nope"})).await;
    assert!(err && refused.contains("may only read"), "{refused}");
    reader.cancel().await.ok();

    // A session subscribed the pre-2026 way hears the agent's edit.
    let (writer, mut updates) = connect(&tokens["rust-writer"]).await;
    #[allow(deprecated)]
    writer
        .subscribe(SubscribeRequestParams::new(HUMAN))
        .await
        .expect("resources/subscribe");
    mock.push(Reply::ToolCalls(vec![Call::new(
        "core_memory_append",
        json!({"label": "human", "content": "Agent note: over http"}),
    )]));
    mock.push(Reply::text("Noted."));
    home.chat(&agent, "note it").await;
    let uri = tokio::time::timeout(Duration::from_secs(10), updates.recv())
        .await
        .expect("a notification within 10 s")
        .expect("notification");
    assert_eq!(uri, HUMAN);
    writer.cancel().await.ok();

    // A wrong token never reaches MCP.
    let status = reqwest::Client::new()
        .post(&url)
        .bearer_auth("engram-mcp-wrong")
        .header("Accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, reqwest::StatusCode::UNAUTHORIZED);
    let _ = server.kill();
    let _ = server.wait();
}

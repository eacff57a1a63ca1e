//! Credentials written into an MCP server's URL (`http://user:pass@host/mcp`, `?api_key=…`):
//! they reach that server, and nothing else — not the database, exports, the server list, error
//! messages or the model. Real `mock-mcp` over streamable HTTP on 127.0.0.1, the scripted model
//! through the real provider code, a real SQLite file.

use engram_core::{LoopStyle, McpServer, McpTransport, NewMcpServer, NewMcpTransport, ToolStatus};
use engram_mock_llm::{Call, ChatView, MockLlm, Reply, Script};
use engram_secrets::{MemoryStore, SecretStore};
use engram_suite::{Home, results};
use serde_json::{Value, json};
use std::sync::Arc;

const PASSWORD: &str = "pw-secret-4711";
const API_KEY: &str = "key-secret-0815";

/// A model that calls `tool` once per user message, then answers "done".
fn calls_once(tool: &'static str, args: Value) -> Script {
    Script::rules(move |view: &ChatView| {
        if view.messages.last().is_some_and(|m| m.is_real_user()) {
            Reply::ToolCalls(vec![Call::new(tool, args.clone())])
        } else {
            Reply::text("done")
        }
    })
}

/// A home whose keychain the test can read.
fn home_with(secrets: Arc<MemoryStore>) -> Home {
    let dir = tempfile::tempdir().unwrap();
    let engram = engram_suite::open(dir.path(), secrets);
    Home { dir, engram }
}

fn http(name: &str, url: String) -> NewMcpServer {
    NewMcpServer {
        name: name.into(),
        transport: NewMcpTransport::StreamableHttp { url, token: None },
    }
}

fn assert_clean(what: &str, text: &str) {
    for secret in [PASSWORD, API_KEY] {
        assert!(!text.contains(secret), "{what} holds {secret}:\n{text}");
    }
}

fn db_text(home: &Home) -> String {
    home.engram.checkpoint().unwrap();
    let db = std::fs::read(home.path().join(engram_service::DB_FILE)).unwrap();
    String::from_utf8_lossy(&db).into_owned()
}

#[tokio::test]
async fn credentials_in_a_server_url_reach_the_server_and_nothing_else() {
    let server = engram_mcp::mock::serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let mock = MockLlm::start(calls_once("web__add", json!({"a": 2, "b": 3}))).await;
    let secrets = Arc::new(MemoryStore::default());
    let home = home_with(secrets.clone());
    let url = format!(
        "http://me:{PASSWORD}@{}/mcp?api_key={API_KEY}&region=eu",
        server.addr
    );
    let added = home
        .engram
        .mcp()
        .add_server(http("web", url.clone()))
        .unwrap();
    assert_eq!(
        added.transport,
        McpTransport::StreamableHttp {
            url: format!("http://***@{}/mcp?api_key=***&region=eu", server.addr),
            has_token: false,
            url_secret: true,
        }
    );
    assert_clean(
        "the server list",
        &serde_json::to_string(&home.engram.mcp().list().unwrap()).unwrap(),
    );

    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    let tools = home.engram.mcp().list_tools("web").await.unwrap();
    let add = tools.iter().find(|t| t.name == "web__add").unwrap();
    home.engram.tools().attach(&agent, &add.id).await.unwrap();
    let (out, _) = home.chat(&agent, "add").await;
    assert_eq!(results(&out)[0].1.message, "5");

    // The server got the URL as the user wrote it: the query, and the user info as Basic auth.
    let queries = server.seen_queries();
    assert!(!queries.is_empty());
    assert!(
        queries
            .iter()
            .all(|q| q.as_deref() == Some(&format!("api_key={API_KEY}&region=eu")[..])),
        "{queries:?}"
    );
    let auth = server.seen_authorizations();
    assert!(
        auth.iter()
            .all(|a| a.as_deref().is_some_and(|a| a.starts_with("Basic "))),
        "{auth:?}"
    );

    // Nothing Engram writes or shows carries them.
    assert_clean("the database", &db_text(&home));
    let af = home
        .engram
        .agent_files()
        .export(std::slice::from_ref(&agent))
        .await
        .unwrap();
    let af = String::from_utf8(af).unwrap();
    assert_clean("the agent file", &af);
    assert!(
        af.contains("api_key=***"),
        "the file names the server: {af}"
    );
    assert_clean(
        "the JSON export",
        &String::from_utf8(
            home.engram
                .agent_files()
                .export_json(std::slice::from_ref(&agent))
                .await
                .unwrap(),
        )
        .unwrap(),
    );
    assert_clean(
        "the Markdown export",
        &home
            .engram
            .agent_files()
            .export_markdown(&agent)
            .await
            .unwrap(),
    );
    for m in mock.chat_requests() {
        assert_clean("a request to the model", &m.body.to_string());
    }

    // The keychain holds the URL until the server is removed.
    let key = format!("mcp-server:{}:url", added.id);
    assert!(secrets.get(&key).unwrap().is_some());
    home.engram.mcp().remove("web").await.unwrap();
    assert!(secrets.get(&key).unwrap().is_none());
}

#[tokio::test]
async fn a_failing_server_is_reported_without_the_credentials_of_its_url() {
    // Nothing listens on port 1: every attempt fails with the transport's error, which quotes
    // the request URL.
    let mock = MockLlm::start(calls_once("down__add", json!({"a": 1, "b": 1}))).await;
    let home = Home::new();
    let url = format!("http://me:{PASSWORD}@127.0.0.1:1/mcp?token={API_KEY}");
    home.engram.mcp().add_server(http("down", url)).unwrap();
    let err = home.engram.mcp().list_tools("down").await.unwrap_err();
    assert_clean("the listing error", &err.to_string());

    // A tool of that server, called by the model: the failure it reads carries no credential.
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    let server = home.engram.mcp().get("down").unwrap();
    let tool = engram_core::Tool {
        mcp: Some(engram_core::McpToolSource {
            server_id: server.id.clone(),
            server_name: "down".into(),
            tool_name: "add".into(),
        }),
        ..stored_tool_named("down__add")
    };
    home.engram
        .store()
        .tools()
        .sync_mcp_tools(&server.id, &[tool])
        .unwrap();
    let stored = home.engram.tools().find("down__add").await.unwrap();
    home.engram
        .tools()
        .attach(&agent, &stored.id)
        .await
        .unwrap();
    let (out, _) = home.chat(&agent, "add").await;
    let r = results(&out);
    assert_eq!(r[0].1.status, ToolStatus::Failed);
    assert_clean("the tool result", &r[0].1.message);
    for m in mock.chat_requests() {
        assert_clean("a request to the model", &m.body.to_string());
    }
}

/// An MCP tool row as a listing would store it (schema with two numbers).
fn stored_tool_named(name: &str) -> engram_core::Tool {
    let now = chrono::Utc::now();
    engram_core::Tool {
        id: engram_core::ToolId::new(),
        name: name.into(),
        description: "Adds two numbers.".into(),
        json_schema: json!({"name": name, "description": "Adds two numbers.",
            "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}),
        source_code: None,
        language: engram_core::ToolLanguage::Mcp,
        return_char_limit: engram_core::DEFAULT_RETURN_CHAR_LIMIT,
        tags: vec!["mcp".into()],
        network: false,
        allow_unsandboxed: false,
        available: true,
        unavailable_reason: None,
        origin: engram_core::ToolOrigin::User,
        trusted_hash: None,
        source_hash: None,
        trusted: true,
        mcp: None,
        created_at: now,
        updated_at: now,
    }
}

#[tokio::test]
async fn credentials_an_older_version_stored_in_a_url_move_to_the_keychain_at_open() {
    let server = engram_mcp::mock::serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let secrets = Arc::new(MemoryStore::default());
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://{}/mcp?api_key={API_KEY}", server.addr);
    {
        // As stored before URLs were checked: the credential in the row.
        let store = engram_store::Store::open(&dir.path().join(engram_service::DB_FILE)).unwrap();
        let now = chrono::Utc::now();
        store
            .tools()
            .insert_mcp_server(&McpServer {
                id: engram_core::McpServerId::new(),
                name: "old".into(),
                transport: McpTransport::StreamableHttp {
                    url: url.clone(),
                    has_token: false,
                    url_secret: false,
                },
                active: true,
                source: "you".into(),
                created_at: now,
                updated_at: now,
            })
            .unwrap();
    }
    let home = Home {
        engram: engram_suite::open(dir.path(), secrets.clone()),
        dir,
    };
    let s = home.engram.mcp().get("old").unwrap();
    assert!(
        matches!(&s.transport, McpTransport::StreamableHttp { url, url_secret: true, .. }
            if url.ends_with("/mcp?api_key=***")),
        "{:?}",
        s.transport
    );
    assert_eq!(
        secrets
            .get(&format!("mcp-server:{}:url", s.id))
            .unwrap()
            .map(|u| secrecy::ExposeSecret::expose_secret(&u).to_owned()),
        Some(url)
    );
    // It still works, with the credential from the keychain.
    let tools = home.engram.mcp().list_tools("old").await.unwrap();
    assert!(tools.iter().any(|t| t.name == "old__add"));
    assert!(
        server
            .seen_queries()
            .iter()
            .all(|q| q.as_deref() == Some(&format!("api_key={API_KEY}")[..]))
    );
}

#[tokio::test]
async fn a_pasted_config_and_an_agent_file_keep_url_credentials_out_of_the_database() {
    let home = Home::new();
    let pasted = format!(
        r#"{{"mcpServers": {{"remote": {{"url": "https://mcp.example.com/mcp?token={API_KEY}"}}}}}}"#
    );
    let servers = home.engram.mcp().import(&pasted, "claude.json").unwrap();
    assert!(
        matches!(&servers[0].transport, McpTransport::StreamableHttp { url, url_secret: true, .. }
            if url == "https://mcp.example.com/mcp?token=***"),
        "{:?}",
        servers[0].transport
    );

    let file = json!({
        "agents": [{"id": "agent-0", "name": "remote user", "system": "s",
            "tool_ids": ["tool-0"], "block_ids": [], "tool_rules": [], "messages": [],
            "llm_config": {"model": "gpt-4o-mini", "model_endpoint_type": "openai", "context_window": 8000}}],
        "tools": [{"id": "tool-0", "name": "lookup", "tool_type": "external_mcp",
            "json_schema": {"name": "lookup", "parameters": {"type": "object", "properties": {}}},
            "metadata_": {"mcp": {"server_name": "files_srv"}}}],
        "mcp_servers": [{"id": "mcp_server-0", "server_name": "files_srv", "server_type": "streamable_http",
            "server_url": format!("https://me:{PASSWORD}@files.example.com/mcp?api_key={API_KEY}")}],
        "blocks": [], "groups": [], "files": [], "sources": []
    });
    let report = home
        .engram
        .agent_files()
        .import_named(file.to_string().as_bytes(), "remote.af")
        .await
        .unwrap();
    assert_clean(
        "the import report",
        &serde_json::to_string(&report).unwrap(),
    );
    let agent = report.agents[0].clone();
    assert_clean("the database", &db_text(&home));
    assert_clean(
        "the re-export",
        &String::from_utf8(home.engram.agent_files().export(&[agent]).await.unwrap()).unwrap(),
    );
}

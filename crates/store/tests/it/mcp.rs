//! MCP servers and their tools: a listing replaces the server's tool rows in one transaction
//! (changed tools keep their id, gone ones are detached from agents), a name another tool
//! holds is refused, and removing a server removes its tools everywhere.

use crate::support::{agent, temp_store};
use engram_core::{
    AgentPatch, Error, McpServer, McpServerId, McpToolSource, McpTransport, NewBlock, Tool, ToolId,
    ToolLanguage,
};
use engram_store::Store;
use serde_json::json;

fn server(name: &str) -> McpServer {
    let now = chrono::Utc::now();
    McpServer {
        id: McpServerId::new(),
        name: name.into(),
        transport: McpTransport::Stdio {
            command: "mock-mcp".into(),
            args: vec![],
            env_keys: vec!["ROOT".into()],
        },
        active: true,
        source: "you".into(),
        created_at: now,
        updated_at: now,
    }
}

fn mcp_tool(s: &McpServer, remote: &str, description: &str) -> Tool {
    let now = chrono::Utc::now();
    let name = format!("{}__{remote}", s.name);
    Tool {
        id: ToolId::new(),
        name: name.clone(),
        description: description.into(),
        json_schema: json!({"name": name, "description": description, "parameters": {"type": "object", "properties": {}}}),
        source_code: None,
        language: ToolLanguage::Mcp,
        return_char_limit: 100,
        tags: vec!["mcp".into()],
        network: false,
        allow_unsandboxed: false,
        available: true,
        unavailable_reason: None,
        origin: engram_core::ToolOrigin::User,
        trusted_hash: None,
        source_hash: None,
        trusted: true,
        mcp: Some(McpToolSource {
            server_id: s.id.clone(),
            server_name: s.name.clone(),
            tool_name: remote.into(),
        }),
        created_at: now,
        updated_at: now,
    }
}

fn agent_with(store: &Store, tools: &[&str]) -> engram_core::AgentId {
    let (a, _) = store
        .agents()
        .create(&agent("A"), &[NewBlock::new("human", "")], &[])
        .unwrap();
    store
        .agents()
        .update(
            &a.id,
            &AgentPatch {
                tools: Some(tools.iter().map(|t| (*t).to_owned()).collect()),
                ..Default::default()
            },
        )
        .unwrap();
    a.id
}

#[test]
fn servers_are_stored_with_unique_names_and_no_secrets() {
    let (_dir, store) = temp_store();
    let s = store.tools().insert_mcp_server(&server("files")).unwrap();
    assert_eq!(store.tools().find_mcp_server("files").unwrap(), s);
    assert_eq!(store.tools().find_mcp_server(s.id.as_str()).unwrap(), s);
    let again = store
        .tools()
        .insert_mcp_server(&server("files"))
        .unwrap_err();
    assert!(matches!(again, Error::Conflict(_)), "{again:?}");
    let off = store.tools().set_mcp_server_active(&s.id, false).unwrap();
    assert!(!off.active);
    assert_eq!(store.tools().list_mcp_servers().unwrap(), vec![off]);
}

#[test]
fn a_listing_replaces_the_tools_keeping_ids_and_detaching_gone_ones() {
    let (_dir, store) = temp_store();
    let s = store.tools().insert_mcp_server(&server("files")).unwrap();
    let first = store
        .tools()
        .sync_mcp_tools(
            &s.id,
            &[
                mcp_tool(&s, "read", "Read."),
                mcp_tool(&s, "write", "Write."),
            ],
        )
        .unwrap();
    assert_eq!(first.len(), 2);
    let read_id = first
        .iter()
        .find(|t| t.name == "files__read")
        .unwrap()
        .id
        .clone();
    let agent = agent_with(&store, &["send_message", "files__read", "files__write"]);

    // `write` is gone and `read` changed its description.
    let second = store
        .tools()
        .sync_mcp_tools(&s.id, &[mcp_tool(&s, "read", "Read a file.")])
        .unwrap();
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].id, read_id);
    assert_eq!(second[0].description, "Read a file.");
    assert_eq!(second[0].mcp.as_ref().unwrap().tool_name, "read");
    assert_eq!(
        store.agents().get(&agent).unwrap().tools,
        ["send_message", "files__read"]
    );
    assert!(store.tools().by_name("files__write").unwrap().is_none());
}

#[test]
fn a_name_held_by_another_tool_is_refused_and_nothing_changes() {
    let (_dir, store) = temp_store();
    let a = store.tools().insert_mcp_server(&server("a")).unwrap();
    let b = store.tools().insert_mcp_server(&server("b")).unwrap();
    store
        .tools()
        .sync_mcp_tools(&a.id, &[mcp_tool(&a, "x", "X.")])
        .unwrap();
    // A tool of `b` that would be named like `a`'s.
    let mut clash = mcp_tool(&b, "x", "X.");
    clash.name = "a__x".into();
    let err = store
        .tools()
        .sync_mcp_tools(&b.id, &[mcp_tool(&b, "y", "Y."), clash])
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err:?}");
    assert!(
        store.tools().mcp_server_tools(&b.id).unwrap().is_empty(),
        "one transaction"
    );
    assert_eq!(store.tools().mcp_server_tools(&a.id).unwrap().len(), 1);
}

#[test]
fn removing_a_server_removes_its_tools_from_every_agent() {
    let (_dir, store) = temp_store();
    let s = store.tools().insert_mcp_server(&server("files")).unwrap();
    store
        .tools()
        .sync_mcp_tools(&s.id, &[mcp_tool(&s, "read", "Read.")])
        .unwrap();
    let agent = agent_with(&store, &["send_message", "files__read"]);
    store.tools().delete_mcp_server(&s.id).unwrap();
    assert_eq!(store.agents().get(&agent).unwrap().tools, ["send_message"]);
    assert!(store.tools().by_name("files__read").unwrap().is_none());
    assert!(store.tools().list_mcp_servers().unwrap().is_empty());
    assert!(matches!(
        store.tools().delete_mcp_server(&s.id).unwrap_err(),
        Error::NotFound { .. }
    ));
}

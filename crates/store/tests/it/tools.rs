//! User tool rows: the per-tool sandbox settings are stored and replaced with the tool.

use crate::support::temp_store;
use engram_core::{Tool, ToolId, ToolLanguage};
use serde_json::json;

fn tool(name: &str) -> Tool {
    let now = chrono::Utc::now();
    Tool {
        id: ToolId::new(),
        name: name.into(),
        description: "A tool.".into(),
        json_schema: json!({"name": name, "description": "A tool.", "parameters": {"type": "object", "properties": {}}}),
        source_code: Some(format!("def {name}():\n    return 1\n")),
        language: ToolLanguage::Python,
        return_char_limit: 100,
        tags: vec![],
        network: false,
        allow_unsandboxed: false,
        available: true,
        unavailable_reason: None,
        origin: engram_core::ToolOrigin::User,
        trusted_hash: None,
        source_hash: None,
        trusted: false,
        mcp: None,
        created_at: now,
        updated_at: now,
    }
}

#[test]
fn sandbox_settings_are_off_by_default_and_stored_when_granted() {
    let (dir, store) = temp_store();
    // The TOOL_SANDBOX migration's columns, defaulting to off for rows from before it.
    let conn = rusqlite::Connection::open(dir.path().join("data").join("engram.db")).unwrap();
    let defaults: Vec<(String, String)> = conn
        .prepare("SELECT name, dflt_value FROM pragma_table_info('tools') WHERE name IN ('network', 'allow_unsandboxed') ORDER BY name")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        defaults,
        vec![
            ("allow_unsandboxed".to_owned(), "0".to_owned()),
            ("network".to_owned(), "0".to_owned())
        ]
    );
    drop(conn);
    let plain = store.tools().upsert(&tool("plain")).unwrap();
    let read = store.tools().get(&plain.id).unwrap();
    assert!(!read.network && !read.allow_unsandboxed);

    let mut granted = tool("online");
    granted.network = true;
    granted.allow_unsandboxed = true;
    let stored = store.tools().upsert(&granted).unwrap();
    let read = store.tools().by_name("online").unwrap().unwrap();
    assert!(read.network && read.allow_unsandboxed);

    // Replacing the tool replaces its settings too (the service decides what to keep).
    let mut revoked = read.clone();
    revoked.network = false;
    store.tools().replace(&stored.id, &revoked).unwrap();
    let read = store.tools().get(&stored.id).unwrap();
    assert!(!read.network && read.allow_unsandboxed);
}

//! User tools: unique by name; an upsert keeps the row's id and creation time; a rename or a
//! delete rewrites the agents that named the tool, rules included; trust is given to the exact
//! source shown.

use super::{agent, code};
use crate::harness::{Harness, on_both_backends};
use engram_core::{McpToolSource, Tool, ToolId, ToolLanguage, ToolOrigin, ToolRule, source_hash};
use engram_store_api::{AgentStore, ToolStore};
use serde_json::json;

on_both_backends!(
    tools_are_kept_by_name_and_listed_in_order,
    a_rename_or_a_delete_rewrites_the_agents_that_name_the_tool,
    trust_is_given_to_the_source_shown,
);

fn tool(name: &str) -> Tool {
    let now = chrono::Utc::now();
    Tool {
        id: ToolId::new(),
        name: name.into(),
        description: "A tool.".into(),
        json_schema: json!({"name": name, "description": "A tool.",
                            "parameters": {"type": "object", "properties": {}}}),
        source_code: Some(format!("def {name}():\n    return 1\n")),
        language: ToolLanguage::Python,
        return_char_limit: 100,
        tags: vec!["util".into()],
        network: false,
        allow_unsandboxed: false,
        available: true,
        unavailable_reason: None,
        origin: ToolOrigin::User,
        trusted_hash: None,
        source_hash: None,
        trusted: false,
        mcp: None,
        created_at: now,
        updated_at: now,
    }
}

/// A stored tool as a read gives it: times are kept to the microsecond.
fn as_read(mut t: Tool) -> Tool {
    let micros = |at: chrono::DateTime<chrono::Utc>| {
        chrono::DateTime::from_timestamp_micros(at.timestamp_micros()).unwrap()
    };
    t.created_at = micros(t.created_at);
    t.updated_at = micros(t.updated_at);
    t
}

async fn tools_are_kept_by_name_and_listed_in_order<H: Harness>(h: H) {
    let b = h.backend();
    assert!(b.list_tools().await.unwrap().is_empty());
    let weather = b.upsert_tool(&tool("weather")).await.unwrap();
    let mut on_mcp = tool("Search");
    on_mcp.language = ToolLanguage::Mcp;
    on_mcp.source_code = None;
    on_mcp.network = true;
    on_mcp.mcp = Some(McpToolSource {
        server_id: engram_core::McpServerId::new(),
        server_name: "docs".into(),
        tool_name: "search".into(),
    });
    let search = b.upsert_tool(&on_mcp).await.unwrap();
    assert_eq!(
        b.get_tool(&weather.id).await.unwrap(),
        as_read(weather.clone())
    );
    assert_eq!(
        b.tool_by_name("Search").await.unwrap(),
        Some(as_read(search.clone()))
    );
    assert_eq!(b.tool_by_name("nothing").await.unwrap(), None);
    assert_eq!(
        b.list_tools()
            .await
            .unwrap()
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>(),
        ["Search", "weather"],
        "byte order: capitals first"
    );
    let named = b
        .tools_named(&["weather".into(), "missing".into(), "Search".into()])
        .await
        .unwrap();
    assert_eq!(
        named.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["weather", "Search"]
    );
    assert!(b.tools_named(&[]).await.unwrap().is_empty());

    // The same name again replaces the row, keeping its id and creation time.
    let mut newer = tool("weather");
    newer.description = "Tomorrow's weather.".into();
    newer.network = true;
    let replaced = b.upsert_tool(&newer).await.unwrap();
    assert_eq!(
        (replaced.id.clone(), replaced.created_at),
        (weather.id.clone(), weather.created_at)
    );
    let read = b.get_tool(&weather.id).await.unwrap();
    assert_eq!(
        (read.description.as_str(), read.network),
        ("Tomorrow's weather.", true)
    );
    assert!(read.updated_at >= weather.updated_at);
    assert_eq!(b.list_tools().await.unwrap().len(), 2);
    assert_eq!(code(b.get_tool(&ToolId::new()).await), "not_found");
}

async fn a_rename_or_a_delete_rewrites_the_agents_that_name_the_tool<H: Harness>(h: H) {
    let b = h.backend();
    let lookup = b.upsert_tool(&tool("lookup")).await.unwrap();
    b.upsert_tool(&tool("other")).await.unwrap();
    let mut ana = agent("ana");
    ana.tools = vec!["send_message".into(), "lookup".into()];
    ana.tool_rules = vec![
        ToolRule::RequiresApproval {
            tool_name: "lookup".into(),
        },
        ToolRule::ConstrainChildTools {
            tool_name: "send_message".into(),
            children: vec!["lookup".into(), "other".into()],
        },
    ];
    let (ana, _) = b.create_agent(&ana, &[], &[]).await.unwrap();
    let mut ben = agent("ben");
    ben.tools = vec!["other".into()];
    let (ben, _) = b.create_agent(&ben, &[], &[]).await.unwrap();

    // Onto another tool's name: refused, nothing changes.
    let mut clash = tool("other");
    clash.id = lookup.id.clone();
    assert_eq!(code(b.replace_tool(&lookup.id, &clash).await), "conflict");
    assert_eq!(b.get_agent(&ana.id).await.unwrap().tools, ana.tools);

    let mut renamed = tool("find");
    renamed.id = lookup.id.clone();
    let stored = b.replace_tool(&lookup.id, &renamed).await.unwrap();
    assert_eq!(
        (stored.id.clone(), stored.name.as_str()),
        (lookup.id.clone(), "find")
    );
    assert_eq!(b.tool_by_name("lookup").await.unwrap(), None);
    let read = b.get_agent(&ana.id).await.unwrap();
    assert_eq!(read.tools, ["send_message", "find"]);
    assert_eq!(
        read.tool_rules,
        [
            ToolRule::RequiresApproval {
                tool_name: "find".into()
            },
            ToolRule::ConstrainChildTools {
                tool_name: "send_message".into(),
                children: vec!["find".into(), "other".into()],
            },
        ]
    );
    assert_eq!(b.get_agent(&ben.id).await.unwrap(), ben, "untouched");

    // Deleted: off every agent, with the rules about it.
    b.delete_tool(&lookup.id).await.unwrap();
    let read = b.get_agent(&ana.id).await.unwrap();
    assert_eq!(read.tools, ["send_message"]);
    assert_eq!(read.tool_rules.len(), 1, "{:?}", read.tool_rules);
    assert_eq!(code(b.get_tool(&lookup.id).await), "not_found");
    assert_eq!(code(b.delete_tool(&lookup.id).await), "not_found");
    assert_eq!(
        code(b.replace_tool(&ToolId::new(), &tool("x")).await),
        "not_found"
    );
}

async fn trust_is_given_to_the_source_shown<H: Harness>(h: H) {
    let b = h.backend();
    let t = b.upsert_tool(&tool("greet")).await.unwrap();
    let shown = source_hash(t.source_code.as_deref().unwrap());
    assert_eq!(t.source_hash.as_deref(), Some(shown.as_str()));
    assert!(!t.trusted);
    assert_eq!(
        code(b.trust_tool(&t.id, &"0".repeat(64)).await),
        "conflict",
        "another source than the one shown"
    );
    let trusted = b.trust_tool(&t.id, &shown.to_uppercase()).await.unwrap();
    assert!(trusted.trusted);
    assert_eq!(trusted.trusted_hash.as_deref(), Some(shown.as_str()));
    assert!(b.get_tool(&t.id).await.unwrap().trusted);

    // Changed since: no longer trusted.
    let mut changed = tool("greet");
    changed.source_code = Some("def greet():\n    return 2\n".into());
    changed.trusted_hash = Some(shown.clone());
    assert!(!b.upsert_tool(&changed).await.unwrap().trusted);
    let untrusted = b.untrust_tool(&t.id).await.unwrap();
    assert_eq!(untrusted.trusted_hash, None);

    let mut sourceless = tool("remote");
    sourceless.source_code = None;
    let sourceless = b.upsert_tool(&sourceless).await.unwrap();
    assert_eq!(
        code(b.trust_tool(&sourceless.id, &shown).await),
        "invalid_input"
    );
    assert_eq!(code(b.untrust_tool(&ToolId::new()).await), "not_found");
}

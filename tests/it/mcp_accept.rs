//! An agent file's MCP servers wait inactive; accepting one attaches to each imported agent
//! the server's tools the file gave it — only those — with the file's approval rules. The real
//! `mock-mcp` over stdio, the scripted model through the real provider code and loop.

use engram_core::{AgentPatch, LlmConfig, StopReason, ToolRule, ToolStatus};
use engram_mock_llm::{Call, ChatView, MockLlm, Reply, Script};
use engram_suite::{Home, mock_mcp_bin, results};
use serde_json::{Value, json};

/// A Letta v2 file: agent "helper" uses `add` and `echo` of MCP server `files` (the file names
/// them as Letta does, by the server's tool names) and must ask before `echo`; agent "other"
/// uses nothing of it.
fn agent_file() -> Value {
    let tool = |id: &str, name: &str| {
        json!({"id": id, "name": name, "tool_type": "external_mcp",
            "description": format!("{name} through files"),
            "json_schema": {"name": name, "parameters": {"type": "object", "properties": {}}},
            "metadata_": {"mcp": {"server_name": "files"}}})
    };
    let llm =
        json!({"model": "gpt-4o-mini", "model_endpoint_type": "openai", "context_window": 8000});
    json!({
        "agents": [
            {"id": "agent-0", "name": "helper", "system": "You help.", "tool_ids": ["tool-0", "tool-1"],
             "block_ids": [], "messages": [], "llm_config": llm,
             "tool_rules": [{"type": "requires_approval", "tool_name": "echo"}]},
            {"id": "agent-1", "name": "other", "system": "You help.", "tool_ids": [],
             "block_ids": [], "messages": [], "llm_config": llm, "tool_rules": []}
        ],
        "tools": [tool("tool-0", "add"), tool("tool-1", "echo")],
        "mcp_servers": [{"id": "mcp_server-0", "server_name": "files", "server_type": "stdio",
            "stdio_config": {"server_name": "files", "type": "stdio", "command": mock_mcp_bin(), "args": []}}],
        "blocks": [], "groups": [], "files": [], "sources": []
    })
}

/// A model that calls `add`, then `echo`, then answers.
fn add_then_echo() -> Script {
    Script::rules(|view: &ChatView| {
        let called = view.messages.iter().filter(|m| m.role == "tool").count();
        match called {
            0 if view.messages.last().is_some_and(|m| m.is_real_user()) => {
                Reply::ToolCalls(vec![Call::new("files__add", json!({"a": 2, "b": 3}))])
            }
            1 => Reply::ToolCalls(vec![Call::new("files__echo", json!({"text": "hi"}))]),
            _ => Reply::text("done"),
        }
    })
}

async fn tool_names(home: &Home, agent: &engram_core::AgentId) -> Vec<String> {
    home.engram
        .tools()
        .of_agent(agent)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect()
}

#[tokio::test]
async fn accepting_a_files_server_attaches_the_tools_the_file_named_with_its_approval_rules() {
    let mock = MockLlm::start(add_then_echo()).await;
    let home = Home::new();
    let report = home
        .engram
        .agent_files()
        .import_named(agent_file().to_string().as_bytes(), "helper.af")
        .await
        .unwrap();
    let (helper, other) = (report.agents[0].clone(), report.agents[1].clone());
    let mut llm = LlmConfig::new("openai/mock-small");
    llm.base_url = Some(mock.base_url());
    llm.context_window = 32_000;
    home.engram
        .agents()
        .update(
            &helper,
            &AgentPatch {
                llm: Some(llm),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("'files'") && w.contains("add, echo")),
        "{:?}",
        report.warnings
    );

    // Inactive: nothing attached, nothing started.
    assert!(!home.engram.mcp().get("files").unwrap().active);
    assert!(
        !tool_names(&home, &helper)
            .await
            .iter()
            .any(|n| n.starts_with("files__"))
    );
    assert!(!home.engram.mcp().connected("files").await.unwrap());

    home.engram.mcp().set_active("files", true).await.unwrap();
    // Accepting starts nothing either.
    assert!(!home.engram.mcp().connected("files").await.unwrap());
    let names = tool_names(&home, &helper).await;
    assert!(names.contains(&"files__add".to_owned()), "{names:?}");
    assert!(names.contains(&"files__echo".to_owned()), "{names:?}");
    // Only the tools the file named: the server's others (sleep, crash, fail) stay detached.
    assert_eq!(names.iter().filter(|n| n.starts_with("files__")).count(), 2);
    assert!(
        !tool_names(&home, &other)
            .await
            .iter()
            .any(|n| n.starts_with("files__"))
    );
    let rules = home
        .engram
        .agents()
        .get(&helper)
        .await
        .unwrap()
        .agent
        .tool_rules;
    assert!(
        ToolRule::requires_approval(&rules, "files__echo"),
        "the file's rule follows the tool's new name: {rules:?}"
    );
    assert!(!ToolRule::requires_approval(&rules, "files__add"));

    // The model calls both: `add` runs on the server, `echo` waits for the person.
    let (out, _) = home.chat(&helper, "add and echo").await;
    let r = results(&out);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].0, "files__add");
    assert_eq!(r[0].1.status, ToolStatus::Ok);
    assert_eq!(r[0].1.message, "5");
    assert_eq!(out.stop_reason, StopReason::RequiresApproval);
    let pending = home
        .engram
        .runs()
        .pending_approval(&helper)
        .await
        .unwrap()
        .expect("waits");
    assert_eq!(pending.tool_call.name, "files__echo");

    // Accepting again (or after a deactivation) attaches nothing new.
    home.engram.mcp().set_active("files", false).await.unwrap();
    home.engram.mcp().set_active("files", true).await.unwrap();
    assert_eq!(tool_names(&home, &helper).await, names);
}

#[tokio::test]
async fn a_renamed_server_attaches_its_tools_under_the_new_name_and_removal_drops_what_waits() {
    let home = Home::new();
    // A server named `files` exists already: the file's becomes `files_2`.
    home.engram
        .mcp()
        .add_server(engram_core::NewMcpServer {
            name: "files".into(),
            transport: engram_core::NewMcpTransport::Stdio {
                command: mock_mcp_bin().display().to_string(),
                args: vec![],
                env: Default::default(),
            },
        })
        .unwrap();
    let first = home
        .engram
        .agent_files()
        .import_named(agent_file().to_string().as_bytes(), "a.af")
        .await
        .unwrap();
    home.engram.mcp().set_active("files_2", true).await.unwrap();
    let helper = &first.agents[0];
    let names = tool_names(&home, helper).await;
    assert!(names.contains(&"files_2__echo".to_owned()), "{names:?}");
    assert!(!names.contains(&"files__echo".to_owned()), "{names:?}");
    let rules = home
        .engram
        .agents()
        .get(helper)
        .await
        .unwrap()
        .agent
        .tool_rules;
    assert!(
        ToolRule::requires_approval(&rules, "files_2__echo"),
        "{rules:?}"
    );

    // A server removed before it was accepted leaves nothing waiting.
    let second = home
        .engram
        .agent_files()
        .import_named(agent_file().to_string().as_bytes(), "b.af")
        .await
        .unwrap();
    let server = home.engram.mcp().get("files_3").unwrap();
    assert_eq!(
        home.engram
            .store()
            .tools()
            .pending_mcp_tools(&server.id)
            .unwrap()
            .len(),
        2
    );
    home.engram.mcp().remove("files_3").await.unwrap();
    assert!(
        home.engram
            .store()
            .tools()
            .pending_mcp_tools(&server.id)
            .unwrap()
            .is_empty()
    );
    assert!(
        !tool_names(&home, &second.agents[0])
            .await
            .iter()
            .any(|n| n.contains("__"))
    );
}

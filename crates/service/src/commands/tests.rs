//! The one list of commands: it agrees with `engram_core::commands::APP_COMMANDS` (which the
//! desktop's build script reads), its calls answer through the generic dispatch over a real
//! engine, and its TypeScript is written where the UI imports it.

use super::*;
use engram_core::commands::APP_COMMANDS;
use serde_json::json;

fn open(dir: &std::path::Path) -> Arc<Engram> {
    Engram::open_for_test(dir)
}

fn user() -> Caller {
    Caller {
        authenticated: true,
        ..Caller::default()
    }
}

#[test]
fn the_list_is_app_commands_with_the_same_names_kinds_and_transports() {
    let ours: Vec<_> = list().iter().map(|c| (c.name, c.kind, c.http)).collect();
    let core: Vec<_> = APP_COMMANDS
        .iter()
        .map(|c| (c.name, c.kind, c.http))
        .collect();
    assert_eq!(
        ours, core,
        "engram_service::commands and engram_core::commands::APP_COMMANDS disagree"
    );
}

#[test]
fn each_command_is_answered_the_way_its_kind_says() {
    for def in list() {
        match (def.kind, def.answer) {
            (CommandKind::Call, Answer::Call(_) | Answer::Adapter)
            | (CommandKind::Run, Answer::Run(_))
            | (CommandKind::Attach | CommandKind::Dialog, Answer::Adapter) => {}
            (kind, _) => panic!("{} is a {kind:?} command answered otherwise", def.name),
        }
    }
    // Only what needs a transport's own state is answered by hand.
    let adapters: Vec<_> = list()
        .iter()
        .filter(|c| c.is_adapter())
        .map(|c| c.name)
        .collect();
    assert_eq!(
        adapters,
        [
            "set_rest_api",
            "connect_server",
            "disconnect_server",
            "server_connection",
            "attach_run",
            "export_to_file",
            "import_from_file",
            "pick_rerank_model_dir",
            "pick_watch_dir"
        ]
    );
}

#[tokio::test]
async fn calls_answer_through_the_dispatch_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let engram = open(dir.path());
    let call = |name: &str, args: serde_json::Value| {
        let task = call(&engram, user(), name, args).expect("a call");
        async move {
            task.await
                .map(|text| serde_json::from_str::<serde_json::Value>(&text).unwrap())
        }
    };
    let new = json!({"new": {"name": "Sam", "blocks": [{"label": "human", "value": "Ada"}]}});
    let created = call("create_agent", new).await;
    let created = created.expect("created");
    let agent_id = created["id"].clone();

    // A command without arguments may get `{}` or nothing at all.
    for args in [json!({}), serde_json::Value::Null] {
        let agents = call("list_agents", args).await;
        assert_eq!(agents.unwrap()[0]["name"], "Sam");
    }
    let args = json!({"agent_id": agent_id, "label": "human", "patch": {"value": "Ada L."}});
    let block = call("update_block", args).await;
    assert_eq!(block.unwrap()["value"], "Ada L.");
    // The engine's own record: the edit went through the service method.
    let id = engram_core::AgentId::from(agent_id.as_str().unwrap().to_owned());
    let blocks = engram.blocks().of_agent(&id).await.unwrap();
    assert_eq!(blocks[0].value, "Ada L.");
    // `()` answers `null`, as the transports did before.
    let args = json!({"handle": "openai/gpt-4o-mini"});
    let set = call("set_default_model", args).await;
    assert_eq!(set.unwrap(), serde_json::Value::Null);
}

#[tokio::test]
async fn results_keep_their_numbers_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let engram = open(dir.path());
    let new = json!({"new": {"name": "Tess", "llm": {"model": "openai/gpt-4o-mini", "context_window": 32000, "temperature": 0.4}}});
    let text = call(&engram, user(), "create_agent", new)
        .unwrap()
        .await
        .unwrap();
    // An f32 temperature reads as the user set it, not widened to 0.4000000059604645.
    assert!(
        text.contains("\"temperature\":0.4") && !text.contains("0.40000"),
        "{text}"
    );
}

#[tokio::test]
async fn wrong_arguments_are_invalid_input_naming_the_command_and_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let engram = open(dir.path());
    // A renamed argument (`agentId` for `agent_id`) is refused, never read as absent.
    let err = call(&engram, user(), "get_agent", json!({"agentId": "agent-1"}))
        .unwrap()
        .await
        .unwrap_err();
    assert_eq!(err.code(), "invalid_input");
    let text = err.to_string();
    assert!(
        text.contains("get_agent") && text.contains("agent_id"),
        "{text}"
    );
    let err = call(&engram, user(), "list_blocks", json!([1, 2]))
        .unwrap()
        .await
        .unwrap_err();
    assert_eq!(err.code(), "invalid_input");
}

#[tokio::test]
async fn runs_adapters_and_unknown_names_are_not_calls() {
    let dir = tempfile::tempdir().unwrap();
    let engram = open(dir.path());
    for name in [
        "send_message",
        "attach_run",
        "export_to_file",
        "no_such_command",
    ] {
        assert!(call(&engram, user(), name, json!({})).is_none(), "{name}");
    }
    let (agent, request) = run_request(
        "edit_and_resend",
        json!({
            "agent_id": "agent-1", "message_id": "message-2", "text": "again"
        }),
    )
    .unwrap()
    .unwrap();
    assert_eq!(agent.as_str(), "agent-1");
    assert!(
        matches!(request, RunRequest::EditAndResend { ref text, .. } if text == "again"),
        "{request:?}"
    );
    let err = run_request("send_message", json!({"agent_id": "agent-1"}))
        .unwrap()
        .unwrap_err();
    assert_eq!(err.code(), "invalid_input");
    assert!(run_request("list_agents", json!({})).is_none());
}

#[tokio::test]
async fn acts_that_start_programs_refuse_callers_not_known_to_be_the_user() {
    let dir = tempfile::tempdir().unwrap();
    let engram = open(dir.path());
    let stranger = Caller::default();
    let server =
        json!({"server": {"name": "files", "transport": {"type": "stdio", "command": "true"}}});
    let err = call(&engram, stranger.clone(), "add_mcp_server", server)
        .unwrap()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("needs the API token"), "{err}");
    let err = call(&engram, stranger, "set_up_tool_python", json!({}))
        .unwrap()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("needs the API token"), "{err}");
    assert!(engram.mcp().list().unwrap().is_empty());
}

#[test]
fn the_typescript_maps_each_command_to_its_arguments_and_result() {
    let ts = typescript();
    for line in [
        "  update_block: [UpdateBlockArgs, Block];",
        "  list_agents: [ListAgentsArgs, Array<Agent>];",
        "  pending_approval: [PendingApprovalArgs, PendingApproval | null];",
        "  send_message: SendMessageArgs;",
        "  attach_run: [AttachRunArgs, boolean];",
        "  export_to_file: [ExportAgentsArgs, string | null];",
        "import type { UpdateBlockArgs } from \"./args/UpdateBlockArgs\";",
        "import type { Block } from \"./Block\";",
    ] {
        assert!(ts.contains(line), "commands.ts lacks {line:?}:\n{ts}");
    }
}

/// Writes `commands.ts` next to the ts-rs bindings (CI fails when the committed file is
/// stale, as for every generated binding; `tests/it/commands.rs` checks it too).
#[test]
fn export_bindings_commands() {
    let dir = std::env::var("TS_RS_EXPORT_DIR").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../ui/src/lib/bindings").to_owned()
    });
    let path = std::path::Path::new(&dir).join("commands.ts");
    std::fs::write(&path, typescript()).expect("bindings directory is writable");
}

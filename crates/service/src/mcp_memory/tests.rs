//! The memory commands over a real engine: the agent's own limit and uniqueness errors with
//! their counts, read-only clients, and writes recorded under the client's name and undoable.

use super::{Access, MemoryClient, MemoryCommand, MemoryError};
use crate::Engram;
use engram_core::{Editor, LlmConfig, NewAgent, NewBlock};
use serde_json::json;

async fn engram_with_agent(dir: &std::path::Path) -> (std::sync::Arc<Engram>, MemoryClient) {
    let engram = Engram::open_for_test(dir);
    let new = NewAgent {
        name: "Sam".into(),
        llm: Some(LlmConfig::new("openai/mock-small")),
        blocks: vec![NewBlock {
            limit: Some(40),
            ..NewBlock::new("human", "Name: Bob\nLikes: tea\nLikes: tea")
        }],
        ..NewAgent::default()
    };
    engram.agents().create(new).await.expect("agent");
    let client = engram
        .memory_server()
        .client("claude-code", &["Sam".into()], &Access::default())
        .expect("client");
    (engram, client)
}

async fn run(
    engram: &Engram,
    client: &MemoryClient,
    args: serde_json::Value,
) -> Result<String, MemoryError> {
    let command: MemoryCommand = serde_json::from_value(args).expect("command");
    engram.memory_server().command(client, &command).await
}

#[tokio::test]
async fn str_replace_and_insert_keep_the_agent_tools_rules() {
    let dir = tempfile::tempdir().unwrap();
    let (engram, client) = engram_with_agent(dir.path()).await;
    let listing = run(
        &engram,
        &client,
        json!({"command": "view", "path": "/memories"}),
    )
    .await
    .unwrap();
    assert!(listing.contains("/memories/human.md"), "{listing}");

    let ok = run(&engram, &client, json!({"command": "str_replace", "path": "/memories/human.md", "old_str": "Bob", "new_str": "Robert"})).await.unwrap();
    assert!(ok.contains("version 2"), "{ok}");
    let missing = run(&engram, &client, json!({"command": "str_replace", "path": "/memories/human.md", "old_str": "Alice", "new_str": "x"})).await.unwrap_err();
    assert!(missing.to_string().contains("was not found"), "{missing}");
    let twice = run(&engram, &client, json!({"command": "str_replace", "path": "/memories/human.md", "old_str": "Likes: tea", "new_str": "x"})).await.unwrap_err();
    assert!(twice.to_string().contains("occurs 2 times"), "{twice}");
    let long = run(&engram, &client, json!({"command": "insert", "path": "/memories/human.md", "insert_line": 0, "insert_text": "A very long line that will not fit\n"})).await.unwrap_err();
    assert!(
        long.to_string()
            .contains("Exceeds 40 character limit (requested 69)"),
        "{long}"
    );

    let view = run(
        &engram,
        &client,
        json!({"command": "view", "path": "/memories/human.md"}),
    )
    .await
    .unwrap();
    assert!(view.contains("     1\tName: Robert\n"), "{view}");

    let history = engram
        .blocks()
        .history(&client.grants[0].agent_id, "human")
        .await
        .unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(
        history[0].editor,
        Editor::Client {
            name: "claude-code".into()
        }
    );
    assert!(!engram.memory_server().client_edits(10).unwrap()[0].undone);
    engram.blocks().undo(&history[0].id, None).await.unwrap();
    assert!(engram.memory_server().client_edits(10).unwrap()[0].undone);
    assert!(
        engram
            .blocks()
            .by_label(&client.grants[0].agent_id, "human")
            .await
            .unwrap()
            .value
            .starts_with("Name: Bob")
    );
}

#[tokio::test]
async fn create_rename_delete_and_read_only_clients() {
    let dir = tempfile::tempdir().unwrap();
    let (engram, client) = engram_with_agent(dir.path()).await;
    run(
        &engram,
        &client,
        json!({"command": "create", "path": "/memories/notes/work.md", "file_text": "Ship it.\n"}),
    )
    .await
    .unwrap();
    let again = run(
        &engram,
        &client,
        json!({"command": "create", "path": "/memories/notes/work.md", "file_text": "x"}),
    )
    .await
    .unwrap_err();
    assert!(matches!(again, MemoryError::Exists(_)), "{again}");
    let edits = engram.memory_server().client_edits(10).unwrap();
    assert_eq!(
        (edits[0].label.as_str(), edits[0].new_value.as_str()),
        ("notes/work", "Ship it.")
    );
    run(&engram, &client, json!({"command": "rename", "old_path": "/memories/notes/work.md", "new_path": "/memories/work.md"})).await.unwrap();
    let dir_view = run(
        &engram,
        &client,
        json!({"command": "view", "path": "/memories/notes"}),
    )
    .await
    .unwrap_err();
    assert!(matches!(dir_view, MemoryError::NoSuchFile(_)), "{dir_view}");
    run(
        &engram,
        &client,
        json!({"command": "delete", "path": "/memories/work.md"}),
    )
    .await
    .unwrap();
    assert!(
        engram.blocks().list(Some("work")).await.unwrap().len() == 1,
        "the block is kept, detached"
    );

    let reader = engram
        .memory_server()
        .client(
            "viewer",
            &["Sam".into()],
            &Access {
                read_only: true,
                ..Access::default()
            },
        )
        .unwrap();
    let refused = run(&engram, &reader, json!({"command": "str_replace", "path": "/memories/human.md", "old_str": "Bob", "new_str": "x"})).await.unwrap_err();
    assert!(matches!(refused, MemoryError::ReadOnly { .. }), "{refused}");
    assert!(
        run(
            &engram,
            &reader,
            json!({"command": "view", "path": "/memories/human.md"})
        )
        .await
        .is_ok()
    );
}

#[tokio::test]
async fn clients_are_remembered_when_seen() {
    let dir = tempfile::tempdir().unwrap();
    let (engram, _) = engram_with_agent(dir.path()).await;
    engram
        .memory_server()
        .note_client("cursor", "http")
        .unwrap();
    engram
        .memory_server()
        .note_client("claude-code", "stdio")
        .unwrap();
    let seen = engram.memory_server().clients_seen().unwrap();
    let names: Vec<&str> = seen.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["claude-code", "cursor"]);
    assert_eq!(seen[1].transport, "http");
}

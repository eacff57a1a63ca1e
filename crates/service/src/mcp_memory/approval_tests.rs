//! Writes that wait for the user's approval, over a real engine: the pending write the window
//! lists, approve → applied with the client as author, deny → declined, an edit made meanwhile
//! → refused (nothing overwritten), no answer → timed out and withdrawn, and a write that
//! cannot apply refused at once without asking.

use super::{Access, MemoryClient, MemoryCommand, MemoryError};
use crate::Engram;
use engram_core::{Editor, LlmConfig, NewAgent, NewBlock, PendingClientWrite};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

async fn careful(dir: &std::path::Path) -> (Arc<Engram>, MemoryClient) {
    let engram = Engram::open_for_test(dir);
    let new = NewAgent {
        name: "Sam".into(),
        llm: Some(LlmConfig::new("openai/mock-small")),
        blocks: vec![NewBlock::new("human", "Name: Bob")],
        ..NewAgent::default()
    };
    engram.agents().create(new).await.expect("agent");
    let access = Access {
        approve_writes: true,
        ..Access::default()
    };
    let client = engram
        .memory_server()
        .client("careful", &["Sam".into()], &access)
        .expect("client");
    (engram, client)
}

fn command(args: serde_json::Value) -> MemoryCommand {
    serde_json::from_value(args).expect("command")
}

/// Starts `args` as the client and waits until the window would list it.
async fn ask(
    engram: &Arc<Engram>,
    client: &MemoryClient,
    args: serde_json::Value,
) -> (
    tokio::task::JoinHandle<Result<String, MemoryError>>,
    PendingClientWrite,
) {
    let (e, c, cmd) = (engram.clone(), client.clone(), command(args));
    let task = tokio::spawn(async move { e.memory_server().tool(&c, &cmd).await });
    for _ in 0..200 {
        if let Some(w) = engram.memory_server().pending_writes().unwrap().pop() {
            return (task, w);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the write never showed as pending");
}

fn human(engram: &Engram) -> String {
    let (agent, _) = engram.memory_server().agent("Sam").unwrap();
    engram
        .store
        .blocks()
        .by_label(&agent, "human")
        .unwrap()
        .value
}

#[tokio::test]
async fn approved_writes_apply_with_the_client_as_author() {
    let dir = tempfile::tempdir().unwrap();
    let (engram, client) = careful(dir.path()).await;
    let (task, w) = ask(&engram, &client, json!({"command": "str_replace", "path": "/memories/human.md", "old_str": "Bob", "new_str": "Robert"})).await;
    assert_eq!(w.client, "careful");
    assert_eq!(w.agent_name, "Sam");
    assert_eq!(w.path, "/memories/human.md");
    assert_eq!(w.before.as_deref(), Some("Name: Bob"));
    assert_eq!(w.after.as_deref(), Some("Name: Robert"));
    assert_eq!(
        human(&engram),
        "Name: Bob",
        "nothing applies before the answer"
    );

    let outcome = engram
        .memory_server()
        .decide_write(&w.id, true, None)
        .await
        .unwrap();
    assert_eq!(outcome.status, "applied");
    let text = task.await.unwrap().unwrap();
    assert!(text.starts_with("Edited /memories/human.md"), "{text}");
    assert_eq!(human(&engram), "Name: Robert");
    let (agent, _) = engram.memory_server().agent("Sam").unwrap();
    let history = engram.blocks().history(&agent, "human").await.unwrap();
    assert!(
        history.iter().any(|e| e.editor
            == Editor::Client {
                name: "careful".into()
            }),
        "{history:?}"
    );
    assert!(engram.memory_server().pending_writes().unwrap().is_empty());
    let again = engram.memory_server().decide_write(&w.id, true, None).await;
    assert!(
        matches!(again, Err(engram_core::Error::Conflict(_))),
        "{again:?}"
    );
}

#[tokio::test]
async fn denied_conflicting_and_unanswered_writes_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (engram, mut client) = careful(dir.path()).await;

    let (task, w) = ask(&engram, &client, json!({"command": "insert", "path": "/memories/human.md", "insert_line": -1, "insert_text": "Likes: tea"})).await;
    engram
        .memory_server()
        .decide_write(&w.id, false, Some("not that"))
        .await
        .unwrap();
    let err = task.await.unwrap().unwrap_err();
    assert!(matches!(err, MemoryError::Declined(_)), "{err}");
    assert!(err.to_string().contains("not that"), "{err}");
    assert_eq!(human(&engram), "Name: Bob");

    // A person edits the block while the write waits: approving refuses it.
    let (task, w) = ask(&engram, &client, json!({"command": "str_replace", "path": "/memories/human.md", "old_str": "Bob", "new_str": "Robert"})).await;
    let (agent, _) = engram.memory_server().agent("Sam").unwrap();
    engram
        .blocks()
        .set_value(&agent, "human", "Name: Ann")
        .await
        .unwrap();
    let outcome = engram
        .memory_server()
        .decide_write(&w.id, true, None)
        .await
        .unwrap();
    assert_eq!(outcome.status, "refused", "{outcome:?}");
    let err = task.await.unwrap().unwrap_err();
    assert!(matches!(err, MemoryError::RefusedAfterApproval(_)), "{err}");
    assert!(err.to_string().contains("not found"), "{err}");
    assert_eq!(human(&engram), "Name: Ann");

    // Nobody answers.
    client.approval_timeout = Duration::from_millis(600);
    let (task, w) = ask(
        &engram,
        &client,
        json!({"command": "delete", "path": "/memories/human.md"}),
    )
    .await;
    let err = task.await.unwrap().unwrap_err();
    assert!(matches!(err, MemoryError::TimedOut { .. }), "{err}");
    assert!(engram.memory_server().pending_writes().unwrap().is_empty());
    assert!(
        engram
            .memory_server()
            .decide_write(&w.id, true, None)
            .await
            .is_err()
    );
    assert_eq!(human(&engram), "Name: Ann");

    // A write that cannot apply is refused at once, without asking.
    let err = engram
        .memory_server().tool(&client, &command(json!({"command": "str_replace", "path": "/memories/human.md", "old_str": "Zed", "new_str": "x"})))
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::Refused { .. }), "{err}");
    assert!(engram.memory_server().pending_writes().unwrap().is_empty());
}

#[tokio::test]
async fn a_write_whose_request_goes_away_is_withdrawn() {
    let dir = tempfile::tempdir().unwrap();
    let (engram, client) = careful(dir.path()).await;
    let (task, w) = ask(
        &engram,
        &client,
        json!({"command": "create", "path": "/memories/notes.md", "file_text": "hi"}),
    )
    .await;
    task.abort();
    let _ = task.await;
    assert!(engram.memory_server().pending_writes().unwrap().is_empty());
    assert!(
        engram
            .memory_server()
            .decide_write(&w.id, true, None)
            .await
            .is_err()
    );
    let (agent, _) = engram.memory_server().agent("Sam").unwrap();
    assert!(
        engram.store.blocks().by_label(&agent, "notes").is_err(),
        "not created"
    );
}

#[tokio::test]
async fn a_configured_client_waits_for_approval_per_agent() {
    let dir = tempfile::tempdir().unwrap();
    let (engram, _) = careful(dir.path()).await;
    engram
        .memory_server()
        .add_client("cursor", &Access::default())
        .unwrap();
    let per_agent = Access {
        approve_agents: vec!["Sam".into()],
        ..Access::default()
    };
    let set = engram
        .memory_server()
        .set_client_access("cursor", &per_agent)
        .unwrap();
    assert!(
        !set.approve_writes && set.approve_agents.len() == 1,
        "{set:?}"
    );
    let served = engram
        .memory_server()
        .client_tokens(&["Sam".into()])
        .unwrap();
    let grant = &served[0].0.grants[0];
    assert!(grant.write && grant.approve, "{grant:?}");
    assert!(
        engram
            .memory_server()
            .set_client_access("nobody", &Access::default())
            .is_err()
    );
}

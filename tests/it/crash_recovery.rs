//! A process killed mid-run leaves a database that opens, passes `PRAGMA integrity_check` and
//! carries on; a tool call left without its result (by a crash of an older writer, or an
//! imported file) is answered with a `Failed` result before the next call.

use engram_core::{LoopStyle, NewMessage, Role, StopReason, ToolCall, ToolReturn};
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_suite::{Home, assert_database_intact, cli_agent, kill_after_calls};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_process_mid_run_loses_only_the_step_in_flight() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = tempfile::tempdir().unwrap();
    let agent = cli_agent(home.path(), &mock);

    // Step 1 commits a memory edit; step 2 never gets an answer, and the process is killed.
    mock.push(Reply::ToolCalls(vec![Call::new(
        "core_memory_append",
        json!({"label": "human", "content": "Name: Bob"}),
    )]));
    mock.push(Reply::Hang);
    kill_after_calls(
        home.path(),
        &["chat", agent.as_str(), "--message", "my name is Bob"],
        &mock,
        2,
        "the run reached its second step",
    )
    .await;

    // The database opens cleanly with step 1 intact.
    assert_database_intact(home.path());
    let engram = engram_suite::open(
        home.path(),
        std::sync::Arc::new(engram_secrets::MemoryStore::default()),
    );
    assert_eq!(
        engram
            .store()
            .blocks()
            .by_label(&agent, "human")
            .unwrap()
            .value,
        "Name: Bob"
    );
    let roles: Vec<Role> = engram
        .recall()
        .list(&agent, None, 100)
        .await
        .unwrap()
        .iter()
        .map(|m| m.role)
        .collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool]);

    // And the agent carries on.
    mock.push(Reply::text("Hello again, Bob."));
    let (out, _) = engram_suite::chat(&engram, &agent, "are you there?", Default::default()).await;
    assert_eq!(out.stop_reason, StopReason::EndTurn, "{:?}", out.error);
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
}

#[tokio::test]
async fn an_orphaned_tool_call_is_answered_before_the_next_call() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    let store = home.engram.store();
    let calls = vec![
        ToolCall {
            id: "call_a".into(),
            name: "archival_memory_search".into(),
            arguments: r#"{"query":"x"}"#.into(),
        },
        ToolCall {
            id: "call_b".into(),
            name: "archival_memory_search".into(),
            arguments: r#"{"query":"y"}"#.into(),
        },
    ];
    let now = chrono::Utc::now();
    store
        .messages()
        .append(
            &agent,
            &[
                NewMessage::user("search twice"),
                NewMessage::assistant("", None, calls),
                NewMessage::tool(
                    "call_a",
                    "archival_memory_search",
                    ToolReturn::ok("[]", now).to_json(),
                ),
            ],
        )
        .unwrap();

    mock.push(Reply::text("Where were we?"));
    let (out, _) = home.chat(&agent, "hello?").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
    let sent = &mock.chat_requests()[0].body["messages"];
    let roles: Vec<&str> = sent
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "tool", "user"]
    );
    let repaired: serde_json::Value =
        serde_json::from_str(sent[4]["content"].as_str().unwrap()).unwrap();
    assert_eq!(sent[4]["tool_call_id"], "call_b");
    assert_eq!(repaired["status"], "Failed");
}

//! Memory edits the model gets wrong come back to it as `Failed` results it can read, and leave
//! memory as it was.

use engram_core::{LoopStyle, NewBlock, StopReason};
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_suite::{Home, last_tool_results};
use serde_json::json;

#[tokio::test]
async fn an_over_limit_edit_is_a_failed_result_with_the_room_left() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home
        .agent_with(&mock, LoopStyle::ToolLoop, |a| {
            a.blocks = vec![NewBlock {
                limit: Some(100),
                ..NewBlock::new("human", "Name: Bob")
            }];
        })
        .await;
    let long = "x".repeat(200);
    mock.push(Reply::ToolCalls(vec![Call::new(
        "core_memory_append",
        json!({"label": "human", "content": long}),
    )]));
    mock.push(Reply::text("I could not save all of that."));

    let (out, _) = home.chat(&agent, "remember this long thing").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    let results = last_tool_results(&mock);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["status"], "Failed");
    let message = results[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Edit failed: Exceeds 100 character limit (requested 210)"),
        "{message}"
    );
    assert!(message.contains("91 characters left"), "{message}");
    assert_eq!(home.block(&agent, "human"), "Name: Bob");
    assert!(
        home.engram
            .blocks()
            .history(&agent, "human")
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn model_mistakes_are_failed_results_and_the_run_goes_on() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home
        .agent_with(&mock, LoopStyle::ToolLoop, |a| {
            a.blocks.push(NewBlock {
                read_only: true,
                ..NewBlock::new("policies", "Be kind.")
            });
        })
        .await;
    mock.push(Reply::ToolCalls(vec![
        Call::new("no_such_tool", json!({})),
        Call::raw("core_memory_append", r#"{"label": "human", "content": "#),
        Call::new(
            "memory_rethink",
            json!({"label": "policies", "new_memory": "Be rude."}),
        ),
        Call::new(
            "memory_replace",
            json!({"label": "persona", "old_str": "Nope", "new_str": "x"}),
        ),
        Call::new(
            "core_memory_append",
            json!({"label": "nothing", "content": "x"}),
        ),
        Call::new(
            "memory_replace",
            json!({"label": "persona", "old_string": "Sam", "new_string": "Samantha"}),
        ),
    ]));
    mock.push(Reply::text("Done."));

    let (out, _) = home.chat(&agent, "do things").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    let results = last_tool_results(&mock);
    let statuses: Vec<&str> = results
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["Failed", "Failed", "Failed", "Failed", "Failed", "OK"]
    );
    let messages: Vec<&str> = results
        .iter()
        .map(|r| r["message"].as_str().unwrap())
        .collect();
    assert!(messages[0].starts_with("Unknown tool 'no_such_tool'"));
    assert!(messages[1].starts_with("Could not parse the arguments as JSON"));
    assert!(messages[2].contains("read-only"));
    assert!(messages[3].contains("was not found"));
    assert!(messages[4].starts_with("No block labelled 'nothing'"));
    assert_eq!(
        home.block(&agent, "persona"),
        "I am Samantha, a friendly companion who remembers."
    );
    assert_eq!(home.block(&agent, "policies"), "Be kind.");
    // The only oddity the server sees is the model's own hallucinated tool name in the history;
    // every call, including that one, was answered.
    let violations = mock.violations();
    assert!(
        violations
            .iter()
            .all(|v| v.contains("\"no_such_tool\", which is not among the tools offered")),
        "{violations:#?}"
    );
}

#[tokio::test]
async fn agent_edits_are_recorded_and_can_be_undone() {
    let mock = MockLlm::start(Script::Brain).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    home.chat(&agent, "my name is Bob").await;
    let history = home.engram.blocks().history(&agent, "human").await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(
        (history[0].old_value.as_str(), history[0].new_value.as_str()),
        ("", "Name: Bob")
    );
    assert!(matches!(
        history[0].editor,
        engram_core::Editor::Agent { .. }
    ));
    home.engram
        .blocks()
        .undo(&history[0].id, None)
        .await
        .unwrap();
    assert_eq!(home.block(&agent, "human"), "");
}

#[tokio::test]
async fn appending_a_line_already_in_the_block_changes_nothing() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    let save = || {
        Reply::ToolCalls(vec![Call::new(
            "core_memory_append",
            json!({"label": "human", "content": "Name: Bob"}),
        )])
    };
    mock.push(save());
    mock.push(save());
    mock.push(Reply::text("Noted, Bob."));
    let (out, _) = home
        .chat(&agent, "my name is Bob, did I say my name is Bob?")
        .await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    assert_eq!(home.block(&agent, "human"), "Name: Bob");
    let results = last_tool_results(&mock);
    assert_eq!(results.len(), 2);
    assert_eq!(results[1]["status"], "OK");
    assert!(
        results[1]["message"]
            .as_str()
            .unwrap()
            .contains("already contains that line")
    );
    assert_eq!(
        home.engram
            .blocks()
            .history(&agent, "human")
            .await
            .unwrap()
            .len(),
        1,
        "one edit recorded"
    );
}

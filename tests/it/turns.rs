//! Message actions over the real engine and the scripted model: regenerate and
//! edit & resend roll back exactly the replaced turn's memory edits, passages, messages and
//! usage, then run again; a turn changed by someone else since is refused and nothing is lost;
//! how each run ended and the edit under each tool call are read back from stored data.

use engram_core::{AgentId, Editor, Error, LoopStyle, Role, RunEvent, StopReason};
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_store::PassageList;
use engram_suite::{Home, RunOutcome};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Scripts one turn: the model appends `fact` to the human block, archives it, then answers.
fn script_turn(mock: &MockLlm, fact: &str) {
    mock.push(Reply::ToolCalls(vec![
        Call::new(
            "core_memory_append",
            json!({"label": "human", "content": fact}),
        ),
        Call::new(
            "archival_memory_insert",
            json!({"content": format!("fact: {fact}")}),
        ),
    ]));
    mock.push(Reply::text(format!("Noted: {fact}.")));
}

async fn passages(home: &Home, agent: &AgentId) -> Vec<String> {
    home.engram
        .archival()
        .list(
            agent,
            &PassageList {
                limit: 100,
                ascending: true,
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.text)
        .collect()
}

async fn texts(home: &Home, agent: &AgentId) -> Vec<(Role, String)> {
    home.engram
        .recall()
        .list(agent, None, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.role != Role::Tool)
        .map(|m| (m.role, m.content))
        .collect()
}

/// Runs `f` with a fresh event sink and collects what it streamed.
async fn run_with(
    f: impl AsyncFnOnce(&engram_agent::EventSink) -> engram_core::Result<engram_agent::RunOutcome>,
) -> engram_core::Result<(engram_agent::RunOutcome, Vec<RunEvent>)> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let out = f(&tx).await;
    drop(tx);
    let mut events = Vec::new();
    while let Some(e) = rx.recv().await {
        events.push(e);
    }
    out.map(|o| (o, events))
}

async fn agent(home: &Home, mock: &MockLlm) -> AgentId {
    // The tool loop's built-in memory tools include core_memory_append and
    // archival_memory_insert.
    home.agent_with(mock, LoopStyle::ToolLoop, |_| {}).await
}

/// Two turns: a fact about kiwi, then one about mango.
const KIWI_THEN_MANGO: &[(&str, &str)] = &[
    ("likes kiwi", "I like kiwi"),
    ("likes mango", "I like mango"),
];

/// A scripted model, a home and an agent that was told each `(fact, message)` in a turn of its
/// own (see [`script_turn`]); with the outcome of the last turn.
async fn told(turns: &[(&str, &str)]) -> (MockLlm, Home, AgentId, RunOutcome) {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = agent(&home, &mock).await;
    let mut last = None;
    for (fact, message) in turns {
        script_turn(&mock, fact);
        last = Some(home.chat(&agent, message).await.0);
    }
    (mock, home, agent, last.expect("at least one turn"))
}

#[tokio::test]
async fn regenerate_rolls_back_exactly_the_last_turn_then_runs_it_again() {
    let (mock, home, agent, first_try) = told(KIWI_THEN_MANGO).await;
    assert_eq!(home.block(&agent, "human"), "likes kiwi\nlikes mango");
    assert_eq!(
        passages(&home, &agent).await,
        ["fact: likes kiwi", "fact: likes mango"]
    );

    let preview = home.engram.runs().regenerate_preview(&agent).await.unwrap();
    assert_eq!(preview.runs, std::slice::from_ref(&first_try.run_id));
    assert_eq!(preview.blocks.len(), 1);
    assert_eq!(preview.blocks[0].label, "human");
    assert_eq!(preview.blocks[0].restored_value, "likes kiwi");
    assert_eq!(preview.passages.len(), 1);
    assert_eq!(preview.passages[0].text, "fact: likes mango");
    assert_eq!(preview.usage, first_try.usage);

    // The second try answers differently: only its edits are there afterwards.
    script_turn(&mock, "likes papaya");
    let (second_try, events) = run_with(async |tx| {
        home.engram
            .runs()
            .regenerate(&agent, tx, CancellationToken::new())
            .await
    })
    .await
    .unwrap();
    assert_eq!(second_try.stop_reason, StopReason::EndTurn);
    assert!(matches!(events[0], RunEvent::RunStarted { .. }));
    assert_eq!(home.block(&agent, "human"), "likes kiwi\nlikes papaya");
    assert_eq!(
        passages(&home, &agent).await,
        ["fact: likes kiwi", "fact: likes papaya"]
    );
    assert_eq!(
        texts(&home, &agent).await,
        [
            (Role::User, "I like kiwi".to_owned()),
            (Role::Assistant, String::new()),
            (Role::Assistant, "Noted: likes kiwi.".to_owned()),
            (Role::User, "I like mango".to_owned()),
            (Role::Assistant, String::new()),
            (Role::Assistant, "Noted: likes papaya.".to_owned()),
        ]
    );
    // The replaced run is gone from the run records and the steps; recall no longer finds it.
    let runs = home.engram.runs().records(&agent, None).await.unwrap();
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r.id != first_try.run_id));
    assert_eq!(runs[1].usage, second_try.usage);
    let hits = home
        .engram
        .recall()
        .search(
            &agent,
            &engram_store::MessageQuery {
                query: "mango".into(),
                limit: 10,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(
        hits.iter()
            .all(|h| !h.message.content.contains("Noted: likes mango")),
        "{hits:?}"
    );
    let found = home
        .engram
        .archival()
        .search(
            &agent,
            "mango",
            vec![],
            engram_core::TagMatch::Any,
            (None, None),
            10,
        )
        .await
        .unwrap();
    assert!(
        found.iter().all(|h| !h.passage.text.contains("mango")),
        "{found:?}"
    );
    // The new model call saw the conversation without the replaced turn.
    let sent = mock.requests().last().unwrap().body.to_string();
    assert!(!sent.contains("Noted: likes mango"), "{sent}");
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
}

#[tokio::test]
async fn edit_and_resend_rolls_back_from_that_message() {
    let (mock, home, agent, _) = told(KIWI_THEN_MANGO).await;
    let first = home.engram.recall().list(&agent, None, 100).await.unwrap()[0].clone();
    assert_eq!(first.content, "I like kiwi");

    let preview = home
        .engram
        .runs()
        .rollback_preview(&agent, &first.id)
        .await
        .unwrap();
    assert_eq!(preview.runs.len(), 2);
    assert_eq!(preview.passages.len(), 2);
    assert_eq!(preview.blocks[0].restored_value, "");

    script_turn(&mock, "likes figs");
    let (out, _) = run_with(async |tx| {
        home.engram
            .runs()
            .edit_and_resend(
                &agent,
                &first.id,
                "I like figs",
                tx,
                CancellationToken::new(),
            )
            .await
    })
    .await
    .unwrap();
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    assert_eq!(home.block(&agent, "human"), "likes figs");
    assert_eq!(passages(&home, &agent).await, ["fact: likes figs"]);
    assert_eq!(
        texts(&home, &agent).await[0],
        (Role::User, "I like figs".to_owned())
    );
    assert_eq!(texts(&home, &agent).await.len(), 3);
}

#[tokio::test]
async fn a_turn_whose_block_was_changed_by_hand_since_is_refused_and_nothing_is_lost() {
    let (mock, home, agent, _) = told(&[("likes kiwi", "I like kiwi")]).await;
    home.engram
        .blocks()
        .set_value(&agent, "human", "likes kiwi (checked by hand)")
        .await
        .unwrap();
    let messages = home.engram.recall().list(&agent, None, 100).await.unwrap();
    let requests = mock.requests().len();

    let preview = home.engram.runs().regenerate_preview(&agent).await.unwrap();
    assert!(preview.blocks[0].changed_later);
    let err = run_with(async |tx| {
        home.engram
            .runs()
            .regenerate(&agent, tx, CancellationToken::new())
            .await
    })
    .await
    .unwrap_err();
    assert!(
        matches!(&err, Error::Conflict(m) if m.contains("'human'")),
        "{err:?}"
    );
    assert_eq!(home.block(&agent, "human"), "likes kiwi (checked by hand)");
    assert_eq!(
        home.engram.recall().list(&agent, None, 100).await.unwrap(),
        messages
    );
    assert_eq!(passages(&home, &agent).await, ["fact: likes kiwi"]);
    assert_eq!(mock.requests().len(), requests, "no model call was made");
}

#[tokio::test]
async fn edits_and_run_records_are_read_back_from_stored_data() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = agent(&home, &mock).await;
    // Two edits of one block in one step: each has its own diff, under its own call.
    mock.push(Reply::ToolCalls(vec![
        Call::new(
            "core_memory_append",
            json!({"label": "human", "content": "Ann"}),
        ),
        Call::new(
            "core_memory_append",
            json!({"label": "human", "content": "likes tea"}),
        ),
    ]));
    mock.push(Reply::text("Hi Ann."));
    let (out, events) = home.chat(&agent, "I'm Ann and I like tea").await;

    let calls: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::ToolCall { call } => Some(call.id.clone()),
            _ => None,
        })
        .collect();
    // The live events name the call of each change, one event per change.
    let live: Vec<(Option<String>, String)> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::MemoryChanged {
                block,
                tool_call_id,
                ..
            } => Some((tool_call_id.clone(), block.value.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        live,
        [
            (Some(calls[0].clone()), "Ann".to_owned()),
            (Some(calls[1].clone()), "Ann\nlikes tea".to_owned()),
        ]
    );
    let edits = home
        .engram
        .runs()
        .edits(&agent, std::slice::from_ref(&out.run_id))
        .await
        .unwrap();
    let stored: Vec<(Option<String>, String, String)> = edits
        .iter()
        .map(|e| {
            let call = match &e.edit.editor {
                Editor::Agent { tool_call_id, .. } => tool_call_id.clone(),
                _ => None,
            };
            (call, e.edit.old_value.clone(), e.edit.new_value.clone())
        })
        .collect();
    assert_eq!(
        stored,
        [
            (Some(calls[0].clone()), String::new(), "Ann".to_owned()),
            (
                Some(calls[1].clone()),
                "Ann".to_owned(),
                "Ann\nlikes tea".to_owned()
            ),
        ]
    );
    assert!(edits.iter().all(|e| e.label == "human"));
    let records = home.engram.runs().records(&agent, None).await.unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].id, out.run_id);
    assert_eq!(records[0].stop_reason, StopReason::EndTurn);
    assert_eq!(records[0].usage, out.usage);
    assert_eq!(records[0].usage.step_count, 2);
}

#[tokio::test]
async fn a_stopped_run_records_what_it_used() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = agent(&home, &mock).await;
    mock.push(Reply::Hang);
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        stop.cancel();
    });
    let (out, _) = engram_suite::chat(&home.engram, &agent, "hello?", cancel).await;
    assert_eq!(out.stop_reason, StopReason::Cancelled);
    // Not "0 tokens · 0 steps": the prompt was sent.
    assert_eq!(out.usage.step_count, 1);
    assert!(out.usage.prompt_tokens > 0);
    let records = home.engram.runs().records(&agent, None).await.unwrap();
    assert_eq!(records[0].stop_reason, StopReason::Cancelled);
    assert_eq!(records[0].usage, out.usage);
}

#[tokio::test]
async fn deleting_a_message_keeps_memory() {
    let (mock, home, agent, _) = told(&[("likes kiwi", "I like kiwi")]).await;
    let all = home.engram.recall().list(&agent, None, 100).await.unwrap();
    let with_calls = all.iter().find(|m| !m.tool_calls.is_empty()).unwrap();
    let removed = home
        .engram
        .recall()
        .delete(&agent, &with_calls.id)
        .await
        .unwrap();
    assert_eq!(removed.len(), 3, "the call and its two results");
    assert_eq!(
        texts(&home, &agent).await,
        [
            (Role::User, "I like kiwi".to_owned()),
            (Role::Assistant, "Noted: likes kiwi.".to_owned()),
        ]
    );
    assert_eq!(home.block(&agent, "human"), "likes kiwi");
    // The agent still works: no tool call was left unanswered.
    mock.push(Reply::text("Still here."));
    let (out, _) = home.chat(&agent, "still there?").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
}

// Several threads: the scripted model answers while the test waits on the CLI process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_regenerates_the_last_turn() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = tempfile::tempdir().unwrap();
    let agent = engram_suite::cli_agent(home.path(), &mock);
    script_turn(&mock, "likes kiwi");
    engram_suite::stdout_ok(&engram_suite::cli(
        home.path(),
        &["chat", agent.as_str(), "--message", "I like kiwi"],
    ));
    script_turn(&mock, "likes papaya");
    let out = engram_suite::cli(home.path(), &["chat", agent.as_str(), "--regenerate"]);
    assert_eq!(engram_suite::stdout_ok(&out).trim(), "Noted: likes papaya.");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("undoing 5 messages, 1 block edits, 1 passages"),
        "{said}"
    );
    let shown = engram_suite::stdout_ok(&engram_suite::cli(
        home.path(),
        &["memory", "show", agent.as_str(), "--json"],
    ));
    assert!(
        shown.contains("likes papaya") && !shown.contains("likes kiwi"),
        "{shown}"
    );
}

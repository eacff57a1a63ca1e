//! Turn rollback (regenerate, edit & resend): a turn's messages, steps, usage,
//! passages and block edits go in one transaction, or nothing does when another writer changed
//! one of its blocks since.

use crate::steps::step;
use crate::support::{create, temp_store};
use engram_core::{
    AgentId, Block, BlockOp, BlockPatch, Editor, Error, MessageId, NewMessage, NewPassage, RunId,
    StopReason, ToolCall, ToolReturn, Usage,
};
use engram_retrieval::HybridSearch;
use engram_store::{BlockWrite, MessageQuery, PassageQuery, RunRecord, StepCommit, Store};

/// One turn as the loop writes it: the user message, then one step whose tool call `call`
/// appends `text` to `block` and stores a passage `passage`. Returns the user message's id
/// and the run.
fn turn(
    store: &Store,
    agent: &AgentId,
    block: &Block,
    call: &str,
    text: &str,
) -> (MessageId, RunId) {
    let s = step(agent);
    let mut user = NewMessage::user(format!("remember {text}"));
    user.run_id = Some(s.run_id.clone());
    let user = store.messages().append(agent, &[user]).unwrap().remove(0);
    let now = chrono::Utc::now();
    let run = s.run_id.clone();
    store
        .runs()
        .commit_step(&StepCommit {
            step: s,
            approval: Default::default(),
            messages: vec![
                NewMessage::assistant(
                    "",
                    None,
                    vec![ToolCall {
                        id: call.into(),
                        name: "core_memory_append".into(),
                        arguments: format!(r#"{{"content":"{text}"}}"#),
                    }],
                ),
                NewMessage::tool(
                    call,
                    "core_memory_append",
                    ToolReturn::ok("ok", now).to_json(),
                ),
                NewMessage::assistant(format!("Noted {text}."), None, vec![]),
            ],
            block_writes: vec![BlockWrite {
                block_id: block.id.clone(),
                op: BlockOp::Append { text: text.into() },
                editor: Editor::Agent {
                    agent_id: agent.clone(),
                    tool_call_id: Some(call.into()),
                },
                restate_result: false,
            }],
            passages: vec![NewPassage {
                text: format!("archived {text}"),
                ..Default::default()
            }],
        })
        .unwrap();
    (user.id, run)
}

fn passages_found(store: &Store, agent: &AgentId, word: &str) -> usize {
    // Searched, so the archival index is checked too (ranked hits lend score to neighbours,
    // so count only the hits that contain the word).
    store
        .search_passages(
            agent,
            &PassageQuery {
                query: word.into(),
                top_k: 10,
                ..Default::default()
            },
        )
        .unwrap()
        .iter()
        .filter(|h| h.passage.text.contains(word))
        .count()
}

fn recall_found(store: &Store, agent: &AgentId, word: &str) -> usize {
    store
        .search_messages(
            agent,
            &MessageQuery {
                query: word.into(),
                limit: 10,
                ..Default::default()
            },
        )
        .unwrap()
        .len()
}

#[test]
fn rolling_back_the_last_turn_undoes_exactly_that_turn() {
    let (_dir, store) = temp_store();
    let (a, blocks) = create(&store, "a");
    let human = &blocks[1];
    turn(&store, &a.id, human, "c1", "kiwi");
    let after_first = store.blocks().get(&human.id).unwrap();
    let messages_after_first = store.messages().list(&a.id, None, 100).unwrap();
    let (second, run2) = turn(&store, &a.id, human, "c2", "mango");
    store
        .runs()
        .record(&RunRecord {
            id: run2.clone(),
            agent_id: a.id.clone(),
            stop_reason: StopReason::EndTurn,
            error: None,
            usage: Usage::default(),
            ended_at: chrono::Utc::now(),
        })
        .unwrap();
    assert_eq!(store.blocks().get(&human.id).unwrap().value, "kiwi\nmango");

    let preview = store.messages().rollback_preview(&a.id, &second).unwrap();
    assert_eq!(preview.messages.len(), 4);
    assert_eq!(preview.runs, std::slice::from_ref(&run2));
    assert_eq!(preview.usage.step_count, 1);
    assert_eq!(preview.passages.len(), 1);
    assert_eq!(preview.passages[0].text, "archived mango");
    assert_eq!(preview.blocks.len(), 1);
    assert_eq!(preview.blocks[0].restored_value, "kiwi");
    assert_eq!(preview.blocks[0].current_value, "kiwi\nmango");
    assert!(!preview.blocks[0].changed_later);
    // A preview changes nothing.
    assert_eq!(store.messages().list(&a.id, None, 100).unwrap().len(), 8);

    let done = store
        .messages()
        .rollback_from(None, &a.id, &second)
        .unwrap();
    assert_eq!(done, preview);
    let block = store.blocks().get(&human.id).unwrap();
    assert_eq!(block.value, "kiwi");
    // The restore is a new version, recorded as a rollback, after the turn's own edit.
    assert_eq!(block.version, after_first.version + 2);
    let history = store.blocks().history(&human.id, 10).unwrap();
    assert_eq!(history[0].editor, Editor::Rollback);
    assert_eq!(history[0].old_value, "kiwi\nmango");
    assert_eq!(history[0].new_value, "kiwi");
    assert_eq!(
        store.messages().list(&a.id, None, 100).unwrap(),
        messages_after_first
    );
    assert_eq!(store.runs().list_steps(&a.id, Some(&run2)).unwrap(), []);
    assert_eq!(store.runs().list_steps(&a.id, None).unwrap().len(), 1);
    assert_eq!(store.runs().list(&a.id, None).unwrap(), []);
    // Archival and recall search follow: the second turn is gone, the first stays.
    assert_eq!(passages_found(&store, &a.id, "mango"), 0);
    assert_eq!(passages_found(&store, &a.id, "kiwi"), 1);
    assert_eq!(recall_found(&store, &a.id, "mango"), 0);
    assert!(recall_found(&store, &a.id, "kiwi") > 0);
    assert_eq!(store.agents().memory_counts(&a.id).unwrap(), (4, 1));
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

#[test]
fn rolling_back_from_an_earlier_message_undoes_every_later_turn() {
    let (_dir, store) = temp_store();
    let (a, blocks) = create(&store, "a");
    let human = &blocks[1];
    let (first, _) = turn(&store, &a.id, human, "c1", "kiwi");
    turn(&store, &a.id, human, "c2", "mango");
    let done = store.messages().rollback_from(None, &a.id, &first).unwrap();
    assert_eq!(done.runs.len(), 2);
    assert_eq!(done.blocks[0].edits, 2);
    assert_eq!(store.blocks().get(&human.id).unwrap().value, "");
    assert_eq!(store.messages().list(&a.id, None, 100).unwrap(), []);
    assert_eq!(store.agents().memory_counts(&a.id).unwrap(), (0, 0));
}

#[test]
fn a_block_changed_by_someone_else_after_the_turn_refuses_the_rollback_and_changes_nothing() {
    let (_dir, store) = temp_store();
    let (a, blocks) = create(&store, "a");
    let human = &blocks[1];
    let (first, _) = turn(&store, &a.id, human, "c1", "kiwi");
    // The user edits the block between the two turns: rolling back both would wipe it.
    store
        .blocks()
        .update(
            &human.id,
            &BlockPatch {
                value: Some("kiwi (by hand)".into()),
                ..Default::default()
            },
            &Editor::User,
        )
        .unwrap();
    let (second, _) = turn(&store, &a.id, human, "c2", "mango");
    let before = store.blocks().get(&human.id).unwrap();
    let messages = store.messages().list(&a.id, None, 100).unwrap();

    let preview = store.messages().rollback_preview(&a.id, &first).unwrap();
    assert!(preview.blocks[0].changed_later);
    let err = store
        .messages()
        .rollback_from(None, &a.id, &first)
        .unwrap_err();
    match &err {
        Error::Conflict(m) => assert!(m.contains("'human'"), "{m}"),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(store.blocks().get(&human.id).unwrap(), before);
    assert_eq!(store.messages().list(&a.id, None, 100).unwrap(), messages);
    assert_eq!(passages_found(&store, &a.id, "kiwi"), 1);
    assert_eq!(store.runs().list_steps(&a.id, None).unwrap().len(), 2);

    // The last turn alone came after the hand edit: it rolls back onto it.
    store
        .messages()
        .rollback_from(None, &a.id, &second)
        .unwrap();
    assert_eq!(
        store.blocks().get(&human.id).unwrap().value,
        "kiwi (by hand)"
    );

    // A hand edit after the turn also refuses it.
    let (third, _) = turn(&store, &a.id, human, "c3", "fig");
    store
        .blocks()
        .update(
            &human.id,
            &BlockPatch {
                value: Some("changed".into()),
                ..Default::default()
            },
            &Editor::User,
        )
        .unwrap();
    assert!(matches!(
        store.messages().rollback_from(None, &a.id, &third),
        Err(Error::Conflict(_))
    ));
    assert_eq!(passages_found(&store, &a.id, "fig"), 1);
}

#[test]
fn rollback_of_an_unknown_message_is_not_found() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    let (b, blocks_b) = create(&store, "b");
    let (theirs, _) = turn(&store, &b.id, &blocks_b[1], "c1", "kiwi");
    assert!(matches!(
        store.messages().rollback_from(None, &a.id, &theirs),
        Err(Error::NotFound {
            what: "message",
            ..
        })
    ));
    assert_eq!(store.messages().list(&b.id, None, 100).unwrap().len(), 4);
}

#[test]
fn deleting_an_assistant_message_takes_its_tool_results_along() {
    let (_dir, store) = temp_store();
    let (a, blocks) = create(&store, "a");
    turn(&store, &a.id, &blocks[1], "c1", "kiwi");
    let all = store.messages().list(&a.id, None, 100).unwrap();
    let (call, result) = (&all[1], &all[2]);
    assert!(matches!(
        store.messages().delete(None, &a.id, &result.id),
        Err(Error::Invalid(_))
    ));
    let removed = store.messages().delete(None, &a.id, &call.id).unwrap();
    assert_eq!(removed, [call.id.clone(), result.id.clone()]);
    let left: Vec<MessageId> = store
        .messages()
        .list(&a.id, None, 100)
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(left, [all[0].id.clone(), all[3].id.clone()]);
    // Memory stays: deleting a message is not a rollback.
    assert_eq!(store.blocks().get(&blocks[1].id).unwrap().value, "kiwi");
}

#[test]
fn a_run_record_keeps_how_the_run_ended() {
    let (_dir, store) = temp_store();
    let (a, blocks) = create(&store, "a");
    let (_, run) = turn(&store, &a.id, &blocks[1], "c1", "kiwi");
    let mut usage = Usage::default();
    usage.add_step(1200, 35);
    let record = RunRecord {
        id: run.clone(),
        agent_id: a.id.clone(),
        stop_reason: StopReason::Cancelled,
        error: Some(engram_core::ErrorBody {
            code: "provider".into(),
            message: "the connection dropped".into(),
            details: None,
        }),
        usage,
        ended_at: chrono::DateTime::from_timestamp_micros(1_700_000_000_000_000).unwrap(),
    };
    store.runs().record(&record).unwrap();
    assert_eq!(store.runs().list(&a.id, Some(&[run])).unwrap(), [record]);
    assert_eq!(store.runs().list(&a.id, Some(&[RunId::new()])).unwrap(), []);
}

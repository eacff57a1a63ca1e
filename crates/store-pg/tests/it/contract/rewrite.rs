//! Changing a conversation that happened: a rollback takes a turn back whole (messages, steps,
//! usage, passages, block edits) or refuses without a trace when someone else edited a block
//! since; a delete takes an assistant message's tool results along; a reset empties the
//! context window and keeps recall. Under a lease that is no longer current, none of them
//! writes. Plus the chat's windows of the conversation and the edits under each tool call.

use super::{agent_with, code, user};
use crate::harness::{Harness, on_both_backends};
use chrono::{Duration as Span, Utc};
use engram_core::{
    AgentId, Block, BlockOp, Editor, MessageId, MessageKind, NewMessage, NewPassage, Role, RunId,
    Step, StepId, ToolCall, ToolReturn, ToolStatus,
};
use engram_store_api::{
    AgentStore, ApprovalWrite, BlockStore, BlockWrite, ContextStore, Lease, LeaseGrant, LeaseStore,
    MessageStore, PassageRange, PassageStore, RewriteStore, StepCommit, StepStore, WindowAt,
};
use std::time::Duration;

on_both_backends!(
    a_rollback_takes_a_turn_back_whole,
    a_rollback_over_someone_elses_edit_is_refused_and_changes_nothing,
    nothing_is_rewritten_under_a_lease_that_is_no_longer_current,
    deleting_an_assistant_message_takes_its_tool_results_along,
    a_reset_empties_the_window_and_keeps_recall,
    the_last_user_message_is_one_a_person_wrote,
    a_messages_text_changes_in_place,
    windows_of_the_conversation_are_cut_the_same_way,
);

/// What one turn wrote: the user's message, the run and the step.
struct Turn {
    message: MessageId,
    run: RunId,
}

/// A turn: a user message, then one step whose tool call appends `note` to `block` and
/// inserts a passage `note`.
async fn turn(
    b: &impl StepStore,
    m: &impl MessageStore,
    agent: &AgentId,
    block: &Block,
    note: &str,
) -> Turn {
    let run = RunId::new();
    let asked = m
        .append_messages(
            agent,
            &[NewMessage {
                run_id: Some(run.clone()),
                ..NewMessage::user(format!("remember {note}"))
            }],
        )
        .await
        .unwrap();
    let step = Step {
        id: StepId::new(),
        agent_id: agent.clone(),
        run_id: run.clone(),
        index: 1,
        model: "openai/gpt-4o-mini".into(),
        prompt_tokens: 1000,
        completion_tokens: 50,
        finish_reason: Some("tool_calls".into()),
        started_at: Utc::now(),
        llm_ms: 10,
        step_ms: 12,
    };
    let call = format!("call-{note}");
    let result = ToolReturn {
        status: ToolStatus::Ok,
        message: "done".into(),
        time: "2026-11-29 09:00:00 AM UTC+0000".into(),
    };
    b.commit_step(
        None,
        &StepCommit {
            step,
            messages: vec![
                NewMessage::assistant(
                    "",
                    None,
                    vec![ToolCall {
                        id: call.clone(),
                        name: "core_memory_append".into(),
                        arguments: "{}".into(),
                    }],
                ),
                NewMessage::tool(&call, "core_memory_append", result.to_json()),
            ],
            block_writes: vec![BlockWrite {
                block_id: block.id.clone(),
                op: BlockOp::Append { text: note.into() },
                editor: Editor::Agent {
                    agent_id: agent.clone(),
                    tool_call_id: Some(call.clone()),
                },
                restate_result: true,
            }],
            passages: vec![NewPassage {
                text: note.into(),
                ..Default::default()
            }],
            approval: ApprovalWrite::Keep,
        },
    )
    .await
    .unwrap();
    Turn {
        message: asked[0].id.clone(),
        run,
    }
}

async fn texts(b: &impl MessageStore, agent: &AgentId) -> Vec<String> {
    b.message_window(agent, &WindowAt::Start, 100)
        .await
        .unwrap()
        .messages
        .into_iter()
        .map(|m| m.content)
        .collect()
}

async fn passage_texts(b: &impl PassageStore, agent: &AgentId) -> Vec<String> {
    let mut t: Vec<String> = b
        .list_passages(
            agent,
            &PassageRange {
                limit: 100,
                ..PassageRange::default()
            },
        )
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.text)
        .collect();
    t.sort();
    t
}

async fn a_rollback_takes_a_turn_back_whole<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, blocks) = agent_with(&b, "ana", &[("human", "Name: Ana.")]).await;
    let human = &blocks[0];
    let first = turn(&b, &b, &agent.id, human, "Tea.").await;
    let second = turn(&b, &b, &agent.id, human, "Cats.").await;
    let before = b.get_block(&human.id).await.unwrap();
    assert_eq!(before.value, "Name: Ana.\nTea.\nCats.");

    let plan = b
        .rollback_preview(&agent.id, &second.message)
        .await
        .unwrap();
    assert_eq!(
        plan.messages.len(),
        3,
        "the user's message, the call, its result"
    );
    assert_eq!(plan.messages[0], second.message);
    assert_eq!(plan.runs, vec![second.run.clone()]);
    assert_eq!(
        (plan.usage.prompt_tokens, plan.usage.completion_tokens),
        (1000, 50)
    );
    assert_eq!(plan.blocks.len(), 1);
    let revert = &plan.blocks[0];
    assert_eq!(
        (
            revert.restored_value.as_str(),
            revert.current_value.as_str(),
            revert.edits,
            revert.changed_later
        ),
        ("Name: Ana.\nTea.", "Name: Ana.\nTea.\nCats.", 1, false)
    );
    assert_eq!(revert.version, before.version);
    assert_eq!(
        plan.passages
            .iter()
            .map(|p| p.text.as_str())
            .collect::<Vec<_>>(),
        ["Cats."]
    );
    assert_eq!(
        texts(&b, &agent.id).await.len(),
        6,
        "a preview changes nothing"
    );

    let lease = match b
        .acquire_lease(&agent.id, "replica-a", Duration::from_secs(10))
        .await
        .unwrap()
    {
        LeaseGrant::Granted(l) => l,
        other => panic!("{other:?}"),
    };
    let done = b
        .rollback_from(Some(&lease), &agent.id, &second.message)
        .await
        .unwrap();
    assert_eq!(done, plan);
    let after = b.get_block(&human.id).await.unwrap();
    assert_eq!(after.value, "Name: Ana.\nTea.");
    assert_eq!(
        after.version,
        before.version + 1,
        "the restore is a new version"
    );
    let history = b.block_history(&human.id, 10).await.unwrap();
    assert_eq!(history[0].editor, Editor::Rollback, "newest first");
    assert_eq!(texts(&b, &agent.id).await.len(), 3);
    assert_eq!(passage_texts(&b, &agent.id).await, ["Tea."]);
    assert_eq!(
        b.list_steps(&agent.id, Some(&second.run)).await.unwrap(),
        vec![]
    );
    assert_eq!(
        b.tool_edits(&agent.id, std::slice::from_ref(&second.run))
            .await
            .unwrap(),
        vec![]
    );
    let kept = b
        .tool_edits(&agent.id, std::slice::from_ref(&first.run))
        .await
        .unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(
        (kept[0].label.as_str(), kept[0].edit.new_value.as_str()),
        ("human", "Name: Ana.\nTea.")
    );

    assert_eq!(
        code(b.rollback_preview(&agent.id, &second.message).await),
        "not_found",
        "the message went with the rollback"
    );

    // A turn run again, then a rollback from the very first message: the earlier rollback's
    // restore and the removed turn's edit are this agent's own history, not someone else's,
    // and the block goes back to what it was before any turn.
    turn(&b, &b, &agent.id, human, "Dogs.").await;
    let plan = b.rollback_preview(&agent.id, &first.message).await.unwrap();
    assert_eq!(
        (plan.blocks[0].changed_later, plan.blocks[0].edits),
        (false, 2),
        "{plan:?}"
    );
    b.rollback_from(Some(&lease), &agent.id, &first.message)
        .await
        .unwrap();
    assert_eq!(b.get_block(&human.id).await.unwrap().value, "Name: Ana.");
    assert!(texts(&b, &agent.id).await.is_empty());
    assert!(passage_texts(&b, &agent.id).await.is_empty());
    assert_eq!(
        code(
            b.rollback_preview(&AgentId::from("agent-nobody"), &first.message)
                .await
        ),
        "not_found"
    );
}

async fn a_rollback_over_someone_elses_edit_is_refused_and_changes_nothing<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, blocks) =
        agent_with(&b, "bo", &[("human", "Name: Bo."), ("persona", "Calm.")]).await;
    let (human, persona) = (&blocks[0], &blocks[1]);
    let t = turn(&b, &b, &agent.id, human, "Jazz.").await;
    turn(&b, &b, &agent.id, persona, "Kind.").await;
    b.apply_block_op(
        &human.id,
        &BlockOp::Append {
            text: "Typed by hand.".into(),
        },
        &user(),
    )
    .await
    .unwrap();
    let plan = b.rollback_preview(&agent.id, &t.message).await.unwrap();
    let flagged: Vec<(&str, bool)> = plan
        .blocks
        .iter()
        .map(|r| (r.label.as_str(), r.changed_later))
        .collect();
    assert_eq!(flagged, [("human", true), ("persona", false)]);

    let err = b
        .rollback_from(None, &agent.id, &t.message)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "conflict");
    assert!(err.to_string().contains("'human'"), "{err}");
    assert_eq!(
        b.get_block(&human.id).await.unwrap().value,
        "Name: Bo.\nJazz.\nTyped by hand."
    );
    assert_eq!(
        b.get_block(&persona.id).await.unwrap().value,
        "Calm.\nKind."
    );
    assert_eq!(texts(&b, &agent.id).await.len(), 6);
    assert_eq!(passage_texts(&b, &agent.id).await.len(), 2);
}

async fn nothing_is_rewritten_under_a_lease_that_is_no_longer_current<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, blocks) = agent_with(&b, "cy", &[("human", "Name: Cy.")]).await;
    let t = turn(&b, &b, &agent.id, &blocks[0], "Chess.").await;
    let old = match b
        .acquire_lease(&agent.id, "replica-a", Duration::from_millis(100))
        .await
        .unwrap()
    {
        LeaseGrant::Granted(l) => l,
        other => panic!("{other:?}"),
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Another replica has the agent now.
    let LeaseGrant::Granted(_current) = b
        .acquire_lease(&agent.id, "replica-b", Duration::from_secs(10))
        .await
        .unwrap()
    else {
        panic!("the expired lease passes on");
    };
    assert_eq!(
        code(b.rollback_from(Some(&old), &agent.id, &t.message).await),
        "lease_lost"
    );
    assert_eq!(
        code(b.delete_message(Some(&old), &agent.id, &t.message).await),
        "lease_lost"
    );
    assert_eq!(
        code(b.reset_context(Some(&old), &agent.id).await),
        "lease_lost"
    );
    let foreign = Lease {
        agent_id: AgentId::from("agent-someone-else"),
        ..old.clone()
    };
    assert_eq!(
        code(b.reset_context(Some(&foreign), &agent.id).await),
        "invalid_input"
    );
    assert_eq!(texts(&b, &agent.id).await.len(), 3);
    assert_eq!(b.in_context_messages(&agent.id).await.unwrap().len(), 3);
    assert_eq!(
        b.get_block(&blocks[0].id).await.unwrap().value,
        "Name: Cy.\nChess."
    );
}

async fn deleting_an_assistant_message_takes_its_tool_results_along<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, blocks) = agent_with(&b, "di", &[("human", "Name: Di.")]).await;
    turn(&b, &b, &agent.id, &blocks[0], "Tennis.").await;
    let all = b
        .message_window(&agent.id, &WindowAt::Start, 10)
        .await
        .unwrap()
        .messages;
    let (asked, call, result) = (&all[0], &all[1], &all[2]);
    assert_eq!((call.role, result.role), (Role::Assistant, Role::Tool));

    assert_eq!(
        code(b.delete_message(None, &agent.id, &result.id).await),
        "invalid_input"
    );
    assert_eq!(
        code(
            b.delete_message(None, &agent.id, &MessageId::from("message-nope"))
                .await
        ),
        "not_found"
    );
    let (other, _) = agent_with(&b, "eve", &[]).await;
    assert_eq!(
        code(b.delete_message(None, &other.id, &call.id).await),
        "not_found",
        "another agent's message"
    );

    let removed = b.delete_message(None, &agent.id, &call.id).await.unwrap();
    assert_eq!(removed, vec![call.id.clone(), result.id.clone()]);
    let left: Vec<MessageId> = b
        .message_window(&agent.id, &WindowAt::Start, 10)
        .await
        .unwrap()
        .messages
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(left, vec![asked.id.clone()]);
    assert_eq!(
        b.get_block(&blocks[0].id).await.unwrap().value,
        "Name: Di.\nTennis.",
        "memory edits stay"
    );
    assert_eq!(
        passage_texts(&b, &agent.id).await,
        ["Tennis."],
        "passages stay"
    );
    assert_eq!(
        b.delete_message(None, &agent.id, &asked.id).await.unwrap(),
        vec![asked.id.clone()]
    );
}

async fn a_reset_empties_the_window_and_keeps_recall<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, blocks) = agent_with(&b, "fay", &[("human", "Name: Fay.")]).await;
    turn(&b, &b, &agent.id, &blocks[0], "Rowing.").await;
    let ids: Vec<MessageId> = b
        .in_context_messages(&agent.id)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    b.evict_messages(&agent.id, &ids[..1], "Fay said hello.")
        .await
        .unwrap();
    assert!(b.get_agent(&agent.id).await.unwrap().summary.is_some());

    assert_eq!(b.reset_context(None, &agent.id).await.unwrap(), 2);
    assert!(b.in_context_messages(&agent.id).await.unwrap().is_empty());
    assert_eq!(b.get_agent(&agent.id).await.unwrap().summary, None);
    assert_eq!(
        b.count_messages(&agent.id).await.unwrap(),
        3,
        "recall keeps them"
    );
    assert_eq!(b.reset_context(None, &agent.id).await.unwrap(), 0);
    assert_eq!(
        code(b.reset_context(None, &AgentId::from("agent-nobody")).await),
        "not_found"
    );
}

async fn the_last_user_message_is_one_a_person_wrote<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, _) = agent_with(&b, "gus", &[]).await;
    assert_eq!(b.last_user_message(&agent.id).await.unwrap(), None);
    b.append_messages(
        &agent.id,
        &[
            NewMessage::user("first"),
            NewMessage::user("second"),
            NewMessage::assistant("hi", None, vec![]),
            NewMessage::hidden(MessageKind::Heartbeat, "{\"type\":\"heartbeat\"}"),
        ],
    )
    .await
    .unwrap();
    let last = b.last_user_message(&agent.id).await.unwrap().unwrap();
    assert_eq!(last.content, "second");
    assert_eq!(
        code(b.last_user_message(&AgentId::from("agent-nobody")).await),
        "not_found"
    );
}

async fn a_messages_text_changes_in_place<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, blocks) = agent_with(&b, "ivy", &[("human", "Name: Ivy.")]).await;
    turn(&b, &b, &agent.id, &blocks[0], "Golf.").await;
    let all = b
        .message_window(&agent.id, &WindowAt::Start, 10)
        .await
        .unwrap()
        .messages;
    let (asked, call) = (&all[0], &all[1]);

    let changed = b
        .update_message_text(None, &agent.id, &asked.id, "remember Polo.", None, None)
        .await
        .unwrap();
    assert_eq!(
        (changed.id.clone(), changed.seq),
        (asked.id.clone(), asked.seq)
    );
    assert_eq!(changed.content, "remember Polo.");
    assert_eq!(b.get_message(&asked.id).await.unwrap(), changed);
    let found = b
        .search_messages(&agent.id, &engram_store_api::MessageSearch::new("polo", 5))
        .await
        .unwrap();
    assert_eq!(found.len(), 1, "the words search finds the new text");

    let mut calls = call.tool_calls.clone();
    calls[0].arguments = "{\"label\": \"human\"}".into();
    let rewritten = b
        .update_message_text(
            None,
            &agent.id,
            &call.id,
            "",
            Some("thinking again"),
            Some(&calls),
        )
        .await
        .unwrap();
    assert_eq!(rewritten.tool_calls, calls);
    assert_eq!(rewritten.reasoning.as_deref(), Some("thinking again"));
    let kept = b
        .update_message_text(None, &agent.id, &call.id, "said", None, None)
        .await
        .unwrap();
    assert_eq!(
        (kept.reasoning.as_deref(), kept.tool_calls.clone()),
        (Some("thinking again"), calls),
        "what is not given stays"
    );

    let (other, _) = agent_with(&b, "jo", &[]).await;
    assert_eq!(
        code(
            b.update_message_text(None, &other.id, &asked.id, "x", None, None)
                .await
        ),
        "not_found"
    );
    let stale = match b
        .acquire_lease(&agent.id, "replica-a", Duration::from_millis(100))
        .await
        .unwrap()
    {
        LeaseGrant::Granted(l) => l,
        other => panic!("{other:?}"),
    };
    b.release_lease(&stale).await.unwrap();
    b.acquire_lease(&agent.id, "replica-b", Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(
        code(
            b.update_message_text(Some(&stale), &agent.id, &asked.id, "x", None, None)
                .await
        ),
        "lease_lost"
    );
    assert_eq!(
        b.get_message(&asked.id).await.unwrap().content,
        "remember Polo."
    );
}

async fn windows_of_the_conversation_are_cut_the_same_way<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, _) = agent_with(&b, "hal", &[]).await;
    let start = Utc::now() - Span::hours(30);
    let batch: Vec<NewMessage> = (0..25)
        .map(|i| NewMessage {
            created_at: Some(start + Span::hours(i)),
            ..NewMessage::user(format!("m{i}"))
        })
        .collect();
    let all = b.append_messages(&agent.id, &batch).await.unwrap();
    let ids: Vec<MessageId> = all.iter().map(|m| m.id.clone()).collect();
    b.evict_messages(&agent.id, &ids[..8], "the first eight")
        .await
        .unwrap();
    let window = |at: WindowAt, limit: usize| {
        let b = &b;
        let agent = agent.id.clone();
        async move { b.message_window(&agent, &at, limit).await.unwrap() }
    };
    let names = |w: &engram_store_api::MessageWindow| -> Vec<String> {
        w.messages.iter().map(|m| m.content.clone()).collect()
    };
    let range = |a: usize, z: usize| -> Vec<String> { (a..z).map(|i| format!("m{i}")).collect() };

    let latest = window(WindowAt::Latest, 10).await;
    assert_eq!(names(&latest), range(15, 25));
    assert_eq!(
        (latest.has_older, latest.has_newer, latest.anchor.clone()),
        (true, false, None)
    );
    assert!(latest.compactions.is_empty());

    let first = window(WindowAt::Start, 10).await;
    assert_eq!(names(&first), range(0, 10));
    assert_eq!((first.has_older, first.has_newer), (false, true));
    assert_eq!(first.compactions.len(), 1, "the divider after m7");
    assert_eq!(first.compactions[0].seq, all[7].seq);
    assert_eq!(
        (
            first.compactions[0].summary.as_str(),
            first.compactions[0].evicted
        ),
        ("the first eight", 8)
    );

    let before = window(
        WindowAt::Before {
            id: ids[15].clone(),
        },
        10,
    )
    .await;
    assert_eq!(names(&before), range(5, 15));
    assert_eq!((before.has_older, before.has_newer), (true, true));
    let after = window(
        WindowAt::After {
            id: ids[15].clone(),
        },
        20,
    )
    .await;
    assert_eq!(names(&after), range(16, 25));
    assert_eq!((after.has_older, after.has_newer), (true, false));

    let around = window(
        WindowAt::Around {
            id: ids[12].clone(),
        },
        5,
    )
    .await;
    assert_eq!(names(&around), range(10, 15));
    assert_eq!(around.anchor, Some(ids[12].clone()));
    assert_eq!((around.has_older, around.has_newer), (true, true));
    let near_start = window(WindowAt::Around { id: ids[1].clone() }, 6).await;
    assert_eq!(
        names(&near_start),
        range(0, 6),
        "the other side fills the window"
    );
    assert_eq!((near_start.has_older, near_start.has_newer), (false, true));

    let dated = window(
        WindowAt::Date {
            at: start + Span::minutes(20 * 60 + 30),
        },
        3,
    )
    .await;
    assert_eq!(names(&dated), range(20, 23));
    assert_eq!(dated.anchor, Some(ids[21].clone()));
    let future = window(
        WindowAt::Date {
            at: Utc::now() + Span::days(1),
        },
        3,
    )
    .await;
    assert_eq!(names(&future), range(22, 25));
    assert_eq!(future.anchor, Some(ids[24].clone()));
    let one = window(WindowAt::Around { id: ids[3].clone() }, 1).await;
    assert_eq!(names(&one), range(3, 4));

    let unknown = WindowAt::Around {
        id: MessageId::from("message-nope"),
    };
    assert_eq!(
        code(b.message_window(&agent.id, &unknown, 5).await),
        "not_found"
    );
    assert_eq!(
        code(
            b.message_window(&AgentId::from("agent-nobody"), &WindowAt::Latest, 5)
                .await
        ),
        "not_found"
    );
}

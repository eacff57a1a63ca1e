//! A step's commit: everything it wrote stored together or not at all; a tool call whose block
//! write no longer applies answered with a `Failed` result instead of failing the step; a
//! commit under a lease that is no longer current refused; at most one paused tool call.

use super::{agent_with, code};
use crate::harness::{Harness, on_both_backends};
use chrono::Utc;
use engram_core::{
    AgentId, BlockOp, Editor, Error, MessageId, NewMessage, NewPassage, PendingApproval,
    ReplaceCount, Role, RunId, Step, StepId, ToolCall, ToolReturn, ToolStatus,
};
use engram_store_api::{
    ApprovalWrite, BlockStore, BlockWrite, Lease, LeaseGrant, LeaseStore, MessageStore, ModelUsage,
    PassageRange, PassageStore, SeqOrder, StepCommit, StepStore,
};
use std::time::Duration;

on_both_backends!(
    a_step_commits_its_messages_edits_and_passages_together,
    a_write_that_no_longer_applies_fails_its_call_and_the_step_goes_on,
    a_write_with_no_result_to_answer_fails_the_step_and_stores_nothing,
    a_commit_under_a_lease_no_longer_current_stores_nothing,
    a_step_of_messages_alone_is_stored_whole_or_not_at_all,
    a_paused_call_is_stored_once_and_answered_once,
    concurrent_steps_on_a_shared_block_keep_every_edit,
    usage_sums_tokens_per_model_for_the_agent_or_one_run,
);

fn step(agent: &AgentId) -> Step {
    Step {
        id: StepId::new(),
        agent_id: agent.clone(),
        run_id: RunId::new(),
        index: 1,
        model: "openai/gpt-4o-mini".into(),
        prompt_tokens: 1200,
        completion_tokens: 80,
        finish_reason: Some("tool_calls".into()),
        started_at: Utc::now(),
        llm_ms: 900,
        step_ms: 950,
    }
}

fn by(agent: &AgentId, call: &str) -> Editor {
    Editor::Agent {
        agent_id: agent.clone(),
        tool_call_id: Some(call.into()),
    }
}

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: "{}".into(),
    }
}

fn ok_result(id: &str, name: &str) -> NewMessage {
    let envelope = ToolReturn {
        status: ToolStatus::Ok,
        message: "done".into(),
        time: "2026-11-28 08:00:00 PM UTC+0000".into(),
    };
    NewMessage::tool(id, name, envelope.to_json())
}

fn commit(step: Step, messages: Vec<NewMessage>, block_writes: Vec<BlockWrite>) -> StepCommit {
    StepCommit {
        step,
        messages,
        block_writes,
        passages: vec![],
        approval: ApprovalWrite::Keep,
    }
}

fn append(block: &engram_core::Block, editor: Editor, text: &str) -> BlockWrite {
    BlockWrite {
        block_id: block.id.clone(),
        op: BlockOp::Append { text: text.into() },
        editor,
        restate_result: true,
    }
}

fn envelope(m: &engram_core::Message) -> ToolReturn {
    ToolReturn::parse(&m.content).expect("a tool result envelope")
}

async fn a_step_commits_its_messages_edits_and_passages_together<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, blocks) = agent_with(&b, "ana", &[("human", "Name: Ana")]).await;
    let human = &blocks[0];
    let s = step(&agent.id);
    let mut c = commit(
        s.clone(),
        vec![
            NewMessage::assistant("", None, vec![call("c1", "core_memory_append")]),
            ok_result("c1", "core_memory_append"),
        ],
        vec![append(human, by(&agent.id, "c1"), "Likes green tea.")],
    );
    c.passages = vec![NewPassage {
        text: "Ana's cat is called Miso".into(),
        tags: vec!["pets".into()],
        ..Default::default()
    }];
    let done = b.commit_step(None, &c).await.unwrap();

    assert_eq!(done.messages.len(), 2);
    assert!(
        done.messages
            .iter()
            .all(|m| m.run_id.as_ref() == Some(&s.run_id)
                && m.step_id.as_ref() == Some(&s.id)
                && m.in_context)
    );
    assert!(done.messages[0].seq < done.messages[1].seq);
    let stored = b
        .page_messages(&agent.id, None, None, 10, SeqOrder::Asc)
        .await
        .unwrap();
    assert_eq!(
        stored, done.messages,
        "what the commit returns is what is stored"
    );
    // The memory tool's result restates the block as committed.
    let result = envelope(&done.messages[1]);
    assert_eq!(result.status, ToolStatus::Ok);
    assert!(
        result.message.contains("Name: Ana\nLikes green tea."),
        "{}",
        result.message
    );

    assert_eq!(done.blocks.len(), 1);
    assert_eq!(done.blocks[0].tool_call_id.as_deref(), Some("c1"));
    let now = b.get_block(&human.id).await.unwrap();
    assert_eq!(done.blocks[0].block, now);
    assert_eq!(
        (now.value.as_str(), now.version),
        ("Name: Ana\nLikes green tea.", human.version + 1)
    );
    let history = b.block_history(&human.id, 10).await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(
        history[0].step_id.as_ref(),
        Some(&s.id),
        "the edit names its step"
    );

    assert_eq!(done.passages.len(), 1);
    assert_eq!(
        b.get_passage(&done.passages[0].id).await.unwrap(),
        done.passages[0]
    );

    let steps = b.list_steps(&agent.id, None).await.unwrap();
    assert_eq!(steps.len(), 1);
    assert_eq!(
        (
            &steps[0].id,
            steps[0].prompt_tokens,
            steps[0].llm_ms,
            steps[0].index
        ),
        (&s.id, 1200, 900, 1)
    );
    assert_eq!(
        steps[0].started_at.timestamp_micros(),
        s.started_at.timestamp_micros(),
        "stored to the microsecond"
    );
    assert!(
        b.list_steps(&agent.id, Some(&RunId::new()))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        b.list_steps(&agent.id, Some(&s.run_id)).await.unwrap(),
        steps
    );

    // The same step again: a conflict, and nothing more is stored.
    assert_eq!(code(b.commit_step(None, &c).await), "conflict");
    assert_eq!(b.count_messages(&agent.id).await.unwrap(), 2);
    assert_eq!(b.count_passages(&agent.id).await.unwrap(), 1);
    assert_eq!(b.get_block(&human.id).await.unwrap(), now);
}

async fn a_write_that_no_longer_applies_fails_its_call_and_the_step_goes_on<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, blocks) = agent_with(&b, "ana", &[("human", "Name: Ana")]).await;
    let human = &blocks[0];
    // The person renamed Ana while the step ran; the model still replaces the old text.
    b.apply_block_op(
        &human.id,
        &BlockOp::Replace {
            old: "Ana".into(),
            new: "Anna".into(),
            count: ReplaceCount::Once,
        },
        &Editor::User,
    )
    .await
    .unwrap();
    let done = b
        .commit_step(
            None,
            &commit(
                step(&agent.id),
                vec![
                    NewMessage::assistant(
                        "",
                        None,
                        vec![
                            call("c1", "core_memory_replace"),
                            call("c2", "core_memory_append"),
                        ],
                    ),
                    ok_result("c1", "core_memory_replace"),
                    ok_result("c2", "core_memory_append"),
                ],
                vec![
                    // c1's first write applies, its second does not: both are undone.
                    append(human, by(&agent.id, "c1"), "Works nights."),
                    BlockWrite {
                        block_id: human.id.clone(),
                        op: BlockOp::Replace {
                            old: "Name: Ana\n".into(),
                            new: "Name: Ana B.\n".into(),
                            count: ReplaceCount::Once,
                        },
                        editor: by(&agent.id, "c1"),
                        restate_result: true,
                    },
                    append(human, by(&agent.id, "c2"), "Likes green tea."),
                ],
            ),
        )
        .await
        .unwrap();
    assert_eq!(done.refused, vec!["c1".to_owned()]);
    let now = b.get_block(&human.id).await.unwrap();
    assert_eq!(
        now.value, "Name: Anna\nLikes green tea.",
        "c1 left nothing, c2 applied"
    );
    let failed = envelope(&done.messages[1]);
    assert_eq!(failed.status, ToolStatus::Failed);
    assert!(
        failed.message.contains("Name: Anna"),
        "the refusal shows the block as stored: {}",
        failed.message
    );
    assert_eq!(envelope(&done.messages[2]).status, ToolStatus::Ok);
    let stored = b.get_message(&done.messages[1].id).await.unwrap();
    assert_eq!(
        stored.content, done.messages[1].content,
        "the Failed result is what is stored"
    );
    assert_eq!(done.blocks.len(), 1);
    assert_eq!(done.blocks[0].tool_call_id.as_deref(), Some("c2"));
    // The person's edit and c2's: two history rows, none of c1's.
    assert_eq!(b.block_history(&human.id, 10).await.unwrap().len(), 2);
}

async fn a_write_with_no_result_to_answer_fails_the_step_and_stores_nothing<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, blocks) = agent_with(&b, "ana", &[("human", "Name: Ana")]).await;
    let human = &blocks[0];
    let s = step(&agent.id);
    let c = commit(
        s,
        vec![NewMessage::user("hello")],
        vec![
            append(human, Editor::User, "Works nights."),
            BlockWrite {
                block_id: human.id.clone(),
                op: BlockOp::Replace {
                    old: "nowhere to be found".into(),
                    new: "x".into(),
                    count: ReplaceCount::Once,
                },
                editor: Editor::User,
                restate_result: false,
            },
        ],
    );
    assert_eq!(code(b.commit_step(None, &c).await), "invalid_input");
    let mut gone = commit(
        step(&agent.id),
        vec![NewMessage::user("hello")],
        vec![append(human, Editor::User, "x")],
    );
    gone.block_writes[0].block_id = engram_core::BlockId::new();
    assert_eq!(code(b.commit_step(None, &gone).await), "not_found");
    let mut empty = commit(step(&agent.id), vec![NewMessage::user("hello")], vec![]);
    empty.passages = vec![NewPassage {
        text: "  ".into(),
        ..Default::default()
    }];
    assert_eq!(code(b.commit_step(None, &empty).await), "invalid_input");

    assert_eq!(b.count_messages(&agent.id).await.unwrap(), 0);
    assert!(b.list_steps(&agent.id, None).await.unwrap().is_empty());
    assert_eq!(b.get_block(&human.id).await.unwrap(), *human);
    assert!(b.block_history(&human.id, 10).await.unwrap().is_empty());
    assert!(
        b.list_passages(&agent.id, &PassageRange::default())
            .await
            .unwrap()
            .is_empty()
    );
    let unknown = commit(step(&AgentId::new()), vec![], vec![]);
    assert_eq!(code(b.commit_step(None, &unknown).await), "not_found");
}

fn granted(g: LeaseGrant) -> Lease {
    match g {
        LeaseGrant::Granted(lease) => lease,
        LeaseGrant::Busy { holder, .. } => panic!("expected the lease, {holder} holds it"),
    }
}

/// A step that only adds messages (no block write, passage or paused call): most chat steps,
/// which a database server commits in one round trip. Each way it can fail stores nothing.
async fn a_step_of_messages_alone_is_stored_whole_or_not_at_all<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, _) = agent_with(&b, "ana", &[]).await;
    let reply = |text: &str| NewMessage::assistant(text, None, vec![]);
    let lease = granted(
        b.acquire_lease(&agent.id, "replica-a", Duration::from_millis(150))
            .await
            .unwrap(),
    );
    let first = commit(step(&agent.id), vec![reply("one"), reply("two")], vec![]);
    let done = b.commit_step(Some(&lease), &first).await.unwrap();
    let seqs: Vec<i64> = done.messages.iter().map(|m| m.seq).collect();
    assert!(seqs[0] > 0 && seqs[1] > seqs[0], "in order: {seqs:?}");
    let stored = b
        .page_messages(&agent.id, None, None, 10, SeqOrder::Asc)
        .await
        .unwrap();
    assert_eq!(stored, done.messages, "what it returns is what it stored");

    // The same step id again, with new messages: a conflict, and they are not kept.
    let again = commit(first.step.clone(), vec![reply("three")], vec![]);
    assert_eq!(code(b.commit_step(Some(&lease), &again).await), "conflict");
    // A message id already taken, after a fresh one: neither, nor the step.
    let fresh = MessageId::new();
    let clash = commit(
        step(&agent.id),
        vec![
            NewMessage {
                id: Some(fresh.clone()),
                ..reply("four")
            },
            NewMessage {
                id: Some(done.messages[0].id.clone()),
                ..reply("five")
            },
        ],
        vec![],
    );
    assert_eq!(code(b.commit_step(Some(&lease), &clash).await), "conflict");
    assert_eq!(code(b.get_message(&fresh).await), "not_found");
    // The lease ran out and another replica took the agent: refused.
    tokio::time::sleep(Duration::from_millis(350)).await;
    let next = granted(
        b.acquire_lease(&agent.id, "replica-b", Duration::from_secs(10))
            .await
            .unwrap(),
    );
    let late = commit(step(&agent.id), vec![reply("six")], vec![]);
    match b.commit_step(Some(&lease), &late).await {
        Err(Error::LeaseLost { token, .. }) => assert_eq!(token, lease.token),
        other => panic!("the stale replica's step was not refused: {other:?}"),
    }
    assert_eq!(b.count_messages(&agent.id).await.unwrap(), 2);
    assert_eq!(b.list_steps(&agent.id, None).await.unwrap().len(), 1);

    // Under the current lease it goes on after the first step's messages.
    let on = commit(step(&agent.id), vec![reply("seven")], vec![]);
    let more = b.commit_step(Some(&next), &on).await.unwrap();
    assert!(more.messages[0].seq > seqs[1]);
    // An agent that is not there: nothing is stored anywhere.
    let lost = MessageId::new();
    let ghost = commit(
        step(&AgentId::new()),
        vec![NewMessage {
            id: Some(lost.clone()),
            ..reply("eight")
        }],
        vec![],
    );
    assert_eq!(code(b.commit_step(None, &ghost).await), "not_found");
    assert_eq!(code(b.get_message(&lost).await), "not_found");
}

async fn a_commit_under_a_lease_no_longer_current_stores_nothing<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, blocks) = agent_with(&b, "ana", &[("human", "Name: Ana")]).await;
    let human = &blocks[0];
    let step_of = |call: &str| {
        commit(
            step(&agent.id),
            vec![
                NewMessage::assistant("", None, vec![self::call(call, "core_memory_append")]),
                ok_result(call, "core_memory_append"),
            ],
            vec![append(human, by(&agent.id, call), call)],
        )
    };
    let paused = granted(
        b.acquire_lease(&agent.id, "replica-a", Duration::from_millis(150))
            .await
            .unwrap(),
    );
    b.commit_step(Some(&paused), &step_of("c1")).await.unwrap();
    // Replica A pauses past its lease; replica B takes the agent over.
    tokio::time::sleep(Duration::from_millis(350)).await;
    let next = granted(
        b.acquire_lease(&agent.id, "replica-b", Duration::from_secs(10))
            .await
            .unwrap(),
    );
    assert!(next.token > paused.token);
    match b.commit_step(Some(&paused), &step_of("c2")).await {
        Err(Error::LeaseLost { token, .. }) => assert_eq!(token, paused.token),
        other => panic!("the stale replica's step was not refused: {other:?}"),
    }
    assert_eq!(
        b.count_messages(&agent.id).await.unwrap(),
        2,
        "only c1's step"
    );
    assert_eq!(b.get_block(&human.id).await.unwrap().value, "Name: Ana\nc1");
    assert_eq!(b.list_steps(&agent.id, None).await.unwrap().len(), 1);

    b.commit_step(Some(&next), &step_of("c3")).await.unwrap();
    assert_eq!(
        b.get_block(&human.id).await.unwrap().value,
        "Name: Ana\nc1\nc3"
    );
    // A lease is the agent's own.
    let (other, _) = agent_with(&b, "ben", &[]).await;
    let wrong = commit(step(&other.id), vec![NewMessage::user("hi")], vec![]);
    assert_eq!(
        code(b.commit_step(Some(&next), &wrong).await),
        "invalid_input"
    );
    assert_eq!(b.count_messages(&other.id).await.unwrap(), 0);
}

async fn a_paused_call_is_stored_once_and_answered_once<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, _) = agent_with(&b, "ana", &[]).await;
    assert_eq!(b.pending_approval(&agent.id).await.unwrap(), None);
    let s = step(&agent.id);
    let asking = MessageId::new();
    let mut assistant = NewMessage::assistant("", None, vec![call("c1", "send_email")]);
    assistant.id = Some(asking.clone());
    let pending = PendingApproval {
        agent_id: agent.id.clone(),
        run_id: s.run_id.clone(),
        step_id: s.id.clone(),
        message_id: asking.clone(),
        tool_call: call("c1", "send_email"),
        requested_at: Utc::now(),
        server: None,
    };
    let mut c = commit(s, vec![assistant], vec![]);
    c.approval = ApprovalWrite::Request(pending.clone());
    b.commit_step(None, &c).await.unwrap();
    let stored = b
        .pending_approval(&agent.id)
        .await
        .unwrap()
        .expect("pending");
    assert_eq!(
        (&stored.message_id, &stored.tool_call, &stored.step_id),
        (&asking, &pending.tool_call, &pending.step_id)
    );
    assert_eq!(
        stored.requested_at.timestamp_micros(),
        pending.requested_at.timestamp_micros()
    );

    // A second pause while one waits: refused, nothing of that step stored.
    let mut again = commit(step(&agent.id), vec![NewMessage::user("more")], vec![]);
    again.approval = ApprovalWrite::Request(PendingApproval {
        tool_call: call("c9", "delete_files"),
        ..pending.clone()
    });
    assert_eq!(code(b.commit_step(None, &again).await), "conflict");
    assert_eq!(b.count_messages(&agent.id).await.unwrap(), 1);

    // Two windows answer the same call: the first wins, the second finds nothing pending.
    let answer = |text: &str| {
        let mut c = commit(step(&agent.id), vec![ok_result("c1", text)], vec![]);
        c.approval = ApprovalWrite::Resolve(None);
        c
    };
    b.commit_step(None, &answer("send_email")).await.unwrap();
    assert_eq!(b.pending_approval(&agent.id).await.unwrap(), None);
    assert_eq!(
        code(b.commit_step(None, &answer("send_email")).await),
        "not_found"
    );
    let roles: Vec<Role> = b
        .page_messages(&agent.id, None, None, 10, SeqOrder::Asc)
        .await
        .unwrap()
        .iter()
        .map(|m| m.role)
        .collect();
    assert_eq!(roles, vec![Role::Assistant, Role::Tool], "one answer only");
}

async fn concurrent_steps_on_a_shared_block_keep_every_edit<H: Harness>(h: H) {
    let b = h.backend();
    let (ana, blocks) = agent_with(&b, "ana", &[("team", "Team notes:")]).await;
    let team = blocks[0].clone();
    let (ben, _) = agent_with(&b, "ben", &[]).await;
    b.attach_block(&ben.id, &team.id).await.unwrap();
    const EACH: usize = 8;
    let mut tasks = Vec::new();
    for (agent, who) in [(ana.id.clone(), "ana"), (ben.id.clone(), "ben")] {
        for i in 0..EACH {
            let b = b.clone();
            let team = team.clone();
            let agent = agent.clone();
            tasks.push(tokio::spawn(async move {
                let id = format!("{who}-{i}");
                let c = commit(
                    step(&agent),
                    vec![
                        NewMessage::assistant("", None, vec![call(&id, "core_memory_append")]),
                        ok_result(&id, "core_memory_append"),
                    ],
                    vec![append(&team, by(&agent, &id), &format!("note {id}"))],
                );
                b.commit_step(None, &c).await.unwrap()
            }));
        }
    }
    for t in tasks {
        let done = t.await.unwrap();
        assert!(done.refused.is_empty());
    }
    let now = b.get_block(&team.id).await.unwrap();
    for who in ["ana", "ben"] {
        for i in 0..EACH {
            assert!(
                now.value.contains(&format!("note {who}-{i}")),
                "{who}-{i} lost"
            );
        }
    }
    assert_eq!(now.version, team.version + 2 * EACH as u64);
    let history = b.block_history(&team.id, 100).await.unwrap();
    assert_eq!(history.len(), 2 * EACH);
    for agent in [&ana.id, &ben.id] {
        let msgs = b
            .page_messages(agent, None, None, 100, SeqOrder::Asc)
            .await
            .unwrap();
        assert_eq!(msgs.len(), 2 * EACH);
        assert!(msgs.windows(2).all(|w| w[0].seq < w[1].seq));
        // Each step's two messages are consecutive: no interleaving within an agent.
        for pair in msgs.chunks(2) {
            assert_eq!(pair[0].step_id, pair[1].step_id);
        }
    }
}

async fn usage_sums_tokens_per_model_for_the_agent_or_one_run<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, _) = agent_with(&b, "spender", &[]).await;
    let (other, _) = agent_with(&b, "bystander", &[]).await;
    assert!(b.usage_by_model(&agent.id, None).await.unwrap().is_empty());
    let first = step(&agent.id);
    let mut second = step(&agent.id);
    second.run_id = first.run_id.clone();
    second.index = 2;
    second.model = "anthropic/claude-haiku".into();
    second.prompt_tokens = 3_000_000_000; // past u32: sums stay exact
    second.completion_tokens = 7;
    let mut later = step(&agent.id);
    later.prompt_tokens = 100;
    later.completion_tokens = 20;
    let mut theirs = step(&other.id);
    theirs.prompt_tokens = 55;
    for s in [first.clone(), second, later.clone(), theirs] {
        b.commit_step(None, &commit(s, vec![], vec![]))
            .await
            .unwrap();
    }
    let usage = |model: &str, prompt, completion, steps| ModelUsage {
        model: model.into(),
        prompt_tokens: prompt,
        completion_tokens: completion,
        steps,
    };
    assert_eq!(
        b.usage_by_model(&agent.id, None).await.unwrap(),
        [
            usage("anthropic/claude-haiku", 3_000_000_000, 7, 1),
            usage("openai/gpt-4o-mini", 1300, 100, 2),
        ]
    );
    assert_eq!(
        b.usage_by_model(&agent.id, Some(&later.run_id))
            .await
            .unwrap(),
        [usage("openai/gpt-4o-mini", 100, 20, 1)]
    );
    assert!(
        b.usage_by_model(&agent.id, Some(&RunId::new()))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        code(b.usage_by_model(&AgentId::new(), None).await),
        "not_found"
    );
}

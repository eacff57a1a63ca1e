//! Context repair after a crash: every in-context tool call gets exactly one result, placed
//! right after the call's answers; stray results leave the context but stay in recall; the
//! call a person must decide is left alone; repair is idempotent and renumbers when the `seq`
//! gap runs out.

use super::{agent_with, code};
use crate::harness::{Harness, on_both_backends};
use chrono::{DateTime, Utc};
use engram_core::{
    AgentId, MessageId, NewMessage, PendingApproval, Role, RunId, Step, StepId, ToolCall,
    ToolReturn, ToolStatus,
};
use engram_store_api::{
    ApprovalWrite, ContextStore, MessageStore, SeqOrder, StepCommit, StepStore,
};

on_both_backends!(
    orphaned_calls_are_answered_in_place_and_strays_leave_the_context,
    many_orphans_renumber_when_the_gap_runs_out,
    a_call_waiting_for_a_person_is_not_repaired_until_its_approval_is_dropped,
);

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: "{}".into(),
    }
}

fn at(rfc3339: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(rfc3339).unwrap().into()
}

/// `(role, tool_call_id)` of each message in the agent's window, checking `seq` increases.
async fn shape(b: &impl ContextStore, agent: &AgentId) -> Vec<(Role, Option<String>)> {
    let window = b.in_context_messages(agent).await.unwrap();
    assert!(window.windows(2).all(|w| w[0].seq < w[1].seq));
    window
        .iter()
        .map(|m| (m.role, m.tool_call_id.clone()))
        .collect()
}

fn tool(id: &str) -> (Role, Option<String>) {
    (Role::Tool, Some(id.into()))
}

async fn orphaned_calls_are_answered_in_place_and_strays_leave_the_context<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "ana", &[]).await;
    let (run, step) = (RunId::new(), StepId::new());
    let calls = vec![
        call("c1", "core_memory_append"),
        call("c2", "archival_memory_insert"),
    ];
    b.append_messages(
        &a.id,
        &[
            NewMessage::user("remember two things"),
            NewMessage::assistant("", None, calls).in_step(&run, &step),
            NewMessage::tool(
                "c1",
                "core_memory_append",
                ToolReturn::ok("done", at("2024-01-01T00:00:00Z")).to_json(),
            ),
            NewMessage::tool("ghost", "send_message", "{}"),
            NewMessage::user("hello again"),
        ],
    )
    .await
    .unwrap();
    let now = at("2024-06-01T12:00:00.123456Z");
    assert!(b.needs_repair(&a.id).await.unwrap());
    assert_eq!(b.repair_tool_calls(&a.id, now).await.unwrap(), 1);

    assert_eq!(
        shape(&b, &a.id).await,
        [
            (Role::User, None),
            (Role::Assistant, None),
            tool("c1"),
            tool("c2"),
            (Role::User, None),
        ],
        "the stray result left the context and the repair sits right after c1's result"
    );
    let repaired = b.in_context_messages(&a.id).await.unwrap().remove(3);
    assert_eq!(
        repaired.tool_name.as_deref(),
        Some("archival_memory_insert")
    );
    assert_eq!(
        (repaired.run_id.as_ref(), repaired.step_id.as_ref()),
        (Some(&run), Some(&step))
    );
    assert_eq!(repaired.created_at, now);
    let envelope = ToolReturn::parse(&repaired.content).unwrap();
    assert_eq!(envelope.status, ToolStatus::Failed);
    assert!(
        envelope
            .message
            .starts_with("The tool call was interrupted")
    );
    assert_eq!(b.get_message(&repaired.id).await.unwrap(), repaired);
    let all = b
        .page_messages(&a.id, None, None, 100, SeqOrder::Asc)
        .await
        .unwrap();
    assert_eq!(all.len(), 6, "the stray stays in recall");
    assert!(
        all.iter()
            .any(|m| m.tool_call_id.as_deref() == Some("ghost") && !m.in_context)
    );

    assert_eq!(
        b.repair_tool_calls(&a.id, Utc::now()).await.unwrap(),
        0,
        "repair is idempotent"
    );
    assert_eq!(
        code(b.repair_tool_calls(&AgentId::new(), now).await),
        "not_found"
    );
}

async fn many_orphans_renumber_when_the_gap_runs_out<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "ana", &[]).await;
    let calls: Vec<_> = (0..14).map(|i| call(&format!("call_{i}"), "t")).collect();
    // Two turns reusing the same call ids (some local servers do): each turn is repaired alone.
    let turn = |text: &str| {
        vec![
            NewMessage::user(text),
            NewMessage::assistant("", None, calls.clone()),
        ]
    };
    let mut msgs = turn("first");
    msgs.extend(turn("second"));
    msgs.push(NewMessage::user("after"));
    b.append_messages(&a.id, &msgs).await.unwrap();
    assert_eq!(b.repair_tool_calls(&a.id, Utc::now()).await.unwrap(), 28);

    let window = b.in_context_messages(&a.id).await.unwrap();
    assert_eq!(window.len(), 5 + 28);
    assert!(window.windows(2).all(|w| w[0].seq < w[1].seq));
    let order: Vec<String> = window
        .iter()
        .map(|m| m.tool_call_id.clone().unwrap_or_else(|| m.content.clone()))
        .collect();
    let mut expected = Vec::new();
    for turn in ["first", "second"] {
        expected.push(turn.to_owned());
        expected.push(String::new());
        expected.extend((0..14).map(|i| format!("call_{i}")));
    }
    expected.push("after".into());
    assert_eq!(order, expected);
    assert_eq!(b.repair_tool_calls(&a.id, Utc::now()).await.unwrap(), 0);
    // Appends go on after the renumbered history.
    let next = b
        .append_messages(&a.id, &[NewMessage::user("later")])
        .await
        .unwrap();
    assert!(next[0].seq > window.last().unwrap().seq);
}

async fn a_call_waiting_for_a_person_is_not_repaired_until_its_approval_is_dropped<H: Harness>(
    h: H,
) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "ana", &[]).await;
    let step = Step {
        id: StepId::new(),
        agent_id: a.id.clone(),
        run_id: RunId::new(),
        index: 1,
        model: "openai/gpt-4o-mini".into(),
        prompt_tokens: 100,
        completion_tokens: 10,
        finish_reason: Some("tool_calls".into()),
        started_at: Utc::now(),
        llm_ms: 10,
        step_ms: 12,
    };
    let asking = MessageId::new();
    let mut assistant = NewMessage::assistant("", None, vec![call("c1", "send_email")]);
    assistant.id = Some(asking.clone());
    let pending = PendingApproval {
        agent_id: a.id.clone(),
        run_id: step.run_id.clone(),
        step_id: step.id.clone(),
        message_id: asking,
        tool_call: call("c1", "send_email"),
        requested_at: Utc::now(),
        server: None,
    };
    b.commit_step(
        None,
        &StepCommit {
            step,
            messages: vec![assistant],
            block_writes: vec![],
            passages: vec![],
            approval: ApprovalWrite::Request(pending),
        },
    )
    .await
    .unwrap();
    assert_eq!(b.repair_tool_calls(&a.id, Utc::now()).await.unwrap(), 0);
    assert_eq!(shape(&b, &a.id).await, [(Role::Assistant, None)]);

    // The person never decides and the approval is dropped: the next repair answers the call.
    assert!(b.drop_pending_approval(&a.id).await.unwrap());
    assert!(!b.drop_pending_approval(&a.id).await.unwrap());
    assert_eq!(b.pending_approval(&a.id).await.unwrap(), None);
    assert!(b.needs_repair(&a.id).await.unwrap(), "c1 is open now");
    assert_eq!(b.repair_tool_calls(&a.id, Utc::now()).await.unwrap(), 1);
    assert_eq!(
        shape(&b, &a.id).await,
        [(Role::Assistant, None), tool("c1")]
    );
    assert_eq!(
        code(b.drop_pending_approval(&AgentId::new()).await),
        "not_found"
    );
}

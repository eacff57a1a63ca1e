//! Tool calls a person approves (Letta's `requires_approval` rule): the run pauses
//! with the call stored unanswered, approve runs it and the loop goes on, deny answers it with
//! a `Failed` result carrying the reason, a paused run survives the process, and parallel
//! calls are answered in the model's order.

use engram_core::{
    AgentId, ApprovalDecision, LoopStyle, Role, RunEvent, StopReason, ToolReturn, ToolRule,
    ToolStatus,
};
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_suite::{Home, RunOutcome, last_tool_results};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn append(content: &str) -> Call {
    Call::new(
        "core_memory_append",
        json!({"label": "human", "content": content}),
    )
}

/// An agent whose `core_memory_append` asks before running.
async fn guarded(home: &Home, mock: &MockLlm) -> AgentId {
    let agent = home.agent(mock, LoopStyle::ToolLoop).await;
    home.engram
        .tools()
        .set_approval(&agent, "core_memory_append", true)
        .await
        .unwrap();
    agent
}

/// A guarded agent whose message `say` made the model ask for `calls`: the run paused on the
/// first call needing approval.
struct Paused {
    mock: MockLlm,
    home: Home,
    agent: AgentId,
    /// The paused run.
    out: RunOutcome,
    /// Its events.
    events: Vec<RunEvent>,
}

async fn paused_on(calls: Vec<Call>, say: &str) -> Paused {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = guarded(&home, &mock).await;
    mock.push(Reply::ToolCalls(calls));
    let (out, events) = home.chat(&agent, say).await;
    assert_eq!(out.stop_reason, StopReason::RequiresApproval);
    Paused {
        mock,
        home,
        agent,
        out,
        events,
    }
}

/// The mock saw only well-formed requests.
fn assert_clean(mock: &MockLlm) {
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
}

async fn decide(
    home: &Home,
    agent: &AgentId,
    approve: bool,
    reason: Option<&str>,
) -> (RunOutcome, Vec<RunEvent>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let decision = ApprovalDecision {
        tool_call_id: None,
        approve,
        reason: reason.map(str::to_owned),
    };
    let out = home
        .engram
        .runs()
        .resolve_approval(agent, decision, &tx, CancellationToken::new())
        .await
        .expect("decision accepted");
    drop(tx);
    let mut events = Vec::new();
    while let Some(e) = rx.recv().await {
        events.push(e);
    }
    (out, events)
}

#[tokio::test]
async fn the_run_pauses_and_approving_runs_the_tool_and_goes_on() {
    let Paused {
        mock,
        home,
        agent,
        out,
        events,
    } = paused_on(vec![append("Name: Bob")], "my name is Bob").await;
    mock.push(Reply::Text("Noted, Bob.".into()));
    assert_eq!(home.block(&agent, "human"), "", "nothing ran yet");
    let pending = home
        .engram
        .runs()
        .pending_approval(&agent)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(pending.tool_call.name, "core_memory_append");
    assert!(pending.tool_call.arguments.contains("Name: Bob"));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, RunEvent::ApprovalRequested { approval } if *approval == pending))
    );
    // The call is stored, unanswered, in the assistant message the approval names.
    let msg = home
        .engram
        .store()
        .messages()
        .get(&pending.message_id)
        .unwrap();
    assert_eq!(msg.tool_calls[0].id, pending.tool_call.id);
    assert!(
        !out.messages.iter().any(|m| m.role == Role::Tool),
        "no result was written for the waiting call"
    );
    assert_eq!(mock.chat_requests().len(), 1);

    // A new message meanwhile is refused, naming the call; nothing is written.
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let err = home
        .engram
        .runs()
        .send_message(&agent, "hello?", &tx, CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(engram_core::ErrorBody::from(&err).code, "conflict");
    assert!(err.to_string().contains("core_memory_append"), "{err}");
    assert_eq!(
        home.engram
            .store()
            .messages()
            .in_context(&agent)
            .unwrap()
            .len(),
        msg_count(&home, &agent)
    );

    let (out, events) = decide(&home, &agent, true, None).await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    assert_eq!(out.run_id, pending.run_id, "the paused run goes on");
    assert_eq!(home.block(&agent, "human"), "Name: Bob");
    assert!(
        home.engram
            .runs()
            .pending_approval(&agent)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, RunEvent::MemoryChanged { .. }))
    );
    let results = last_tool_results(&mock);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["status"], "OK");
    assert_eq!(out.messages.last().unwrap().content, "Noted, Bob.");
    assert_clean(&mock);
}

fn msg_count(home: &Home, agent: &AgentId) -> usize {
    home.engram
        .store()
        .messages()
        .in_context(agent)
        .unwrap()
        .len()
}

#[tokio::test]
async fn denying_answers_the_call_with_the_reason_and_the_loop_goes_on() {
    let Paused {
        mock, home, agent, ..
    } = paused_on(vec![append("Likes: spam")], "remember I like spam").await;
    mock.push(Reply::Text("Understood, I will not save that.".into()));

    let (out, events) = decide(&home, &agent, false, Some("that is a joke, not a fact")).await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    assert_eq!(home.block(&agent, "human"), "", "a denied call never runs");
    // The model read the reason in the call's result, and the reply came after it.
    let results = last_tool_results(&mock);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["status"], "Failed");
    let text = results[0]["message"].as_str().unwrap();
    assert!(
        text.contains("denied") && text.contains("that is a joke, not a fact"),
        "{text}"
    );
    assert!(events.iter().any(|e| matches!(
        e,
        RunEvent::ToolResult {
            status: ToolStatus::Failed,
            ..
        }
    )));
    assert_eq!(
        out.messages.last().unwrap().content,
        "Understood, I will not save that."
    );
    assert_clean(&mock);
}

#[tokio::test]
async fn a_paused_run_survives_reopening_and_repair_leaves_it_alone() {
    let Paused {
        mock, home, agent, ..
    } = paused_on(vec![append("Name: Ann")], "I am Ann").await;
    let pending = home
        .engram
        .runs()
        .pending_approval(&agent)
        .await
        .unwrap()
        .unwrap();
    let Home { dir, engram } = home;
    drop(engram);

    // Reopened: the call still waits, and repair (run at the start of every run) does not
    // answer it as interrupted.
    let engram = engram_suite::open(
        dir.path(),
        std::sync::Arc::new(engram_secrets::MemoryStore::default()),
    );
    let home = Home { dir, engram };
    assert_eq!(
        home.engram.runs().pending_approval(&agent).await.unwrap(),
        Some(pending.clone())
    );
    let repaired = home
        .engram
        .store()
        .messages()
        .repair_orphaned_tool_calls(&agent, chrono::Utc::now())
        .unwrap();
    assert_eq!(repaired, 0);
    mock.push(Reply::Text("Hello Ann.".into()));
    let (out, _) = decide(&home, &agent, true, None).await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    assert_eq!(home.block(&agent, "human"), "Name: Ann");
    assert_clean(&mock);
}

#[tokio::test]
async fn parallel_calls_are_answered_in_the_models_order() {
    // search runs at once; the append waits; the insert after it waits with it.
    let calls = vec![
        Call::new("conversation_search", json!({"query": "tea"})),
        append("Likes: tea"),
        Call::new(
            "archival_memory_insert",
            json!({"content": "Ann likes tea"}),
        ),
    ];
    let Paused {
        mock,
        home,
        agent,
        out,
        ..
    } = paused_on(calls, "I like tea").await;
    mock.push(Reply::Text("Saved.".into()));
    let tools: Vec<_> = out
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .collect();
    assert_eq!(tools.len(), 1, "only the call before the waiting one ran");
    assert_eq!(tools[0].tool_name.as_deref(), Some("conversation_search"));

    let (out, _) = decide(&home, &agent, true, None).await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    // Every call got exactly one answer, stored in the order the model made the calls.
    let ctx = home.engram.store().messages().in_context(&agent).unwrap();
    let caller = ctx.iter().find(|m| m.tool_calls.len() == 3).unwrap();
    let answers: Vec<&str> = ctx
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.tool_call_id.as_deref().unwrap())
        .collect();
    let calls: Vec<&str> = caller.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(answers, calls);
    for m in ctx.iter().filter(|m| m.role == Role::Tool) {
        assert_eq!(
            ToolReturn::parse(&m.content).unwrap().status,
            ToolStatus::Ok,
            "{}",
            m.content
        );
    }
    assert_eq!(home.block(&agent, "human"), "Likes: tea");
    assert_clean(&mock);
}

#[tokio::test]
async fn two_calls_needing_approval_are_asked_one_after_the_other() {
    let Paused {
        mock, home, agent, ..
    } = paused_on(vec![append("A"), append("B")], "save A and B").await;
    mock.push(Reply::Text("Done.".into()));
    let first = home
        .engram
        .runs()
        .pending_approval(&agent)
        .await
        .unwrap()
        .unwrap();
    // Deciding another call than the waiting one is refused.
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let err = home
        .engram
        .runs()
        .resolve_approval(
            &agent,
            ApprovalDecision {
                tool_call_id: Some("call_elsewhere".into()),
                approve: true,
                reason: None,
            },
            &tx,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(engram_core::ErrorBody::from(&err).code, "invalid_input");

    let (out, events) = decide(&home, &agent, false, Some("not A")).await;
    assert_eq!(out.stop_reason, StopReason::RequiresApproval);
    let second = home
        .engram
        .runs()
        .pending_approval(&agent)
        .await
        .unwrap()
        .unwrap();
    assert_ne!(second.tool_call.id, first.tool_call.id);
    assert_eq!(second.message_id, first.message_id);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, RunEvent::ApprovalRequested { .. }))
    );
    let (out, _) = decide(&home, &agent, true, None).await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    assert_eq!(home.block(&agent, "human"), "B");
    let results = last_tool_results(&mock);
    assert_eq!(results[0]["status"], "Failed");
    assert_eq!(results[1]["status"], "OK");
    assert_eq!(
        mock.chat_requests().len(),
        2,
        "no model call while calls waited"
    );
    assert_clean(&mock);
}

#[tokio::test]
async fn the_rule_is_set_per_agent_and_tool_and_needs_the_tool_attached() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    let other = home.agent(&mock, LoopStyle::ToolLoop).await;
    let a = home
        .engram
        .tools()
        .set_approval(&agent, "memory_insert", true)
        .await
        .unwrap();
    assert!(ToolRule::requires_approval(&a.tool_rules, "memory_insert"));
    assert!(!ToolRule::requires_approval(
        &home
            .engram
            .agents()
            .get(&other)
            .await
            .unwrap()
            .agent
            .tool_rules,
        "memory_insert"
    ));
    // Setting it twice keeps one rule; off removes it.
    let a = home
        .engram
        .tools()
        .set_approval(&agent, "memory_insert", true)
        .await
        .unwrap();
    assert_eq!(a.tool_rules.len(), 1);
    let a = home
        .engram
        .tools()
        .set_approval(&agent, "memory_insert", false)
        .await
        .unwrap();
    assert!(a.tool_rules.is_empty());
    let err = home
        .engram
        .tools()
        .set_approval(&agent, "send_message", true)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not attached"), "{err}");

    // Without the rule, the same call runs at once.
    mock.push(Reply::ToolCalls(vec![append("x")]));
    mock.push(Reply::Text("ok".into()));
    let (out, _) = home.chat(&other, "save x").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
}

#[tokio::test]
async fn the_rule_round_trips_through_an_agent_file() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = guarded(&home, &mock).await;
    let bytes = home
        .engram
        .agent_files()
        .export(std::slice::from_ref(&agent))
        .await
        .unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains(r#""requires_approval""#), "{text}");
    let report = home
        .engram
        .agent_files()
        .import_named(&bytes, "sam.af")
        .await
        .unwrap();
    let copy = &report.agents[0];
    assert_ne!(copy, &agent);
    assert!(ToolRule::requires_approval(
        &home
            .engram
            .agents()
            .get(copy)
            .await
            .unwrap()
            .agent
            .tool_rules,
        "core_memory_append"
    ));
    // A Letta file's rule is read too, and enforced.
    let letta = r#"{"agents": [{"id": "agent-0", "name": "Lee", "tool_ids": [], "messages": [],
        "in_context_message_ids": [], "tools": ["core_memory_append"],
        "tool_rules": [{"type": "requires_approval", "tool_name": "core_memory_append", "prompt_template": null}]}],
        "blocks": [], "tools": []}"#;
    let report = home
        .engram
        .agent_files()
        .import_named(letta.as_bytes(), "lee.af")
        .await
        .unwrap();
    let lee = home
        .engram
        .agents()
        .get(&report.agents[0])
        .await
        .unwrap()
        .agent;
    assert_eq!(
        lee.tool_rules,
        [ToolRule::RequiresApproval {
            tool_name: "core_memory_append".into()
        }]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_windows_deciding_at_once_answer_the_call_once() {
    let Paused {
        mock, home, agent, ..
    } = paused_on(vec![append("Name: Bob")], "my name is Bob").await;
    mock.push(Reply::Text("Noted.".into()));

    let decide = |approve: bool| {
        let engram = &home.engram;
        let agent = agent.clone();
        async move {
            let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
            let d = ApprovalDecision {
                approve,
                ..Default::default()
            };
            engram
                .runs()
                .resolve_approval(&agent, d, &tx, CancellationToken::new())
                .await
        }
    };
    let (a, b) = tokio::join!(decide(true), decide(false));
    // One decision wins; the other finds nothing waiting and changes nothing.
    let lost = match (&a, &b) {
        (Ok(_), Err(e)) | (Err(e), Ok(_)) => e,
        other => panic!("exactly one decision must win: {other:?}"),
    };
    assert_eq!(engram_core::ErrorBody::from(lost).code, "not_found");
    let answers = home
        .engram
        .store()
        .messages()
        .in_context(&agent)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Tool)
        .count();
    assert_eq!(answers, 1, "the call got exactly one answer");
    assert_clean(&mock);
}

#[tokio::test]
async fn resetting_the_messages_drops_a_waiting_call_unrun() {
    let Paused {
        mock, home, agent, ..
    } = paused_on(vec![append("Name: Bob")], "my name is Bob").await;
    home.engram.recall().reset(&agent).await.unwrap();
    assert!(
        home.engram
            .runs()
            .pending_approval(&agent)
            .await
            .unwrap()
            .is_none()
    );
    // The agent talks again, and the dropped call never ran.
    mock.push(Reply::Text("Hello again.".into()));
    let (out, _) = home.chat(&agent, "hi").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    assert_eq!(home.block(&agent, "human"), "");
    assert_clean(&mock);
}

#[tokio::test]
async fn in_the_classic_loop_a_denial_gets_a_heartbeat_and_the_agent_answers() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::Classic).await;
    home.engram
        .tools()
        .set_approval(&agent, "core_memory_append", true)
        .await
        .unwrap();
    mock.push(Reply::ToolCalls(vec![append("Name: Cy")]));
    mock.push(Reply::ToolCalls(vec![Call::new(
        "send_message",
        json!({"message": "All right, I will not write that down."}),
    )]));
    let (out, _) = home.chat(&agent, "I am Cy").await;
    assert_eq!(out.stop_reason, StopReason::RequiresApproval);
    let (out, _) = decide(&home, &agent, false, Some("no notes please")).await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    assert!(
        out.messages
            .iter()
            .any(|m| m.kind == engram_core::MessageKind::Heartbeat),
        "a failed call asks for another step in the classic loop"
    );
    let results = last_tool_results(&mock);
    assert!(
        results[0]["message"]
            .as_str()
            .unwrap()
            .contains("no notes please")
    );
    assert_eq!(home.block(&agent, "human"), "");
    assert_clean(&mock);
}

#[tokio::test]
async fn regenerate_edit_and_delete_wait_until_the_call_is_decided() {
    let Paused {
        mock,
        home,
        agent,
        out,
        ..
    } = paused_on(vec![append("Name: Bob")], "my name is Bob").await;
    let before = msg_count(&home, &agent);
    let user = out
        .messages
        .iter()
        .find(|m| m.role == Role::User)
        .expect("the user's message")
        .id
        .clone();

    // Each would strand the waiting call: each is refused, naming it, and nothing is removed.
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let regenerate = home
        .engram
        .runs()
        .regenerate(&agent, &tx, CancellationToken::new())
        .await
        .unwrap_err();
    let resend = home
        .engram
        .runs()
        .edit_and_resend(
            &agent,
            &user,
            "my name is Rob",
            &tx,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    let delete = home
        .engram
        .recall()
        .delete(&agent, &user)
        .await
        .unwrap_err();
    for e in [regenerate, resend, delete] {
        assert_eq!(e.code(), "conflict", "{e}");
        assert!(e.to_string().contains("core_memory_append"), "{e}");
    }
    assert_eq!(msg_count(&home, &agent), before);
    assert!(
        home.engram
            .runs()
            .pending_approval(&agent)
            .await
            .unwrap()
            .is_some()
    );

    // Deciding still works afterwards.
    mock.push(Reply::Text("Saved.".into()));
    let (out, _) = decide(&home, &agent, true, None).await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    assert_eq!(home.block(&agent, "human"), "Name: Bob");
}

//! The run registry over the real engine and the scripted model: a started run streams under
//! its run id, a late reader gets what it missed then the rest, a run stops by its id, and a
//! rollback (regenerate, edit & resend, delete) never runs while anyone holds the agent's turn.

use crate::{Engram, RunRequest};
use engram_core::{
    AgentId, Error, LlmConfig, LoopStyle, NewAgent, NewBlock, RunEvent, RunId, StopReason,
};
use engram_mock_llm::{MockLlm, Reply, Script};
use std::sync::Arc;

fn open(dir: &std::path::Path) -> Arc<Engram> {
    Engram::open_for_test(dir)
}

async fn agent(engram: &Engram, mock: &MockLlm) -> AgentId {
    let mut llm = LlmConfig::new("openai/mock-small");
    llm.base_url = Some(mock.base_url());
    llm.context_window = 32_000;
    let new = NewAgent {
        name: "Sam".into(),
        llm: Some(llm),
        loop_style: LoopStyle::ToolLoop,
        blocks: vec![NewBlock::new("human", "")],
        ..NewAgent::default()
    };
    engram.agents().create(new).await.expect("agent").agent.id
}

fn message(text: &str) -> RunRequest {
    RunRequest::Message { text: text.into() }
}

async fn all(events: &mut crate::RunEvents) -> Vec<RunEvent> {
    let mut out = Vec::new();
    while let Some(e) = events.next().await {
        out.push(e);
    }
    out
}

#[tokio::test]
async fn a_started_run_streams_under_its_run_id_and_leaves_the_registry_when_done() {
    let mock = MockLlm::start(Script::Queue).await;
    let dir = tempfile::tempdir().unwrap();
    let engram = open(dir.path());
    let agent = agent(&engram, &mock).await;
    mock.push(Reply::text("Hello there."));

    let mut run = engram.runs().start(&agent, message("hi")).await.unwrap();
    let id = run.run_id().clone();
    let events = all(&mut run.events).await;
    assert!(
        matches!(&events[0], RunEvent::RunStarted { run_id, .. } if *run_id == id),
        "{events:?}"
    );
    assert!(
        matches!(events.last(), Some(RunEvent::Done { run_id, stop_reason: StopReason::EndTurn, .. }) if *run_id == id),
        "{events:?}"
    );
    let outcome = run.outcome().await.unwrap();
    assert_eq!(outcome.run_id, id);
    // The stored messages carry the same id.
    let stored = engram.recall().list(&agent, None, 10).await.unwrap();
    assert!(stored.iter().all(|m| m.run_id.as_ref() == Some(&id)));
    assert!(engram.runs().running(None).is_empty());
    assert!(engram.runs().attach(&agent).is_none());
    assert!(!engram.runs().cancel(&id), "an ended run is not in flight");

    // What keeps a run from starting is the caller's error, not an event.
    let blank = engram
        .runs()
        .start(&agent, message("  "))
        .await
        .unwrap_err();
    assert!(matches!(blank, Error::Invalid(_)), "{blank:?}");
    let none = engram
        .runs()
        .start(
            &agent,
            RunRequest::Approvals {
                decisions: vec![Default::default()],
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(none, Error::NotFound { .. }), "{none:?}");
}

#[tokio::test]
async fn a_late_reader_gets_what_it_missed_and_the_run_stops_by_its_id() {
    let mock = MockLlm::start(Script::Queue).await;
    let dir = tempfile::tempdir().unwrap();
    let engram = open(dir.path());
    let agent = agent(&engram, &mock).await;
    mock.push(Reply::Hang);

    let mut run = engram.runs().start(&agent, message("hi")).await.unwrap();
    let id = run.run_id().clone();
    let listed = engram.runs().running(Some(&agent));
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].run_id, id);
    assert!(engram.runs().is_running(&agent));
    assert!(
        engram
            .runs()
            .running(Some(&AgentId::from("agent-other")))
            .is_empty()
    );

    let mut late = engram.runs().attach_id(&id).expect("in flight");
    assert_eq!(late.run_id(), &id);
    // A rewrite of the conversation is refused while the run goes on.
    let refused = engram
        .runs()
        .start(&agent, RunRequest::Regenerate)
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::Conflict(_)), "{refused:?}");

    // Cancelling by id touches only that run: another id, or this id under another agent,
    // stops nothing.
    assert_eq!(
        engram.runs().cancel_agent_run(&agent, Some(&RunId::new())),
        0
    );
    assert_eq!(
        engram
            .runs()
            .cancel_agent_run(&AgentId::from("agent-other"), Some(&id)),
        0
    );
    assert!(engram.runs().cancel(&id));
    let seen = all(&mut run.events).await;
    let joined = all(&mut late).await;
    assert!(
        matches!(joined.first(), Some(RunEvent::RunStarted { .. })),
        "the late reader starts from the beginning: {joined:?}"
    );
    for events in [&seen, &joined] {
        assert!(
            matches!(
                events.last(),
                Some(RunEvent::Done {
                    stop_reason: StopReason::Cancelled,
                    ..
                })
            ),
            "{events:?}"
        );
    }
    assert_eq!(
        run.outcome().await.unwrap().stop_reason,
        StopReason::Cancelled
    );
    assert!(!engram.runs().is_running(&agent));
}

#[tokio::test]
async fn a_rollback_never_runs_while_the_agents_turn_is_held() {
    let mock = MockLlm::start(Script::Queue).await;
    let dir = tempfile::tempdir().unwrap();
    let engram = open(dir.path());
    let agent = agent(&engram, &mock).await;
    mock.push(Reply::text("First answer."));
    engram
        .runs()
        .start(&agent, message("hello"))
        .await
        .unwrap()
        .outcome()
        .await
        .unwrap();
    let before = engram.recall().list(&agent, None, 10).await.unwrap();
    let user = before[0].id.clone();

    // Whoever holds the turn (a run between registering and streaming, a compaction, another
    // process's run through this engine) keeps the conversation: the check and the rollback
    // take the same lock, so neither can slip in between.
    let turn = engram.runtime.turn(&agent).await.unwrap();
    for request in [
        RunRequest::Regenerate,
        RunRequest::EditAndResend {
            message_id: user.clone(),
            text: "hello again".into(),
        },
    ] {
        let refused = engram.runs().start(&agent, request).await.unwrap_err();
        assert!(matches!(refused, Error::Conflict(_)), "{refused:?}");
    }
    let refused = engram.recall().delete(&agent, &user).await.unwrap_err();
    assert!(matches!(refused, Error::Conflict(_)), "{refused:?}");
    assert_eq!(
        engram.recall().list(&agent, None, 10).await.unwrap(),
        before,
        "nothing was rolled back"
    );
    drop(turn);

    mock.push(Reply::text("Second answer."));
    let outcome = engram
        .runs()
        .start(&agent, RunRequest::Regenerate)
        .await
        .unwrap()
        .outcome()
        .await
        .unwrap();
    assert_eq!(outcome.stop_reason, StopReason::EndTurn);
    let after: Vec<String> = engram
        .recall()
        .list(&agent, None, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.content)
        .collect();
    assert_eq!(after, ["hello", "Second answer."]);
}

/// An engine whose runs hold their agent's lease for `ttl` seconds and wait `wait` seconds for
/// a lease someone else holds.
fn open_with_leases(dir: &std::path::Path, ttl: &'static str, wait: &'static str) -> Arc<Engram> {
    Engram::open(crate::Options {
        home: Some(dir.to_owned()),
        secrets: Arc::new(engram_secrets::MemoryStore::default()),
        env: Arc::new(move |name| match name {
            "ENGRAM_LEASE_TTL" => Some(ttl.to_owned()),
            "ENGRAM_LEASE_WAIT" => Some(wait.to_owned()),
            _ => None,
        }),
    })
    .expect("open")
}

// A current-thread runtime on purpose: the model's reply blocks the one thread, so the
// engine stops as a paused process would — its lease renewals included — while another
// "replica" (a plain thread on the same database) takes the agent over.
#[tokio::test(flavor = "current_thread")]
async fn a_run_paused_past_its_lease_commits_nothing_more() {
    use engram_store_api::{LeaseGrant, LeaseStore};
    let dir = tempfile::tempdir().unwrap();
    let engram = open_with_leases(dir.path(), "0.3", "5");
    // The model's call goes out once the run holds the lease: it tells the other replica to
    // start trying, then pauses.
    let (asked, model_called) = std::sync::mpsc::channel::<()>();
    let asked = std::sync::Mutex::new(asked);
    let mock = MockLlm::start(Script::rules(move |view| {
        if view.turn_results().is_empty() {
            let _ = asked.lock().unwrap().send(());
            std::thread::sleep(std::time::Duration::from_millis(1500));
            Reply::ToolCalls(vec![engram_mock_llm::Call::new(
                "core_memory_append",
                serde_json::json!({"label": "human", "content": "Likes green tea."}),
            )])
        } else {
            Reply::text("Noted.")
        }
    }))
    .await;
    let agent = agent(&engram, &mock).await;
    let store = engram.store().clone();
    let other = agent.clone();
    // The other replica takes the lease as soon as it has expired.
    let replica = std::thread::spawn(move || {
        model_called.recv().expect("the model was called");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let grant = futures::executor::block_on(store.acquire_lease(
                &other,
                "replica-b",
                std::time::Duration::from_secs(60),
            ))
            .unwrap();
            match grant {
                LeaseGrant::Granted(lease) => return lease,
                LeaseGrant::Busy { .. } if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                LeaseGrant::Busy { holder, .. } => panic!("{holder} never let the lease go"),
            }
        }
    });

    let run = engram
        .runs()
        .start(&agent, message("I like green tea"))
        .await
        .unwrap();
    let outcome = run.outcome().await.unwrap();
    let taken = replica.join().unwrap();
    assert_eq!(taken.holder, "replica-b");
    assert_eq!(outcome.stop_reason, StopReason::Error, "{outcome:?}");
    let error = outcome.error.expect("the run says why it stopped");
    assert_eq!(error.code, "lease_lost", "{error:?}");
    // The step left nothing: the block as it was, no assistant or tool message, no step.
    let human = engram.store().blocks().of_agent(&agent).unwrap();
    assert_eq!(human[0].value, "");
    let stored = engram.recall().list(&agent, None, 10).await.unwrap();
    assert_eq!(stored.len(), 1, "only the user's message: {stored:?}");
    assert!(
        engram
            .store()
            .runs()
            .list_steps(&agent, None)
            .unwrap()
            .is_empty()
    );
}

/// A message that waited for another replica's run reads the agent again once it has it: a
/// call that run left waiting for approval refuses the message, and nothing is written.
#[tokio::test]
async fn a_message_that_waited_for_another_replica_sees_the_call_it_left_waiting() {
    use engram_core::{MessageId, NewMessage, PendingApproval, Step, StepId, ToolCall};
    use engram_store_api::{ApprovalWrite, LeaseGrant, LeaseStore, StepCommit, StepStore};
    let dir = tempfile::tempdir().unwrap();
    let engram = open_with_leases(dir.path(), "30", "5");
    let mock = MockLlm::start(Script::Queue).await;
    let agent = agent(&engram, &mock).await;
    let LeaseGrant::Granted(elsewhere) = engram
        .store()
        .acquire_lease(&agent, "replica-b", std::time::Duration::from_secs(60))
        .await
        .unwrap()
    else {
        panic!("the lease was free");
    };
    let waiting = {
        let engram = engram.clone();
        let agent = agent.clone();
        tokio::spawn(async move {
            engram
                .runs()
                .start(&agent, message("are you there?"))
                .await
                .map(|_| ())
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert!(!waiting.is_finished(), "the message waits for the lease");

    // Replica B's run pauses on a call that needs a person, then gives the agent back.
    let (run, step) = (RunId::new(), StepId::new());
    let call = ToolCall {
        id: "call-1".into(),
        name: "send_email".into(),
        arguments: "{}".into(),
    };
    let asked = MessageId::new();
    let paused = StepCommit {
        step: Step {
            id: step.clone(),
            agent_id: agent.clone(),
            run_id: run.clone(),
            index: 1,
            model: "openai/mock-small".into(),
            prompt_tokens: 100,
            completion_tokens: 10,
            finish_reason: Some("tool_calls".into()),
            started_at: chrono::Utc::now(),
            llm_ms: 1,
            step_ms: 1,
        },
        messages: vec![NewMessage {
            id: Some(asked.clone()),
            ..NewMessage::assistant("", None, vec![call.clone()])
        }],
        block_writes: vec![],
        passages: vec![],
        approval: ApprovalWrite::Request(PendingApproval {
            agent_id: agent.clone(),
            run_id: run,
            step_id: step,
            message_id: asked,
            tool_call: call,
            requested_at: chrono::Utc::now(),
            server: None,
        }),
    };
    engram
        .store()
        .commit_step(Some(&elsewhere), &paused)
        .await
        .unwrap();
    engram.store().release_lease(&elsewhere).await.unwrap();

    let refused = waiting.await.unwrap().expect_err("refused");
    assert_eq!(refused.code(), "conflict", "{refused}");
    assert!(refused.to_string().contains("call-1"), "{refused}");
    let history = engram.recall().list(&agent, None, 10).await.unwrap();
    assert_eq!(history.len(), 1, "only replica B's message: {history:?}");
}

#[tokio::test]
async fn a_run_for_an_agent_another_replica_runs_waits_then_is_busy() {
    use engram_store_api::{LeaseGrant, LeaseStore};
    let dir = tempfile::tempdir().unwrap();
    let engram = open_with_leases(dir.path(), "30", "0.4");
    let mock = MockLlm::start(Script::Queue).await;
    let agent = agent(&engram, &mock).await;
    let LeaseGrant::Granted(elsewhere) = engram
        .store()
        .acquire_lease(&agent, "replica-b", std::time::Duration::from_secs(60))
        .await
        .unwrap()
    else {
        panic!("the lease was free");
    };

    let started = std::time::Instant::now();
    let busy = engram
        .runs()
        .start(&agent, message("hello?"))
        .await
        .map(|_| ())
        .expect_err("refused");
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(400),
        "it waited first"
    );
    match &busy {
        Error::AgentBusy { holder, .. } => assert_eq!(holder, "replica-b"),
        other => panic!("expected agent_busy, got {other:?}"),
    }
    assert_eq!(busy.code(), "agent_busy");
    assert!(
        engram
            .recall()
            .list(&agent, None, 10)
            .await
            .unwrap()
            .is_empty(),
        "nothing written"
    );

    // Once the other replica is done, the agent runs here, and gives its lease back after.
    engram.store().release_lease(&elsewhere).await.unwrap();
    mock.push(Reply::text("Hello."));
    let run = engram
        .runs()
        .start(&agent, message("hello?"))
        .await
        .unwrap();
    assert_eq!(
        run.outcome().await.unwrap().stop_reason,
        StopReason::EndTurn
    );
    assert!(matches!(
        engram
            .store()
            .acquire_lease(&agent, "replica-b", std::time::Duration::from_secs(60))
            .await
            .unwrap(),
        LeaseGrant::Granted(_)
    ));
}

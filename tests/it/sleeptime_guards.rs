//! What bounds sleep-time passes, with the scripted model: budgets of passes, tokens and money
//! skip a pass with a notice; a pass never runs twice at once; a failed model call or a process
//! killed mid-pass leaves the database as it was; idle time and a compaction start a pass.

use crate::sleeptime::{passes_settle, search, settings};
use engram_core::{LoopStyle, NewBlock, PassStatus, PassTrigger};
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_service::{Notice, PassageList};
use engram_suite::{Home, assert_database_intact, cli_agent, kill_after_calls};
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn a_budget_of_one_pass_a_day_skips_the_second_with_a_notice() {
    let chat = MockLlm::start(Script::Queue).await;
    let sleep = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&chat, LoopStyle::ToolLoop).await;
    let mut s = settings(&sleep, 50);
    s.passes_per_day = Some(1);
    home.engram
        .sleeptime()
        .set_settings(&agent, &s)
        .await
        .unwrap();
    let mut notices = home.engram.notices();
    sleep.push(Reply::ToolCalls(vec![Call::new("finish", json!({}))]));
    let first = home.engram.sleeptime().run_pass(&agent).await.unwrap();
    assert_eq!(first.status, PassStatus::Done);
    let second = home.engram.sleeptime().run_pass(&agent).await.unwrap();
    assert_eq!(second.status, PassStatus::Skipped);
    let reason = second.reason.clone().unwrap();
    assert!(reason.contains("over budget: 1 of 1"), "{reason}");
    assert_eq!(
        sleep.chat_requests().len(),
        1,
        "the skipped pass called no model"
    );
    let mut skipped = None;
    while let Ok(n) = notices.try_recv() {
        if let Notice::SleeptimePass {
            status: PassStatus::Skipped,
            reason,
            ..
        } = n
        {
            skipped = reason;
        }
    }
    assert_eq!(skipped.as_deref(), Some(reason.as_str()));

    // A global token budget already spent skips too.
    s.passes_per_day = None;
    home.engram
        .sleeptime()
        .set_settings(&agent, &s)
        .await
        .unwrap();
    home.engram
        .sleeptime()
        .set_budget(&engram_core::SleeptimeBudget {
            tokens_per_day: Some(1),
            ..engram_core::SleeptimeBudget::default()
        })
        .await
        .unwrap();
    let third = home.engram.sleeptime().run_pass(&agent).await.unwrap();
    assert_eq!(third.status, PassStatus::Skipped);
    assert!(third.reason.unwrap().contains("pass tokens of all agents"));

    // Money: at the pass model's price, the first pass spent more than a tiny daily allowance.
    home.engram
        .sleeptime()
        .set_budget(&engram_core::SleeptimeBudget::default())
        .await
        .unwrap();
    home.engram
        .models()
        .set_price(&engram_core::ModelPrice {
            model: "openai/mock-sleep".into(),
            input_per_mtok: 100.0,
            output_per_mtok: 100.0,
            source: engram_core::PriceSource::User,
        })
        .await
        .unwrap();
    s.usd_per_day = Some(0.000_001);
    home.engram
        .sleeptime()
        .set_settings(&agent, &s)
        .await
        .unwrap();
    let fourth = home.engram.sleeptime().run_pass(&agent).await.unwrap();
    assert_eq!(fourth.status, PassStatus::Skipped);
    let reason = fourth.reason.unwrap();
    assert!(
        reason.contains("for this agent's passes per 24 hours are spent"),
        "{reason}"
    );
    let first = &home.engram.sleeptime().passes(&agent, 10).await.unwrap()[3];
    assert_eq!(first.status, PassStatus::Done);
    assert!(first.cost_usd.unwrap() > 0.0, "the pass has a cost");
}

/// The money left bounds a pass while it runs, not only before: at its model's price, the
/// dollars left buy fewer tokens than the pass's first call uses, so it stops there and writes
/// nothing (its memory edit is not kept).
#[tokio::test]
async fn the_money_left_stops_a_pass_mid_way_and_it_writes_nothing() {
    let chat = MockLlm::start(Script::Queue).await;
    let sleep = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&chat, LoopStyle::ToolLoop).await;
    let before = home.block(&agent, "human");
    home.engram
        .models()
        .set_price(&engram_core::ModelPrice {
            model: "openai/mock-sleep".into(),
            input_per_mtok: 10.0,
            output_per_mtok: 30.0,
            source: engram_core::PriceSource::User,
        })
        .await
        .unwrap();
    let mut s = settings(&sleep, 50);
    // $0.003 buys 100 tokens at $30 per million; a pass's first call reads far more.
    s.usd_per_day = Some(0.003);
    home.engram
        .sleeptime()
        .set_settings(&agent, &s)
        .await
        .unwrap();
    sleep.push(Reply::ToolCalls(vec![Call::new(
        "memory_rethink",
        json!({"label": "human", "new_memory": "Written by a pass that could not pay"}),
    )]));
    sleep.push(Reply::ToolCalls(vec![Call::new("finish", json!({}))]));
    let pass = home.engram.sleeptime().run_pass(&agent).await.unwrap();
    assert_eq!(pass.status, PassStatus::Failed, "{pass:?}");
    assert!(
        pass.reason
            .as_deref()
            .unwrap_or_default()
            .contains("ran over its budget"),
        "{pass:?}"
    );
    assert_eq!(
        sleep.chat_requests().len(),
        1,
        "stopped after the first call"
    );
    assert_eq!(home.block(&agent, "human"), before, "nothing was written");
}

#[tokio::test]
async fn a_pass_never_runs_twice_at_once() {
    let chat = MockLlm::start(Script::Queue).await;
    let sleep = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&chat, LoopStyle::ToolLoop).await;
    home.engram
        .sleeptime()
        .set_settings(&agent, &settings(&sleep, 1))
        .await
        .unwrap();
    sleep.push(Reply::Delayed(
        Duration::from_millis(800),
        Box::new(Reply::ToolCalls(vec![Call::new("finish", json!({}))])),
    ));
    let second = async {
        while sleep.chat_requests().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Asked by hand, and by a chat turn that reaches the frequency: neither starts one.
        let err = home.engram.sleeptime().run_pass(&agent).await.unwrap_err();
        home.chat(&agent, "hello").await;
        err
    };
    let (first, err) = tokio::join!(home.engram.sleeptime().run_pass(&agent), second);
    assert_eq!(first.unwrap().status, PassStatus::Done);
    assert_eq!(err.code(), "conflict", "{err}");
    assert_eq!(sleep.chat_requests().len(), 1, "one pass, one model call");
}

#[tokio::test]
async fn a_failed_model_call_leaves_memory_as_it_was() {
    let chat = MockLlm::start(Script::Queue).await;
    let sleep = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home
        .agent_with(&chat, LoopStyle::ToolLoop, |a| {
            a.blocks = vec![NewBlock::new("human", "Lives in Lisbon")];
        })
        .await;
    home.engram
        .sleeptime()
        .set_settings(&agent, &settings(&sleep, 50))
        .await
        .unwrap();
    sleep.push_all([
        Reply::ToolCalls(vec![
            Call::new("memory_rethink", json!({"label": "human", "new_memory": "Lives in Porto"})),
            Call::new("archival_memory_insert", json!({"content": "moved"})),
        ]),
        Reply::Error {
            status: 400,
            body: json!({"error": {"message": "bad request (mock)", "type": "invalid_request_error"}}),
            retry_after: None,
        },
    ]);
    let pass = home.engram.sleeptime().run_pass(&agent).await.unwrap();
    assert_eq!(pass.status, PassStatus::Failed);
    assert!(pass.reason.unwrap().contains("model call failed"));
    assert_eq!(home.block(&agent, "human"), "Lives in Lisbon");
    assert!(search(&home, &agent, "moved", true).await.is_empty());
    assert!(
        home.engram
            .blocks()
            .history(&agent, "human")
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_mid_pass_leaves_the_database_as_before() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = tempfile::tempdir().unwrap();
    let agent = cli_agent(home.path(), &mock);
    let snapshot = async |engram: &engram_service::Engram| {
        let blocks: Vec<(String, String, u64)> = engram
            .blocks()
            .of_agent(&agent)
            .await
            .unwrap()
            .into_iter()
            .map(|b| (b.label, b.value, b.version))
            .collect();
        let passages: Vec<(String, bool)> = engram
            .archival()
            .list(
                &agent,
                &PassageList {
                    limit: 100,
                    include_superseded: true,
                    ..PassageList::default()
                },
            )
            .await
            .unwrap()
            .into_iter()
            .map(|p| (p.text, p.superseded.is_some()))
            .collect();
        let passes = engram.sleeptime().passes(&agent, 10).await.unwrap().len();
        (blocks, passages, passes)
    };
    let before = {
        let engram = engram_suite::open(
            home.path(),
            std::sync::Arc::new(engram_secrets::MemoryStore::default()),
        );
        engram
            .blocks()
            .set_value(&agent, "human", "Lives in Lisbon")
            .await
            .unwrap();
        engram
            .archival()
            .insert(&agent, "Ana lives in Lisbon", vec![])
            .await
            .unwrap();
        snapshot(&engram).await
    };
    // The pass decides its edits, then its next model call never answers.
    mock.push_all([
        Reply::ToolCalls(vec![
            Call::new(
                "memory_rethink",
                json!({"label": "human", "new_memory": "Lives in Porto"}),
            ),
            Call::new(
                "archival_memory_insert",
                json!({"content": "Ana moved to Porto"}),
            ),
        ]),
        Reply::Hang,
    ]);
    kill_after_calls(
        home.path(),
        &["sleeptime", "run", agent.as_str()],
        &mock,
        2,
        "the pass reached its second call",
    )
    .await;

    assert_database_intact(home.path());
    let engram = engram_suite::open(
        home.path(),
        std::sync::Arc::new(engram_secrets::MemoryStore::default()),
    );
    assert_eq!(snapshot(&engram).await, before);
}

#[tokio::test]
async fn an_idle_agent_gets_a_pass_on_what_is_waiting() {
    let chat = MockLlm::start(Script::Queue).await;
    let sleep = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&chat, LoopStyle::ToolLoop).await;
    let mut s = settings(&sleep, 50);
    s.idle_secs = Some(1);
    home.engram
        .sleeptime()
        .set_settings(&agent, &s)
        .await
        .unwrap();
    sleep.push(Reply::ToolCalls(vec![Call::new("finish", json!({}))]));
    home.chat(&agent, "first").await;
    // A second message within the idle time restarts the clock.
    tokio::time::sleep(Duration::from_millis(600)).await;
    home.chat(&agent, "second").await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(
        home.engram
            .sleeptime()
            .passes(&agent, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let passes = passes_settle(&home, &agent, 1).await;
    assert_eq!(passes.len(), 1);
    assert_eq!(passes[0].trigger, PassTrigger::Idle);
    assert_eq!(passes[0].status, PassStatus::Done);
    assert_eq!(
        home.engram.sleeptime().backlog(&agent).await.unwrap().turns,
        0
    );
}

#[tokio::test]
async fn a_compaction_starts_a_pass_before_the_frequency_is_reached() {
    let chat = MockLlm::start(Script::rules(|view| {
        if view
            .system
            .starts_with(&engram_agent::prompts::SUMMARIZER_SYSTEM[..40])
        {
            return Reply::text("Summary: the user listed facts about their garden.");
        }
        Reply::text(format!(
            "Noted. {}",
            "I will keep that in mind. ".repeat(20)
        ))
    }))
    .await;
    let sleep = MockLlm::start(Script::rules(|_| {
        Reply::ToolCalls(vec![Call::new("finish", json!({}))])
    }))
    .await;
    let home = Home::new();
    let agent = home
        .agent_with(&chat, LoopStyle::ToolLoop, |a| {
            a.llm.as_mut().unwrap().context_window = 4_000;
        })
        .await;
    home.engram
        .sleeptime()
        .set_settings(&agent, &settings(&sleep, 1_000))
        .await
        .unwrap();
    let mut turns = 0;
    while home
        .engram
        .sleeptime()
        .passes(&agent, 1)
        .await
        .unwrap()
        .is_empty()
        && turns < 60
    {
        let text = format!("Fact {turns}: the tulip bed number {turns} faces east.");
        let (out, _) = home.chat(&agent, &text).await;
        assert!(out.error.is_none(), "{:?}", out.error);
        turns += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let passes = passes_settle(&home, &agent, 1).await;
    assert_eq!(
        passes[0].trigger,
        PassTrigger::Compaction,
        "after {turns} turns"
    );
    assert!(turns < 1_000);
}

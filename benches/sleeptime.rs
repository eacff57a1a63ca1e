//! Sleep-time passes and the chat, as a report: `cargo bench --bench sleeptime`.
//!
//! 1. Chat latency with and without a pass running at the same time: `SLEEPTIME_BENCH_TURNS`
//!    turns (default 200) against the scripted model, first alone, then while passes run back
//!    to back on their own scripted server (each with the default 8 model calls, one every
//!    `SLEEPTIME_BENCH_CALL_MS` ms, default 100 — faster than any real model — each searching
//!    archival memory with the whole conversation since the last pass in its prompt). The goal:
//!    no more than 10% slower.
//! 2. What a pass costs per 5 turns of conversation: model calls and tokens (the scripted
//!    server's counts, about 4 characters a token) of a pass that rewrites a block and finishes.

use engram_core::{LlmConfig, LoopStyle, SleeptimeSettings};
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_suite::Home;
use engram_suite::corpus::percentile;
use engram_suite::serve::env_or;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn pass_model(sleep: &MockLlm) -> LlmConfig {
    let mut llm = LlmConfig::new("openai/mock-sleep");
    llm.base_url = Some(sleep.base_url());
    llm.context_window = 32_000;
    llm
}

async fn turns(home: &Home, agent: &engram_core::AgentId, n: usize, tag: &str) -> Vec<Duration> {
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let started = Instant::now();
        let (out, _) = home
            .chat(agent, &format!("{tag} turn {i}: my tea is green"))
            .await;
        times.push(started.elapsed());
        assert!(out.error.is_none(), "{:?}", out.error);
    }
    times.sort();
    times
}

fn row(name: &str, t: &[Duration]) -> (Duration, Duration) {
    let (p50, p90) = (percentile(t, 0.5), percentile(t, 0.9));
    println!("{name:<28} p50 {p50:>9.2?}  p90 {p90:>9.2?}");
    (p50, p90)
}

async fn latency(n: usize, call_ms: u64) {
    let chat = MockLlm::start(Script::Queue).await;
    let sleep = MockLlm::start(Script::rules(move |_| {
        Reply::Delayed(
            Duration::from_millis(call_ms),
            Box::new(Reply::ToolCalls(vec![Call::new(
                "archival_memory_search",
                json!({"query": "green tea"}),
            )])),
        )
    }))
    .await;
    let home = Arc::new(Home::new());
    // Two agents alike (200 passages, empty history): one chats alone, the other while passes
    // tend its memory, so both measure the same conversation lengths.
    let mut agents = Vec::new();
    for _ in 0..2 {
        let agent = home.agent(&chat, LoopStyle::ToolLoop).await;
        for i in 0..200 {
            home.engram
                .archival()
                .insert(&agent, &format!("note {i}: tea and more tea"), vec![])
                .await
                .unwrap();
        }
        agents.push(agent);
    }
    let (quiet, busy) = (agents[0].clone(), agents[1].clone());
    let alone = turns(&home, &quiet, n, "alone").await;

    let settings = SleeptimeSettings {
        llm: Some(pass_model(&sleep)),
        ..SleeptimeSettings::default()
    };
    home.engram
        .sleeptime()
        .set_settings(&busy, &settings)
        .await
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let passes = {
        let (home, agent, stop) = (home.clone(), busy.clone(), stop.clone());
        tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                home.engram.sleeptime().run_pass(&agent).await.unwrap();
                n += 1;
            }
            n
        })
    };
    while sleep.chat_requests().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let before = sleep.chat_requests().len();
    let beside = turns(&home, &busy, n, "beside").await;
    let calls = sleep.chat_requests().len() - before;
    stop.store(true, Ordering::Relaxed);
    let passes = passes.await.unwrap();

    println!("chat latency over {n} turns (scripted model, 200 passages)");
    let (a50, a90) = row("alone", &alone);
    let (b50, b90) = row("with passes running", &beside);
    let pct = |a: Duration, b: Duration| (b.as_secs_f64() / a.as_secs_f64() - 1.0) * 100.0;
    println!(
        "slower by {:+.1}% (p50), {:+.1}% (p90); {passes} passes made {calls} model calls \
         ({call_ms} ms each) meanwhile",
        pct(a50, b50),
        pct(a90, b90)
    );
}

async fn cost_per_five_turns() {
    let chat = MockLlm::start(Script::Brain).await;
    let sleep = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&chat, LoopStyle::ToolLoop).await;
    home.engram
        .sleeptime()
        .set_settings(
            &agent,
            &SleeptimeSettings {
                enabled: true,
                llm: Some(pass_model(&sleep)),
                ..SleeptimeSettings::default()
            },
        )
        .await
        .unwrap();
    sleep.push_all([
        Reply::ToolCalls(vec![Call::new(
            "memory_rethink",
            json!({"label": "human", "new_memory": "Name: Ana\nLives in Porto\nLikes green tea"}),
        )]),
        Reply::ToolCalls(vec![Call::new("finish", json!({}))]),
    ]);
    for text in [
        "my name is Ana",
        "I live in Lisbon",
        "I like green tea",
        "I moved to Porto",
        "what do you know about me?",
    ] {
        home.chat(&agent, text).await;
    }
    let mut passes = Vec::new();
    for _ in 0..200 {
        passes = home.engram.sleeptime().passes(&agent, 1).await.unwrap();
        if !passes.is_empty() && !home.engram.sleeptime().running(&agent) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let p = passes.first().expect("a pass after 5 turns");
    println!(
        "a pass after 5 turns: {} messages read, {} model calls, {} prompt + {} completion tokens",
        p.messages_read, p.model_calls, p.prompt_tokens, p.completion_tokens
    );
}

fn main() {
    let n = env_or("SLEEPTIME_BENCH_TURNS", 200);
    let call_ms = env_or("SLEEPTIME_BENCH_CALL_MS", 100) as u64;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        latency(n, call_ms).await;
        cost_per_five_turns().await;
    });
}

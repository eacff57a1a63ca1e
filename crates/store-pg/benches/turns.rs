//! A chat turn's storage traffic on both stores, as a report:
//! `cargo bench -p engram-store-pg --bench turns`.
//!
//! What one message costs the store when the runtime handles it, through the storage
//! interface only: take the agent's lease while checking for tool calls left open (repaired
//! only when there are), append the person's message, then two steps — each reads what a
//! context window is compiled from (the agent with its cached system prompt, its blocks, the
//! messages in the window, at once) and commits under the
//! lease (the first: an assistant message calling a memory tool, its result and the block
//! append; the second: the reply) — record how the run ended while the lease goes back, as the
//! runtime does. No model, no prompt compile: the figures
//! are the stores' own overhead per message. One agent per `AGENTS` in turn; `TURNS_BENCH_TURNS`
//! turns in all (default 400). Neither store waits for an fsync at commit (see `block_ops`).

use chrono::Utc;
use engram_core::{
    Agent, BlockOp, Editor, LlmConfig, NewBlock, NewMessage, RunId, RunRecord, Step, StepId,
    StopReason, ToolCall, Usage,
};
use engram_store::Store;
use engram_store_api::{ApprovalWrite, Backend, BlockWrite, LeaseGrant, StepCommit};
use engram_store_pg::PgStore;
use std::time::{Duration, Instant};

const AGENTS: usize = 4;

fn turns() -> usize {
    std::env::var("TURNS_BENCH_TURNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1_000.0
}

fn step(agent: &Agent, run: &RunId, index: u32) -> Step {
    Step {
        id: StepId::new(),
        agent_id: agent.id.clone(),
        run_id: run.clone(),
        index,
        model: "openai/gpt-4o-mini".into(),
        prompt_tokens: 1500,
        completion_tokens: 60,
        finish_reason: Some("stop".into()),
        started_at: Utc::now(),
        llm_ms: 0,
        step_ms: 0,
    }
}

/// What a step compiles its context window from, read at once as the runtime reads it.
async fn read_context(b: &impl Backend, agent: &Agent) {
    tokio::try_join!(
        b.agent_with_system_cache(&agent.id),
        b.agent_blocks(&agent.id),
        b.in_context_messages(&agent.id),
    )
    .unwrap();
}

async fn one_turn(b: &impl Backend, agent: &Agent, human: &engram_core::BlockId, i: usize) {
    let run = RunId::new();
    let (granted, repair) = tokio::join!(
        b.acquire_lease(&agent.id, "bench", Duration::from_secs(30)),
        b.needs_repair(&agent.id)
    );
    let LeaseGrant::Granted(lease) = granted.unwrap() else {
        panic!("the bench's agent is busy");
    };
    if repair.unwrap() {
        b.repair_tool_calls(&agent.id, Utc::now()).await.unwrap();
    }
    let mut user = NewMessage::user(format!("message {i}: I like tea number {i}"));
    user.run_id = Some(run.clone());
    b.append_messages(&agent.id, &[user]).await.unwrap();

    read_context(b, agent).await;
    let call = format!("call-{i}");
    let first = StepCommit {
        step: step(agent, &run, 1),
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
            NewMessage::tool(
                &call,
                "core_memory_append",
                r#"{"status":"OK","message":"","time":""}"#,
            ),
        ],
        block_writes: vec![BlockWrite {
            block_id: human.clone(),
            op: BlockOp::Append {
                text: format!("Likes tea number {i}."),
            },
            editor: Editor::Agent {
                agent_id: agent.id.clone(),
                tool_call_id: Some(call.clone()),
            },
            restate_result: true,
        }],
        passages: vec![],
        approval: ApprovalWrite::Keep,
    };
    b.commit_step(Some(&lease), &first).await.unwrap();

    read_context(b, agent).await;
    let reply = StepCommit {
        step: step(agent, &run, 2),
        messages: vec![NewMessage::assistant(
            format!("Noted, tea number {i}."),
            None,
            vec![],
        )],
        block_writes: vec![],
        passages: vec![],
        approval: ApprovalWrite::Keep,
    };
    b.commit_step(Some(&lease), &reply).await.unwrap();
    let record = RunRecord {
        id: run,
        agent_id: agent.id.clone(),
        stop_reason: StopReason::EndTurn,
        error: None,
        usage: Usage {
            prompt_tokens: 3000,
            completion_tokens: 120,
            total_tokens: 3120,
            step_count: 2,
        },
        ended_at: Utc::now(),
    };
    let (recorded, released) = tokio::join!(b.record_run(&record), b.release_lease(&lease));
    recorded.unwrap();
    released.unwrap();
}

async fn bench(b: &impl Backend, n: usize) -> (f64, f64, f64) {
    let mut agents = Vec::new();
    for a in 0..AGENTS {
        let (agent, blocks) = b
            .create_agent(
                &Agent::new(format!("bench {a}"), LlmConfig::new("openai/gpt-4o-mini")),
                &[
                    NewBlock::new("persona", "I am a helpful assistant."),
                    NewBlock {
                        limit: Some(10_000_000),
                        ..NewBlock::new("human", "")
                    },
                ],
                &[],
            )
            .await
            .unwrap();
        agents.push((agent, blocks[1].id.clone()));
    }
    let mut times = Vec::with_capacity(n);
    let started = Instant::now();
    for i in 0..n {
        let (agent, human) = &agents[i % AGENTS];
        let t = Instant::now();
        one_turn(b, agent, human, i).await;
        times.push(t.elapsed());
    }
    let rate = n as f64 / started.elapsed().as_secs_f64();
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.95), rate)
}

fn main() {
    let n = turns();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let sqlite = Store::open(&dir.path().join("engram.db")).unwrap();
        let (s50, s95, srate) = bench(&sqlite, n).await;

        let cluster = engram_test_postgres::Cluster::start().expect("PostgreSQL for the bench");
        let url = cluster.database().unwrap().url();
        let pg = PgStore::connect(&url).await.unwrap();
        let (p50, p95, prate) = bench(&pg, n).await;

        println!(
            "a chat turn's storage traffic (lease, user message, 2 steps with context reads and leased commits, run record), {n} turns over {AGENTS} agents"
        );
        println!("| store | p50 ms / turn | p95 ms / turn | turns/s |");
        println!("| --- | --- | --- | --- |");
        println!("| SQLite (WAL file) | {s50:.2} | {s95:.2} | {srate:.0} |");
        println!("| PostgreSQL 15 (127.0.0.1) | {p50:.2} | {p95:.2} | {prate:.0} |");
        println!("PostgreSQL / SQLite, p50: {:.1}×", p50 / s50);
    });
}

//! Recall memory on both stores, as a report: `cargo bench -p engram-store-pg --bench recall`.
//!
//! One agent gets `TURNS` turns appended one at a time, each turn a batch of a user and an
//! assistant message in one transaction (`append_messages`, as a step commits them), on the
//! SQLite store (a WAL file in a temp dir) and on the PostgreSQL store (a cluster on 127.0.0.1
//! started by engram-test-postgres); then `WRITERS` writers with connections of their own
//! (replicas) append turns to one agent at once, queueing on it as they must. Then `SEARCHES`
//! words searches over that history and a page of the newest 50 messages. Reports p50/p95 per
//! call and turns per second. Neither store waits for an fsync at commit here, so the figures
//! compare the stores' own overhead. `RECALL_BENCH_TURNS` scales it.

use engram_core::{AgentId, LlmConfig, NewMessage};
use engram_store::Store;
use engram_store_api::{Backend, MessageSearch, SeqOrder};
use engram_store_pg::PgStore;
use std::time::{Duration, Instant};

const WRITERS: usize = 4;
const SEARCHES: usize = 200;

/// Words the turns are made of, so searches have something to rank.
const WORDS: &[&str] = &[
    "garden", "tulips", "roses", "weather", "launch", "meeting", "coffee", "tea", "Lisbon",
    "Porto", "museum", "cat", "dog", "budget", "report", "holiday", "train", "concert",
];

fn turns() -> usize {
    std::env::var("RECALL_BENCH_TURNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1_000.0
}

fn turn(i: usize) -> [NewMessage; 2] {
    let w = |k: usize| WORDS[(i * 7 + k * 3) % WORDS.len()];
    [
        NewMessage::user(format!(
            "turn {i}: what about the {} and the {}?",
            w(0),
            w(1)
        )),
        NewMessage::assistant(
            format!("About the {}: I noted it next to the {}.", w(0), w(2)),
            None,
            vec![],
        ),
    ]
}

/// p50, p95 (ms) per turn and turns per second, one writer.
async fn one_writer(b: &impl Backend, agent: &AgentId, n: usize) -> (f64, f64, f64) {
    let mut times = Vec::with_capacity(n);
    let started = Instant::now();
    for i in 0..n {
        let t = Instant::now();
        b.append_messages(agent, &turn(i)).await.unwrap();
        times.push(t.elapsed());
    }
    let rate = n as f64 / started.elapsed().as_secs_f64();
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.95), rate)
}

/// Turns per second with every replica appending to one agent.
async fn many_writers<B: Backend + Clone + 'static>(
    replicas: Vec<B>,
    agent: &AgentId,
    n: usize,
) -> f64 {
    let per = n / replicas.len();
    let started = Instant::now();
    let tasks: Vec<_> = replicas
        .into_iter()
        .map(|b| {
            let agent = agent.clone();
            tokio::spawn(async move {
                for i in 0..per {
                    b.append_messages(&agent, &turn(i)).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    (per * WRITERS) as f64 / started.elapsed().as_secs_f64()
}

/// p50, p95 (ms) of a words search (top 10) and of a page of the newest 50 messages.
async fn reads(b: &impl Backend, agent: &AgentId) -> (f64, f64, f64, f64) {
    let mut search = Vec::with_capacity(SEARCHES);
    let mut page = Vec::with_capacity(SEARCHES);
    for i in 0..SEARCHES {
        let q = format!(
            "{} {}",
            WORDS[i % WORDS.len()],
            WORDS[(i * 5 + 1) % WORDS.len()]
        );
        let t = Instant::now();
        let hits = b
            .search_messages(agent, &MessageSearch::new(q, 10))
            .await
            .unwrap();
        search.push(t.elapsed());
        assert!(!hits.is_empty());
        let t = Instant::now();
        let newest = b
            .page_messages(agent, None, None, 50, SeqOrder::Desc)
            .await
            .unwrap();
        page.push(t.elapsed());
        assert_eq!(newest.len(), 50);
    }
    search.sort();
    page.sort();
    (
        percentile(&search, 0.5),
        percentile(&search, 0.95),
        percentile(&page, 0.5),
        percentile(&page, 0.95),
    )
}

async fn new_agent(b: &impl Backend, name: &str) -> AgentId {
    let agent = engram_core::Agent::new(name, LlmConfig::new("openai/gpt-4o-mini"));
    b.create_agent(&agent, &[], &[]).await.unwrap().0.id
}

fn main() {
    let n = turns();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("engram.db");
        let sqlite = Store::open(&path).unwrap();
        let agent = new_agent(&sqlite, "one").await;
        let (s50, s95, srate) = one_writer(&sqlite, &agent, n).await;
        let (ss50, ss95, sp50, sp95) = reads(&sqlite, &agent).await;
        let shared = new_agent(&sqlite, "shared").await;
        let replicas: Vec<Store> = (0..WRITERS).map(|_| Store::open(&path).unwrap()).collect();
        let smany = many_writers(replicas, &shared, n).await;

        let cluster = engram_test_postgres::Cluster::start().expect("PostgreSQL for the bench");
        let url = cluster.database().unwrap().url();
        let pg = PgStore::connect(&url).await.unwrap();
        let agent = new_agent(&pg, "one").await;
        let (p50, p95, prate) = one_writer(&pg, &agent, n).await;
        let (ps50, ps95, pp50, pp95) = reads(&pg, &agent).await;
        let shared = new_agent(&pg, "shared").await;
        let mut replicas = Vec::new();
        for _ in 0..WRITERS {
            replicas.push(PgStore::connect_with_pool_size(&url, 2).await.unwrap());
        }
        let pmany = many_writers(replicas, &shared, n).await;

        println!(
            "recall memory: {n} turns (user + assistant, one append_messages each), then \
             {SEARCHES} searches (top 10) and pages (newest 50) over {} messages",
            2 * n
        );
        println!(
            "| store | append p50 / p95 ms | turns/s, 1 writer | turns/s, {WRITERS} writers on one agent \
             | search p50 / p95 ms | page p50 / p95 ms |"
        );
        println!("| --- | --- | --- | --- | --- | --- |");
        println!(
            "| SQLite (WAL file) | {s50:.3} / {s95:.3} | {srate:.0} | {smany:.0} | {ss50:.3} / {ss95:.3} | {sp50:.3} / {sp95:.3} |"
        );
        println!(
            "| PostgreSQL 15 (127.0.0.1) | {p50:.3} / {p95:.3} | {prate:.0} | {pmany:.0} | {ps50:.3} / {ps95:.3} | {pp50:.3} / {pp95:.3} |"
        );
    });
}

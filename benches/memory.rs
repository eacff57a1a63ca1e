//! Memory `engram serve` gives back, as a report: `cargo bench --bench memory` (release; the
//! `engram` binary must be built beside it: `cargo build --release -p engram-cli`).
//!
//! Drives a real `engram serve` process over REST the way a long day does — agents chatting
//! with the scripted model, archival inserts, then a round of Agent File exports of every
//! agent — and reads the server's resident set (`VmRSS` in `/proc/<pid>/status`) at start,
//! after the chats, right after the exports, and after it has sat idle. The target:
//! idle RSS ≤ 40 MB after the work. `MEMORY_BENCH_TURNS` / `MEMORY_BENCH_PASSAGES` /
//! `MEMORY_BENCH_IDLE_SECS` scale it.

use engram_mock_llm::{MockLlm, Script};
use engram_suite::cli_agent;
use engram_suite::serve::{Served, env_or};
use serde_json::json;
use std::time::{Duration, Instant};

const AGENTS: usize = 4;

fn main() {
    let turns = env_or("MEMORY_BENCH_TURNS", 150);
    let passages = env_or("MEMORY_BENCH_PASSAGES", 1500);
    let idle = env_or("MEMORY_BENCH_IDLE_SECS", 15);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let mock = MockLlm::start(Script::Brain).await;
        let home = tempfile::tempdir().unwrap();
        let agents: Vec<_> = (0..AGENTS).map(|_| cli_agent(home.path(), &mock)).collect();
        let served = Served::start(home.path(), &[]);
        let (pid, base) = (served.pid, &served.base);
        tokio::time::sleep(Duration::from_secs(1)).await;
        let mut rows = vec![("at start".to_owned(), served.memory().rss)];
        let http = reqwest::Client::new();

        let started = Instant::now();
        let mut peak = 0.0f64;
        for (i, a) in agents.iter().enumerate() {
            for t in 0..turns {
                let text = format!("turn {t}: remember that item {t} of list {i} is blue");
                let r = http
                    .post(format!("{base}/v1/agents/{a}/messages"))
                    .json(&json!({"messages": [{"role": "user", "content": text}]}))
                    .send()
                    .await
                    .unwrap();
                assert!(r.status().is_success(), "{}", r.status());
            }
            for p in 0..passages {
                let text = format!(
                    "Note {p} of agent {i}: the quick brown fox number {p} jumps over lazy dog {}",
                    p * 7 % 1000
                );
                let r = http
                    .post(format!("{base}/v1/agents/{a}/archival-memory"))
                    .json(&json!({"text": text, "tags": ["bench"]}))
                    .send()
                    .await
                    .unwrap();
                assert!(r.status().is_success(), "{}", r.status());
            }
            peak = peak.max(served.memory().rss);
        }
        let work = started.elapsed();
        rows.push((
            format!(
                "after {} turns and {} passages",
                turns * AGENTS,
                passages * AGENTS
            ),
            served.memory().rss,
        ));

        let mut bytes = 0usize;
        for _round in 0..3 {
            for a in &agents {
                let r = http
                    .get(format!("{base}/v1/agents/{a}/export"))
                    .send()
                    .await
                    .unwrap();
                assert!(r.status().is_success(), "{}", r.status());
                bytes += r.bytes().await.unwrap().len();
                peak = peak.max(served.memory().rss);
            }
        }
        rows.push((
            format!(
                "right after {} exports ({:.1} MB)",
                3 * AGENTS,
                bytes as f64 / 1e6
            ),
            served.memory().rss,
        ));
        for s in 1..=idle {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if s == 1 || s == 5 || s == idle {
                rows.push((format!("idle {s} s"), served.memory().rss));
            }
        }

        println!("engram serve resident memory (VmRSS), pid {pid}; work took {work:.1?}");
        for (what, mb) in &rows {
            println!("  {what:<44} {mb:>7.1} MB");
        }
        println!("  {:<44} {peak:>7.1} MB", "peak seen");
        let last = rows.last().unwrap().1;
        println!(
            "idle RSS after the work: {last:.1} MB (target ≤ 40 MB): {}",
            if last <= 40.0 { "met" } else { "NOT met" }
        );
    });
}

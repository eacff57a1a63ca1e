//! Block edits on both stores, as a report: `cargo bench -p engram-store-pg --bench block_ops`.
//!
//! One writer appends `EDITS` lines to a block, one `apply_block_op` at a time (each a
//! transaction with its history row), on the SQLite store (a WAL file in a temp dir) and on the
//! PostgreSQL store (a cluster on 127.0.0.1 started by engram-test-postgres); then `WRITERS`
//! writers with pools of their own (replicas) append to one block at once. Reports p50/p95 per
//! edit and edits per second. Neither store waits for an fsync at commit here (SQLite's
//! `synchronous=NORMAL` in WAL; the test cluster's `synchronous_commit=off`), so the figures
//! compare the stores' own overhead. `BLOCK_BENCH_EDITS` scales it.

use engram_core::{BlockOp, Editor, NewBlock, OpOutcome};
use engram_store::Store;
use engram_store_api::Backend;
use engram_store_pg::PgStore;
use std::time::{Duration, Instant};

const WRITERS: usize = 4;

fn edits() -> usize {
    std::env::var("BLOCK_BENCH_EDITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1_000.0
}

async fn one_writer(b: &impl Backend, n: usize) -> (f64, f64, f64) {
    let block = b
        .create_block(&NewBlock {
            limit: Some(10_000_000),
            ..NewBlock::new("bench", "")
        })
        .await
        .unwrap();
    let mut times = Vec::with_capacity(n);
    let started = Instant::now();
    for i in 0..n {
        let op = BlockOp::Append {
            text: format!("line {i}"),
        };
        let t = Instant::now();
        let out = b
            .apply_block_op(&block.id, &op, &Editor::User)
            .await
            .unwrap();
        times.push(t.elapsed());
        assert!(matches!(out, OpOutcome::Changed(_)));
    }
    let rate = n as f64 / started.elapsed().as_secs_f64();
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.95), rate)
}

async fn many_writers<B: Backend + Clone + 'static>(replicas: Vec<B>, n: usize) -> f64 {
    let block = replicas[0]
        .create_block(&NewBlock {
            limit: Some(10_000_000),
            ..NewBlock::new("shared", "")
        })
        .await
        .unwrap();
    let per = n / replicas.len();
    let started = Instant::now();
    let tasks: Vec<_> = replicas
        .into_iter()
        .enumerate()
        .map(|(w, b)| {
            let id = block.id.clone();
            tokio::spawn(async move {
                for i in 0..per {
                    let op = BlockOp::Append {
                        text: format!("writer {w} line {i}"),
                    };
                    b.apply_block_op(&id, &op, &Editor::User).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    (per * WRITERS) as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let n = edits();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("engram.db");
        let sqlite = Store::open(&path).unwrap();
        let (s50, s95, srate) = one_writer(&sqlite, n).await;
        let replicas: Vec<Store> = (0..WRITERS).map(|_| Store::open(&path).unwrap()).collect();
        let smany = many_writers(replicas, n).await;

        let cluster = engram_test_postgres::Cluster::start().expect("PostgreSQL for the bench");
        let url = cluster.database().unwrap().url();
        let pg = PgStore::connect(&url).await.unwrap();
        let (p50, p95, prate) = one_writer(&pg, n).await;
        let mut replicas = Vec::new();
        for _ in 0..WRITERS {
            replicas.push(PgStore::connect_with_pool_size(&url, 2).await.unwrap());
        }
        let pmany = many_writers(replicas, n).await;

        println!("block edits (apply_block_op: append + history row, one transaction), {n} edits");
        println!("| store | p50 ms | p95 ms | edits/s, 1 writer | edits/s, {WRITERS} writers on one block |");
        println!("| --- | --- | --- | --- | --- |");
        println!("| SQLite (WAL file) | {s50:.3} | {s95:.3} | {srate:.0} | {smany:.0} |");
        println!("| PostgreSQL 15 (127.0.0.1) | {p50:.3} | {p95:.3} | {prate:.0} | {pmany:.0} |");
    });
}

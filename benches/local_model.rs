//! The built-in chat model beside llama.cpp's own server on the same GGUF and threads:
//! `cargo bench --bench local_model` (release; build `cargo build --release -p engram-cli
//! -p engram-llm-worker` first; the model comes from `ENGRAM_TEST_GGUF`, see
//! `.ci/fetch-llm.sh`, the server from `ENGRAM_LLAMA_SERVER`, see `.ci/fetch-llama-server.sh`).
//!
//! 1. **Speed**: prompt reading and generation in tokens/s, `LOCAL_MODEL_ROUNDS` (default 5)
//!    streamed requests to each server, each prompt new from its first token (nothing
//!    reused), 128 tokens asked for, greedy. Prompt rate = prompt tokens / time to the first
//!    token; generation rate = (completion tokens − 1) / the time after it. Both servers use
//!    `LOCAL_MODEL_THREADS` threads (default 2) and a 4,096-token context with one slot.
//! 2. **Prefix reuse**: the time to the first token of an agent's second turn (a system
//!    message of about 1,500 tokens, as memory makes it, then the first exchange and a new
//!    message), with the first turn's cache in place, and with nothing reused (another
//!    prompt replaced the worker's cache; llama-server is asked not to reuse its own).
//! 3. **Memory**: a real `engram serve` on an agent with the built-in model: its `VmRSS`
//!    and the worker's once a message was answered, then the server's after the worker was
//!    stopped for idleness (`ENGRAM_LLM_IDLE`, 5 s here).

use engram_suite::llama_server::LlamaServer;
use engram_suite::serve::{Served, env_or, memory_of};
use engram_suite::{cli, stdout_ok, workspace_bin};
use eventsource_stream::Eventsource as _;
use futures::StreamExt as _;
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One streamed answer, timed.
struct Timed {
    /// From sending to the first generated text or tool call, in s.
    first: f64,
    /// From sending to the end of the stream, in s.
    total: f64,
    prompt_tokens: f64,
    completion_tokens: f64,
    text: String,
}

/// A server under test: its base URL (…/v1), the bearer token it wants, and its process
/// (killed when this is dropped).
struct Server {
    name: &'static str,
    base: String,
    token: Option<String>,
    worker: Option<Child>,
    _llama: Option<LlamaServer>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = &mut self.worker {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn gguf() -> PathBuf {
    PathBuf::from(std::env::var("ENGRAM_TEST_GGUF").expect("ENGRAM_TEST_GGUF (.ci/fetch-llm.sh)"))
}

/// Engram's worker on the test model, started as the engine starts it.
fn start_worker(threads: usize) -> Server {
    let token = "bench-token".to_owned();
    let mut child = Command::new(workspace_bin("engram-llm-worker", "engram-llm-worker"))
        .arg("--model")
        .arg(gguf())
        .args(["--ctx", "4096", "--threads", &threads.to_string()])
        .args(["--name", "smollm2"])
        .env("ENGRAM_WORKER_TOKEN", &token)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start engram-llm-worker");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let base = loop {
        let line = lines.next().expect("the worker exited early").unwrap();
        if let Some(u) = line.strip_prefix("listening on ") {
            break u.trim().to_owned();
        }
    };
    Server {
        name: "engram-llm-worker",
        base,
        token: Some(token),
        worker: Some(child),
        _llama: None,
    }
}

/// llama.cpp's `llama-server` on the same file, context and threads, one slot.
async fn start_llama_server(threads: usize) -> Server {
    let llama = LlamaServer::start(&gguf(), threads).await;
    Server {
        name: "llama-server",
        base: llama.base_url(),
        token: None,
        worker: None,
        _llama: Some(llama),
    }
}

/// Streams one chat completion of `messages` and times it. `reuse: false` asks llama-server
/// not to reuse any cached prompt (`cache_prompt`, its own field; the worker ignores it and
/// is made to start over by another prompt instead).
async fn stream(
    http: &reqwest::Client,
    server: &Server,
    messages: &Value,
    max_tokens: u32,
    reuse: bool,
) -> Timed {
    let body = json!({
        "model": "smollm2", "messages": messages, "max_tokens": max_tokens,
        "temperature": 0.0, "stream": true, "stream_options": {"include_usage": true},
        "cache_prompt": reuse,
    });
    let mut request = http
        .post(format!("{}/chat/completions", server.base))
        .json(&body);
    if let Some(t) = &server.token {
        request = request.bearer_auth(t);
    }
    let started = Instant::now();
    let response = request.send().await.expect("request");
    assert!(response.status().is_success(), "{}", response.status());
    let mut events = response.bytes_stream().eventsource();
    let (mut first, mut text, mut usage) = (None, String::new(), Value::Null);
    while let Some(event) = events.next().await {
        let event = event.expect("event");
        if event.data == "[DONE]" {
            break;
        }
        let chunk: Value = serde_json::from_str(&event.data).expect("chunk");
        if let Some(delta) = chunk["choices"][0]["delta"]["content"].as_str()
            && !delta.is_empty()
        {
            first.get_or_insert_with(|| started.elapsed().as_secs_f64());
            text.push_str(delta);
        }
        if chunk["choices"][0]["delta"]["tool_calls"].is_array() {
            first.get_or_insert_with(|| started.elapsed().as_secs_f64());
        }
        if chunk["usage"].is_object() {
            usage = chunk["usage"].clone();
        }
    }
    let total = started.elapsed().as_secs_f64();
    Timed {
        first: first.unwrap_or(total),
        total,
        prompt_tokens: usage["prompt_tokens"].as_f64().unwrap_or(f64::NAN),
        completion_tokens: usage["completion_tokens"].as_f64().unwrap_or(f64::NAN),
        text,
    }
}

/// About `words` words of plain prose that differ by `seed` from the first word on.
fn prose(seed: usize, words: usize) -> String {
    const WORDS: [&str; 24] = [
        "harbour", "lantern", "river", "morning", "garden", "market", "letter", "window",
        "mountain", "bridge", "winter", "orchard", "candle", "village", "station", "meadow",
        "teacher", "kitchen", "island", "summer", "library", "forest", "painter", "sailor",
    ];
    let mut out = format!("Note {seed}:");
    for i in 0..words {
        out.push(' ');
        out.push_str(WORDS[(i * 7 + seed * 13 + i / 5) % WORDS.len()]);
        if i % 12 == 11 {
            out.push('.');
        }
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Part 1: prompt and generation rates, medians over `rounds`.
async fn speed(http: &reqwest::Client, server: &Server, rounds: usize) -> (f64, f64) {
    let (mut prompt, mut generation) = (Vec::new(), Vec::new());
    // A first request loads what is loaded lazily; it is not counted.
    stream(
        http,
        server,
        &json!([{"role": "user", "content": "Hi"}]),
        8,
        true,
    )
    .await;
    for round in 0..rounds {
        let messages = json!([
            {"role": "system", "content": prose(100 + round, 600)},
            {"role": "user", "content": "Write a long story about the notes above."},
        ]);
        let t = stream(http, server, &messages, 128, true).await;
        prompt.push(t.prompt_tokens / t.first);
        if t.completion_tokens > 1.0 {
            generation.push((t.completion_tokens - 1.0) / (t.total - t.first));
        }
    }
    (median(prompt), median(generation))
}

/// Part 2: time to the first token of a second turn, with the first turn's cache and
/// after another prompt took its place; medians over `rounds`, in ms.
async fn second_turn(http: &reqwest::Client, server: &Server, rounds: usize) -> (f64, f64) {
    let (mut warm, mut cold) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let system = json!({"role": "system", "content": prose(200 + round, 1100)});
        let first = json!([system, {"role": "user", "content": "Hello, who are you?"}]);
        let reply = stream(http, server, &first, 32, true).await.text;
        let second = json!([
            system,
            {"role": "user", "content": "Hello, who are you?"},
            {"role": "assistant", "content": reply},
            {"role": "user", "content": "What is the first note about?"},
        ]);
        warm.push(stream(http, server, &second, 8, true).await.first * 1000.0);
        let other = json!([
            {"role": "system", "content": prose(900 + round, 1100)},
            {"role": "user", "content": "Hi"},
        ]);
        stream(http, server, &other, 8, true).await;
        cold.push(stream(http, server, &second, 8, false).await.first * 1000.0);
    }
    (median(warm), median(cold))
}

/// The pid of a child process of `parent` named `name` (as `/proc` shows it: the first 15
/// bytes), if it has one. Read from every process's `stat` (`pid (comm) state ppid …`): a
/// child spawned from another thread than the main one is not in the main thread's
/// `children` list.
fn child_named(parent: u32, name: &str) -> Option<u32> {
    let comm = name.get(..15).unwrap_or(name);
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let (head, tail) = stat.rsplit_once(") ")?;
            let ppid: u32 = tail.split_whitespace().nth(1)?.parse().ok()?;
            (ppid == parent && head.split_once(" (")?.1 == comm).then_some(pid)
        })
}

/// Part 3: a real server's memory with the worker loaded and after it was stopped.
async fn memory(http: &reqwest::Client, home: &Path, threads: usize) {
    let handle = stdout_ok(&cli(home, &["model", "add", gguf().to_str().unwrap()]));
    let agent = stdout_ok(&cli(
        home,
        &[
            "agent",
            "create",
            "--name",
            "Sam",
            "--model",
            handle.trim(),
            "--embedding",
            "none",
        ],
    ));
    let threads = threads.to_string();
    let served = Served::start(
        home,
        &[
            ("ENGRAM_LLM_IDLE", "5".as_ref()),
            ("ENGRAM_LLM_THREADS", threads.as_ref()),
        ],
    );
    let before = served.memory().rss;
    let r = http
        .post(format!(
            "{}/v1/agents/{}/messages",
            served.base,
            agent.trim()
        ))
        .json(&json!({"messages": [{"role": "user", "content": "Hello! Who are you?"}]}))
        .send()
        .await
        .expect("message");
    assert!(r.status().is_success(), "{}", r.status());
    let worker = child_named(served.pid, "engram-llm-worker").expect("a worker is running");
    let loaded = served.memory().rss;
    let worker_rss = memory_of(worker).map_or(f64::NAN, |m| m.rss);
    let deadline = Instant::now() + Duration::from_secs(60);
    while memory_of(worker).is_some() {
        assert!(Instant::now() < deadline, "the worker was not stopped");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = served.memory().rss;
    println!("\n## Memory (VmRSS, MB)\n");
    println!(
        "| engram serve before | serve + worker, loaded | of which the worker | serve after the worker stopped |"
    );
    println!("|---|---|---|---|");
    println!(
        "| {before:.1} | {:.1} | {worker_rss:.1} | {after:.1} |",
        loaded + worker_rss
    );
}

fn main() {
    let threads = env_or("LOCAL_MODEL_THREADS", 2);
    let rounds = env_or("LOCAL_MODEL_ROUNDS", 5);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let http = reqwest::Client::new();
        println!("# The built-in model beside llama-server ({threads} threads, {rounds} rounds)\n");
        println!("| server | prompt tok/s | generation tok/s | 2nd turn first token, prefix reused | same, nothing reused | ratio |");
        println!("|---|---|---|---|---|---|");
        // One server at a time: they share the cores.
        for which in ["engram-llm-worker", "llama-server"] {
            let server = if which == "llama-server" {
                start_llama_server(threads).await
            } else {
                start_worker(threads)
            };
            let (prompt, generation) = speed(&http, &server, rounds).await;
            let (warm, cold) = second_turn(&http, &server, rounds).await;
            println!(
                "| {} | {prompt:.0} | {generation:.1} | {warm:.0} ms | {cold:.0} ms | {:.1}× |",
                server.name,
                cold / warm
            );
        }
        let home = tempfile::tempdir().unwrap();
        memory(&http, home.path(), threads).await;
    });
}

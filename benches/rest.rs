//! Per-message overhead of the REST API, as a report: `cargo bench --bench rest`.
//!
//! One agent on a zero-latency scripted model (it answers "ok" at once), messaged N times
//! in-process through `Runs::send_message` and N times through `POST /v1/agents/{id}/messages`
//! over loopback HTTP (reqwest → axum router → the same engine). Both paths make the same model
//! call, so the difference of the round-trip percentiles is what the REST layer costs: HTTP,
//! the guard, JSON in and Letta's response shape out.

use engram_core::LoopStyle;
use engram_mock_llm::{MockLlm, Script};
use engram_server::{Auth, ServerConfig};
use engram_suite::Home;
use engram_suite::corpus::percentile;
use std::sync::Arc;
use std::time::{Duration, Instant};

const WARMUP: usize = 20;
const ROUNDS: usize = 300;

fn report(name: &str, mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let (p50, p95) = (percentile(&samples, 0.50), percentile(&samples, 0.95));
    println!(
        "{name:<36} p50 {:>8.3} ms   p95 {:>8.3} ms   (n = {})",
        p50.as_secs_f64() * 1e3,
        p95.as_secs_f64() * 1e3,
        samples.len()
    );
    (p50, p95)
}

async fn direct_once(home: &Home, agent: &engram_core::AgentId) -> Duration {
    let started = Instant::now();
    let (outcome, _) = home.chat(agent, "hello there").await;
    let took = started.elapsed();
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    took
}

async fn rest_once(http: &reqwest::Client, url: &str) -> Duration {
    let body = serde_json::json!({"messages": [{"role": "user", "content": "hello there"}]});
    let started = Instant::now();
    let resp = http
        .post(url)
        .bearer_auth("bench")
        .json(&body)
        .send()
        .await
        .expect("send");
    assert!(resp.status().is_success(), "{}", resp.status());
    let _: serde_json::Value = resp.json().await.expect("json");
    started.elapsed()
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let mock = MockLlm::start(Script::Queue).await;
        let home = Home::new();
        let direct_agent = home.agent(&mock, LoopStyle::ToolLoop).await;
        let rest_agent = home.agent(&mock, LoopStyle::ToolLoop).await;
        let engram = engram_suite::open(
            home.path(),
            Arc::new(engram_secrets::MemoryStore::default()),
        );
        let config = ServerConfig::new(Auth::Token(secrecy::SecretString::from("bench")));
        let base = engram_suite::serve(engram, config).await;
        let http = reqwest::Client::new();
        let url = format!("{base}/v1/agents/{rest_agent}/messages");
        // Interleaved, so both agents' histories grow alike and drift hits both paths.
        let (mut direct, mut rest) = (Vec::new(), Vec::new());
        for i in 0..WARMUP + ROUNDS {
            let d = direct_once(&home, &direct_agent).await;
            let r = rest_once(&http, &url).await;
            if i >= WARMUP {
                direct.push(d);
                rest.push(r);
            }
        }

        println!("POST /messages round trip, zero-latency scripted model, tool loop, 1 step:");
        let (d50, d95) = report("in-process send_message", direct);
        let (r50, r95) = report("REST POST /v1/agents/{id}/messages", rest);
        println!(
            "{:<36} p50 {:>8.3} ms   p95 {:>8.3} ms",
            "REST overhead",
            r50.saturating_sub(d50).as_secs_f64() * 1e3,
            r95.saturating_sub(d95).as_secs_f64() * 1e3
        );
    });
}

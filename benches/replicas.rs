//! A server's replicas on PostgreSQL, as a report: `cargo bench --bench replicas`.
//!
//! 8 agents on the scripted model (it answers at once), 8 clients each sending 40 messages
//! through `POST /v1/agents/{id}/messages` over loopback HTTP, every request to the next
//! replica (a round-robin): messages per second and the time per message, for one server on
//! the desktop's SQLite file and for 1, 2 and 3 replicas on one PostgreSQL database (the
//! tests' own cluster: loopback, durability off). Replicas are engines of their own — their
//! own data directory, connection pool and HTTP server — in one process; on a 2-core machine
//! they share the cores, so more replicas add no speed here: the report says what sharing a
//! database costs, not how far it scales on more machines.

use engram_mock_llm::{MockLlm, Script};
use engram_secrets::MemoryStore;
use engram_server::{Auth, ServerConfig};
use engram_service::{Engram, Options, ProviderSetup};
use engram_store_pg::PgStore;
use engram_suite::corpus::percentile;
use secrecy::SecretString;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const AGENTS: usize = 8;
const CLIENTS: usize = 8;
const MESSAGES: usize = 40;

/// An engine on `home`, on PostgreSQL at `url` when given, served on a loopback port; its
/// `openai` provider is the scripted model.
async fn server(
    home: &std::path::Path,
    url: Option<&str>,
    mock: &MockLlm,
) -> (Arc<Engram>, String) {
    let options = Options {
        home: Some(home.to_owned()),
        secrets: Arc::new(MemoryStore::default()),
        env: Arc::new(|_| None),
    };
    let engram = match url {
        Some(url) => {
            let pg = Arc::new(PgStore::connect(url).await.expect("database"));
            Engram::open_shared(options, pg.clone(), pg).expect("open")
        }
        None => Engram::open(options).expect("open"),
    };
    engram
        .providers()
        .set(ProviderSetup {
            name: "openai".into(),
            base_url: Some(mock.base_url()),
            api_key: Some(SecretString::from("sk-bench")),
            ..ProviderSetup::default()
        })
        .expect("provider");
    let base = engram_suite::serve(engram.clone(), ServerConfig::new(Auth::Disabled)).await;
    (engram, base)
}

/// Messages/s and p50/p95 per message over `bases`, round-robin.
async fn run(bases: Vec<String>, mock: &MockLlm) -> (f64, Duration, Duration) {
    let http = reqwest::Client::new();
    let bases = Arc::new(bases);
    let next = Arc::new(AtomicUsize::new(0));
    let mut agents = Vec::new();
    for n in 0..AGENTS {
        let made: Value = http
            .post(format!("{}/v1/agents/", bases[n % bases.len()]))
            .json(&json!({
                "name": format!("bench {n}"),
                "model": "openai/mock-small",
                "embedding": "none",
                "llm_config": {"model": "mock-small", "model_endpoint_type": "openai",
                               "model_endpoint": mock.base_url(), "context_window": 32000},
            }))
            .send()
            .await
            .expect("create")
            .json()
            .await
            .expect("json");
        agents.push(made["id"].as_str().expect("id").to_owned());
    }
    let started = Instant::now();
    let mut clients = Vec::new();
    for c in 0..CLIENTS {
        let (http, bases, next) = (http.clone(), bases.clone(), next.clone());
        let agent = agents[c % AGENTS].clone();
        clients.push(tokio::spawn(async move {
            let mut times = Vec::with_capacity(MESSAGES);
            for m in 0..MESSAGES {
                let base = &bases[next.fetch_add(1, Ordering::Relaxed) % bases.len()];
                let body = json!({"messages": [{"role": "user", "content": format!("note {m}")}]});
                let sent = Instant::now();
                let resp = http
                    .post(format!("{base}/v1/agents/{agent}/messages"))
                    .json(&body)
                    .send()
                    .await
                    .expect("send");
                assert!(resp.status().is_success(), "{}", resp.status());
                let _: Value = resp.json().await.expect("json");
                times.push(sent.elapsed());
            }
            times
        }));
    }
    let mut all = Vec::new();
    for c in clients {
        all.extend(c.await.expect("client"));
    }
    let rate = all.len() as f64 / started.elapsed().as_secs_f64();
    all.sort();
    (rate, percentile(&all, 0.50), percentile(&all, 0.95))
}

fn row(name: &str, (rate, p50, p95): (f64, Duration, Duration)) {
    println!(
        "| {name} | {rate:.0} | {:.1} / {:.1} ms |",
        p50.as_secs_f64() * 1e3,
        p95.as_secs_f64() * 1e3
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let mock = MockLlm::start(Script::Brain).await;
        println!(
            "{CLIENTS} clients × {MESSAGES} messages on {AGENTS} agents, round-robin over the replicas\n"
        );
        println!("| server | messages/s | p50 / p95 per message |\n| --- | --- | --- |");
        let home = tempfile::tempdir().expect("home");
        let (_sqlite, base) = server(home.path(), None, &mock).await;
        row("SQLite, 1 server", run(vec![base], &mock).await);
        for replicas in 1..=3 {
            let url = engram_test_postgres::database().url();
            let mut homes = Vec::new();
            let mut bases = Vec::new();
            let mut engines = Vec::new();
            for _ in 0..replicas {
                let home = tempfile::tempdir().expect("home");
                let (engram, base) = server(home.path(), Some(&url), &mock).await;
                homes.push(home);
                bases.push(base);
                engines.push(engram);
            }
            let name = format!("PostgreSQL, {replicas} replica{}", if replicas > 1 { "s" } else { "" });
            row(&name, run(bases, &mock).await);
        }
    });
}

//! The MCP memory server's cost, as a report: `cargo build --release -p engram-cli --bins &&
//! cargo bench --bench mcp_memory`.
//!
//! rmcp's client launches `engram mcp serve` over stdio (as Claude Code or Cursor would) on a
//! data directory whose agent holds a 2,000-character block and 2,000 archival passages, then
//! times warm calls: `view` of the block, `str_replace` on it (a versioned write with its history
//! row, to and fro), and `search_memory` against the same archival search run in process — the
//! difference is what the MCP hop adds. Goals: view and str_replace ≤ 5 ms p50; search_memory at
//! most 2 ms over the search itself.

use engram_core::{AgentId, LlmConfig, NewAgent, NewBlock, NewPassage, TagMatch};
use engram_suite::Home;
use engram_suite::corpus::{percentile, sentence, word};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const CALLS: usize = 300;
const SEARCHES: usize = 100;
const PASSAGES: u64 = 2_000;

/// `engram` next to the bench executable, or `ENGRAM_BIN`.
fn engram() -> PathBuf {
    if let Some(bin) = std::env::var_os("ENGRAM_BIN") {
        return bin.into();
    }
    let exe = std::env::current_exe().expect("bench path");
    let bin = exe
        .parent()
        .and_then(|p| p.parent())
        .expect("target dir")
        .join("engram");
    assert!(
        bin.exists(),
        "{} is missing: cargo build --release -p engram-cli --bins",
        bin.display()
    );
    bin
}

async fn setup(home: &Home) -> AgentId {
    let mut llm = LlmConfig::new("openai/unused");
    llm.base_url = Some("http://127.0.0.1:9/v1".into());
    let block = (0..200).map(word).collect::<Vec<_>>().join(" ");
    let block: String = format!("Marker: alpha\n{block}")
        .chars()
        .take(2_000)
        .collect();
    let id = home
        .engram
        .agents()
        .create(NewAgent {
            name: "Sam".into(),
            llm: Some(llm),
            blocks: vec![NewBlock::new("human", block)],
            ..NewAgent::default()
        })
        .await
        .expect("agent")
        .agent
        .id;
    let passages: Vec<NewPassage> = (0..PASSAGES)
        .map(|i| NewPassage {
            text: sentence(i),
            tags: vec![],
            embedding: None,
            created_at: None,
        })
        .collect();
    home.engram
        .store()
        .passages()
        .insert(&id, &passages)
        .expect("passages");
    id
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> Duration {
    let Value::Object(args) = args else {
        unreachable!()
    };
    let started = Instant::now();
    let out = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .expect("tools/call");
    let took = started.elapsed();
    assert_ne!(out.is_error, Some(true), "{out:?}");
    took
}

fn report(name: &str, mut times: Vec<Duration>) -> Duration {
    times.sort();
    let (p50, p95) = (percentile(&times, 0.5), percentile(&times, 0.95));
    println!(
        "  {name:<44} {:>7.2} / {:>7.2} ms",
        p50.as_secs_f64() * 1e3,
        p95.as_secs_f64() * 1e3
    );
    p50
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let home = Home::new();
        let agent = setup(&home).await;
        let mut cmd = tokio::process::Command::new(engram());
        cmd.arg("--home")
            .arg(home.path())
            .args(["mcp", "serve", "--agent", "Sam", "--client", "bench"])
            .env("ENGRAM_SECRETS", "memory")
            .env_remove("ENGRAM_HOME");
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start engram mcp serve");
        let client = ().serve(transport).await.expect("handshake");
        let view = json!({"command": "view", "path": "/memories/human.md"});
        for _ in 0..20 {
            call(&client, "memory", view.clone()).await;
        }
        let mut views = Vec::with_capacity(CALLS);
        for _ in 0..CALLS {
            views.push(call(&client, "memory", view.clone()).await);
        }
        let mut edits = Vec::with_capacity(CALLS);
        for i in 0..CALLS {
            let (old, new) = if i % 2 == 0 {
                ("alpha", "beta")
            } else {
                ("beta", "alpha")
            };
            let args = json!({"command": "str_replace", "path": "/memories/human.md",
                "old_str": format!("Marker: {old}"), "new_str": format!("Marker: {new}")});
            edits.push(call(&client, "memory", args).await);
        }
        let queries: Vec<String> = (0..SEARCHES as u64)
            .map(|i| format!("{} {}", word(i * 7 % 500), word(i * 13 % 2_000)))
            .collect();
        let mut direct = Vec::with_capacity(SEARCHES);
        let mut over_mcp = Vec::with_capacity(SEARCHES);
        for q in &queries {
            let started = Instant::now();
            home.engram
                .archival()
                .search(&agent, q, vec![], TagMatch::Any, (None, None), 5)
                .await
                .expect("search");
            direct.push(started.elapsed());
            over_mcp.push(call(&client, "search_memory", json!({"query": q, "limit": 5})).await);
        }
        println!("MCP memory server over stdio, warm (median / p95):");
        report(&format!("memory view, 2,000-char block ({CALLS}x)"), views);
        report(&format!("memory str_replace, versioned ({CALLS}x)"), edits);
        let base = report(&format!("archival search in process ({SEARCHES}x)"), direct);
        let mcp = report(&format!("search_memory over MCP ({SEARCHES}x)"), over_mcp);
        println!(
            "  search_memory minus the search itself:      {:>7.2} ms",
            (mcp.as_secs_f64() - base.as_secs_f64()) * 1e3
        );
        let _ = client.cancel().await;
    });
}

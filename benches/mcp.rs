//! MCP tool call cost, as a report: `cargo build --release -p engram-mcp --bins && cargo bench
//! --bench mcp`.
//!
//! Through the real hub (rmcp's client) against the test server `mock-mcp` (rmcp's server):
//! starting a stdio server (spawn, handshake, `tools/list`), and one warm `tools/call` over
//! stdio and over streamable HTTP on 127.0.0.1.

use engram_mcp::hub::{Launch, ServerSpec};
use engram_mcp::{Hub, mock};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

const STARTS: usize = 10;
const CALLS: usize = 200;

/// `mock-mcp` next to the bench executable (`target/release/`), or `MOCK_MCP_BIN`.
fn mock_mcp() -> String {
    if let Ok(bin) = std::env::var("MOCK_MCP_BIN") {
        return bin;
    }
    let exe = std::env::current_exe().expect("bench path");
    let bin: PathBuf = exe
        .parent()
        .and_then(|p| p.parent())
        .expect("target dir")
        .join("mock-mcp");
    assert!(
        bin.exists(),
        "{} is missing: cargo build --release -p engram-mcp --bins",
        bin.display()
    );
    bin.display().to_string()
}

fn stdio(id: &str) -> ServerSpec {
    ServerSpec {
        id: id.into(),
        name: "bench".into(),
        launch: Launch::Stdio {
            command: mock_mcp(),
            args: vec![],
            env: vec![],
        },
    }
}

/// Median and 95th percentile.
fn stats(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    let n = times.len();
    (times[n / 2], times[(n - 1) * 95 / 100])
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

async fn warm_calls(hub: &Arc<Hub>, spec: &ServerSpec) -> (Duration, Duration) {
    let args = json!({"a": 2, "b": 3}).as_object().cloned().unwrap();
    hub.list_tools(spec).await.expect("server starts");
    let mut times = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let started = Instant::now();
        let out = hub
            .call_tool(spec, "add", args.clone())
            .await
            .expect("call");
        times.push(started.elapsed());
        assert_eq!(out.text, "5");
    }
    stats(times)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let hub = Arc::new(Hub::new(Duration::from_secs(30), Duration::from_secs(300)));
        let mut starts = Vec::with_capacity(STARTS);
        for i in 0..STARTS {
            let spec = stdio(&format!("start-{i}"));
            let started = Instant::now();
            hub.list_tools(&spec).await.expect("server starts");
            starts.push(started.elapsed());
            hub.forget(&spec.id).await;
        }
        let (start_p50, start_p95) = stats(starts);
        let (stdio_p50, stdio_p95) = warm_calls(&hub, &stdio("warm")).await;
        let server = mock::serve_http("127.0.0.1:0".parse().unwrap())
            .await
            .expect("http server");
        let http = ServerSpec {
            id: "http".into(),
            name: "bench-http".into(),
            launch: Launch::Http {
                url: server.url(),
                bearer: None,
            },
        };
        let (http_p50, http_p95) = warm_calls(&hub, &http).await;
        println!("MCP (median / p95):");
        println!(
            "  stdio server start + handshake + tools/list ({STARTS}x): {} / {}",
            ms(start_p50),
            ms(start_p95)
        );
        println!(
            "  tools/call over stdio, warm ({CALLS}x):               {} / {}",
            ms(stdio_p50),
            ms(stdio_p95)
        );
        println!(
            "  tools/call over streamable HTTP, warm ({CALLS}x):     {} / {}",
            ms(http_p50),
            ms(http_p95)
        );
    });
}

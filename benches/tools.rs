//! User tool call cost, as a report: `cargo bench --bench tools`.
//!
//! One call of a small Python tool through the real runner, three ways: in the sandbox
//! (bubblewrap, seccomp, prlimit), in the sandbox with the network on, and unsandboxed (the
//! escape hatch for machines without a sandbox). The difference is what the sandbox costs.

use engram_tools::{PythonRunner, ToolRun, ToolStatus};
use serde_json::json;
use std::time::{Duration, Instant};

const RUNS: usize = 30;

const SOURCE: &str = "def add(a: int, b: int) -> int:\n    \"\"\"Add.\"\"\"\n    return a + b\n";

fn call(network: bool, allow_unsandboxed: bool) -> ToolRun {
    ToolRun {
        source: SOURCE.into(),
        name: "add".into(),
        arguments: json!({"a": 2, "b": 3}),
        agent_id: "agent-bench".into(),
        agent_name: "bench".into(),
        blocks: Vec::new(),
        network,
        allow_unsandboxed,
        bridge: None,
    }
}

/// Median and 95th percentile of `RUNS` calls.
async fn time(runner: &PythonRunner, call: &ToolRun) -> (Duration, Duration) {
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let started = Instant::now();
        let out = runner.run(call).await;
        times.push(started.elapsed());
        assert_eq!(
            (out.status, out.message.as_str()),
            (ToolStatus::Ok, "5"),
            "{out:?}"
        );
    }
    times.sort();
    (times[RUNS / 2], times[(RUNS - 1) * 95 / 100])
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let runner = PythonRunner::discover().expect("python3");
        let unsandboxed = runner.clone().with_sandbox(engram_tools::Sandbox::probe(
            "/nonexistent/engram-bench/bwrap".as_ref(),
        ));
        println!("user tool call, {RUNS} calls each (median / p95):");
        match runner.sandbox() {
            Ok(_) => {
                let (m, p) = time(&runner, &call(false, false)).await;
                println!("  sandboxed, network off   {} / {}", ms(m), ms(p));
                let (m, p) = time(&runner, &call(true, false)).await;
                println!("  sandboxed, network on    {} / {}", ms(m), ms(p));
            }
            Err(u) => println!("  sandboxed: not available here ({u})"),
        }
        let (m, p) = time(&unsandboxed, &call(false, true)).await;
        println!("  unsandboxed              {} / {}", ms(m), ms(p));
    });
}

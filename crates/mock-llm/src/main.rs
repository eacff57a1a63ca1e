//! `mock-llm`: the scripted model server as a process, for test harnesses in other languages.
//!
//! `mock-llm [--port 0] [--script brain|queue] [--print-port-file PATH] [--context-window N]
//! [--token-factor F] [--ramble-summaries]` prints
//! `listening on http://127.0.0.1:PORT/v1` once ready and serves until killed. Queue replies
//! through `POST /_mock/push`; read the log at `GET /_mock/requests` and `GET /_mock/violations`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, ValueEnum};
use engram_mock_llm::{Limits, MockLlm, Script};

/// A scripted OpenAI- and Anthropic-compatible model server on 127.0.0.1.
#[derive(Parser, Debug)]
#[command(name = "mock-llm", version)]
struct Args {
    /// Port to listen on (0 = any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Where answers come from when no reply was pushed.
    #[arg(long, value_enum, default_value_t = ScriptArg::Brain)]
    script: ScriptArg,
    /// Also write the bound port (digits only) to this file once listening.
    #[arg(long, value_name = "PATH")]
    print_port_file: Option<PathBuf>,
    /// Refuse prompts over this many tokens, as a real server's context length does.
    #[arg(long, value_name = "TOKENS")]
    context_window: Option<u64>,
    /// Count prompt tokens this many times Engram's estimate (e.g. 1.25).
    #[arg(long, value_name = "FACTOR")]
    token_factor: Option<f64>,
    /// Answer summarisation requests at great length, ignoring max_tokens.
    #[arg(long)]
    ramble_summaries: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ScriptArg {
    /// The built-in rule-based memory agent.
    Brain,
    /// Only pushed replies; "ok" when the queue is empty.
    Queue,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let script = match args.script {
        ScriptArg::Brain => Script::Brain,
        ScriptArg::Queue => Script::Queue,
    };
    let mock = MockLlm::start_on(args.port, script)
        .await
        .with_context(|| format!("cannot bind 127.0.0.1:{}", args.port))?;
    if args.context_window.is_some() || args.token_factor.is_some() || args.ramble_summaries {
        mock.set_limits(Some(Limits {
            context_window: args.context_window,
            token_factor: args.token_factor.unwrap_or(1.0),
            ramble_summaries: args.ramble_summaries,
        }));
    }
    if let Some(path) = &args.print_port_file {
        // Write then rename, so a harness polling for the file never reads it half-written.
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, mock.port().to_string())
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening on {}", mock.base_url())?;
    stdout.flush()?;
    drop(stdout);
    shutdown_signal().await;
    drop(mock);
    Ok(())
}

/// Ctrl-C, or SIGTERM on Unix (what harnesses send).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

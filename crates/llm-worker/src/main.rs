//! `engram-llm-worker`: Engram's built-in chat model. Loads one GGUF model with llama.cpp and
//! serves an OpenAI-compatible API (`GET /v1/models`, `POST /v1/chat/completions`, streamed or
//! not, with tools) on 127.0.0.1 at a free port, for the engine that started it. Every request
//! needs `Authorization: Bearer $ENGRAM_WORKER_TOKEN`. Once the model is loaded it prints
//! `listening on http://127.0.0.1:PORT/v1` on standard output.
//!
//! It runs as its own process so that a crash inside llama.cpp (an assertion aborts the whole
//! process) takes down only the worker, and its memory comes back when the engine stops it.

mod api;
mod engine;
mod server;

use anyhow::{Context as _, Result, bail};
use clap::Parser;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

/// The environment variable with the bearer token requests must carry.
const TOKEN_ENV: &str = "ENGRAM_WORKER_TOKEN";

/// Serves one GGUF model over an OpenAI-compatible API on 127.0.0.1.
#[derive(Parser)]
#[command(name = "engram-llm-worker", version, about)]
struct Args {
    /// The GGUF model file.
    #[arg(long, value_name = "PATH")]
    model: PathBuf,
    /// Context size in tokens (default: the model's training context, at most 4096).
    #[arg(long, value_name = "N")]
    ctx: Option<u32>,
    /// CPU threads (default: half the logical CPUs, at least one).
    #[arg(long, value_name = "N")]
    threads: Option<u32>,
    /// The model's id in the API (default: the file name without extension, lowercased).
    #[arg(long)]
    name: Option<String>,
    /// Port on 127.0.0.1 (default: a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Exit when standard input closes: the engine keeps a pipe open while it lives, so the
    /// worker does not outlive it even when it is killed.
    #[arg(long)]
    exit_with_stdin: bool,
}

fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("ENGRAM_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    // llama.cpp's own log lines go through the same filter (quiet unless ENGRAM_LOG asks).
    llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
    let args = Args::parse();
    let token = std::env::var(TOKEN_ENV).unwrap_or_default();
    if token.trim().is_empty() {
        bail!("{TOKEN_ENV} is not set: the worker serves only clients that know its token");
    }
    if !args.model.is_file() {
        bail!("{} is not a file", args.model.display());
    }
    let name = args.name.clone().unwrap_or_else(|| {
        args.model
            .file_stem()
            .map(|s| s.to_string_lossy().to_lowercase())
            .unwrap_or_else(|| "model".into())
    });
    let (facts, jobs) = engine::start(engine::Settings {
        model: args.model.clone(),
        ctx: args.ctx,
        threads: args.threads,
    })?;
    if args.exit_with_stdin {
        std::thread::spawn(|| {
            // Reads until end of file (the engine closed its end or died), then leaves.
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            std::process::exit(0);
        });
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port))
            .await
            .context("cannot listen on 127.0.0.1")?;
        let addr = listener.local_addr()?;
        let state = Arc::new(server::AppState {
            name,
            facts,
            jobs,
            token,
        });
        let mut out = std::io::stdout();
        writeln!(out, "listening on http://{addr}/v1")?;
        out.flush()?;
        axum::serve(listener, server::router(state))
            .await
            .context("the server stopped")
    })
}

//! llama.cpp's own `llama-server` (built by `.ci/fetch-llama-server.sh`, found through
//! `ENGRAM_LLAMA_SERVER`) on a GGUF, for the tests and the bench that put it beside Engram's
//! built-in worker: started on a free port of 127.0.0.1, its log kept in a file, killed on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `llama-server`.
pub struct LlamaServer {
    child: Child,
    port: u16,
    log: tempfile::NamedTempFile,
}

impl LlamaServer {
    /// The binary. Panics (never skips) without it: tests/run.sh builds it.
    pub fn binary() -> PathBuf {
        let path = std::env::var("ENGRAM_LLAMA_SERVER").unwrap_or_else(|_| {
            panic!("ENGRAM_LLAMA_SERVER is not set: run `bash .ci/fetch-llama-server.sh` and export its output (tests/run.sh does)")
        });
        let path = PathBuf::from(path);
        assert!(path.is_file(), "{} is missing", path.display());
        path
    }

    /// Starts it on `gguf` as the model `smollm2`, with a 4,096-token context, one slot (so the
    /// whole context is one conversation's) and `threads` threads, and waits (up to 120 s) until
    /// `/health` says the model is loaded.
    pub async fn start(gguf: &Path, threads: usize) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let log = tempfile::NamedTempFile::new().expect("log file");
        let child = Command::new(Self::binary())
            .arg("-m")
            .arg(gguf)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args([
                "-c",
                "4096",
                "-np",
                "1",
                "-t",
                &threads.to_string(),
                "--jinja",
            ])
            .args(["--alias", "smollm2"])
            .stdout(Stdio::null())
            .stderr(log.reopen().expect("log file"))
            .spawn()
            .expect("start llama-server");
        let server = Self { child, port, log };
        let health = format!("http://127.0.0.1:{port}/health");
        let deadline = Instant::now() + Duration::from_secs(120);
        while !reqwest::get(&health)
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            assert!(
                Instant::now() < deadline,
                "llama-server did not become ready: {}",
                server.log_text()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        server
    }

    /// Its OpenAI-compatible base URL (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Its log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// The HTTP status of every chat request it answered, from its log.
    pub fn chat_statuses(&self) -> Vec<u16> {
        self.log_text()
            .lines()
            .filter(|l| l.contains("done request: POST /v1/chat/completions"))
            .filter_map(|l| l.split_whitespace().last()?.parse().ok())
            .collect()
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

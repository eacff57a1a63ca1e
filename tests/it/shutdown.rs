//! `engram serve` stops cleanly on SIGTERM and SIGHUP (what `kill`, service managers and a
//! closing terminal send): a run in flight is cancelled, the process exits 0, the write-ahead
//! log is checkpointed into the database file, and no committed step is lost.

use engram_mock_llm::{MockLlm, Reply, Script};
use engram_suite::{cli_agent, cli_command};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

async fn stops_cleanly_on(signal: &str) {
    let mock = MockLlm::start(Script::Queue).await;
    let home = tempfile::tempdir().unwrap();
    let agent = cli_agent(home.path(), &mock);

    let mut child = cli_command(home.path())
        .args(["serve", "--port", "0", "--no-auth"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let base = loop {
        let line = lines.next().expect("engram serve exited early").unwrap();
        if let Some(u) = line.strip_prefix("listening on ") {
            break u.trim().to_owned();
        }
    };
    let http = reqwest::Client::new();
    let send = |text: &str| {
        http.post(format!("{base}/v1/agents/{agent}/messages"))
            .json(&json!({"messages": [{"role": "user", "content": text}]}))
            .send()
    };

    // One committed turn, then a second one whose model never answers.
    mock.push(Reply::text("Hello, Bob."));
    let first = send("my name is Bob").await.unwrap();
    assert!(first.status().is_success(), "{}", first.status());
    mock.push(Reply::Hang);
    let pending = tokio::spawn(send("are you there?"));
    let started = Instant::now();
    while mock.chat_requests().len() < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "second run never reached the model"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let status = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let started = Instant::now();
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "engram serve did not stop within 15 s of SIG{signal}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(exit.success(), "SIG{signal}: {exit}");
    // The cancelled run was answered (it keeps what arrived: nothing) before the server went.
    let _ = pending.await.unwrap();

    let db = home.path().join(engram_service::DB_FILE);
    let wal = Path::new(&format!("{}-wal", db.display())).to_owned();
    assert!(
        !wal.exists() || std::fs::metadata(&wal).unwrap().len() == 0,
        "SIG{signal} left a write-ahead log of {} bytes",
        std::fs::metadata(&wal).unwrap().len()
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let replies: Vec<String> = conn
        .prepare(
            "SELECT content FROM messages WHERE agent_id = ?1 AND role = 'assistant' ORDER BY seq",
        )
        .unwrap()
        .query_map([agent.as_str()], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(replies.iter().any(|r| r == "Hello, Bob."), "{replies:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_cancels_runs_checkpoints_and_exits_zero() {
    stops_cleanly_on("TERM").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_stops_the_server_the_same_way() {
    stops_cleanly_on("HUP").await;
}

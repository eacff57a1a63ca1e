//! The room as a stdio MCP server would use it: a long-lived program spoken to over its stdin
//! and stdout, line by line, with no Python harness in between.

use crate::support;

use engram_sandbox::Policy;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::test]
async fn a_stdio_program_talks_over_its_pipes_and_ends_with_its_handle() {
    let scratch = tempfile::tempdir().unwrap();
    let policy = Policy {
        scratch: scratch.path().to_path_buf(),
        ..Policy::default()
    };
    // `sed` answering each request line, as a JSON-RPC server would.
    let sed = ["/usr/bin/sed", "/bin/sed"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("sed");
    let mut child = support::sandbox()
        .command(&policy, sed, &["-u".into(), "s/ping/pong/".into()])
        .unwrap()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for i in 0..3 {
        stdin
            .write_all(format!("{{\"id\": {i}, \"method\": \"ping\"}}\n").as_bytes())
            .await
            .unwrap();
        let answer = lines.next_line().await.unwrap().unwrap();
        assert_eq!(answer, format!("{{\"id\": {i}, \"method\": \"pong\"}}"));
    }
    // Dropping the handle kills the room (kill_on_drop), as a client shutting down would.
    let pid = child.id().unwrap();
    drop(stdin);
    drop(child);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        state.is_empty() || state.contains(") Z"),
        "bubblewrap {pid} is still running: {state}"
    );
}

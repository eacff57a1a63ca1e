//! A machine without any OS keychain (`ENGRAM_SECRETS=none`: the keychain store with no keychain
//! to choose). Nothing that needs no secret may touch it: a keyless local model server is set up
//! and chatted with, an MCP server without secrets is tested; only storing a key fails, saying
//! what to do, and leaves nothing behind.

use engram_mock_llm::{MockLlm, Script};
use engram_suite::{cli_command, mock_mcp_bin, stdout_ok};
use std::io::Write as _;
use std::path::Path;
use std::process::{Output, Stdio};

fn engram(home: &Path, args: &[&str]) -> Output {
    cli_command(home)
        .env("ENGRAM_SECRETS", "none")
        .args(args)
        .output()
        .expect("run engram")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyless_server_is_set_up_and_chatted_with_without_a_keychain() {
    let mock = MockLlm::start(Script::Brain).await;
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let url = mock.base_url();

    stdout_ok(&engram(
        h,
        &["provider", "set", "local", "--base-url", &url],
    ));
    let listed = stdout_ok(&engram(h, &["provider", "list"]));
    assert!(listed.contains("local"), "{listed}");
    let id = stdout_ok(&engram(
        h,
        &[
            "agent",
            "create",
            "--name",
            "Sam",
            "--model",
            "local/mock-small",
            "--block",
            "human=",
        ],
    ))
    .trim()
    .to_owned();
    let reply = stdout_ok(&engram(h, &["chat", &id, "--message", "my name is Bob"]));
    assert!(reply.contains("Bob"), "{reply}");
    assert!(
        mock.chat_requests()
            .iter()
            .all(|r| r.authorization.is_none()),
        "no key was sent"
    );
}

#[test]
fn storing_a_key_without_a_keychain_says_what_to_do_and_keeps_nothing() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let mut child = cli_command(h)
        .env("ENGRAM_SECRETS", "none")
        .args(["provider", "set", "openai", "--api-key-stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"sk-never-stored-anywhere")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no keychain available"), "{err}");
    assert!(
        err.contains("OPENAI_API_KEY"),
        "names the other way in: {err}"
    );
    assert!(!err.contains("sk-never-stored-anywhere"), "{err}");
    let listed = stdout_ok(&engram(h, &["provider", "list"]));
    assert!(!listed.contains("openai"), "nothing half-stored: {listed}");
}

#[test]
fn an_mcp_server_without_secrets_is_tested_without_a_keychain() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let bin = mock_mcp_bin();
    let id = stdout_ok(&engram(
        h,
        &["mcp", "add", "files", "--", bin.to_str().unwrap()],
    ));
    assert!(id.trim().starts_with("mcp_server-"), "{id}");
    let tested = stdout_ok(&engram(h, &["mcp", "test", "files"]));
    assert!(tested.starts_with("ok: 5 tools"), "{tested}");
}

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

/// `engram serve` on a machine without a keychain starts and guards its API with a token made
/// for this run (printed by `--show-token`), never written anywhere; the next start has another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engram_serve_without_a_keychain_uses_a_token_for_this_run() {
    use std::io::{BufRead as _, BufReader};
    let home = tempfile::tempdir().unwrap();
    let start = || {
        let mut child = cli_command(home.path())
            .env("ENGRAM_SECRETS", "none")
            .args(["serve", "--port", "0", "--show-token"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let (mut base, mut token) = (None, None);
        while base.is_none() || token.is_none() {
            let line = lines.next().expect("serve exited early").unwrap();
            if let Some(a) = line.strip_prefix("listening on ") {
                base = Some(a.trim().to_owned());
            }
            if let Some(t) = line.strip_prefix("token: ") {
                token = Some(t.trim().to_owned());
            }
        }
        (child, base.unwrap(), token.unwrap())
    };
    let (mut first, base, token) = start();
    let http = reqwest::Client::new();
    let agents = |t: String| http.get(format!("{base}/v1/agents/")).bearer_auth(t).send();
    assert_eq!(agents(token.clone()).await.unwrap().status(), 200);
    assert_eq!(agents("engram-wrong".into()).await.unwrap().status(), 401);
    first.kill().unwrap();
    first.wait().unwrap();
    let (mut second, _, again) = start();
    assert_ne!(token, again, "a token for each run");
    second.kill().unwrap();
    second.wait().unwrap();
    let files = walk(home.path());
    assert!(
        files
            .iter()
            .all(|(_, bytes)| !contains(bytes, token.as_bytes())),
        "the token was written to {:?}",
        files.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
}

/// Every file under `dir` with its bytes.
fn walk(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path, bytes));
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

//! Running hostile Python in a real room: the machine's sandbox, the machine's `python3`.

#![allow(dead_code)]

use engram_sandbox::{Policy, Sandbox};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

/// The machine's sandbox; these tests need bubblewrap (CI installs it).
pub fn sandbox() -> Sandbox {
    Sandbox::detect().unwrap_or_else(|u| panic!("these tests need a working sandbox: {u}"))
}

/// The interpreter's real path and the directories it reads (prefix, base prefix, site dirs).
pub fn python() -> (PathBuf, Vec<PathBuf>) {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, site\nprint(sys.executable)\nfor p in {sys.prefix, sys.base_prefix, sys.exec_prefix, *site.getsitepackages()}: print(p)",
        ])
        .output()
        .expect("python3 is needed for these tests");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines().map(PathBuf::from);
    let exe = lines.next().unwrap();
    (exe, lines.collect())
}

/// A policy with a fresh scratch dir and the interpreter readable.
pub fn policy(scratch: &tempfile::TempDir) -> Policy {
    let (_, read_only) = python();
    Policy {
        read_only,
        scratch: scratch.path().to_path_buf(),
        env: vec![("LANG".into(), "C.UTF-8".into())],
        ..Policy::default()
    }
}

/// What a confined program did.
#[derive(Debug)]
pub struct Ran {
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
}

impl Ran {
    /// The program's stdout parsed as JSON (the scripts print one JSON value last).
    pub fn json(&self) -> serde_json::Value {
        let last = self.stdout.lines().last().unwrap_or_default();
        serde_json::from_str(last)
            .unwrap_or_else(|e| panic!("no JSON from the room ({e}): {self:#?}"))
    }
}

/// Runs `python3 -I -c script args` in the room of `policy`, with `extra_env` set on the
/// *bubblewrap* process itself (as if Engram's own environment held it), killing the room
/// after `timeout`.
pub async fn run_python(
    policy: &Policy,
    script: &str,
    args: &[&str],
    extra_env: &[(&str, &str)],
    timeout: Duration,
) -> Ran {
    let (exe, _) = python();
    let mut argv: Vec<OsString> = vec!["-I".into(), "-c".into(), script.into()];
    argv.extend(args.iter().map(OsString::from));
    let mut command = sandbox().command(policy, &exe, &argv).unwrap();
    for (k, v) in extra_env {
        command.env(k, v);
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let read = async move {
        use tokio::io::AsyncReadExt;
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let _ = tokio::join!(stdout.read_to_end(&mut o), stderr.read_to_end(&mut e));
        (o, e)
    };
    let reading = tokio::spawn(read);
    let (status, timed_out) = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => (Some(status.unwrap()), false),
        Err(_) => {
            child.kill().await.unwrap();
            (None, true)
        }
    };
    let (o, e) = tokio::time::timeout(Duration::from_secs(5), reading)
        .await
        .expect("the room's pipes closed when it ended")
        .unwrap();
    Ran {
        status,
        stdout: String::from_utf8_lossy(&o).into_owned(),
        stderr: String::from_utf8_lossy(&e).into_owned(),
        timed_out,
    }
}

/// A name no other test run uses.
pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}_{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

/// The variable that tells a re-executed test binary it is a helper (see [`reexec`]).
pub const HELPER_VAR: &str = "ENGRAM_ESCAPE_HELPER";

/// Runs the `#[ignore]`d test `name` of this test binary's `escape` module as a child process (optionally under
/// `wrapper`, e.g. `keyctl session -`) with `env` added — a stand-in for Engram's process with
/// a key in its environment or keyring — and returns what it printed after `ROOM:`.
pub fn reexec(name: &str, wrapper: &[&str], env: &[(&str, &str)]) -> serde_json::Value {
    let exe = std::env::current_exe().unwrap();
    let mut argv: Vec<OsString> = wrapper.iter().map(OsString::from).collect();
    argv.push(exe.into());
    // Tests are named by their module path in the one test binary (`escape::canary_helper`).
    let path = format!("escape::{name}");
    argv.extend(
        [
            "--exact",
            path.as_str(),
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ]
        .map(OsString::from),
    );
    let out = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .env(HELPER_VAR, name)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("ROOM:").map(|(_, json)| json))
        .unwrap_or_else(|| {
            panic!(
                "helper {name} printed no result: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    serde_json::from_str(line).unwrap()
}

/// True in the helper child of [`reexec`] named `name`; a plain `--ignored` run skips it.
pub fn is_helper(name: &str) -> bool {
    std::env::var(HELPER_VAR).is_ok_and(|v| v == name)
}

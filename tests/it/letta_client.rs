//! The real `letta-client` Python SDKs against `engram serve`: the Letta tutorial flow
//! (tests/python/) with the 0.1.x SDK the tutorials were written for and with the latest 1.x.
//!
//! Each SDK version gets a virtualenv cached under `$ENGRAM_LETTA_VENVS/<version>` (tests/run.sh
//! makes both before the tests start) or else `$CARGO_TARGET_DIR/letta-venvs/<version>`, so warm
//! runs skip pip. If pip cannot install the SDK the test
//! fails: this test is the proof that Letta clients work, so it must not skip silently.
//! Build the binary first: `cargo build -p engram-cli`.

use engram_mock_llm::{MockLlm, Script};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The last 0.1.x release (the Fern-generated SDK the tutorial notebooks use).
const SDK_0_1: &str = "0.1.324";
/// The latest 1.x release (the Stainless-generated SDK).
const SDK_1: &str = "1.12.1";

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let exe = std::env::current_exe().expect("test executable path");
            // target/<profile>/deps/<test> → target
            exe.ancestors().nth(3).expect("target dir").to_owned()
        })
}

fn run_ok(cmd: &mut Command, what: &str) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Where the SDK virtualenvs live: `ENGRAM_LETTA_VENVS` (tests/run.sh makes them there, outside
/// the clone, before any test starts), else `$CARGO_TARGET_DIR/letta-venvs`.
fn venvs_root() -> PathBuf {
    std::env::var_os("ENGRAM_LETTA_VENVS")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("letta-venvs"))
}

/// A virtualenv with `letta-client==version`, made once and reused.
///
/// nextest runs every test in its own process, so several may ask for the same venv at once: an
/// exclusive lock on `<version>.lock` (held until this returns) lets one make it while the others
/// wait. The marker is written last, so a venv left half-made by a killed run is made again.
fn venv(version: &str) -> PathBuf {
    let root = venvs_root();
    std::fs::create_dir_all(&root).expect("venv root dir");
    let dir = root.join(version);
    let python = dir.join("bin").join("python");
    let marker = dir.join(".engram-installed");
    let lock = std::fs::File::create(root.join(format!("{version}.lock"))).expect("venv lock file");
    lock.lock().expect("lock the venv");
    if marker.exists() && python.exists() {
        return python;
    }
    let _ = std::fs::remove_dir_all(&dir);
    run_ok(
        Command::new("python3").args(["-m", "venv"]).arg(&dir),
        "python3 -m venv",
    );
    run_ok(
        Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "-q",
            &format!("letta-client=={version}"),
        ]),
        &format!("pip install letta-client=={version}"),
    );
    std::fs::write(&marker, version).expect("venv marker");
    python
}

/// `engram serve` on a free port; killed when dropped.
struct Server {
    child: Child,
    url: String,
    token: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `engram serve` on a free port with more environment (e.g. `ENGRAM_PYTHON`) and global
/// options (e.g. `--database`); killed when dropped.
fn serve_with(home: &Path, mock: &MockLlm, env: &[(&str, &Path)], options: &[&str]) -> Server {
    let mut child = engram_suite::cli_command(home)
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .args(options)
        .args(["serve", "--port", "0", "--show-token"])
        // The tutorial's `openai/…` handles then reach the scripted model, unchanged.
        .env("OPENAI_API_KEY", "sk-mock")
        .env("OPENAI_BASE_URL", mock.base_url())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start engram serve");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut url = None;
    let mut token = None;
    while url.is_none() || token.is_none() {
        let line = lines
            .next()
            .expect("engram serve exited before it was ready")
            .expect("read engram serve output");
        if let Some(u) = line.strip_prefix("listening on ") {
            url = Some(u.trim().to_owned());
        } else if let Some(t) = line.strip_prefix("token: ") {
            token = Some(t.trim().to_owned());
        }
    }
    Server {
        child,
        url: url.expect("url"),
        token: token.expect("token"),
    }
}

async fn tutorial_flow(version: &str, script: &str) {
    run_script(version, script, "tutorial flow OK").await;
}

async fn run_script(version: &str, script: &str, done: &str) {
    run_script_with(version, script, done, false).await;
}

/// What a script run leaves for further checks: its output, the server's data directory and
/// the scripted model.
struct ScriptRun {
    stdout: String,
    home: tempfile::TempDir,
    mock: MockLlm,
}

/// Runs `tests/python/<script>` with letta-client `version` against `engram serve` and the
/// scripted model, and checks it printed `done`. With `tools_use_sdk`, the server runs user
/// tools in the SDK's Python too (so tools can `import letta_client`).
async fn run_script_with(
    version: &str,
    script: &str,
    done: &str,
    tools_use_sdk: bool,
) -> ScriptRun {
    run_script_on(version, script, done, tools_use_sdk, &[]).await
}

/// [`run_script_with`] against a server started with the global `options` (e.g.
/// `--database postgres://…`).
async fn run_script_on(
    version: &str,
    script: &str,
    done: &str,
    tools_use_sdk: bool,
    options: &[&str],
) -> ScriptRun {
    let python = tokio::task::spawn_blocking({
        let v = version.to_owned();
        move || venv(&v)
    })
    .await
    .expect("venv");
    let mock = MockLlm::start(Script::Brain).await;
    let home = tempfile::tempdir().expect("temp home");
    let tool_python: &[(&str, &Path)] = if tools_use_sdk {
        &[("ENGRAM_PYTHON", &python)]
    } else {
        &[]
    };
    let server = serve_with(home.path(), &mock, tool_python, options);
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(script);
    let out = tokio::process::Command::new(&python)
        .arg(&script)
        .env("ENGRAM_URL", &server.url)
        .env("ENGRAM_TOKEN", &server.token)
        .env_remove("LETTA_BASE_URL")
        .env_remove("LETTA_API_KEY")
        .output()
        .await
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "letta-client {version}: {} failed:\n{stdout}\n{}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(done), "{stdout}");
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
    drop(server);
    ScriptRun { stdout, home, mock }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tutorial_runs_with_letta_client_0_1() {
    tutorial_flow(SDK_0_1, "tutorial_flow_v01.py").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tutorial_runs_with_letta_client_1_x() {
    tutorial_flow(SDK_1, "tutorial_flow_v1.py").await;
}

/// The tutorial flow, unchanged, against a server on PostgreSQL (`engram --database … serve`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tutorial_runs_with_letta_client_0_1_on_postgres() {
    let url = engram_test_postgres::database().url();
    let options = ["--database", url.as_str()];
    run_script_on(
        SDK_0_1,
        "tutorial_flow_v01.py",
        "tutorial flow OK",
        false,
        &options,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tutorial_runs_with_letta_client_1_x_on_postgres() {
    let url = engram_test_postgres::database().url();
    let options = ["--database", url.as_str()];
    run_script_on(
        SDK_1,
        "tutorial_flow_v1.py",
        "tutorial flow OK",
        false,
        &options,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_queue_tools_upserted_with_letta_client_0_1_run() {
    run_script(SDK_0_1, "task_queue_v01.py", "task queue flow OK").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_queue_tools_upserted_with_letta_client_1_x_run() {
    run_script(SDK_1, "task_queue_v1.py", "task queue flow OK").await;
}

/// The task-queue tutorial (tools upserted, attached, run, detached) on a server on
/// PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_queue_tools_run_on_postgres_with_letta_client_0_1() {
    let url = engram_test_postgres::database().url();
    let options = ["--database", url.as_str()];
    run_script_on(
        SDK_0_1,
        "task_queue_v01.py",
        "task queue flow OK",
        false,
        &options,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_queue_tools_run_on_postgres_with_letta_client_1_x() {
    let url = engram_test_postgres::database().url();
    let options = ["--database", url.as_str()];
    run_script_on(
        SDK_1,
        "task_queue_v1.py",
        "task queue flow OK",
        false,
        &options,
    )
    .await;
}

/// The tutorial's task-queue tools as written call the server back with `letta_client` and no
/// token: with the API's token required, each call reaches its own agent through the door Engram
/// opens for the tool call (the sandbox bridges it to localhost:8283), the `tasks` block ends
/// `[]`, and every edit is recorded as the tool call's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tutorial_task_queue_tools_call_the_server_back_with_auth_on() {
    let ScriptRun { stdout, home, mock } = run_script_with(
        SDK_0_1,
        "tutorial_task_queue_v01.py",
        "tutorial task queue OK",
        true,
    )
    .await;

    // Four tool edits of the tasks block (two pushes, two pops), each recorded as its call's.
    let agent = stdout
        .lines()
        .find_map(|l| l.strip_prefix("AGENT "))
        .expect("agent id")
        .trim()
        .to_owned();
    let db = rusqlite::Connection::open(home.path().join(engram_service::DB_FILE)).unwrap();
    let editors: Vec<serde_json::Value> = db
        .prepare(
            "SELECT h.editor FROM block_history h JOIN blocks b ON b.id = h.block_id
             JOIN agent_blocks ab ON ab.block_id = b.id
             WHERE ab.agent_id = ?1 AND b.label = 'tasks' ORDER BY h.pk",
        )
        .unwrap()
        .query_map([&agent], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|e| serde_json::from_str(&e.unwrap()).unwrap())
        .collect();
    assert_eq!(editors.len(), 4, "{editors:?}");
    let calls: Vec<String> = mock
        .chat_requests()
        .iter()
        .flat_map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
        .filter_map(|m| m["tool_call_id"].as_str().map(str::to_owned))
        .collect();
    for editor in &editors {
        let id = editor["tool_call_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{editor}"));
        assert!(
            calls.iter().any(|c| c == id),
            "{id} is not one of the model's tool calls"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn letta_material_with_letta_client_0_1() {
    run_script(SDK_0_1, "letta_material_v01.py", "letta material OK").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn letta_material_with_letta_client_1_x() {
    run_script(SDK_1, "letta_material_v1.py", "letta material OK").await;
}

/// The custom-memory tutorial (seed 004) cell by cell with letta-client 0.1.x: standalone
/// blocks, the task-queue tools, `agents.list(name=…)`, and the queue filled and cleared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_memory_tutorial_runs_with_letta_client_0_1() {
    run_script(
        SDK_0_1,
        "tutorial_custom_memory_v01.py",
        "custom memory tutorial OK",
    )
    .await;
}

/// Tool approval in Letta's shapes: `requires_approval` rule at create, the
/// `approval_request_message` and stop reason, then approve (`approvals` list) and deny
/// (`approve`/`reason`) through `messages.create`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_approval_with_letta_client_1_x() {
    run_script(SDK_1, "approval_v1.py", "approval flow OK").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sleeptime_settings_with_letta_client_0_1() {
    run_script(SDK_0_1, "sleeptime_v01.py", "sleeptime flow OK").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sleeptime_settings_with_letta_client_1_x() {
    run_script(SDK_1, "sleeptime_v1.py", "sleeptime flow OK").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_in_use_are_listed_with_letta_client_0_1() {
    run_script(SDK_0_1, "models_v01.py", "models flow OK").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_in_use_are_listed_with_letta_client_1_x() {
    run_script(SDK_1, "models_v1.py", "models flow OK").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folders_with_letta_client_0_1() {
    run_script(SDK_0_1, "folders_v01.py", "folders flow OK").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folders_with_letta_client_1_x() {
    run_script(SDK_1, "folders_v1.py", "folders flow OK").await;
}

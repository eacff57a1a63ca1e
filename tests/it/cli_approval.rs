//! Tool approval on the command line: `engram tool approval` sets the rule, a
//! one-shot chat without a flag stops naming the waiting call, the REPL process killed while a
//! call waits leaves it stored, and `--approve-all` / `--deny-all --reason` decide it and the
//! run goes on.

use engram_core::AgentId;
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_suite::{cli, cli_agent, cli_command, last_tool_results, stdout_ok};
use serde_json::json;
use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

fn pending(home: &std::path::Path, agent: &AgentId) -> Option<engram_core::PendingApproval> {
    let store = engram_store::Store::open(&home.join(engram_service::DB_FILE)).unwrap();
    store.runs().pending_approval(agent).unwrap()
}

fn append(content: &str) -> Reply {
    Reply::ToolCalls(vec![Call::new(
        "core_memory_append",
        json!({"label": "human", "content": content}),
    )])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_sets_the_rule_stops_on_a_waiting_call_and_decides_it() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = tempfile::tempdir().unwrap();
    let agent = cli_agent(home.path(), &mock);
    let out = stdout_ok(&cli(
        home.path(),
        &[
            "tool",
            "approval",
            agent.as_str(),
            "core_memory_append",
            "on",
        ],
    ));
    assert!(out.contains("asks before running"), "{out}");

    // Without a flag, a one-shot chat stops and names the call; the call stays stored.
    mock.push(append("Name: Bob"));
    let out = cli(
        home.path(),
        &["chat", agent.as_str(), "--message", "my name is Bob"],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("waiting for your approval") && err.contains("core_memory_append"),
        "{err}"
    );
    assert!(pending(home.path(), &agent).is_some());

    // --deny-all with a reason: the model reads it, the run goes on, nothing was written.
    mock.push(Reply::Text("Fine, I will not.".into()));
    let out = stdout_ok(&cli(
        home.path(),
        &[
            "chat",
            agent.as_str(),
            "--deny-all",
            "--reason",
            "not today",
        ],
    ));
    assert!(out.contains("Fine, I will not."), "{out}");
    let results = last_tool_results(&mock);
    assert_eq!(results[0]["status"], "Failed");
    assert!(
        results[0]["message"]
            .as_str()
            .unwrap()
            .contains("not today")
    );
    assert!(pending(home.path(), &agent).is_none());

    // --approve-all with a message: the call runs and the reply follows.
    mock.push(append("Name: Bob"));
    mock.push(Reply::Text("Saved, Bob.".into()));
    let out = stdout_ok(&cli(
        home.path(),
        &[
            "chat",
            agent.as_str(),
            "--message",
            "really, it is Bob",
            "--approve-all",
        ],
    ));
    assert!(out.contains("Saved, Bob."), "{out}");
    let mem = stdout_ok(&cli(home.path(), &["memory", "show", agent.as_str()]));
    assert!(mem.contains("Name: Bob"), "{mem}");
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repl_killed_while_a_call_waits_leaves_it_to_approve_later() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = tempfile::tempdir().unwrap();
    let agent = cli_agent(home.path(), &mock);
    stdout_ok(&cli(
        home.path(),
        &[
            "tool",
            "approval",
            agent.as_str(),
            "core_memory_append",
            "on",
        ],
    ));
    mock.push(append("Name: Ann"));
    let mut child = cli_command(home.path())
        .args(["chat", agent.as_str()])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(b"I am Ann\n")
        .unwrap();
    // The REPL now asks y/N; the process is killed before anyone answers.
    let mut waited = 0;
    while pending(home.path(), &agent).is_none() && waited < 200 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    assert!(pending(home.path(), &agent).is_some(), "the call waits");
    child.kill().unwrap();
    child.wait().unwrap();

    mock.push(Reply::Text("Hello Ann.".into()));
    let out = stdout_ok(&cli(
        home.path(),
        &["chat", agent.as_str(), "--approve-all"],
    ));
    assert!(out.contains("Hello Ann."), "{out}");
    let mem = stdout_ok(&cli(home.path(), &["memory", "show", agent.as_str()]));
    assert!(mem.contains("Name: Ann"), "{mem}");
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
}

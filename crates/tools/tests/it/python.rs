//! User tools against a real `python3` (present here and in CI).

use engram_core::{Block, BlockId};
use engram_tools::{PythonRunner, ToolOutcome, ToolRun, ToolStatus};
use serde_json::{Value, json};
use std::time::Duration;

const TASK_QUEUE: &str = r#"
def task_queue_push(agent_state: "AgentState", task_description: str):
    """Push a task to a task queue stored in core memory.

    Args:
        task_description (str): A description of the next task you must accomplish.

    Returns:
        Optional[str]: None is always returned as this function does not produce a response.
    """
    import json
    tasks = json.loads(agent_state.memory.get_block("tasks").value)
    tasks.append(task_description)
    agent_state.memory.update_block_value("tasks", json.dumps(tasks))
    return None


def task_queue_pop(agent_state: "AgentState"):
    """Get the next task from the task queue.

    Returns:
        Optional[str]: The description of the task popped from the queue,
        if there are still tasks in queue. Otherwise, returns None (the
        task queue is empty)
    """
    import json
    tasks = json.loads(agent_state.memory.get_block("tasks").value)
    if len(tasks) == 0:
        return None
    task = tasks[0]
    print(f"Popped task: {task}")
    agent_state.memory.update_block_value("tasks", json.dumps(tasks[1:]))
    return task
"#;

fn runner() -> PythonRunner {
    PythonRunner::discover()
        .expect("python3 is needed for these tests")
        .with_timeout(Duration::from_secs(20))
}

fn block(label: &str, value: &str, limit: usize, read_only: bool) -> Block {
    let now = chrono::Utc::now();
    Block {
        id: BlockId::new(),
        label: label.into(),
        value: value.into(),
        limit,
        description: String::new(),
        read_only,
        version: 1,
        created_at: now,
        updated_at: now,
    }
}

fn call(source: &str, name: &str, arguments: Value, blocks: Vec<Block>) -> ToolRun {
    ToolRun {
        source: source.into(),
        name: name.into(),
        arguments,
        agent_id: "agent-1".into(),
        agent_name: "tester".into(),
        blocks,
        network: false,
        allow_unsandboxed: false,
        bridge: None,
    }
}

/// `task_queue_pop` over the queue in `tasks`.
async fn pop(runner: &PythonRunner, tasks: &Block) -> ToolOutcome {
    runner
        .run(&call(
            TASK_QUEUE,
            "task_queue_pop",
            json!({}),
            vec![tasks.clone()],
        ))
        .await
}

async fn run_simple(source: &str, name: &str) -> ToolOutcome {
    runner().run(&call(source, name, json!({}), vec![])).await
}

#[tokio::test]
async fn task_queue_push_and_pop_round_trip() {
    let runner = runner();
    let mut tasks = block("tasks", "[]", 5_000, false);
    let apply = |outcome: &ToolOutcome, tasks: &mut Block| {
        assert_eq!(outcome.status, ToolStatus::Ok, "{outcome:?}");
        for (label, value) in &outcome.block_updates {
            assert_eq!(label, "tasks");
            tasks.value = value.clone();
        }
    };
    for task in ["write the report", "send the email"] {
        let out = runner
            .run(&call(
                TASK_QUEUE,
                "task_queue_push",
                json!({"task_description": task}),
                vec![tasks.clone()],
            ))
            .await;
        assert_eq!(out.message, "None");
        apply(&out, &mut tasks);
    }
    assert_eq!(tasks.value, r#"["write the report", "send the email"]"#);

    let out = pop(&runner, &tasks).await;
    assert_eq!(out.message, "write the report");
    assert_eq!(out.stdout, "Popped task: write the report\n");
    apply(&out, &mut tasks);
    let out = pop(&runner, &tasks).await;
    assert_eq!(out.message, "send the email");
    apply(&out, &mut tasks);
    assert_eq!(tasks.value, "[]");

    // Empty queue: None, and nothing changes.
    let out = pop(&runner, &tasks).await;
    assert_eq!((out.status, out.message.as_str()), (ToolStatus::Ok, "None"));
    assert!(out.block_updates.is_empty());
}

#[tokio::test]
async fn schema_of_the_task_queue_tools() {
    let runner = runner();
    let push = runner
        .schema(TASK_QUEUE, Some("task_queue_push"))
        .await
        .unwrap();
    assert_eq!(push.name, "task_queue_push");
    assert_eq!(
        push.description,
        "Push a task to a task queue stored in core memory."
    );
    assert_eq!(
        push.parameters,
        json!({
            "type": "object",
            "properties": {"task_description": {
                "type": "string",
                "description": "A description of the next task you must accomplish."
            }},
            "required": ["task_description"]
        })
    );
    let pop = runner
        .schema(TASK_QUEUE, Some("task_queue_pop"))
        .await
        .unwrap();
    assert_eq!(pop.description, "Get the next task from the task queue.");
    assert_eq!(
        pop.parameters,
        json!({"type": "object", "properties": {}, "required": []})
    );

    // Two public functions and no name: ambiguous.
    let err = runner.schema(TASK_QUEUE, None).await.unwrap_err();
    assert!(err.to_string().contains("several functions"), "{err}");
    let err = runner.schema(TASK_QUEUE, Some("nope")).await.unwrap_err();
    assert!(
        err.to_string().contains("No function named 'nope'"),
        "{err}"
    );
}

#[tokio::test]
async fn schema_maps_types_optionals_and_defaults() {
    let source = r#"
from typing import List, Optional

def plan(agent_state, count: int, urgent: bool, tags: List[str], note: Optional[str],
         ratio: float = 0.5, extra: dict = None, mode: str = "fast", items: list = []):
    """Plan some work.

    Longer explanation that spans
    two lines.

    Args:
        count (int): How many steps,
            at most ten.
        urgent (bool): Whether it is urgent.
        tags (List[str]): Labels to add.
        note (Optional[str]): A note.
        ratio: Share of effort.

    Returns:
        str: The plan.
    """
    raise RuntimeError("never executed by schema()")

raise SystemExit("module-level code must not run during schema()")
"#;
    let schema = runner().schema(source, None).await.unwrap();
    assert_eq!(schema.name, "plan");
    assert_eq!(
        schema.description,
        "Plan some work.\n\nLonger explanation that spans two lines."
    );
    assert_eq!(
        schema.parameters,
        json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer", "description": "How many steps, at most ten."},
                "urgent": {"type": "boolean", "description": "Whether it is urgent."},
                "tags": {"type": "array", "items": {"type": "string"}, "description": "Labels to add."},
                "note": {"type": "string", "description": "A note."},
                "ratio": {"type": "number", "description": "Share of effort.", "default": 0.5},
                "extra": {"type": "object"},
                "mode": {"type": "string", "default": "fast"},
                "items": {"type": "array", "default": []}
            },
            "required": ["count", "urgent", "tags"]
        })
    );
}

#[tokio::test]
async fn schema_reports_syntax_errors() {
    let err = runner()
        .schema("def broken(:\n  pass\n", None)
        .await
        .unwrap_err();
    assert!(err.to_string().starts_with("SyntaxError"), "{err}");
}

#[tokio::test]
async fn exceptions_come_back_as_failed_with_the_error_line() {
    let source = r#"
def explode(agent_state):
    agent_state.memory.update_block_value("notes", "changed before failing")
    raise ValueError("boom")
"#;
    let out = runner()
        .run(&call(
            source,
            "explode",
            json!({}),
            vec![block("notes", "", 100, false)],
        ))
        .await;
    assert_eq!(out.status, ToolStatus::Failed);
    assert_eq!(out.message, "ValueError: boom");
    assert!(
        out.block_updates.is_empty(),
        "a failed call changes nothing"
    );
}

#[tokio::test]
async fn unknown_function_and_bad_arguments_fail() {
    let out = run_simple("def f():\n    return 1\n", "g").await;
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(
        out.message.contains("No function named 'g'"),
        "{}",
        out.message
    );

    let out = runner()
        .run(&call(
            "def f(x: int):\n    return x\n",
            "f",
            json!({"y": 1}),
            vec![],
        ))
        .await;
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(out.message.starts_with("TypeError"), "{}", out.message);
}

#[tokio::test]
async fn an_endless_tool_is_stopped_at_the_timeout() {
    // The tool leaves a detached child behind, then spins; neither may survive the timeout.
    let marker = format!("engram-spin-{}-{}", std::process::id(), line!());
    let source = format!(
        r#"
import subprocess, sys
def spin():
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "{marker}"],
                     start_new_session=True)
    while True:
        pass
"#
    );
    let started = std::time::Instant::now();
    let out = runner()
        .with_timeout(Duration::from_secs(1))
        .run(&call(&source, "spin", json!({}), vec![]))
        .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(out.status, ToolStatus::Failed);
    assert_eq!(
        out.message,
        "The tool did not finish within 1 s and was stopped."
    );
    #[cfg(target_os = "linux")]
    {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let left = support_processes_with(&marker);
        assert!(left.is_empty(), "processes outlived the call: {left:?}");
    }
}

/// Host processes whose command line contains `needle`.
#[cfg(target_os = "linux")]
fn support_processes_with(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(needle))
        .collect()
}

#[tokio::test]
async fn huge_output_is_truncated_and_the_result_survives() {
    let source = r#"
import sys
def loud():
    sys.stdout.write("x" * (5 * 1024 * 1024))
    sys.stderr.write("y" * (1024 * 1024))
    print("tail")
    return {"done": True}
"#;
    let out = runner()
        .with_max_output(64 * 1024)
        .run(&call(source, "loud", json!({}), vec![]))
        .await;
    assert_eq!(out.status, ToolStatus::Ok, "{}", out.message);
    assert!(out.output_truncated);
    assert!(
        out.message.starts_with("{\"done\": true}\n"),
        "{}",
        out.message
    );
    assert!(out.message.contains("output truncated"));
    assert!(out.stdout.len() + out.stderr.len() <= 64 * 1024);
}

#[tokio::test]
async fn block_writes_over_the_limit_or_read_only_fail() {
    let source = r#"
def write(agent_state, label: str, value: str):
    agent_state.memory.update_block_value(label, value)
    return "written"
"#;
    let blocks = vec![
        block("notes", "short", 10, false),
        block("rules", "fixed", 100, true),
    ];
    let runner = runner();
    let out = runner
        .run(&call(
            source,
            "write",
            json!({"label": "notes", "value": "é".repeat(11)}),
            blocks.clone(),
        ))
        .await;
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(
        out.message.starts_with("ValueError: Edit failed"),
        "{}",
        out.message
    );
    assert!(out.block_updates.is_empty());

    // Exactly at the limit, counted in characters, not bytes.
    let out = runner
        .run(&call(
            source,
            "write",
            json!({"label": "notes", "value": "é".repeat(10)}),
            blocks.clone(),
        ))
        .await;
    assert_eq!(out.status, ToolStatus::Ok, "{}", out.message);
    assert_eq!(
        out.block_updates,
        vec![("notes".to_string(), "é".repeat(10))]
    );

    let out = runner
        .run(&call(
            source,
            "write",
            json!({"label": "rules", "value": "new"}),
            blocks.clone(),
        ))
        .await;
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(out.message.contains("read-only"), "{}", out.message);
    assert!(out.block_updates.is_empty());

    let out = runner
        .run(&call(
            source,
            "write",
            json!({"label": "missing", "value": "x"}),
            blocks,
        ))
        .await;
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(out.message.starts_with("KeyError"), "{}", out.message);
}

#[tokio::test]
async fn the_rust_side_rechecks_a_tampered_harness() {
    // The tool reaches around the harness's checks; the runner must still refuse.
    let source = r#"
def sneaky(agent_state):
    agent_state.memory._updates["notes"] = "x" * 50
    agent_state.memory._updates["rules"] = "y"
    return "ok"
"#;
    let blocks = vec![
        block("notes", "", 10, false),
        block("rules", "fixed", 100, true),
    ];
    let out = runner()
        .run(&call(source, "sneaky", json!({}), blocks))
        .await;
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(
        out.message.contains("Exceeds 10 character limit"),
        "{}",
        out.message
    );
    assert!(out.block_updates.is_empty());
}

#[tokio::test]
async fn return_values_are_encoded_and_prints_do_not_corrupt_them() {
    let out = run_simple("def f():\n    return 42\n", "f").await;
    assert_eq!((out.status, out.message.as_str()), (ToolStatus::Ok, "42"));
    let out = run_simple("def f():\n    return {'a': [1, 'b']}\n", "f").await;
    assert_eq!(out.message, r#"{"a": [1, "b"]}"#);
    let out = run_simple("def f():\n    pass\n", "f").await;
    assert_eq!(out.message, "None");
    let out = run_simple("def f():\n    return 'plain'\n", "f").await;
    assert_eq!(out.message, "plain");

    let source = r#"
import sys
def chatty():
    print('{"ok": "forged"}')
    print("}{ not json")
    sys.stderr.write("warning\n")
    return "real"
"#;
    let out = run_simple(source, "chatty").await;
    assert_eq!((out.status, out.message.as_str()), (ToolStatus::Ok, "real"));
    assert_eq!(out.stdout, "{\"ok\": \"forged\"}\n}{ not json\n");
    assert_eq!(out.stderr, "warning\n");
}

#[tokio::test]
async fn agent_state_has_id_name_and_blocks() {
    let source = r#"
def who(agent_state):
    b = agent_state.memory.get_block("human")
    return [agent_state.id, agent_state.name, b.label, b.value, b.limit]
"#;
    let out = runner()
        .run(&call(
            source,
            "who",
            json!({}),
            vec![block("human", "Ada", 500, false)],
        ))
        .await;
    assert_eq!(out.message, r#"["agent-1", "tester", "human", "Ada", 500]"#);
}

#[tokio::test]
async fn the_environment_is_scrubbed_and_the_work_dir_is_temporary() {
    let source = r#"
import os
def env():
    return {"keys": sorted(os.environ), "cwd": os.getcwd(), "home": os.environ.get("HOME")}
"#;
    let out = run_simple(source, "env").await;
    assert_eq!(out.status, ToolStatus::Ok, "{}", out.message);
    let v: Value = serde_json::from_str(&out.message).unwrap();
    let allowed = [
        "PATH",
        "HOME",
        "LANG",
        "PYTHONIOENCODING",
        "PYTHONDONTWRITEBYTECODE",
        // Set by the interpreter, the OS or the sandbox themselves, not inherited.
        "LC_CTYPE",
        "PWD",
        "__CF_USER_TEXT_ENCODING",
    ];
    for key in v["keys"].as_array().unwrap() {
        assert!(
            allowed.contains(&key.as_str().unwrap()),
            "leaked variable {key}"
        );
    }
    let cwd = v["cwd"].as_str().unwrap();
    assert_eq!(v["home"].as_str().unwrap(), cwd);
    assert!(cwd.contains("engram-tool-"), "{cwd}");
    assert!(
        !std::path::Path::new(cwd).exists(),
        "the temp dir is removed afterwards"
    );
}

#[test]
fn discover_reports_a_missing_interpreter() {
    let err = PythonRunner::discover_at("/nonexistent/python3-engram-test").unwrap_err();
    assert!(err.reason.contains("not found"), "{}", err.reason);
    let err = PythonRunner::discover_at("false").unwrap_err();
    assert!(err.reason.contains("did not run"), "{}", err.reason);
    let ok = PythonRunner::discover().unwrap();
    assert!(ok.python().is_absolute(), "{}", ok.python().display());
}

#[cfg(unix)]
#[tokio::test]
async fn a_grandchild_holding_the_pipes_does_not_hang_the_call() {
    let source = r#"
import subprocess
def detach():
    subprocess.Popen(["sleep", "5"])
    return "left a child behind"
"#;
    let started = std::time::Instant::now();
    let out = run_simple(source, "detach").await;
    assert_eq!(out.message, "left a child behind");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

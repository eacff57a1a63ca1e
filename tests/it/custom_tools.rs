//! User tools through the real loop: the task-queue tutorial end to end with the scripted model,
//! tools that fail in every way a Python function can, a missing interpreter, and each tool rule.
//! Real SQLite, real `python3`, the real provider code against the scripted server.

use engram_core::ToolStatus;
use engram_core::{Editor, LoopStyle, NewTool, RunEvent, StopReason, ToolRule};
use engram_mock_llm::{Call, ChatView, MockLlm, Reply, Script};
use engram_suite::{Home, assert_all_answered, results};
use serde_json::{Value, json};

/// A model that calls `name(args)` once per user message, then answers "done".
fn call_once(name: &'static str, args: Value) -> Script {
    Script::rules(move |view: &ChatView| {
        if view.messages.last().is_some_and(|m| m.is_real_user()) {
            Reply::ToolCalls(vec![Call::new(name, args.clone())])
        } else {
            Reply::text("done")
        }
    })
}

/// Adds a user tool from `source` and attaches it to `agent`.
async fn add_tool(home: &Home, agent: &engram_core::AgentId, source: &str) -> engram_core::Tool {
    let tool = home
        .engram
        .tools()
        .upsert(NewTool {
            source_code: source.into(),
            ..NewTool::default()
        })
        .await
        .expect("upsert tool");
    home.engram
        .tools()
        .attach(agent, &tool.id)
        .await
        .expect("attach");
    tool
}

async fn tutorial(style: LoopStyle) {
    let mock = MockLlm::start(Script::Brain).await;
    let home = Home::new();
    let agent = home.agent_from_template(&mock, style, "task-queue").await;
    assert_eq!(home.block(&agent, "tasks"), "[]");
    let names: Vec<String> = home
        .engram
        .tools()
        .of_agent(&agent)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(names.contains(&"task_queue_push".to_owned()), "{names:?}");

    let (out, events) = home
        .chat(&agent, "add task: start calling me Charles")
        .await;
    assert_all_answered(&out);
    assert_eq!(results(&out)[0].0, "task_queue_push");
    assert_eq!(results(&out)[0].1.status, ToolStatus::Ok);
    assert!(events.iter().any(|e| matches!(e,
        RunEvent::MemoryChanged { block, .. } if block.label == "tasks")));
    home.chat(&agent, "add task: tell me a haiku about my name")
        .await;
    let tasks: Vec<String> = serde_json::from_str(&home.block(&agent, "tasks")).unwrap();
    assert_eq!(
        tasks,
        ["start calling me Charles", "tell me a haiku about my name"]
    );

    let (out, _) = home.chat(&agent, "Complete your tasks").await;
    assert_all_answered(&out);
    assert_eq!(home.block(&agent, "tasks"), "[]");
    let pops: Vec<_> = results(&out)
        .into_iter()
        .filter(|(n, _)| n == "task_queue_pop")
        .collect();
    assert!(pops.len() >= 2, "{pops:?}");
    assert!(pops[0].1.message.contains("start calling me Charles"));
    assert!(pops[1].1.message.contains("haiku"));
    assert!(
        out.messages
            .last()
            .unwrap()
            .content
            .contains("All tasks are done")
            || style == LoopStyle::Classic
    );

    // Four agent edits in the block's history: [] → 1 → 2 → 1 → [].
    let block = home
        .engram
        .store()
        .blocks()
        .by_label(&agent, "tasks")
        .unwrap();
    let history = home.engram.store().blocks().history(&block.id, 50).unwrap();
    let mut values: Vec<&str> = history.iter().map(|e| e.new_value.as_str()).collect();
    if history.first().map(|e| e.old_value.as_str()) != Some("[]") {
        values.reverse();
    }
    assert_eq!(values.len(), 4, "{values:?}");
    assert_eq!(values.last(), Some(&"[]"));
    assert!(history.iter().all(|e| matches!(
        &e.editor,
        Editor::Agent {
            tool_call_id: Some(_),
            ..
        }
    )));
}

#[tokio::test]
async fn the_task_queue_tutorial_runs_in_the_tool_loop() {
    tutorial(LoopStyle::ToolLoop).await;
}

#[tokio::test]
async fn the_task_queue_tutorial_runs_in_the_classic_loop() {
    tutorial(LoopStyle::Classic).await;
}

#[tokio::test]
async fn a_tool_that_raises_fails_with_its_error_line_and_the_run_goes_on() {
    let mock = MockLlm::start(call_once("boom", json!({"x": 3}))).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    add_tool(
        &home,
        &agent,
        "def boom(x: int) -> str:\n    \"\"\"Always fails.\n\n    Args:\n        x: a number\n    \"\"\"\n    raise ValueError(f'bad number {x}')\n",
    ).await;
    let (out, _) = home.chat(&agent, "go").await;
    let r = &results(&out)[0].1;
    assert_eq!(r.status, ToolStatus::Failed);
    assert_eq!(r.message, "ValueError: bad number 3");
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    assert_eq!(out.messages.last().unwrap().content, "done");
}

#[tokio::test]
async fn a_tool_that_never_returns_is_stopped_at_the_timeout() {
    let mock = MockLlm::start(call_once("spin", json!({}))).await;
    let home = Home::with_env(&[("ENGRAM_TOOL_TIMEOUT", "1")]);
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    add_tool(
        &home,
        &agent,
        "def spin():\n    \"\"\"Never ends.\"\"\"\n    while True:\n        pass\n",
    )
    .await;
    let started = std::time::Instant::now();
    let (out, _) = home.chat(&agent, "go").await;
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let r = &results(&out)[0].1;
    assert_eq!(r.status, ToolStatus::Failed);
    assert!(
        r.message.contains("did not finish within 1 s"),
        "{}",
        r.message
    );
    assert_all_answered(&out);
}

#[tokio::test]
async fn megabytes_of_output_are_capped_and_the_result_is_cut_to_its_limit() {
    let mock = MockLlm::start(call_once("noisy", json!({}))).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    let tool = add_tool(
        &home,
        &agent,
        "def noisy() -> str:\n    \"\"\"Prints a lot.\"\"\"\n    print('x' * 5_000_000)\n    return 'y' * 100\n",
    );
    home.engram
        .tools()
        .update(
            &tool.await.id,
            engram_service::ToolPatch {
                return_char_limit: Some(40),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let (out, _) = home.chat(&agent, "go").await;
    let r = &results(&out)[0].1;
    assert_eq!(r.status, ToolStatus::Ok);
    assert!(r.message.starts_with(&"y".repeat(40)), "{}", r.message);
    assert!(!r.message.contains(&"y".repeat(41)));
    assert!(r.message.contains("cut to 40"), "{}", r.message);
    assert!(
        r.message.len() < 2_000,
        "the printout never reaches the model"
    );
}

#[tokio::test]
async fn a_block_write_over_its_limit_fails_and_changes_nothing() {
    let mock = MockLlm::start(call_once("stuff", json!({}))).await;
    let home = Home::new();
    let agent = home
        .agent_with(&mock, LoopStyle::ToolLoop, |a| {
            a.blocks.push(engram_core::NewBlock {
                limit: Some(10),
                ..engram_core::NewBlock::new("notes", "short")
            });
        })
        .await;
    add_tool(
        &home,
        &agent,
        "def stuff() -> str:\n    \"\"\"Overfills notes.\"\"\"\n    agent_state.memory.update_block_value('human', 'changed first')\n    agent_state.memory.update_block_value('notes', 'z' * 11)\n    return 'ok'\n"
            .replace("def stuff()", "def stuff(agent_state)")
            .as_str(),
    ).await;
    let (out, _) = home.chat(&agent, "go").await;
    let r = &results(&out)[0].1;
    assert_eq!(r.status, ToolStatus::Failed);
    assert!(r.message.contains("limit"), "{}", r.message);
    assert_eq!(home.block(&agent, "notes"), "short");
    assert_eq!(
        home.block(&agent, "human"),
        "",
        "a failed call changes no block"
    );
}

#[tokio::test]
async fn non_string_return_values_reach_the_model_as_json() {
    for (body, expected) in [
        (
            "return {'a': 1, 'b': [True, None]}",
            r#"{"a": 1, "b": [true, null]}"#,
        ),
        ("return 42", "42"),
        ("return None", "None"),
    ] {
        let mock = MockLlm::start(call_once("value", json!({}))).await;
        let home = Home::new();
        let agent = home.agent(&mock, LoopStyle::Classic).await;
        add_tool(
            &home,
            &agent,
            &format!("def value():\n    \"\"\"Returns a value.\"\"\"\n    {body}\n"),
        )
        .await;
        let (out, _) = home.chat(&agent, "go").await;
        let r = &results(&out)[0].1;
        assert_eq!(r.status, ToolStatus::Ok);
        assert_eq!(r.message, expected);
    }
}

#[tokio::test]
async fn without_python_tools_are_listed_unavailable_and_calls_fail_cleanly() {
    let mock = MockLlm::start(call_once(
        "task_queue_push",
        json!({"task_description": "x"}),
    ))
    .await;
    let home = Home::with_env(&[("ENGRAM_PYTHON", "/nonexistent/python3")]);
    let agent = home
        .agent_from_template(&mock, LoopStyle::ToolLoop, "task-queue")
        .await;
    let push = home.engram.tools().find("task_queue_push").await.unwrap();
    assert!(!push.available);
    assert!(
        push.unavailable_reason
            .as_deref()
            .unwrap()
            .contains("not found"),
        "{:?}",
        push.unavailable_reason
    );
    let builtin = home.engram.tools().find("memory_replace").await.unwrap();
    assert!(builtin.available, "built-ins need no Python");
    let (out, _) = home.chat(&agent, "go").await;
    let r = &results(&out)[0].1;
    assert_eq!(r.status, ToolStatus::Failed);
    assert!(r.message.contains("cannot run"), "{}", r.message);
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    assert_eq!(home.block(&agent, "tasks"), "[]");
    // Schema generation needs Python, so a tool without an explicit schema is refused.
    let err = home
        .engram
        .tools()
        .upsert(NewTool {
            source_code: "def f():\n    \"\"\"F.\"\"\"\n    return 1\n".into(),
            ..NewTool::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), "invalid_input");
}

#[tokio::test]
async fn trying_a_tool_stores_nothing() {
    let home = Home::new();
    let mock = MockLlm::start(Script::Queue).await;
    let agent = home
        .agent_from_template(&mock, LoopStyle::ToolLoop, "task-queue")
        .await;
    let push = home.engram.tools().find("task_queue_push").await.unwrap();
    let trial = home
        .engram
        .tools()
        .trial(
            &push.id,
            Some(&agent),
            json!({"task_description": "water plants"}),
        )
        .await
        .unwrap();
    assert_eq!(trial.status, ToolStatus::Ok);
    assert_eq!(trial.block_changes[0].label, "tasks");
    assert_eq!(trial.block_changes[0].value, r#"["water plants"]"#);
    assert_eq!(home.block(&agent, "tasks"), "[]");
    let bad = home
        .engram
        .tools()
        .trial(&push.id, None, json!({"task_description": "x"}))
        .await
        .unwrap();
    assert_eq!(bad.status, ToolStatus::Failed, "no agent, no tasks block");
    assert!(bad.message.starts_with("KeyError"), "{}", bad.message);
}

// ---------------------------------------------------------------- tool rules

const NOTE: &str = "def note(text: str) -> str:\n    \"\"\"Notes text.\n\n    Args:\n        text: what to note\n    \"\"\"\n    return 'noted ' + text\n";
const CHECK: &str = "def check() -> str:\n    \"\"\"Checks.\"\"\"\n    return 'checked'\n";

async fn rule_home(
    mock: &MockLlm,
    style: LoopStyle,
    rules: Vec<ToolRule>,
) -> (Home, engram_core::AgentId) {
    let home = Home::new();
    let agent = home
        .agent_with(mock, style, |a| a.max_steps = Some(6))
        .await;
    add_tool(&home, &agent, NOTE).await;
    add_tool(&home, &agent, CHECK).await;
    home.engram.tools().set_rules(&agent, rules).await.unwrap();
    (home, agent)
}

fn offered(mock: &MockLlm, request: usize) -> Vec<String> {
    mock.chat_requests()[request].body["tools"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_terminal_rule_ends_the_run_after_the_tool() {
    let mock = MockLlm::start(Script::rules(|_| {
        Reply::ToolCalls(vec![Call::new("note", json!({"text": "a"}))])
    }))
    .await;
    let (home, agent) = rule_home(
        &mock,
        LoopStyle::ToolLoop,
        vec![ToolRule::ExitLoop {
            tool_name: "note".into(),
        }],
    )
    .await;
    let (out, _) = home.chat(&agent, "go").await;
    assert_eq!(out.stop_reason, StopReason::ToolRule);
    assert_eq!(out.usage.step_count, 1);
    assert_eq!(results(&out)[0].1.message, "noted a");
}

#[tokio::test]
async fn a_continue_rule_keeps_a_classic_run_going_without_a_heartbeat() {
    let mock = MockLlm::start(Script::rules(|view: &ChatView| {
        if view.messages.last().is_some_and(|m| m.is_real_user()) {
            Reply::ToolCalls(vec![Call::new(
                "check",
                json!({"request_heartbeat": false}),
            )])
        } else {
            Reply::ToolCalls(vec![Call::new(
                "send_message",
                json!({"message": "all checked"}),
            )])
        }
    }))
    .await;
    let (home, agent) = rule_home(
        &mock,
        LoopStyle::Classic,
        vec![ToolRule::ContinueLoop {
            tool_name: "check".into(),
        }],
    )
    .await;
    let (out, _) = home.chat(&agent, "go").await;
    assert_eq!(out.usage.step_count, 2, "the rule asked for a second step");
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    // Without the rule the same model stops after the first step.
    home.engram.tools().set_rules(&agent, vec![]).await.unwrap();
    let (out, _) = home.chat(&agent, "go").await;
    assert_eq!(out.usage.step_count, 1);
}

#[tokio::test]
async fn run_first_is_the_only_tool_offered_first_and_other_calls_are_refused() {
    // A model that ignores the offer and calls `note` first.
    let mock = MockLlm::start(Script::rules(|view: &ChatView| {
        let done: Vec<String> = view.turn_calls().into_iter().map(|c| c.name).collect();
        if done.is_empty() {
            Reply::ToolCalls(vec![Call::new("note", json!({"text": "early"}))])
        } else if !done.contains(&"check".to_owned()) {
            Reply::ToolCalls(vec![Call::new("check", json!({}))])
        } else {
            Reply::text("done")
        }
    }))
    .await;
    let (home, agent) = rule_home(
        &mock,
        LoopStyle::ToolLoop,
        vec![ToolRule::RunFirst {
            tool_name: "check".into(),
        }],
    )
    .await;
    let (out, _) = home.chat(&agent, "go").await;
    assert_eq!(offered(&mock, 0), ["check"]);
    assert_eq!(mock.chat_requests()[0].body["tool_choice"], "required");
    let r = results(&out);
    assert_eq!(r[0].1.status, ToolStatus::Failed);
    assert!(r[0].1.message.contains("run_first"), "{}", r[0].1.message);
    assert_eq!(r[1].1.message, "checked");
    assert!(
        offered(&mock, 2).contains(&"note".to_owned()),
        "free after the first call"
    );
    assert_all_answered(&out);
}

#[tokio::test]
async fn child_constraints_narrow_the_next_call() {
    let mock = MockLlm::start(Script::rules(|view: &ChatView| {
        match view.turn_calls().len() {
            0 => Reply::ToolCalls(vec![Call::new("check", json!({}))]),
            1 => Reply::ToolCalls(vec![Call::new(
                "conversation_search",
                json!({"query": "x"}),
            )]),
            2 => Reply::ToolCalls(vec![Call::new("note", json!({"text": "after"}))]),
            _ => Reply::text("done"),
        }
    }))
    .await;
    let (home, agent) = rule_home(
        &mock,
        LoopStyle::ToolLoop,
        vec![ToolRule::ConstrainChildTools {
            tool_name: "check".into(),
            children: vec!["note".into()],
        }],
    )
    .await;
    let (out, _) = home.chat(&agent, "go").await;
    assert_eq!(offered(&mock, 1), ["note"]);
    let r = results(&out);
    assert_eq!(r[1].0, "conversation_search");
    assert_eq!(r[1].1.status, ToolStatus::Failed);
    assert!(
        r[1].1.message.contains("constrain_child_tools"),
        "{}",
        r[1].1.message
    );
    assert_eq!(r[2].1.message, "noted after");
}

#[tokio::test]
async fn max_count_refuses_calls_past_the_limit() {
    let mock = MockLlm::start(Script::rules(|view: &ChatView| {
        if view.turn_calls().len() < 3 {
            Reply::ToolCalls(vec![Call::new("note", json!({"text": "again"}))])
        } else {
            Reply::text("done")
        }
    }))
    .await;
    let (home, agent) = rule_home(
        &mock,
        LoopStyle::ToolLoop,
        vec![ToolRule::MaxCountPerStep {
            tool_name: "note".into(),
            max_count_limit: 2,
        }],
    )
    .await;
    let (out, _) = home.chat(&agent, "go").await;
    let r = results(&out);
    assert_eq!(r[0].1.status, ToolStatus::Ok);
    assert_eq!(r[1].1.status, ToolStatus::Ok);
    assert_eq!(r[2].1.status, ToolStatus::Failed);
    assert!(
        r[2].1.message.contains("max_count_per_step"),
        "{}",
        r[2].1.message
    );
    assert!(!offered(&mock, 2).contains(&"note".to_owned()));
}

// ---------------------------------------------------------------- the CLI

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tutorial_runs_from_the_cli_with_tools_added_from_files() {
    use engram_suite::{cli, stdout_ok};
    let mock = MockLlm::start(Script::Brain).await;
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let url = mock.base_url();
    let run = |args: &[&str]| cli(h, args);

    let templates = stdout_ok(&run(&["template", "list"]));
    assert!(templates.contains("task-queue"), "{templates}");
    let id = stdout_ok(&run(&[
        "agent",
        "create",
        "--name",
        "Tasks",
        "--model",
        "openai/mock-small",
        "--base-url",
        &url,
        "--block",
        "persona=I work through my task queue.",
        "--block",
        "tasks=[]",
    ]))
    .trim()
    .to_owned();
    // The tutorial's two functions, in their own files, written against agent_state.memory.
    let push = h.join("push.py");
    std::fs::write(
        &push,
        "import json\n\ndef task_queue_push(agent_state: \"AgentState\", task_description: str):\n    \"\"\"\n    Push a task onto the queue in core memory.\n\n    Args:\n        task_description (str): The next task.\n    \"\"\"\n    tasks = json.loads(agent_state.memory.get_block(\"tasks\").value)\n    tasks.append(task_description)\n    agent_state.memory.update_block_value(\"tasks\", json.dumps(tasks))\n    return None\n",
    )
    .unwrap();
    let pop = h.join("pop.py");
    std::fs::write(
        &pop,
        "import json\n\ndef task_queue_pop(agent_state: \"AgentState\"):\n    \"\"\"\n    Get the next task from the queue.\n\n    Returns:\n        Optional[str]: Remaining tasks in the queue\n    \"\"\"\n    tasks = json.loads(agent_state.memory.get_block(\"tasks\").value)\n    if len(tasks) == 0:\n        return None\n    remaining = json.dumps(tasks[1:])\n    agent_state.memory.update_block_value(\"tasks\", remaining)\n    return f\"Remaining tasks {remaining}\"\n",
    )
    .unwrap();
    let push_id = stdout_ok(&run(&[
        "tool",
        "add",
        push.to_str().unwrap(),
        "--attach",
        &id,
    ]));
    assert!(push_id.trim().starts_with("tool-"), "{push_id}");
    stdout_ok(&run(&["tool", "add", pop.to_str().unwrap()]));
    let attached = stdout_ok(&run(&["tool", "attach", &id, "task_queue_pop"]));
    assert!(attached.contains("task_queue_push") && attached.contains("task_queue_pop"));
    let listed = stdout_ok(&run(&["tool", "list"]));
    assert!(
        listed.contains("task_queue_pop  (python)") && listed.contains("memory_replace  (builtin)"),
        "{listed}"
    );
    let shown: Value =
        serde_json::from_str(&stdout_ok(&run(&["tool", "show", "task_queue_push"]))).unwrap();
    assert_eq!(
        shown["json_schema"]["parameters"]["required"],
        json!(["task_description"])
    );

    stdout_ok(&run(&[
        "chat",
        &id,
        "--message",
        "add task: start calling me Charles",
    ]));
    stdout_ok(&run(&[
        "chat",
        &id,
        "--message",
        "add task: tell me a haiku about my name",
    ]));
    let blocks: Value =
        serde_json::from_str(&stdout_ok(&run(&["memory", "show", &id, "--json"]))).unwrap();
    let tasks = blocks
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["label"] == "tasks")
        .unwrap()["value"]
        .clone();
    assert_eq!(
        tasks,
        r#"["start calling me Charles", "tell me a haiku about my name"]"#
    );
    stdout_ok(&run(&["chat", &id, "--message", "complete your tasks"]));
    let history = stdout_ok(&run(&["memory", "history", &id, "tasks"]));
    assert!(
        history.contains("haiku") && history.contains("Charles"),
        "{history}"
    );
    let blocks: Value =
        serde_json::from_str(&stdout_ok(&run(&["memory", "show", &id, "--json"]))).unwrap();
    let tasks = blocks
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["label"] == "tasks")
        .unwrap()["value"]
        .clone();
    assert_eq!(tasks, "[]");

    stdout_ok(&run(&["tool", "detach", &id, "task_queue_pop"]));
    stdout_ok(&run(&["tool", "delete", "task_queue_push"]));
    let shown: Value = serde_json::from_str(&stdout_ok(&run(&["agent", "show", &id]))).unwrap();
    let names = shown["tools"].as_array().unwrap();
    assert!(
        !names
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("task_queue")),
        "{names:?}"
    );

    let tq = stdout_ok(&run(&[
        "agent",
        "create",
        "--template",
        "task-queue",
        "--model",
        "openai/mock-small",
        "--base-url",
        &url,
    ]))
    .trim()
    .to_owned();
    let shown: Value = serde_json::from_str(&stdout_ok(&run(&["agent", "show", &tq]))).unwrap();
    assert_eq!(shown["name"], "Task queue agent");
    assert!(
        shown["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("task_queue_pop"))
    );
}

// ---------------------------------------------------------------- agent files

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/agent-files")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test]
async fn an_imported_agents_custom_tools_and_rules_run_and_export_back() {
    let mock = MockLlm::start(call_once("check_order_status", json!({"order_number": 42}))).await;
    let home = Home::new();
    let report = home
        .engram
        .agent_files()
        .import(&fixture("customer_service.af"))
        .await
        .unwrap();
    let agent = report.agents[0].clone();
    let mut patch = engram_core::AgentPatch::default();
    let mut llm = engram_core::LlmConfig::new("openai/mock-small");
    llm.base_url = Some(mock.base_url());
    patch.llm = Some(llm);
    home.engram.agents().update(&agent, &patch).await.unwrap();

    let state = home.engram.agents().get(&agent).await.unwrap();
    assert!(
        state.agent.tools.contains(&"check_order_status".to_owned()),
        "{:?}",
        state.agent.tools
    );
    assert!(state.agent.tool_rules.contains(&ToolRule::ExitLoop {
        tool_name: "send_message".into()
    }));
    let tool = home
        .engram
        .tools()
        .find("check_order_status")
        .await
        .unwrap();
    assert_eq!(tool.return_char_limit, 6000);
    // Code from a file waits for the user's review; trusted, it runs.
    assert!(!tool.trusted, "a file's tool is stored untrusted");
    assert_eq!(report.details[0].tools[0].name, "check_order_status");
    home.engram
        .tools()
        .trust("check_order_status", tool.source_hash.as_deref().unwrap())
        .await
        .unwrap();
    assert!(
        !report
            .warnings
            .iter()
            .any(|w| w.contains("check_order_status")),
        "{:?}",
        report.warnings
    );

    let (out, _) = home.chat(&agent, "where is my order 42?").await;
    let r = &results(&out)[0];
    assert_eq!(r.0, "check_order_status");
    assert_eq!(r.1.status, ToolStatus::Ok);
    assert_eq!(r.1.message, "Order 42 is currently processing.");
    // The schema the model saw has the loop's heartbeat once, not twice.
    let sent = &mock.chat_requests()[0].body["tools"];
    let check = sent
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "check_order_status")
        .unwrap();
    assert_eq!(
        check["function"]["parameters"]["required"],
        json!(["order_number", "request_heartbeat"])
    );

    let file: Value =
        serde_json::from_slice(&home.engram.agent_files().export(&[agent]).await.unwrap()).unwrap();
    let exported = file["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "check_order_status")
        .unwrap();
    assert_eq!(exported["tool_type"], "custom");
    assert!(
        exported["source_code"]
            .as_str()
            .unwrap()
            .contains("def check_order_status(")
    );
    assert!(
        file["agents"][0]["tool_rules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["type"] == "exit_loop" && r["tool_name"] == "send_message")
    );
    // And back in: the file's tool is the one already stored, not a duplicate.
    let again = home
        .engram
        .agent_files()
        .import(&serde_json::to_vec(&file).unwrap())
        .await
        .unwrap();
    assert_eq!(again.agents.len(), 1);
    let count = home
        .engram
        .tools()
        .list()
        .await
        .unwrap()
        .iter()
        .filter(|t| t.name == "check_order_status")
        .count();
    assert_eq!(count, 1);
}

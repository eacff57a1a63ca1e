//! No memory edit is ever lost, through the real loop: the scripted model answers
//! slowly (or a slow user tool keeps the step open) while another writer changes the block —
//! a hand edit, a second agent sharing the block, the `engram` CLI as a second process on the
//! same database file. Agent edits are operations re-applied to the current value at commit;
//! whole-value writes that went stale are refused with the current value.

use engram_core::{
    AgentId, BlockPatch, Editor, LoopStyle, NewBlock, NewTool, Role, RunEvent, ToolReturn,
    ToolStatus,
};
use engram_mock_llm::{Call, ChatView, MockLlm, Reply, Script};
use engram_suite::{Home, RunOutcome};
use serde_json::json;
use std::time::Duration;

const HUMAN: &str = "Notes about the human.\nName: Alice";

/// A user tool that keeps the step open for a while after the calls before it ran.
const WAIT_TOOL: &str = "import time\n\ndef wait_a_bit() -> str:\n    \"\"\"Wait a moment before answering.\"\"\"\n    time.sleep(2)\n    return 'waited'\n";

async fn agent(home: &Home, mock: &MockLlm) -> AgentId {
    home.agent_with(mock, LoopStyle::ToolLoop, |a| {
        a.blocks = vec![
            NewBlock::new("persona", "I am Sam."),
            NewBlock::new("human", HUMAN),
        ];
    })
    .await
}

async fn add_wait_tool(home: &Home, agent: &AgentId) {
    let tool = home
        .engram
        .tools()
        .upsert(NewTool {
            source_code: WAIT_TOOL.into(),
            ..NewTool::default()
        })
        .await
        .expect("upsert tool");
    home.engram
        .tools()
        .attach(agent, &tool.id)
        .await
        .expect("attach");
}

/// A scripted model, a home and an agent with the wait tool, whose next step calls `first`
/// and then the wait tool, so the step stays open for a while after `first` ran.
async fn step_held_open_after(first: Call) -> (MockLlm, Home, AgentId) {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = agent(&home, &mock).await;
    add_wait_tool(&home, &agent).await;
    mock.push(Reply::ToolCalls(vec![
        first,
        Call::new("wait_a_bit", json!({})),
    ]));
    (mock, home, agent)
}

/// The model's call appending `Likes: kiwi` to the human block.
fn append_kiwi() -> Call {
    Call::new(
        "core_memory_append",
        json!({"label": "human", "content": "Likes: kiwi"}),
    )
}

/// The stored result of the run's call to `tool`.
fn result_of(out: &RunOutcome, tool: &str) -> ToolReturn {
    out.messages
        .iter()
        .find(|m| m.role == Role::Tool && m.tool_name.as_deref() == Some(tool))
        .and_then(|m| ToolReturn::parse(&m.content))
        .unwrap_or_else(|| panic!("no result of {tool}"))
}

/// A hand edit as the window's Save makes it: based on the version the editor opened.
async fn save_by_hand(home: &Home, agent: &AgentId, edit: impl FnOnce(&str) -> String) {
    let block = home.engram.blocks().by_label(agent, "human").await.unwrap();
    let patch = BlockPatch {
        value: Some(edit(&block.value)),
        version: Some(block.version),
        ..BlockPatch::default()
    };
    home.engram
        .blocks()
        .update_by_label(agent, "human", &patch)
        .await
        .expect("hand edit");
}

async fn after(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

fn system_prompt(mock: &MockLlm) -> String {
    let requests = mock.chat_requests();
    let last = requests.last().expect("a request");
    last.body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_hand_edit_made_while_the_model_answers_survives_its_append() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = agent(&home, &mock).await;
    mock.push(Reply::Delayed(
        Duration::from_millis(800),
        Box::new(Reply::ToolCalls(vec![append_kiwi().with_id("call_kiwi")])),
    ));
    mock.push(Reply::text("Noted."));

    let ((out, events), ()) = tokio::join!(
        home.chat(&agent, "my name is Alice and I like kiwi"),
        async {
            after(300).await;
            save_by_hand(&home, &agent, |v| format!("{v}\nAllergic to peanuts")).await;
        }
    );
    let expected = format!("{HUMAN}\nAllergic to peanuts\nLikes: kiwi");
    assert_eq!(home.block(&agent, "human"), expected);
    let result = result_of(&out, "core_memory_append");
    assert_eq!(result.status, ToolStatus::Ok);
    assert!(result.message.ends_with(&expected), "{}", result.message);
    // The model's next call already saw both edits.
    assert!(system_prompt(&mock).contains("Allergic to peanuts\nLikes: kiwi"));
    assert!(events.iter().any(|e| matches!(e,
        RunEvent::MemoryChanged { block, tool_call_id, .. }
            if block.value == expected && tool_call_id.as_deref() == Some("call_kiwi"))));

    let history = home.engram.blocks().history(&agent, "human").await.unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(
        history[0].editor,
        Editor::Agent {
            agent_id: agent.clone(),
            tool_call_id: Some("call_kiwi".into())
        }
    );
    assert!(history[0].step_id.is_some());
    assert_eq!(history[1].editor, Editor::User);
    assert_eq!(history[0].old_version, history[1].new_version);
    assert_eq!(history[0].old_value, history[1].new_value);
}

#[tokio::test]
async fn an_edit_landing_between_the_tool_and_the_commit_is_kept_too() {
    // The append runs at once; the user tool then keeps the step open while the hand edit lands.
    let (mock, home, agent) = step_held_open_after(append_kiwi()).await;
    mock.push(Reply::text("Noted."));

    let ((out, events), ()) = tokio::join!(home.chat(&agent, "I like kiwi"), async {
        after(700).await;
        save_by_hand(&home, &agent, |v| format!("{v}\nAllergic to peanuts")).await;
    });
    let preview = events
        .iter()
        .find_map(|e| match e {
            RunEvent::ToolResult { name, message, .. } if name == "core_memory_append" => {
                Some(message.clone())
            }
            _ => None,
        })
        .unwrap();
    assert!(!preview.contains("peanuts"), "the hand edit came later");
    let expected = format!("{HUMAN}\nAllergic to peanuts\nLikes: kiwi");
    assert_eq!(home.block(&agent, "human"), expected);
    // The stored result (what the model reads next) is the value as committed.
    let result = result_of(&out, "core_memory_append");
    assert_eq!(result.status, ToolStatus::Ok);
    assert!(result.message.ends_with(&expected), "{}", result.message);
    assert_eq!(result_of(&out, "wait_a_bit").message, "waited");
}

#[tokio::test]
async fn a_replace_whose_text_changed_meanwhile_fails_with_the_current_value() {
    let (mock, home, agent) = step_held_open_after(
        Call::new(
            "memory_replace",
            json!({"label": "human", "old_str": "kiwi", "new_str": "mango"}),
        )
        .with_id("call_mango"),
    )
    .await;
    save_by_hand(&home, &agent, |v| format!("{v}\nLikes: kiwi")).await;
    mock.push(Reply::text("Let me look again."));

    let ((out, _), ()) = tokio::join!(home.chat(&agent, "I like mango now"), async {
        after(700).await;
        save_by_hand(&home, &agent, |v| v.replace("kiwi", "figs")).await;
    });
    let current = format!("{HUMAN}\nLikes: figs");
    assert_eq!(
        home.block(&agent, "human"),
        current,
        "never a silent overwrite"
    );
    let result = result_of(&out, "memory_replace");
    assert_eq!(result.status, ToolStatus::Failed);
    assert!(
        result.message.contains("'kiwi' was not found") && result.message.ends_with(&current),
        "{}",
        result.message
    );
    // The model was called again and read the refusal with the current value.
    let seen = engram_suite::last_tool_results(&mock);
    assert!(
        seen.iter()
            .any(|r| r["status"] == "Failed" && r["message"].as_str().unwrap().ends_with(&current))
    );
    // Every call answered exactly once.
    let answers = out
        .messages
        .iter()
        .filter(|m| m.tool_call_id.as_deref() == Some("call_mango"))
        .count();
    assert_eq!(answers, 1);
}

#[tokio::test]
async fn a_stale_memory_rethink_is_refused() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = agent(&home, &mock).await;
    mock.push(Reply::Delayed(
        Duration::from_millis(800),
        Box::new(Reply::ToolCalls(vec![Call::new(
            "memory_rethink",
            json!({"label": "human", "new_memory": "Alice."}),
        )])),
    ));
    mock.push(Reply::text("I will read it again."));

    let ((out, _), ()) = tokio::join!(home.chat(&agent, "tidy your notes"), async {
        after(300).await;
        save_by_hand(&home, &agent, |v| format!("{v}\nAllergic to peanuts")).await;
    });
    let current = format!("{HUMAN}\nAllergic to peanuts");
    assert_eq!(home.block(&agent, "human"), current);
    let result = result_of(&out, "memory_rethink");
    assert_eq!(result.status, ToolStatus::Failed);
    assert!(
        result.message.contains("changed since you read it") && result.message.ends_with(&current),
        "{}",
        result.message
    );

    // Rethinking what it now sees works.
    mock.push(Reply::ToolCalls(vec![Call::new(
        "memory_rethink",
        json!({"label": "human", "new_memory": "Alice, allergic to peanuts."}),
    )]));
    mock.push(Reply::text("Done."));
    let (out, _) = home.chat(&agent, "try again").await;
    assert_eq!(result_of(&out, "memory_rethink").status, ToolStatus::Ok);
    assert_eq!(home.block(&agent, "human"), "Alice, allergic to peanuts.");
}

/// A model that appends what follows "fact:" to `human`, slowly, then says "ok".
fn slow_fact_taker() -> Script {
    Script::rules(|view: &ChatView| {
        let user = view.last_user_text().unwrap_or_default();
        match user.strip_prefix("fact: ") {
            Some(fact) if view.messages.last().is_some_and(|m| m.is_real_user()) => Reply::Delayed(
                Duration::from_millis(500),
                Box::new(Reply::ToolCalls(vec![Call::new(
                    "core_memory_append",
                    json!({"label": "human", "content": fact}),
                )])),
            ),
            _ => Reply::text("ok"),
        }
    })
}

#[tokio::test]
async fn two_agents_sharing_a_block_keep_each_others_appends() {
    let mock = MockLlm::start(slow_fact_taker()).await;
    let home = Home::new();
    let only_persona = |a: &mut engram_core::NewAgent| {
        a.blocks = vec![NewBlock::new("persona", "I am an agent.")];
    };
    let a = home
        .agent_with(&mock, LoopStyle::ToolLoop, only_persona)
        .await;
    let b = home
        .agent_with(&mock, LoopStyle::ToolLoop, only_persona)
        .await;
    let shared = home
        .engram
        .blocks()
        .create(&NewBlock::new("human", "Name: Alice"))
        .await
        .unwrap();
    home.engram.blocks().attach(&a, &shared.id).await.unwrap();
    home.engram.blocks().attach(&b, &shared.id).await.unwrap();

    let ((out_a, _), (out_b, _)) = tokio::join!(
        home.chat(&a, "fact: Likes kiwi"),
        home.chat(&b, "fact: Allergic to peanuts")
    );
    for out in [&out_a, &out_b] {
        assert_eq!(result_of(out, "core_memory_append").status, ToolStatus::Ok);
    }
    let value = home.engram.blocks().get(&shared.id).await.unwrap().value;
    let mut lines: Vec<&str> = value.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, ["Allergic to peanuts", "Likes kiwi", "Name: Alice"]);
    let block = home.engram.blocks().get(&shared.id).await.unwrap();
    assert_eq!(block.version, 3);
    let history = home.engram.blocks().history(&a, "human").await.unwrap();
    let mut authors: Vec<&AgentId> = history
        .iter()
        .filter_map(|e| match &e.editor {
            Editor::Agent { agent_id, .. } => Some(agent_id),
            _ => None,
        })
        .collect();
    authors.sort();
    let mut both = vec![&a, &b];
    both.sort();
    assert_eq!(authors, both);

    // Each agent's next call sees the other's fact.
    home.chat(&a, "hello").await;
    assert!(system_prompt(&mock).contains("Allergic to peanuts"));
    home.chat(&b, "hello").await;
    assert!(system_prompt(&mock).contains("Likes kiwi"));
}

#[tokio::test]
async fn the_cli_as_a_second_process_editing_during_a_step_loses_nothing() {
    let (mock, home, agent) = step_held_open_after(append_kiwi()).await;
    mock.push(Reply::text("Noted."));

    let path = home.path().to_owned();
    let id = agent.to_string();
    let cli = async move {
        after(700).await;
        let value = format!("{HUMAN}\nAllergic to peanuts");
        tokio::task::spawn_blocking(move || {
            engram_suite::stdout_ok(&engram_suite::cli(
                &path,
                &["memory", "set", &id, "human", &value],
            ))
        })
        .await
        .unwrap()
    };
    let ((out, _), _) = tokio::join!(home.chat(&agent, "I like kiwi"), cli);
    let expected = format!("{HUMAN}\nAllergic to peanuts\nLikes: kiwi");
    assert_eq!(home.block(&agent, "human"), expected);
    assert!(
        result_of(&out, "core_memory_append")
            .message
            .ends_with(&expected)
    );
}

#[tokio::test]
async fn the_cli_names_the_version_it_read_and_is_refused_when_stale() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = agent(&home, &mock).await;
    let id = agent.to_string();
    let shown = engram_suite::stdout_ok(&engram_suite::cli(home.path(), &["memory", "show", &id]));
    assert!(
        shown.contains("[human] 34/5000 chars, version 1"),
        "{shown}"
    );
    // The window saves first …
    save_by_hand(&home, &agent, |v| format!("{v}\nLikes: kiwi")).await;
    // … so a CLI edit based on version 1 is refused with the current value, and changes nothing.
    let out = engram_suite::cli(
        home.path(),
        &[
            "memory",
            "set",
            &id,
            "human",
            "Name: Bob",
            "--if-version",
            "1",
        ],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("changed since version 1") && stderr.contains("Likes: kiwi"),
        "{stderr}"
    );
    assert_eq!(home.block(&agent, "human"), format!("{HUMAN}\nLikes: kiwi"));
    let set = engram_suite::stdout_ok(&engram_suite::cli(
        home.path(),
        &[
            "memory",
            "set",
            &id,
            "human",
            "Name: Bob",
            "--if-version",
            "2",
        ],
    ));
    assert!(set.contains("version 3"), "{set}");
    let history = engram_suite::stdout_ok(&engram_suite::cli(
        home.path(),
        &["memory", "history", &id, "human"],
    ));
    assert!(
        history.contains("v2 -> v3") && history.contains("v1 -> v2"),
        "{history}"
    );
}

/// A user tool that reads `human`, takes its time, then writes a whole new value.
const SLOW_REWRITE_TOOL: &str = "import time\n\ndef tidy_notes(agent_state: \"AgentState\") -> str:\n    \"\"\"Rewrite the human block in upper case, slowly.\"\"\"\n    value = agent_state.memory.get_block('human').value\n    time.sleep(2)\n    agent_state.memory.update_block_value('human', value.upper())\n    return 'tidied'\n";

#[tokio::test]
async fn a_user_tools_whole_value_write_based_on_a_stale_read_is_refused() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = agent(&home, &mock).await;
    let tool = home
        .engram
        .tools()
        .upsert(NewTool {
            source_code: SLOW_REWRITE_TOOL.into(),
            ..NewTool::default()
        })
        .await
        .expect("upsert tool");
    home.engram
        .tools()
        .attach(&agent, &tool.id)
        .await
        .expect("attach");
    mock.push(Reply::ToolCalls(vec![Call::new("tidy_notes", json!({}))]));
    mock.push(Reply::text("I will try again."));

    // The hand edit lands while the tool sleeps between its read and its write.
    let ((out, _), ()) = tokio::join!(home.chat(&agent, "tidy your notes"), async {
        after(700).await;
        save_by_hand(&home, &agent, |v| format!("{v}\nAllergic to peanuts")).await;
    });
    let current = format!("{HUMAN}\nAllergic to peanuts");
    assert_eq!(home.block(&agent, "human"), current, "the hand edit stays");
    let result = result_of(&out, "tidy_notes");
    assert_eq!(result.status, ToolStatus::Failed);
    assert!(
        result.message.contains("changed since you read it") && result.message.ends_with(&current),
        "{}",
        result.message
    );

    // Run again with nothing in the way: the write lands.
    mock.push(Reply::ToolCalls(vec![Call::new("tidy_notes", json!({}))]));
    mock.push(Reply::text("Done."));
    let (out, _) = home.chat(&agent, "again").await;
    assert_eq!(result_of(&out, "tidy_notes").status, ToolStatus::Ok);
    assert_eq!(home.block(&agent, "human"), current.to_uppercase());
}

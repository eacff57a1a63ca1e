//! Agent Files end to end: every Letta fixture imports faithfully and can chat at once; Engram
//! → .af → Engram loses nothing; bad files are refused with their JSON path and change nothing;
//! the exports for people are stable; the CLI imports and exports.

use engram_agentfile::{AgentSnapshot, snapshot};
use engram_core::{
    AgentId, BlockPatch, Editor, LoopStyle, NewBlock, NewPassage, Role, memory::DEFAULT_BLOCK_LIMIT,
};
use engram_mock_llm::{MockLlm, Script};
use engram_service::ProviderSetup;
use engram_suite::{Home, cli, stdout_ok};
use serde_json::Value;
use std::path::PathBuf;

const BUILTIN: &[&str] = engram_agent::tools::BUILTIN_TOOLS;

fn fixtures_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/fixtures/agent-files"
    ))
}

fn fixtures() -> Vec<PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(fixtures_dir())
        .expect("fixtures dir")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "af"))
        .collect();
    v.sort();
    assert!(v.len() >= 7, "{v:?}");
    v
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixtures_dir().join(name)).unwrap()
}

/// The fixture as JSON, decoded twice when it is a string holding the JSON.
fn json_of(bytes: &[u8]) -> Value {
    let v: Value = serde_json::from_slice(bytes).unwrap();
    match v {
        Value::String(s) => serde_json::from_str(&s).unwrap(),
        v => v,
    }
}

fn text_of(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p["type"] != "reasoning")
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn has_calls(m: &Value) -> bool {
    m["tool_calls"].as_array().is_some_and(|c| !c.is_empty())
}

/// How many Engram messages a Letta message becomes (one per result of a parallel tool message).
fn expands_to(m: &Value) -> usize {
    let returns = m["tool_returns"].as_array().map_or(0, Vec::len);
    if m["role"] == "tool" && returns > 1 {
        returns
    } else {
        1
    }
}

/// What the file says one agent is: blocks, tools, messages and its context window.
struct Expected {
    blocks: Vec<(String, String, usize)>,
    tools: Vec<String>,
    messages: usize,
    /// (role, text or tool_call_id) of the context window as Engram should hold it.
    context: Vec<(String, String)>,
}

/// One agent of a fixture: its blocks, tools, messages and in-context message indices.
type RawAgent = (Vec<Value>, Vec<Value>, Vec<Value>, Vec<usize>);

fn expected(file: &Value) -> Vec<Expected> {
    let agents: Vec<RawAgent> = if let Some(agents) = file["agents"].as_array() {
        agents
            .iter()
            .map(|a| {
                let by_id = |list: &Value, id: &Value| {
                    list.as_array()
                        .unwrap()
                        .iter()
                        .find(|x| &x["id"] == id)
                        .cloned()
                        .unwrap()
                };
                let blocks = a["block_ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|id| by_id(&file["blocks"], id))
                    .collect();
                // Tools gated by `requires_approval` run on Letta's client: not runnable here.
                let gated = |name: &Value| {
                    a["tool_rules"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|r| r["type"] == "requires_approval" && &r["tool_name"] == name)
                };
                let tools = a["tool_ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|id| {
                        let mut t = by_id(&file["tools"], id);
                        if gated(&t["name"]) {
                            t["source_code"] = Value::Null;
                        }
                        t
                    })
                    .collect();
                let msgs = a["messages"].as_array().unwrap().clone();
                let ctx = a["in_context_message_ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|id| msgs.iter().position(|m| &m["id"] == id).unwrap())
                    .collect();
                (blocks, tools, msgs, ctx)
            })
            .collect()
    } else {
        vec![(
            file["core_memory"].as_array().unwrap().clone(),
            file["tools"].as_array().unwrap().clone(),
            file["messages"].as_array().unwrap().clone(),
            file["in_context_message_indices"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i.as_u64().unwrap() as usize)
                .collect(),
        )]
    };
    agents
        .into_iter()
        .map(|(blocks, tools, msgs, ctx)| {
            let blocks = blocks
                .iter()
                .map(|b| {
                    let value = b["value"].as_str().unwrap_or_default().to_owned();
                    let chars = value.chars().count();
                    let limit = b["limit"]
                        .as_u64()
                        .map_or(DEFAULT_BLOCK_LIMIT.max(chars), |l| (l as usize).max(chars));
                    (b["label"].as_str().unwrap().to_owned(), value, limit)
                })
                .collect();
            let mut names: Vec<String> = Vec::new();
            for t in &tools {
                let n = t["name"].as_str().unwrap();
                // Built-ins, and custom tools whose Python source defines them (user tools).
                let python = t["source_code"]
                    .as_str()
                    .is_some_and(|src| src.contains(&format!("def {n}(")))
                    && matches!(t["source_type"].as_str(), None | Some("python" | "json"))
                    && matches!(t["tool_type"].as_str(), None | Some("custom"));
                if (BUILTIN.contains(&n) || python) && !names.iter().any(|x| x == n) {
                    names.push(n.to_owned());
                }
            }
            let mut context = Vec::new();
            // Calls of tools the agent cannot run here (and their results) stay in recall.
            let mut unrunnable = Vec::new();
            for (k, &i) in ctx.iter().enumerate() {
                let m = &msgs[i];
                let role = m["role"].as_str().unwrap();
                if has_calls(m) {
                    let calls = m["tool_calls"].as_array().unwrap();
                    if calls
                        .iter()
                        .any(|c| !names.iter().any(|n| c["function"]["name"] == n.as_str()))
                    {
                        unrunnable.extend(calls.iter().map(|c| c["id"].clone()));
                        continue;
                    }
                }
                // Engram compiles its own system prompt; approval answers are not model input.
                if (k == 0 && role == "system") || (role == "approval" && !has_calls(m)) {
                    continue;
                }
                if role == "tool" {
                    let returns = m["tool_returns"].as_array().cloned().unwrap_or_default();
                    if returns.len() > 1 {
                        for r in returns {
                            if !unrunnable.contains(&r["tool_call_id"]) {
                                context.push((
                                    "tool".into(),
                                    r["tool_call_id"].as_str().unwrap().into(),
                                ));
                            }
                        }
                    } else {
                        let id = returns
                            .first()
                            .and_then(|r| r["tool_call_id"].as_str())
                            .or(m["tool_call_id"].as_str())
                            .unwrap();
                        if !unrunnable.contains(&Value::from(id)) {
                            context.push(("tool".into(), id.into()));
                        }
                    }
                    continue;
                }
                let role = if role == "approval" {
                    "assistant"
                } else {
                    role
                };
                context.push((role.into(), text_of(m)));
            }
            Expected {
                blocks,
                tools: names,
                messages: msgs.iter().map(expands_to).sum(),
                context,
            }
        })
        .collect()
}

#[tokio::test]
async fn every_fixture_imports_as_the_file_describes_it() {
    for path in fixtures() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).unwrap();
        let home = Home::new();
        let report = home
            .engram
            .agent_files()
            .import(&bytes)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let want = expected(&json_of(&bytes));
        assert_eq!(report.agents.len(), want.len(), "{name}");
        for (id, want) in report.agents.iter().zip(want) {
            let s = snapshot(home.engram.store(), id).await.unwrap();
            let blocks: Vec<_> = s
                .blocks
                .iter()
                .map(|b| (b.label.clone(), b.value.clone(), b.limit))
                .collect();
            assert_eq!(blocks, want.blocks, "{name}: blocks");
            assert_eq!(s.agent.tools, want.tools, "{name}: tools");
            assert_eq!(s.messages.len(), want.messages, "{name}: message count");
            let context: Vec<(String, String)> = s
                .messages
                .iter()
                .filter(|m| m.in_context)
                .map(|m| match m.role {
                    Role::Tool => ("tool".into(), m.tool_call_id.clone().unwrap()),
                    r => (r.as_str().into(), m.content.clone()),
                })
                .collect();
            assert_eq!(context, want.context, "{name}: context window");
            // Timestamps come from the file, and the window follows the recall history.
            let seqs: Vec<i64> = s.messages.iter().map(|m| m.seq).collect();
            assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{name}");
            let extras = s.extras.expect("extras kept");
            for t in extras["tools"].as_array().unwrap() {
                assert!(!BUILTIN.contains(&t["name"].as_str().unwrap()));
                assert!(t.get("json_schema").is_some(), "{name}: {t}");
            }
        }
    }
}

#[tokio::test]
async fn the_v1_window_keeps_letta_order_and_the_rest_goes_to_recall() {
    let home = Home::new();
    let report = home
        .engram
        .agent_files()
        .import(&fixture("memgpt_agent_with_convo.af"))
        .await
        .unwrap();
    let id = &report.agents[0];
    let s = snapshot(home.engram.store(), id).await.unwrap();
    assert_eq!(s.agent.loop_style, LoopStyle::Classic);
    assert_eq!(s.agent.llm.model, "openai/gpt-4.1");
    assert_eq!(s.agent.llm.context_window, 128_000);
    let in_ctx = home.engram.store().messages().in_context(id).unwrap();
    assert_eq!(in_ctx.len(), 10);
    // The summary alert is the first message of the window, as Letta had it.
    assert!(
        in_ctx[0].content.contains("system_alert"),
        "{}",
        in_ctx[0].content
    );
    assert_eq!(in_ctx[0].kind, engram_core::MessageKind::Alert);
    let recall = s.messages.iter().filter(|m| !m.in_context).count();
    assert_eq!(recall, 91 - 10);
    // Wrapped user messages are kept as the model saw them.
    assert!(
        s.messages
            .iter()
            .any(|m| m.content.contains("\"type\": \"user_message\""))
    );
    let created = s.messages[0].created_at.to_rfc3339();
    assert!(created.starts_with("2025-04-01T03:47:27"), "{created}");
}

#[tokio::test]
async fn reasoning_parallel_results_and_approvals_map_onto_messages() {
    let home = Home::new();
    let report = home
        .engram
        .agent_files()
        .import(&fixture("test_agent.af"))
        .await
        .unwrap();
    let s = snapshot(home.engram.store(), &report.agents[0])
        .await
        .unwrap();
    assert!(s.messages.iter().any(|m| m.reasoning.is_some()));
    // The first parallel call of three got three tool messages out of one Letta message.
    let parallel = s
        .messages
        .iter()
        .find(|m| m.tool_calls.len() > 1)
        .expect("a parallel call");
    for c in &parallel.tool_calls {
        assert!(
            s.messages
                .iter()
                .any(|m| m.tool_call_id.as_deref() == Some(c.id.as_str())),
            "{}",
            c.id
        );
    }
    assert!(
        s.messages
            .iter()
            .any(|m| !m.in_context && m.content.contains("\"approval\""))
    );
    assert!(s.agent.tools.is_empty() || s.agent.tools == ["conversation_search"]);
    assert!(
        report.inactive.iter().any(|x| x.name == "Bash"),
        "{:?}",
        report.inactive
    );
}

async fn continue_chatting(name: &str) {
    let mock = MockLlm::start(Script::Brain).await;
    let home = Home::new();
    let report = home
        .engram
        .agent_files()
        .import(&fixture(name))
        .await
        .unwrap();
    assert!(
        report.warnings.iter().any(|w| w.contains("not usable")),
        "{:?}",
        report.warnings
    );
    let id = &report.agents[0];
    let mut llm = home.engram.agents().get(id).await.unwrap().agent.llm;
    llm.model = "openai/mock-small".into();
    llm.base_url = Some(mock.base_url());
    llm.context_window = 200_000;
    home.engram
        .agents()
        .update(
            id,
            &engram_core::AgentPatch {
                llm: Some(llm),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let (out, _) = home.chat(id, "my name is Bob").await;
    assert!(!out.messages.is_empty(), "{name}");
    assert!(
        mock.violations().is_empty(),
        "{name}: {:#?}",
        mock.violations()
    );
}

#[tokio::test]
async fn an_imported_classic_agent_continues_the_conversation() {
    continue_chatting("memgpt_agent_with_convo.af").await;
}

#[tokio::test]
async fn an_imported_agent_with_dangling_calls_continues_the_conversation() {
    continue_chatting("test_agent.af").await;
}

/// A snapshot with ids replaced by positions, so two homes can be compared.
fn comparable(s: &AgentSnapshot, agents: &[AgentId]) -> Value {
    let agent_pos = |id: &str| {
        agents
            .iter()
            .position(|a| a.as_str() == id)
            .map_or(id.to_owned(), |i| format!("agent#{i}"))
    };
    let mut blocks = Vec::new();
    for b in &s.blocks {
        let history: Vec<Value> = s.history[&b.id]
            .iter()
            .map(|e| {
                let editor = match &e.editor {
                    Editor::Agent {
                        agent_id,
                        tool_call_id,
                    } => serde_json::json!({"agent": agent_pos(agent_id.as_str()), "call": tool_call_id}),
                    other => serde_json::to_value(other).unwrap(),
                };
                serde_json::json!([editor, e.old_value, e.new_value, e.created_at])
            })
            .collect();
        let mut b = serde_json::to_value(b).unwrap();
        b["id"] = Value::Null;
        blocks.push(serde_json::json!({"block": b, "history": history}));
    }
    let mut agent = serde_json::to_value(&s.agent).unwrap();
    agent["id"] = Value::Null;
    let messages: Vec<Value> = s
        .messages
        .iter()
        .map(|m| {
            let mut v = serde_json::to_value(m).unwrap();
            for k in ["id", "agent_id", "seq"] {
                v[k] = Value::Null;
            }
            // Step ids are minted afresh on import: compare which recorded step it names.
            if let Some(step) = &m.step_id {
                v["step_id"] = s
                    .steps
                    .iter()
                    .position(|st| &st.id == step)
                    .map_or(Value::Null, |i| format!("step#{i}").into());
            }
            v
        })
        .collect();
    let passages: Vec<Value> = s
        .passages
        .iter()
        .map(|p| serde_json::json!([p.text, p.tags, p.created_at]))
        .collect();
    let steps: Vec<Value> = s
        .steps
        .iter()
        .map(|st| {
            let mut v = serde_json::to_value(st).unwrap();
            v["id"] = Value::Null;
            v["agent_id"] = Value::Null;
            v
        })
        .collect();
    serde_json::json!({"agent": agent, "blocks": blocks, "messages": messages,
                       "passages": passages, "extras": s.extras, "steps": steps})
}

#[tokio::test]
async fn engram_to_af_to_engram_is_lossless_and_holds_no_secrets() {
    const KEY: &str = "sk-test-NEVER-EXPORT-4242";
    let mock = MockLlm::start(Script::Brain).await;
    let home = Home::new();
    home.engram
        .providers()
        .set(ProviderSetup {
            name: "openai".into(),
            api_key: Some(KEY.to_owned().into()),
            ..ProviderSetup::default()
        })
        .unwrap();
    let store = home.engram.store();
    let shared = store
        .blocks()
        .create(&NewBlock::new("team", "We ship on Fridays."))
        .unwrap();
    let a = home
        .agent_with(&mock, LoopStyle::Classic, |n| {
            n.blocks.push(NewBlock {
                label: "rules".into(),
                value: "Never share secrets.".into(),
                read_only: true,
                limit: Some(300),
                description: Some("Fixed rules".into()),
            });
            n.block_ids.push(shared.id.clone());
        })
        .await;
    let b = home
        .agent_with(&mock, LoopStyle::ToolLoop, |n| {
            n.name = "Kim".into();
            n.block_ids.push(shared.id.clone());
        })
        .await;
    home.chat(&a, "my name is Bob").await;
    home.chat(
        &a,
        "remember that the spare key is under the blue flowerpot",
    )
    .await;
    home.chat(&a, "what is my name?").await;
    home.chat(&b, "hello there").await;
    store
        .blocks()
        .update(
            &shared.id,
            &BlockPatch {
                value: Some("We ship on Thursdays.".into()),
                ..BlockPatch::default()
            },
            &Editor::User,
        )
        .unwrap();
    store
        .passages()
        .insert(
            &a,
            &[NewPassage {
                text: "Bob likes tea.".into(),
                tags: vec!["prefs".into(), "bob".into()],
                created_at: Some("2024-05-06T07:08:09.123456Z".parse().unwrap()),
                ..NewPassage::default()
            }],
        )
        .unwrap();
    let in_ctx = store.messages().in_context(&a).unwrap();
    let evict: Vec<_> = in_ctx.iter().take(3).map(|m| m.id.clone()).collect();
    store
        .messages()
        .evict(&a, &evict, "Bob introduced himself.")
        .unwrap();

    let ids = vec![a.clone(), b.clone()];
    let mut before: Vec<Value> = Vec::new();
    for id in &ids {
        before.push(comparable(&snapshot(store, id).await.unwrap(), &ids));
    }
    let file = home.engram.agent_files().export(&ids).await.unwrap();
    let text = String::from_utf8(file.clone()).unwrap();
    assert!(!text.contains(KEY), "the export holds a key");
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        json["blocks"].as_array().unwrap().len(),
        6,
        "shared block once"
    );
    assert_eq!(json["agents"][0]["in_context_message_ids"][0], "message-0");

    // The agents' own base URL (the scripted server) is not another host's key holder: the
    // key stored for OpenAI never went to it.
    assert!(
        mock.requests()
            .iter()
            .all(|r| r.authorization.as_deref() != Some(&format!("Bearer {KEY}"))),
        "a stored key reached an agent's own base URL"
    );

    let other = Home::new();
    let report = other.engram.agent_files().import(&file).await.unwrap();
    assert_eq!(report.agents.len(), 2);
    // The file's endpoints wait for approval; accepted, the agents are as they were.
    for (id, d) in report.agents.iter().zip(&report.details) {
        assert_eq!(d.endpoints.len(), 1, "{:?}", d.endpoints);
        assert_eq!(d.endpoints[0].base_url, mock.base_url());
        assert_eq!(
            other
                .engram
                .agents()
                .get(id)
                .await
                .unwrap()
                .agent
                .llm
                .base_url,
            None
        );
        other
            .engram
            .trust()
            .accept_endpoint(id, None)
            .await
            .unwrap();
    }
    let mut after: Vec<Value> = Vec::new();
    for id in &report.agents {
        after.push(comparable(
            &snapshot(other.engram.store(), id).await.unwrap(),
            &report.agents,
        ));
    }
    assert_eq!(before, after);
    let team = other
        .engram
        .store()
        .blocks()
        .by_label(&report.agents[1], "team")
        .unwrap();
    assert_eq!(
        other
            .engram
            .store()
            .blocks()
            .agents_of(&team.id)
            .unwrap()
            .len(),
        2
    );
    let edits: usize = before[0]["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["history"].as_array().unwrap().len())
        .sum();
    assert!(
        edits > 0,
        "the agent's memory edits are part of the comparison"
    );
}

fn counts(home: &Home) -> (usize, usize, u64) {
    let store = home.engram.store();
    let agents = store.agents().list().unwrap();
    let messages = agents
        .iter()
        .map(|a| store.agents().memory_counts(&a.id).unwrap().0)
        .sum();
    (
        agents.len(),
        store.blocks().list(None).unwrap().len(),
        messages,
    )
}

fn edit(name: &str, f: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut v = json_of(&fixture(name));
    f(&mut v);
    serde_json::to_vec(&v).unwrap()
}

#[tokio::test]
async fn bad_files_name_what_and_where_and_import_nothing() {
    let home = Home::new();
    home.engram
        .agent_files()
        .import(&fixture("customer_service.af"))
        .await
        .unwrap();
    let v2 = "test_basic_agent_with_blocks_tools_messages_v2.af";
    let full = fixture(v2);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "truncated",
            full[..full.len() / 2].to_vec(),
            "not valid JSON",
        ),
        (
            "wrong type",
            edit(v2, |v| v["agents"][0]["messages"][3]["role"] = 5.into()),
            "agents[0].messages[3].role",
        ),
        (
            "unknown role",
            edit(v2, |v| {
                v["agents"][0]["messages"][1]["role"] = "boss".into()
            }),
            "agents[0].messages[1].role",
        ),
        (
            "block limit type",
            edit(v2, |v| v["blocks"][1]["limit"] = "big".into()),
            "blocks[1].limit",
        ),
        (
            "unknown v1 version",
            edit("customer_service.af", |v| v["version"] = "3.1.0".into()),
            "version",
        ),
        (
            "unknown extension version",
            edit(v2, |v| v["engram"] = serde_json::json!({"version": 99})),
            "engram.version",
        ),
        (
            "not an agent file",
            br#"{"hello": "world"}"#.to_vec(),
            "not an agent file",
        ),
        (
            "duplicate block id",
            edit(v2, |v| v["blocks"][2]["id"] = "block-0".into()),
            "blocks[2].id",
        ),
        (
            "duplicate message id",
            edit(v2, |v| {
                v["agents"][0]["messages"][4]["id"] = "message-1".into()
            }),
            "agents[0].messages[4].id",
        ),
        (
            "missing block",
            edit(v2, |v| v["agents"][0]["block_ids"][1] = "block-77".into()),
            "agents[0].block_ids[1]",
        ),
        (
            "missing tool",
            edit(v2, |v| v["agents"][0]["tool_ids"][2] = "tool-77".into()),
            "agents[0].tool_ids[2]",
        ),
        (
            "missing message",
            edit(v2, |v| {
                v["agents"][0]["in_context_message_ids"][5] = "message-77".into()
            }),
            "agents[0].in_context_message_ids[5]",
        ),
        (
            "v1 index out of range",
            edit("customer_service.af", |v| {
                v["in_context_message_indices"][2] = 40.into();
            }),
            "in_context_message_indices[2]",
        ),
        (
            "bad date",
            edit(v2, |v| {
                v["agents"][0]["messages"][2]["created_at"] = "yesterday".into()
            }),
            "agents[0].messages[2].created_at",
        ),
        (
            "bad label",
            edit(v2, |v| v["blocks"][0]["label"] = "line\nbreak".into()),
            "blocks[0].label",
        ),
        (
            "too deep",
            format!("{}{}", "[".repeat(5_000), "]".repeat(5_000)).into_bytes(),
            "recursion limit",
        ),
        ("too large", vec![b' '; 100 * 1024 * 1024], "64 MiB"),
    ];
    let before = counts(&home);
    for (what, bytes, needle) in cases {
        let err = home
            .engram
            .agent_files()
            .import(&bytes)
            .await
            .expect_err(what)
            .to_string();
        assert!(err.contains(needle), "{what}: {err}");
        assert_eq!(counts(&home), before, "{what} changed the database");
    }
}

/// Replaces every `agent-…`/`block-…`/`message-…`/`passage-…` uuid id in `text` by a mask.
fn mask_ids(text: &str) -> String {
    let mut out = text.to_owned();
    for prefix in ["agent-", "block-", "message-", "passage-"] {
        let mut result = String::new();
        let mut rest = out.as_str();
        while let Some(i) = rest.find(prefix) {
            let tail = &rest[i + prefix.len()..];
            let is_uuid = tail.len() >= 36
                && tail[..36]
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() || c == '-');
            result.push_str(&rest[..i]);
            if is_uuid {
                result.push_str(&format!("[{prefix}id]"));
                rest = &tail[36..];
            } else {
                result.push_str(prefix);
                rest = tail;
            }
        }
        result.push_str(rest);
        out = result;
    }
    out
}

#[tokio::test]
async fn markdown_and_json_exports_are_stable() {
    let home = Home::new();
    let report = home
        .engram
        .agent_files()
        .import(&fixture("customer_service.af"))
        .await
        .unwrap();
    let id = &report.agents[0];
    home.engram
        .store()
        .passages()
        .insert(
            id,
            &[NewPassage {
                text: "Order 42 shipped late.".into(),
                tags: vec!["orders".into()],
                created_at: Some("2025-04-02T10:00:00Z".parse().unwrap()),
                ..NewPassage::default()
            }],
        )
        .unwrap();
    let md = home.engram.agent_files().export_markdown(id).await.unwrap();
    assert!(md.contains("<details>"));
    insta::assert_snapshot!("customer_service_markdown", mask_ids(&md));

    let json: Value = serde_json::from_slice(
        &home
            .engram
            .agent_files()
            .export_json(std::slice::from_ref(id))
            .await
            .unwrap(),
    )
    .unwrap();
    let mut json: Value = serde_json::from_str(&mask_ids(&json.to_string())).unwrap();
    json["exported_at"] = "[time]".into();
    for b in json["agents"][0]["blocks"].as_array_mut().unwrap() {
        b["updated_at"] = "[time]".into();
    }
    json["agents"][0]["updated_at"] = "[time]".into();
    insta::assert_json_snapshot!("customer_service_json", json);
}

#[test]
fn the_cli_imports_and_exports() {
    let home = tempfile::tempdir().unwrap();
    let file = fixtures_dir().join("memgpt_agent_v2_double_encoded.af");
    let out = cli(home.path(), &["import", file.to_str().unwrap()]);
    let id = stdout_ok(&out).trim().to_owned();
    assert!(id.starts_with("agent-"), "{id}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning:"));

    let af = home.path().join("out.af");
    stdout_ok(&cli(
        home.path(),
        &["export", &id, "-o", af.to_str().unwrap()],
    ));
    let v: Value = serde_json::from_slice(&std::fs::read(&af).unwrap()).unwrap();
    assert_eq!(v["agents"][0]["name"], "memgpt_agent");
    let md = stdout_ok(&cli(
        home.path(),
        &["export", "--all", "--format", "markdown"],
    ));
    assert!(md.starts_with("# memgpt_agent"), "{md}");
    let json = stdout_ok(&cli(home.path(), &["export", &id, "--format", "json"]));
    assert!(json.contains("\"engram-export\""));
    let again = stdout_ok(&cli(home.path(), &["import", af.to_str().unwrap()]));
    assert!(again.trim().starts_with("agent-"));

    let big = home.path().join("big.af");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(100 * 1024 * 1024)
        .unwrap();
    let out = cli(home.path(), &["import", big.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("64 MiB"));
    let bad = cli(home.path(), &["export", "agent-nope"]);
    assert!(!bad.status.success());
}

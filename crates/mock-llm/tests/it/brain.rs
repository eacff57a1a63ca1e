//! The brain plays the lab conversation against a small agent loop written here, over both
//! APIs and both loop styles, streamed and not. The loop keeps memory, compiles the system
//! message as DESIGN.md §3 describes, runs the tools and sends heartbeats in the classic style.

use std::time::{Duration, Instant};

use crate::common::*;
use engram_mock_llm::{ChatView, MockLlm, Reply, Script, ViewMessage, brain};
use serde_json::{Value, json};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Wire {
    OpenAi { stream: bool },
    Anthropic { stream: bool },
}

struct Agent {
    base: String,
    wire: Wire,
    classic: bool,
    human: String,
    tasks: Option<Vec<String>>,
    archival: Vec<String>,
    /// OpenAI-shaped history after the system message.
    messages: Vec<Value>,
    /// Tool calls of each step of the last turn: (name, arguments).
    steps: Vec<Vec<(String, Value)>>,
}

fn envelope(message: &str) -> String {
    json!({"status": "OK", "message": message, "time": "2025-01-01 10:00:00 AM UTC+0000"})
        .to_string()
}

impl Agent {
    fn new(mock: &MockLlm, wire: Wire, classic: bool) -> Agent {
        Agent {
            base: mock.base_url(),
            wire,
            classic,
            human: String::new(),
            tasks: None,
            archival: Vec::new(),
            messages: Vec::new(),
            steps: Vec::new(),
        }
    }

    fn block(label: &str, value: &str) -> String {
        format!(
            "<{label}>\n<description>\nThe {label} block.\n</description>\n<metadata>\n- chars_current={}\n- chars_limit=5000\n</metadata>\n<value>\n{value}\n</value>\n</{label}>\n",
            value.chars().count()
        )
    }

    fn system(&self) -> String {
        let mut blocks = Agent::block("persona", "I am Sam, a helpful assistant.")
            + &Agent::block("human", &self.human);
        if let Some(tasks) = &self.tasks {
            blocks += &Agent::block("tasks", &serde_json::to_string(tasks).unwrap());
        }
        format!(
            "You are a memory agent.\n\n<memory_blocks>\nThe following memory blocks are currently engaged in your core memory unit:\n\n{blocks}</memory_blocks>\n\n<memory_metadata>\n- The current time is: now\n- {} previous messages between you and the user are stored in recall memory (use tools to access them)\n- {} total memories you created are stored in archival memory (use tools to access them)\n</memory_metadata>",
            self.messages.len(),
            self.archival.len()
        )
    }

    fn tools(&self) -> Vec<Value> {
        let s = |props: Value| props;
        let mut tools = vec![
            tool(
                "core_memory_append",
                s(json!({"label": {"type": "string"}, "content": {"type": "string"}})),
            ),
            tool(
                "archival_memory_insert",
                s(json!({"content": {"type": "string"}})),
            ),
            tool(
                "archival_memory_search",
                s(json!({"query": {"type": "string"}})),
            ),
            tool(
                "conversation_search",
                s(json!({"query": {"type": "string"}})),
            ),
        ];
        if self.tasks.is_some() {
            tools.push(tool(
                "task_queue_push",
                json!({"task_description": {"type": "string"}}),
            ));
            tools.push(tool("task_queue_pop", json!({})));
        }
        if self.classic {
            tools.push(tool("send_message", json!({"message": {"type": "string"}})));
            for t in &mut tools {
                t["function"]["parameters"]["properties"]["request_heartbeat"] =
                    json!({"type": "boolean"});
            }
        }
        tools
    }

    fn run_tool(&mut self, name: &str, args: &Value) -> String {
        let arg = |k: &str| args[k].as_str().unwrap_or_default().to_string();
        match name {
            "core_memory_append" => {
                assert_eq!(arg("label"), "human");
                if !self.human.is_empty() {
                    self.human.push('\n');
                }
                self.human.push_str(&arg("content"));
                envelope(&self.human)
            }
            "archival_memory_insert" => {
                self.archival.push(arg("content"));
                envelope("None")
            }
            "archival_memory_search" => {
                let q = arg("query").to_lowercase();
                let hits: Vec<Value> = self
                    .archival
                    .iter()
                    .filter(|p| q.split(' ').any(|w| p.to_lowercase().contains(w)))
                    .map(|p| json!({"timestamp": "2025-01-01", "content": p}))
                    .collect();
                envelope(&serde_json::to_string(&hits).unwrap())
            }
            "conversation_search" => {
                let q = arg("query").to_lowercase();
                let hits: Vec<Value> = self
                    .messages
                    .iter()
                    .filter(|m| {
                        m["role"] == "user"
                            && m["content"]
                                .as_str()
                                .is_some_and(|c| c.to_lowercase().contains(&q))
                    })
                    .map(|m| json!({"role": "user", "content": m["content"]}))
                    .collect();
                envelope(&format!(
                    "Showing {} results: {}",
                    hits.len(),
                    serde_json::to_string(&hits).unwrap()
                ))
            }
            "task_queue_push" => {
                self.tasks.as_mut().unwrap().push(arg("task_description"));
                envelope("None")
            }
            "task_queue_pop" => {
                let tasks = self.tasks.as_mut().unwrap();
                let task = tasks.remove(0);
                envelope(&format!(
                    "Popped {task}. Remaining tasks {}",
                    serde_json::to_string(tasks).unwrap()
                ))
            }
            "send_message" => envelope("None"),
            other => panic!("unknown tool {other}"),
        }
    }

    /// One user turn; returns what the user sees.
    async fn say(&mut self, text: &str) -> String {
        self.messages.push(json!({"role": "user", "content": text}));
        self.steps.clear();
        let mut reply = String::new();
        for _ in 0..10 {
            let (content, calls) = self.step().await;
            let mut msg = json!({"role": "assistant", "content": content});
            if !calls.is_empty() {
                msg["tool_calls"] = calls
                    .iter()
                    .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}))
                    .collect();
            }
            self.messages.push(msg);
            if calls.is_empty() {
                // Classic: plain text is inner monologue and ends the run; tool loop: it is the reply.
                if !self.classic {
                    reply = content.unwrap_or_default();
                }
                return reply;
            }
            let mut step = Vec::new();
            let mut heartbeat = false;
            for (id, name, args) in calls {
                let args: Value = serde_json::from_str(&args).expect("brain sends valid JSON");
                if self.classic {
                    heartbeat |= args["request_heartbeat"] == json!(true);
                }
                if name == "send_message" {
                    reply = args["message"].as_str().unwrap().to_string();
                }
                let result = self.run_tool(&name, &args);
                self.messages
                    .push(json!({"role": "tool", "tool_call_id": id, "content": result}));
                step.push((name, args));
            }
            self.steps.push(step);
            if self.classic {
                if !heartbeat {
                    return reply;
                }
                self.messages.push(json!({"role": "user", "content": json!({"type": "heartbeat", "reason": "request_heartbeat", "time": "now"}).to_string()}));
            }
        }
        panic!("the brain did not finish the turn in 10 steps");
    }

    /// One LLM call over the chosen wire: (text, [(id, name, arguments)]).
    async fn step(&self) -> (Option<String>, Vec<(String, String, String)>) {
        match self.wire {
            Wire::OpenAi { stream } => {
                let mut messages = vec![json!({"role": "system", "content": self.system()})];
                messages.extend(self.messages.iter().cloned());
                let body = json!({"model": "mock-small", "messages": messages, "tools": self.tools(), "stream": stream});
                let res = post(&self.base, "/chat/completions", &body).await;
                assert_eq!(res.status(), 200);
                if stream {
                    let a = assemble_openai(&parse_sse(&res.text().await.unwrap()));
                    let text = (!a.content.is_empty()).then_some(a.content);
                    (
                        text,
                        a.calls
                            .into_iter()
                            .map(|(_, id, name, args)| (id, name, args))
                            .collect(),
                    )
                } else {
                    let v: Value = res.json().await.unwrap();
                    let m = &v["choices"][0]["message"];
                    let calls = m["tool_calls"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|c| {
                            let s = |p: &str| c.pointer(p).unwrap().as_str().unwrap().to_string();
                            (s("/id"), s("/function/name"), s("/function/arguments"))
                        })
                        .collect();
                    (m["content"].as_str().map(str::to_string), calls)
                }
            }
            Wire::Anthropic { stream } => {
                let tools: Vec<Value> = self
                    .tools()
                    .iter()
                    .map(|t| json!({"name": t["function"]["name"], "description": "d", "input_schema": t["function"]["parameters"]}))
                    .collect();
                let body = json!({"model": "claude-mock", "max_tokens": 1024, "system": self.system(),
                    "messages": to_anthropic(&self.messages), "tools": tools, "stream": stream});
                let res = post_anthropic(&self.base, &body).await;
                assert_eq!(res.status(), 200);
                if stream {
                    let a = assemble_anthropic(&parse_sse(&res.text().await.unwrap()));
                    let text = (!a.text.is_empty()).then_some(a.text);
                    (text, a.calls)
                } else {
                    let v: Value = res.json().await.unwrap();
                    let mut text = None;
                    let mut calls = Vec::new();
                    for b in v["content"].as_array().unwrap() {
                        match b["type"].as_str().unwrap() {
                            "text" => text = Some(b["text"].as_str().unwrap().to_string()),
                            "tool_use" => calls.push((
                                b["id"].as_str().unwrap().to_string(),
                                b["name"].as_str().unwrap().to_string(),
                                b["input"].to_string(),
                            )),
                            other => panic!("unexpected block {other}"),
                        }
                    }
                    (text, calls)
                }
            }
        }
    }
}

/// OpenAI-shaped history → Anthropic messages: tool calls become tool_use blocks, consecutive
/// tool messages one user message of tool_result blocks.
fn to_anthropic(messages: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for m in messages {
        match m["role"].as_str().unwrap() {
            "user" => out.push(json!({"role": "user", "content": m["content"]})),
            "assistant" => {
                let mut blocks = Vec::new();
                if let Some(t) = m["content"].as_str().filter(|t| !t.is_empty()) {
                    blocks.push(json!({"type": "text", "text": t}));
                }
                for c in m["tool_calls"].as_array().into_iter().flatten() {
                    let input: Value =
                        serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap();
                    blocks.push(json!({"type": "tool_use", "id": c["id"], "name": c["function"]["name"], "input": input}));
                }
                out.push(json!({"role": "assistant", "content": blocks}));
            }
            "tool" => {
                let block = json!({"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]});
                match out.last_mut() {
                    Some(last) if last["role"] == "user" && last["content"].is_array() => {
                        last["content"].as_array_mut().unwrap().push(block);
                    }
                    _ => out.push(json!({"role": "user", "content": [block]})),
                }
            }
            other => panic!("role {other}"),
        }
    }
    out
}

fn memory_call(content: &str) -> Value {
    json!({"label": "human", "content": content})
}

/// Drops `request_heartbeat` so both styles compare alike.
fn plain(step: &[(String, Value)]) -> Vec<(String, Value)> {
    step.iter()
        .map(|(n, a)| {
            let mut a = a.clone();
            if let Some(o) = a.as_object_mut() {
                o.remove("request_heartbeat");
            }
            (n.clone(), a)
        })
        .collect()
}

async fn lab(wire: Wire, classic: bool) {
    let mock = MockLlm::start(Script::Brain).await;
    let mut agent = Agent::new(&mock, wire, classic);
    let ctx = format!("{wire:?} classic={classic}");

    assert_eq!(
        agent.say("what is my name?").await,
        "I don't know yet. What is your name?",
        "{ctx}"
    );
    assert!(
        agent
            .steps
            .iter()
            .all(|s| s.iter().all(|(n, _)| n == "send_message")),
        "{ctx}"
    );

    assert_eq!(
        agent.say("my name is Bob").await,
        "Nice to meet you, Bob! I'll remember that.",
        "{ctx}"
    );
    assert_eq!(
        plain(&agent.steps[0]),
        vec![("core_memory_append".to_string(), memory_call("Name: Bob"))],
        "{ctx}"
    );
    if classic {
        assert_eq!(agent.steps[0][0].1["request_heartbeat"], true, "{ctx}");
        assert_eq!(agent.steps.len(), 2, "{ctx}: append, then send_message");
    } else {
        assert_eq!(agent.steps.len(), 1, "{ctx}");
    }
    assert_eq!(agent.human, "Name: Bob");

    assert_eq!(
        agent.say("What is my name? I always forget it.").await,
        "Your name is Bob.",
        "{ctx}"
    );

    assert_eq!(
        agent
            .say("my best friend is Alya and she loves cherry pie")
            .await,
        "Alya sounds lovely! I'll remember that Alya loves cherry pie.",
        "{ctx}"
    );
    assert_eq!(
        plain(&agent.steps[0]),
        vec![
            (
                "core_memory_append".to_string(),
                memory_call("Best friend: Alya")
            ),
            (
                "core_memory_append".to_string(),
                memory_call("Alya loves cherry pie")
            ),
        ],
        "{ctx}: two parallel calls in one response"
    );
    assert_eq!(
        agent.human,
        "Name: Bob\nBest friend: Alya\nAlya loves cherry pie"
    );

    assert_eq!(
        agent.say("who is my best friend?").await,
        "Your best friend is Alya, who loves cherry pie.",
        "{ctx}"
    );

    // Saying it again saves nothing twice (the lab's notebook saved one fact three times).
    assert_eq!(
        agent.say("my name is Bob").await,
        "I know, Bob! You told me before.",
        "{ctx}"
    );
    assert!(
        agent
            .steps
            .iter()
            .flatten()
            .all(|(n, _)| n == "send_message"),
        "{ctx}"
    );
    assert_eq!(agent.human.matches("Name: Bob").count(), 1);

    // Archival memory and recall.
    assert_eq!(
        agent
            .say("Remember that the spare key is under the blue pot.")
            .await,
        "I've saved that to my archival memory.",
        "{ctx}"
    );
    assert_eq!(agent.archival, ["the spare key is under the blue pot"]);
    assert_eq!(
        agent.say("search your archival memory for spare key").await,
        "Here is what I found in my archival memory about spare key: the spare key is under the blue pot",
        "{ctx}"
    );
    assert_eq!(
        plain(&agent.steps[0]),
        vec![(
            "archival_memory_search".to_string(),
            json!({"query": "spare key"})
        )]
    );
    assert_eq!(
        agent.say("search our conversation for cherry").await,
        "Here is what I found in our conversation about cherry: my best friend is Alya and she loves cherry pie",
        "{ctx}"
    );
    let echo = agent.say("nice weather today").await;
    assert_eq!(echo, "Got it! You said: nice weather today", "{ctx}");

    assert_eq!(mock.violations(), Vec::<String>::new(), "{ctx}");
    // Ten turns; the five that use a tool take two steps (in both styles: in the classic one the
    // second step is send_message, in the tool loop plain text).
    assert_eq!(mock.chat_requests().len(), 15, "{ctx}");
}

#[tokio::test]
async fn lab_openai_tool_loop() {
    lab(Wire::OpenAi { stream: false }, false).await;
}

#[tokio::test]
async fn lab_openai_classic() {
    lab(Wire::OpenAi { stream: false }, true).await;
}

#[tokio::test]
async fn lab_openai_streamed_both_styles() {
    lab(Wire::OpenAi { stream: true }, false).await;
    lab(Wire::OpenAi { stream: true }, true).await;
}

#[tokio::test]
async fn lab_anthropic_both_styles() {
    lab(Wire::Anthropic { stream: false }, false).await;
    lab(Wire::Anthropic { stream: false }, true).await;
}

#[tokio::test]
async fn lab_anthropic_streamed_classic() {
    lab(Wire::Anthropic { stream: true }, true).await;
}

#[tokio::test]
async fn task_queue_in_both_styles() {
    for classic in [false, true] {
        let mock = MockLlm::start(Script::Brain).await;
        let mut agent = Agent::new(&mock, Wire::OpenAi { stream: false }, classic);
        agent.tasks = Some(Vec::new());
        assert_eq!(
            agent.say("add task: start calling me Charles").await,
            "I added the task: start calling me Charles"
        );
        assert_eq!(
            agent.say("add task: tell me a haiku about my name").await,
            "I added the task: tell me a haiku about my name"
        );
        assert_eq!(agent.tasks.as_ref().unwrap().len(), 2);
        assert_eq!(
            agent.say("Complete your tasks").await,
            "All tasks are done."
        );
        let pops = agent
            .steps
            .iter()
            .flatten()
            .filter(|(n, _)| n == "task_queue_pop")
            .count();
        assert_eq!(pops, 2, "classic={classic}");
        assert!(agent.steps.iter().all(|s| s.len() == 1), "one pop per step");
        if classic {
            assert!(
                agent
                    .steps
                    .iter()
                    .flatten()
                    .filter(|(n, _)| n == "task_queue_pop")
                    .all(|(_, a)| a["request_heartbeat"] == true)
            );
        }
        assert_eq!(agent.tasks.as_ref().unwrap().len(), 0);
        assert_eq!(agent.say("keep going").await, "All tasks are done.");
        assert_eq!(mock.violations(), Vec::<String>::new());
    }
}

fn view(system: &str, messages: Vec<ViewMessage>, tools: &[&str]) -> ChatView {
    ChatView {
        system: system.into(),
        messages,
        tools: tools.iter().map(|t| t.to_string()).collect(),
        model: "mock-small".into(),
        ..ChatView::default()
    }
}

fn user(text: &str) -> ViewMessage {
    ViewMessage {
        role: "user".into(),
        text: text.into(),
        ..ViewMessage::default()
    }
}

#[test]
fn slow_messages_are_delayed_once() {
    let v = view("", vec![user("slow: tell me a story")], &[]);
    match brain(&v) {
        Reply::Delayed(d, inner) => {
            assert_eq!(d, Duration::from_secs(5));
            assert_eq!(
                *inner,
                Reply::Text("Got it! You said: tell me a story".into())
            );
        }
        other => panic!("expected a delay, got {other:?}"),
    }
}

#[tokio::test]
async fn slow_message_over_http_can_be_abandoned() {
    let mock = MockLlm::start(Script::Brain).await;
    let body = json!({"model": "m", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "slow: hello"}]});
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(400))
        .build()
        .unwrap();
    let started = Instant::now();
    let err = client
        .post(format!("{}/chat/completions", mock.base_url()))
        .json(&body)
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout() && started.elapsed() < Duration::from_secs(2));
}

#[test]
fn failures_heartbeats_and_summaries() {
    // A failed tool result is reported to the user.
    let system = "<human>\n<value>\n\n</value>\n</human>";
    let messages = vec![
        user("my name is Bob"),
        ViewMessage {
            role: "assistant".into(),
            tool_calls: vec![engram_mock_llm::ViewCall { id: "c1".into(), name: "core_memory_append".into(), arguments: "{}".into() }],
            ..ViewMessage::default()
        },
        ViewMessage {
            role: "tool".into(),
            tool_call_id: Some("c1".into()),
            text: json!({"status": "Failed", "message": "Edit failed: Exceeds 10 character limit (requested 20)"}).to_string(),
            ..ViewMessage::default()
        },
    ];
    let v = view(system, messages, &["core_memory_append"]);
    assert_eq!(
        brain(&v),
        Reply::Text(
            "Sorry, that did not work: Edit failed: Exceeds 10 character limit (requested 20)"
                .into()
        )
    );

    // MemGPT-wrapped user messages are read; with no user message at all it greets.
    let v = view(
        "",
        vec![user(
            r#"{"type":"user_message","message":"my name is Ann","time":"t"}"#,
        )],
        &["core_memory_append"],
    );
    assert!(matches!(brain(&v), Reply::ToolCalls(c) if c[0].arguments.contains("Name: Ann")));
    let v = view("", vec![user(r#"{"type":"heartbeat","reason":"x"}"#)], &[]);
    assert_eq!(
        brain(&v),
        Reply::Text("Hello! How can I help you today?".into())
    );

    // A summarisation request gets a short summary, not an echo of the transcript.
    let transcript = format!(
        "Summarize this conversation:\nuser: my name is Bob\nassistant: hi\n{}",
        "user: blah blah\n".repeat(200)
    );
    let v = view("You summarise conversations.", vec![user(&transcript)], &[]);
    let Reply::Text(summary) = brain(&v) else {
        panic!()
    };
    assert!(
        summary.starts_with("Summary: ")
            && summary.contains("my name is Bob")
            && summary.len() < 400,
        "{summary}"
    );
}

//! Conversations that never end, against a scripted model that behaves like a real
//! local server: it refuses prompts over its context length, may count tokens differently from
//! Engram, and may answer summarisation requests far past `max_tokens`.

use engram_agent::prompts::{SUMMARIZER_SYSTEM, SUMMARY_CUT_MARKER};
use engram_agent::window::summary_budget;
use engram_core::{AgentId, AgentPatch, Error, LoopStyle, MessageKind, StopReason};
use engram_mock_llm::{Call, Limits, MockLlm, Reply, Script};
use engram_suite::Home;
use serde_json::json;

/// The `i`-th line of a long, varied conversation (no phrase the scripted brain treats as a
/// memory instruction, so each message is one step).
fn line(i: usize) -> String {
    const PLACES: [&str; 5] = [
        "the lake",
        "the old mill",
        "the market",
        "the hills",
        "the harbour",
    ];
    const THINGS: [&str; 5] = [
        "tulips",
        "a kite",
        "sourdough",
        "a watercolour",
        "the violin",
    ];
    format!(
        "Day {i}: I went to {} with Jo and we talked about {} for a long while; it rained at {} o'clock and we laughed about it.",
        PLACES[i % 5],
        THINGS[(i / 5) % 5],
        i % 12 + 1
    )
}

/// Sends lines `turns` of [`line`], one message each; every message must end its turn.
async fn send_turns(home: &Home, agent: &AgentId, turns: std::ops::Range<usize>) {
    for i in turns {
        let (out, _) = home.chat(agent, &line(i)).await;
        assert_eq!(
            out.stop_reason,
            StopReason::EndTurn,
            "message {i}: {:?}",
            out.error
        );
    }
}

async fn agent_at(home: &Home, mock: &MockLlm, window: u32) -> AgentId {
    home.agent_with(mock, LoopStyle::ToolLoop, |a| {
        a.llm.as_mut().unwrap().context_window = window;
    })
    .await
}

/// Summariser requests seen, split into first attempts and stricter retries.
fn summariser_calls(mock: &MockLlm) -> (usize, usize) {
    let calls: Vec<String> = mock
        .chat_requests()
        .into_iter()
        .filter(|r| r.body["messages"][0]["content"] == SUMMARIZER_SYSTEM)
        .map(|r| {
            r.body["messages"][1]["content"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    let retries = calls.iter().filter(|c| c.contains("far too long")).count();
    (calls.len() - retries, retries)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summariser_that_ignores_max_tokens_never_bricks_the_agent() {
    let mock = MockLlm::start(Script::Brain).await;
    let window = 4_096;
    mock.set_limits(Some(Limits {
        context_window: Some(window),
        token_factor: 1.0,
        ramble_summaries: true,
    }));
    let home = Home::new();
    let agent = agent_at(&home, &mock, window as u32).await;
    send_turns(&home, &agent, 0..300).await;
    assert_eq!(mock.refusals(), 0, "no prompt went over the window");
    let counts = mock.take_prompt_counts();
    assert!(
        counts.iter().all(|&t| t <= window),
        "{:?}",
        counts.iter().max()
    );

    // The summary was asked for again, then cut, and stays within its budget.
    let (first, retries) = summariser_calls(&mock);
    assert!(
        first >= 3 && retries >= 1,
        "{first} summaries, {retries} retries"
    );
    let summary = home
        .engram
        .agents()
        .get(&agent)
        .await
        .unwrap()
        .agent
        .summary
        .unwrap();
    let budget = summary_budget(window as usize);
    assert!(
        summary.chars().count().div_ceil(4) <= budget,
        "{} chars for a budget of {budget} tokens",
        summary.chars().count()
    );
    assert!(
        summary.ends_with(SUMMARY_CUT_MARKER.trim_start()),
        "{summary}"
    );
    // This model restates the previous summary inside the new one, so summaries nest — but
    // bounded by the budget instead of growing until the agent breaks.

    // Warned at most once per compaction (once per fill), not after every step.
    let all = home
        .engram
        .recall()
        .list(&agent, None, 100_000)
        .await
        .unwrap();
    let alerts = all.iter().filter(|m| m.kind == MessageKind::Alert).count();
    assert!(
        alerts <= first + 1,
        "{alerts} alerts for {first} compactions"
    );
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2k_window_takes_few_calls_per_message() {
    let mock = MockLlm::start(Script::Brain).await;
    mock.set_limits(Some(Limits::window(2_048)));
    let home = Home::new();
    let agent = agent_at(&home, &mock, 2_048).await;
    let messages = 60;
    send_turns(&home, &agent, 0..messages).await;
    let calls = mock.chat_requests().len();
    assert!(
        calls <= 3 * messages,
        "{calls} model calls for {messages} messages"
    );
    assert_eq!(mock.refusals(), 0);
    let (first, _) = summariser_calls(&mock);
    assert!(first >= 2, "the window was compacted ({first})");
    let all = home
        .engram
        .recall()
        .list(&agent, None, 100_000)
        .await
        .unwrap();
    let alerts = all.iter().filter(|m| m.kind == MessageKind::Alert).count();
    assert!(
        alerts <= first + 1,
        "{alerts} alerts for {first} compactions"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tokenizer_counting_a_quarter_more_is_learnt_with_at_most_one_refusal() {
    let mock = MockLlm::start(Script::Brain).await;
    mock.set_limits(Some(Limits {
        context_window: Some(4_096),
        token_factor: 1.25,
        ramble_summaries: false,
    }));
    let home = Home::new();
    let agent = agent_at(&home, &mock, 4_096).await;
    send_turns(&home, &agent, 0..120).await;
    assert!(mock.refusals() <= 1, "{} refusals", mock.refusals());
    let (first, _) = summariser_calls(&mock);
    assert!(first >= 2, "the window was compacted ({first})");

    // The ratio was learnt and survives a restart.
    let learnt = home
        .engram
        .store()
        .settings()
        .model_calibration("openai/mock-small")
        .unwrap()
        .expect("a calibration");
    assert!((1.2..1.35).contains(&learnt.ratio), "{learnt:?}");
    let reopened = engram_suite::open(
        home.path(),
        std::sync::Arc::new(engram_secrets::MemoryStore::default()),
    );
    assert_eq!(
        reopened
            .store()
            .settings()
            .model_calibration("openai/mock-small")
            .unwrap(),
        Some(learnt)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_tightens_the_calibration_and_the_message_still_goes_through() {
    let mock = MockLlm::start(Script::Brain).await;
    let home = Home::new();
    let agent = agent_at(&home, &mock, 4_096).await;
    for i in 0..20 {
        home.chat(&agent, &line(i)).await;
    }
    // From now on the server counts half as much again as it did: the next prompt is refused.
    mock.set_limits(Some(Limits {
        context_window: Some(4_096),
        token_factor: 1.5,
        ramble_summaries: false,
    }));
    let before = home
        .engram
        .store()
        .settings()
        .model_calibration("openai/mock-small")
        .unwrap();
    send_turns(&home, &agent, 20..60).await;
    assert!(mock.refusals() <= 1, "{} refusals", mock.refusals());
    let after = home
        .engram
        .store()
        .settings()
        .model_calibration("openai/mock-small")
        .unwrap()
        .unwrap();
    assert!(after.ratio >= 1.45, "{before:?} → {after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_too_small_is_an_error_the_user_can_act_on() {
    let mock = MockLlm::start(Script::Brain).await;
    let home = Home::new();

    // At creation: nothing is created.
    let mut llm = engram_core::LlmConfig::new("openai/mock-small");
    llm.base_url = Some(mock.base_url());
    llm.context_window = 1_024;
    let new = engram_core::NewAgent {
        name: "Tiny".into(),
        llm: Some(llm.clone()),
        ..Default::default()
    };
    let e = home.engram.agents().create(new).await.unwrap_err();
    let Error::ContextWindowTooSmall {
        needed, offered, ..
    } = &e
    else {
        panic!("{e:?}");
    };
    assert_eq!(*offered, 1_024);
    assert!(*needed > 1_024 && *needed < 4_096, "{needed}");
    let text = e.to_string();
    assert!(
        text.starts_with(&format!(
            "this agent needs at least {needed} tokens of context; openai/mock-small offers 1024"
        )),
        "{text}"
    );
    assert!(text.contains("num_ctx"), "{text}");
    assert!(home.engram.agents().list().await.unwrap().is_empty());

    // On a model change: nothing changes.
    let agent = agent_at(&home, &mock, 8_192).await;
    let patch = AgentPatch {
        llm: Some(llm),
        ..Default::default()
    };
    let e = home
        .engram
        .agents()
        .update(&agent, &patch)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "context_window_too_small");
    let kept = home.engram.agents().get(&agent).await.unwrap().agent;
    assert_eq!(kept.llm.context_window, 8_192);

    // On a message, when memory grew past what the window holds: nothing is written.
    let agent = agent_at(&home, &mock, 2_048).await;
    let big = "The user's garden notes. ".repeat(190);
    let human = home
        .engram
        .store()
        .blocks()
        .by_label(&agent, "human")
        .unwrap();
    home.engram
        .store()
        .blocks()
        .update(
            &human.id,
            &engram_core::BlockPatch {
                value: Some(big),
                ..Default::default()
            },
            &engram_core::Editor::User,
        )
        .unwrap();
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let e = home
        .engram
        .runs()
        .send_message(&agent, "hello", &tx, Default::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), "context_window_too_small", "{e}");
    assert!(
        home.engram
            .recall()
            .list(&agent, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(mock.chat_requests().is_empty(), "no model call was made");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_repeats_itself_is_stopped_with_a_clear_reason() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    let search = || {
        Reply::ToolCalls(vec![Call::new(
            "archival_memory_search",
            json!({"query": "tulips"}),
        )])
    };
    // Without the check the loop would go on to the step limit; three are enough to see it.
    mock.push(search());
    mock.push(search());
    mock.push(search());
    let (out, _) = home.chat(&agent, "what do you know about tulips?").await;
    assert_eq!(out.stop_reason, StopReason::NoProgress, "{:?}", out.error);
    assert_eq!(out.usage.step_count, 3, "stopped at the second repeat");
    assert_eq!(StopReason::NoProgress.as_str(), "no_progress");

    // Different calls are progress, however many.
    let fresh = home.agent(&mock, LoopStyle::ToolLoop).await;
    for n in 0..4 {
        mock.push(Reply::ToolCalls(vec![Call::new(
            "archival_memory_insert",
            json!({"content": format!("tulip fact {n}")}),
        )]));
    }
    mock.push(Reply::text("Saved four facts."));
    let (out, _) = home.chat(&fresh, "save four tulip facts").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn, "{:?}", out.error);
    assert_eq!(out.usage.step_count, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_window_error_reaches_every_transport() {
    let mock = MockLlm::start(Script::Brain).await;
    let home = tempfile::tempdir().unwrap();
    let engram = engram_suite::open(
        home.path(),
        std::sync::Arc::new(engram_secrets::MemoryStore::default()),
    );
    let base = engram_suite::serve(
        engram,
        engram_server::ServerConfig::new(engram_server::Auth::Disabled),
    )
    .await;
    let http = reqwest::Client::new();

    // REST (Letta's shape): 400 with the advice as `detail`.
    let resp = http
        .post(format!("{base}/v1/agents/"))
        .json(&json!({
            "name": "Tiny",
            "memory_blocks": [{"label": "human", "value": ""}],
            "llm_config": {"model": "mock-small", "model_endpoint_type": "openai",
                           "model_endpoint": mock.base_url(), "context_window": 1000}
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["code"], "context_window_too_small", "{body}");
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("offers 1000") && detail.contains("num_ctx"),
        "{detail}"
    );

    // The window's transport (/app): `{code, message, details}` with the figures.
    let resp = http
        .post(format!("{base}/app/create_agent"))
        .json(
            &json!({"new": {"name": "Tiny", "llm": {"model": "openai/mock-small",
                       "base_url": mock.base_url(), "context_window": 1000}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["code"], "context_window_too_small", "{body}");
    assert_eq!(body["details"]["offered"], 1000);
    assert!(body["details"]["needed"].as_u64().unwrap() > 1000);

    // The CLI: one line on stderr and a failure exit.
    let url = mock.base_url();
    let out = engram_suite::cli(
        home.path(),
        &[
            "agent",
            "create",
            "--name",
            "Tiny",
            "--model",
            "openai/mock-small",
            "--base-url",
            &url,
            "--context-window",
            "1000",
        ],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error: this agent needs at least ") && stderr.contains("offers 1000"),
        "{stderr}"
    );
    assert!(mock.chat_requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_bricked_by_a_nested_summary_recovers() {
    let mock = MockLlm::start(Script::Brain).await;
    mock.set_limits(Some(Limits::window(4_096)));
    let home = Home::new();
    let agent = agent_at(&home, &mock, 4_096).await;
    // What an unbounded summary had grown into: more than the window on its own.
    let nested = (0..60)
        .map(|i| format!("Previous summary: the user mentioned tulip bed {i} again."))
        .collect::<Vec<_>>()
        .join(" ")
        .repeat(4);
    home.engram
        .store()
        .messages()
        .evict(&agent, &[], &nested)
        .unwrap();
    send_turns(&home, &agent, 0..5).await;
    let summary = home
        .engram
        .agents()
        .get(&agent)
        .await
        .unwrap()
        .agent
        .summary
        .unwrap();
    assert!(
        summary.chars().count().div_ceil(4) <= summary_budget(4_096),
        "{} chars",
        summary.chars().count()
    );
    assert_eq!(mock.refusals(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_that_only_repeat_a_memory_edit_are_stopped() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::Classic).await;
    // A small model answering every heartbeat with the same edit, heartbeat requested.
    for _ in 0..8 {
        mock.push(Reply::ToolCalls(vec![Call::new(
            "core_memory_append",
            json!({"label": "human", "content": "Likes tulips.", "request_heartbeat": true}),
        )]));
    }
    let (out, _) = home.chat(&agent, "I like tulips").await;
    assert_eq!(out.stop_reason, StopReason::NoProgress, "{:?}", out.error);
    // Appended once, then "already there" twice, then stopped — not the 50-step limit.
    assert_eq!(out.usage.step_count, 4);
    assert_eq!(home.block(&agent, "human"), "Likes tulips.");
}

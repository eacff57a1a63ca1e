//! Each provider fault ends in a recovery or a clear error, and the agent stays usable.

use engram_core::{LoopStyle, RunEvent, StopReason};
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_service::ProviderSetup;
use engram_suite::{Home, last_tool_results};
use serde_json::json;

/// An agent whose provider retries quickly and gives up on a silent server after 2 s.
async fn impatient(home: &Home, mock: &MockLlm) -> engram_core::AgentId {
    home.engram
        .providers()
        .set(ProviderSetup {
            name: "local".into(),
            base_url: Some(mock.base_url()),
            timeout_secs: Some(2),
            max_retries: Some(2),
            ..ProviderSetup::default()
        })
        .unwrap();
    home.agent_with(mock, LoopStyle::ToolLoop, |a| {
        let llm = a.llm.as_mut().unwrap();
        llm.model = "local/mock-small".into();
        llm.base_url = None;
    })
    .await
}

async fn still_usable(home: &Home, mock: &MockLlm, agent: &engram_core::AgentId) {
    mock.push(Reply::text("Back to normal."));
    let (out, _) = home.chat(agent, "hello again").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn, "{:?}", out.error);
    assert_eq!(out.messages.last().unwrap().content, "Back to normal.");
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
    let integrity = home.engram.store().integrity_check().unwrap();
    assert_eq!(integrity, "ok");
}

#[tokio::test]
async fn rate_limits_are_retried_after_the_servers_delay() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = impatient(&home, &mock).await;
    mock.push(Reply::rate_limited(Some(1)));
    mock.push(Reply::text("Sorry for the wait."));
    let started = std::time::Instant::now();
    let (out, _) = home.chat(&agent, "hi").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(900),
        "Retry-After honoured"
    );
    assert_eq!(mock.chat_requests().len(), 2);
    still_usable(&home, &mock, &agent).await;
}

#[tokio::test]
async fn persistent_server_errors_end_the_run_with_a_clear_error() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = impatient(&home, &mock).await;
    for _ in 0..3 {
        mock.push(Reply::server_error());
    }
    let (out, events) = home.chat(&agent, "hi").await;
    assert_eq!(out.stop_reason, StopReason::LlmApiError);
    let error = out.error.clone().unwrap();
    assert_eq!(error.code, "provider_error");
    assert!(events.iter().any(|e| matches!(e, RunEvent::Error { .. })));
    assert!(matches!(
        events.last(),
        Some(RunEvent::Done {
            stop_reason: StopReason::LlmApiError,
            ..
        })
    ));
    // The user's message is kept; nothing half-written follows it.
    assert_eq!(out.messages.len(), 1);
    still_usable(&home, &mock, &agent).await;
}

#[tokio::test]
async fn a_hanging_server_times_out() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = impatient(&home, &mock).await;
    mock.push(Reply::Hang);
    let (out, _) = home.chat(&agent, "hi").await;
    assert_eq!(out.stop_reason, StopReason::LlmApiError);
    assert_eq!(out.error.unwrap().code, "provider_timeout");
    still_usable(&home, &mock, &agent).await;
}

#[tokio::test]
async fn a_server_dying_mid_stream_says_the_connection_dropped_and_keeps_the_partial_reply() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = impatient(&home, &mock).await;
    // Streams the first words, then breaks the connection in the middle of a chunk.
    mock.push(Reply::Garbage);
    let (out, _) = home.chat(&agent, "hi").await;
    assert_eq!(out.stop_reason, StopReason::LlmApiError);
    let error = out.error.unwrap();
    assert_eq!(error.code, "provider_unreachable");
    assert!(
        error
            .message
            .contains("dropped in the middle of the answer"),
        "{}",
        error.message
    );
    // A dropped connection: the part of the reply that arrived is kept, and the run's usage
    // counts the step it was.
    let last = home
        .engram
        .store()
        .messages()
        .list(&agent, None, 100)
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(last.role, engram_core::Role::Assistant);
    assert!(last.content.starts_with("Hello"), "{last:?}");
    assert_eq!(out.usage.step_count, 1);
    assert!(out.usage.prompt_tokens > 0);
    still_usable(&home, &mock, &agent).await;
}

#[tokio::test]
async fn malformed_tool_arguments_are_answered_and_the_model_retries() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = impatient(&home, &mock).await;
    mock.push(Reply::ToolCalls(vec![Call::raw(
        "core_memory_append",
        r#"{"label":"human","content":"Name: Bob"#,
    )]));
    mock.push(Reply::ToolCalls(vec![Call::new(
        "core_memory_append",
        json!({"label": "human", "content": "Name: Bob"}),
    )]));
    mock.push(Reply::text("Got it, Bob."));
    let (out, _) = home.chat(&agent, "my name is Bob").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    assert_eq!(home.block(&agent, "human"), "Name: Bob");
    assert_eq!(last_tool_results(&mock).len(), 2);
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
}

#[tokio::test]
async fn an_unreachable_server_says_so() {
    let home = Home::new();
    let mock = MockLlm::start(Script::Queue).await;
    let agent = home
        .agent_with(&mock, LoopStyle::ToolLoop, |a| {
            // A port nothing listens on.
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            drop(listener);
            a.llm.as_mut().unwrap().base_url = Some(format!("http://127.0.0.1:{port}/v1"));
        })
        .await;
    let (out, _) = home.chat(&agent, "hi").await;
    assert_eq!(out.stop_reason, StopReason::LlmApiError);
    let error = out.error.unwrap();
    assert_eq!(error.code, "provider_unreachable");
    assert!(error.message.contains("127.0.0.1"), "{}", error.message);
}

#[tokio::test]
async fn a_missing_key_is_reported_before_anything_is_written() {
    let home = Home::new();
    let mock = MockLlm::start(Script::Queue).await;
    let agent = home
        .agent_with(&mock, LoopStyle::ToolLoop, |a| {
            a.llm.as_mut().unwrap().base_url = None; // the real OpenAI endpoint, no key stored
        })
        .await;
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let err = home
        .engram
        .runs()
        .send_message(
            &agent,
            "hi",
            &tx,
            tokio_util::sync::CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "provider_not_configured");
    assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
    assert!(
        home.engram
            .recall()
            .list(&agent, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn cancelling_keeps_what_arrived_and_answers_every_call() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    mock.push(Reply::Delayed(
        std::time::Duration::from_secs(30),
        Box::new(Reply::text("too late")),
    ));
    let cancel = tokio_util::sync::CancellationToken::new();
    let stopper = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        stopper.cancel();
    });
    let started = std::time::Instant::now();
    let (out, events) =
        engram_suite::chat(&home.engram, &agent, "tell me a long story", cancel).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(out.stop_reason, StopReason::Cancelled);
    assert!(matches!(
        events.last(),
        Some(RunEvent::Done {
            stop_reason: StopReason::Cancelled,
            ..
        })
    ));
    still_usable(&home, &mock, &agent).await;
}

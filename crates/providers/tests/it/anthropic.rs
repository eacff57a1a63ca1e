//! Anthropic Messages against the mock: text, thinking, tool calls, alternation.

use crate::support::{Deltas, KEY, config, history, request};
use engram_core::error::ProviderFault;
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_providers::{ChatModel, ProviderKind, chat_model};
use serde_json::json;
use std::sync::Arc;

async fn mock() -> (MockLlm, Arc<dyn ChatModel>) {
    let mock = MockLlm::start(Script::Queue).await;
    let model = chat_model(config(ProviderKind::Anthropic, &mock.base_url())).unwrap();
    (mock, model)
}

#[tokio::test]
async fn text_streamed_and_not() {
    for stream in [false, true] {
        let (mock, model) = mock().await;
        mock.push(Reply::text("Nice to meet you, Bob! How are you?"));
        let deltas = Deltas::default();
        let r = model
            .complete(&request(stream), &|d| deltas.push(d))
            .await
            .unwrap();
        assert_eq!(r.content, "Nice to meet you, Bob! How are you?");
        assert_eq!(
            r.finish_reason.as_deref(),
            Some("stop"),
            "end_turn maps to stop"
        );
        assert!(
            r.usage
                .is_some_and(|u| u.prompt_tokens > 0 && u.completion_tokens > 0),
            "{:?}",
            r.usage
        );
        if stream {
            assert_eq!(deltas.text(), r.content);
            assert!(deltas.count() > 1);
        } else {
            assert_eq!(deltas.count(), 0);
        }
        let recorded = mock.requests();
        assert_eq!(recorded[0].path, "/v1/messages");
        assert_eq!(recorded[0].api_key_header.as_deref(), Some(KEY));
        assert_eq!(recorded[0].authorization, None);
        let body = &recorded[0].body;
        assert_eq!(body["system"], "You are a test agent.");
        assert_eq!(body["messages"][0]["role"], "user");
        assert_eq!(body["tool_choice"], json!({"type": "auto"}));
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
        assert_eq!(body["stream"], stream);
        assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
    }
}

#[tokio::test]
async fn parallel_tool_calls_and_thinking_streamed() {
    let (mock, model) = mock().await;
    let calls = vec![
        Call::new(
            "core_memory_append",
            json!({"label": "human", "content": "Name: Bob, likes hiking and long walks"}),
        ),
        Call::new(
            "send_message",
            json!({"message": "Hi Bob! I'll remember that."}),
        ),
    ];
    mock.push(Reply::Reasoning {
        reasoning: "Save the name first.".into(),
        text: "On it.".into(),
    });
    mock.push(Reply::ToolCalls(calls.clone()));
    let deltas = Deltas::default();
    let r = model
        .complete(&request(true), &|d| deltas.push(d))
        .await
        .unwrap();
    assert_eq!(r.reasoning.as_deref(), Some("Save the name first."));
    assert_eq!(deltas.reasoning(), "Save the name first.");
    assert_eq!(r.content, "On it.");

    let r = model.complete(&request(true), &|_| {}).await.unwrap();
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(r.tool_calls.len(), 2);
    for (got, want) in r.tool_calls.iter().zip(&calls) {
        assert_eq!(got.name, want.name);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&got.arguments).unwrap(),
            serde_json::from_str::<serde_json::Value>(&want.arguments).unwrap()
        );
    }
    assert_ne!(r.tool_calls[0].id, r.tool_calls[1].id);
}

#[tokio::test]
async fn tool_calls_non_streamed_and_malformed_input_streamed_raw() {
    let (mock, model) = mock().await;
    mock.push(Reply::ToolCalls(vec![Call::new(
        "send_message",
        json!({"message": "hi"}),
    )]));
    let r = model.complete(&request(false), &|_| {}).await.unwrap();
    assert_eq!(r.tool_calls[0].name, "send_message");
    assert_eq!(r.tool_calls[0].arguments, r#"{"message":"hi"}"#);
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));

    let raw = r#"{"message": "hi"#;
    mock.push(Reply::ToolCalls(vec![Call::raw("send_message", raw)]));
    let r = model.complete(&request(true), &|_| {}).await.unwrap();
    assert_eq!(r.tool_calls[0].arguments, raw);
}

#[tokio::test]
async fn history_alternates_and_merges_tool_results() {
    let (mock, model) = mock().await;
    mock.push(Reply::text("done"));
    model.complete(&history(false), &|_| {}).await.unwrap();
    let body = &mock.requests()[0].body;
    assert_eq!(body["tool_choice"], json!({"type": "any"}));
    assert_eq!(body["max_tokens"], 256);
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(
        messages[1]["content"],
        json!([
            {"type": "text", "text": "Saving that."},
            {"type": "tool_use", "id": "call_1", "name": "core_memory_append", "input": {"label": "human", "content": "Name: Bob"}},
            {"type": "tool_use", "id": "call_2", "name": "send_message", "input": {"message": "Hi Bob"}},
        ])
    );
    assert_eq!(
        messages[2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "call_1", "content": "OK"},
            {"type": "tool_result", "tool_use_id": "call_2", "content": "sent"},
            {"type": "text", "text": r#"{"type":"heartbeat","reason":"continue"}"#},
        ])
    );
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());

    // Without max_tokens the required field gets the default.
    let mut req = history(false);
    req.max_tokens = None;
    mock.push(Reply::text("done"));
    model.complete(&req, &|_| {}).await.unwrap();
    assert_eq!(
        mock.requests()[1].body["max_tokens"],
        engram_providers::DEFAULT_MAX_TOKENS
    );
}

#[tokio::test]
async fn context_length_and_garbage() {
    let (mock, model) = mock().await;
    mock.push(Reply::ContextLengthExceeded);
    let e = model.complete(&request(true), &|_| {}).await.unwrap_err();
    assert_eq!(e.fault, ProviderFault::ContextLength, "{e}");
    assert_eq!(e.status, Some(400));
    for stream in [false, true] {
        mock.push(Reply::Garbage);
        let e = model.complete(&request(stream), &|_| {}).await.unwrap_err();
        // A stream that breaks off mid-chunk is a dropped connection.
        let expected = if stream {
            ProviderFault::Unreachable
        } else {
            ProviderFault::BadResponse
        };
        assert_eq!(e.fault, expected, "stream={stream}: {e}");
    }
}

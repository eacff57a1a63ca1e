//! OpenAI Chat Completions against the mock: text, reasoning, tool calls, request shapes.

use crate::support::{Deltas, KEY, config, history, request, serve, sse};
use axum::routing::post;
use engram_mock_llm::{Call, MockLlm, Reply, Script, StreamStyle};
use engram_providers::{ProviderKind, chat_model};
use serde_json::json;

async fn mock() -> (MockLlm, std::sync::Arc<dyn engram_providers::ChatModel>) {
    let mock = MockLlm::start(Script::Queue).await;
    let model = chat_model(config(ProviderKind::OpenAi, &mock.base_url())).unwrap();
    (mock, model)
}

#[tokio::test]
async fn text_without_streaming() {
    let (mock, model) = mock().await;
    mock.push(Reply::text("Nice to meet you, Bob!"));
    let deltas = Deltas::default();
    let r = model
        .complete(&request(false), &|d| deltas.push(d))
        .await
        .unwrap();
    assert_eq!(r.content, "Nice to meet you, Bob!");
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert!(
        r.usage
            .is_some_and(|u| u.prompt_tokens > 0 && u.completion_tokens > 0)
    );
    assert!(r.tool_calls.is_empty());
    assert_eq!(deltas.count(), 0, "no deltas without streaming");

    let recorded = mock.requests();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].path, "/v1/chat/completions");
    assert_eq!(
        recorded[0].authorization.as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body = &recorded[0].body;
    assert_eq!(body["stream"], false);
    assert!(body.get("stream_options").is_none());
    assert_eq!(body["max_tokens"], 256);
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "core_memory_append");
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
}

#[tokio::test]
async fn text_streamed() {
    let (mock, model) = mock().await;
    mock.push(Reply::text("Nice to meet you, Bob! How are you today?"));
    let deltas = Deltas::default();
    let r = model
        .complete(&request(true), &|d| deltas.push(d))
        .await
        .unwrap();
    assert_eq!(r.content, "Nice to meet you, Bob! How are you today?");
    assert_eq!(deltas.text(), r.content);
    assert!(deltas.count() > 1, "the text should arrive in pieces");
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert!(r.usage.is_some(), "usage from the final chunk");
    let body = &mock.requests()[0].body;
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
}

#[tokio::test]
async fn parallel_tool_calls_streamed_one_after_another_and_interleaved() {
    for interleave in [false, true] {
        let (mock, model) = mock().await;
        mock.set_stream_style(StreamStyle {
            interleave_tool_calls: interleave,
            ..StreamStyle::default()
        });
        let calls = vec![
            Call::new(
                "core_memory_append",
                json!({"label": "human", "content": "Name: Bob, likes long walks on the beach"}),
            ),
            Call::new(
                "send_message",
                json!({"message": "Hi Bob, nice to meet you! I will remember that."}),
            ),
            Call::new(
                "core_memory_append",
                json!({"label": "persona", "content": "I talked to Bob."}),
            ),
        ];
        mock.push(Reply::ToolCalls(calls.clone()));
        let r = model.complete(&request(true), &|_| {}).await.unwrap();
        assert_eq!(r.tool_calls.len(), 3, "interleave={interleave}");
        for (got, want) in r.tool_calls.iter().zip(&calls) {
            assert_eq!(got.name, want.name);
            assert_eq!(got.arguments, want.arguments, "interleave={interleave}");
            assert!(!got.id.is_empty());
        }
        let mut ids: Vec<_> = r.tool_calls.iter().map(|c| c.id.clone()).collect();
        ids.dedup();
        assert_eq!(ids.len(), 3);
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    }
}

#[tokio::test]
async fn text_with_tool_calls_non_streamed() {
    let (mock, model) = mock().await;
    mock.push(Reply::TextWithToolCalls {
        text: "Let me save that.".into(),
        calls: vec![
            Call::new(
                "core_memory_append",
                json!({"label": "human", "content": "Bob"}),
            )
            .with_id("call_fixed"),
        ],
    });
    let r = model.complete(&request(false), &|_| {}).await.unwrap();
    assert_eq!(r.content, "Let me save that.");
    assert_eq!(r.tool_calls[0].id, "call_fixed");
    assert_eq!(
        r.tool_calls[0].arguments,
        json!({"label": "human", "content": "Bob"}).to_string()
    );
}

#[tokio::test]
async fn reasoning_streamed_and_not() {
    for stream in [true, false] {
        let (mock, model) = mock().await;
        mock.push(Reply::Reasoning {
            reasoning: "The user said their name.".into(),
            text: "Hello Bob.".into(),
        });
        let deltas = Deltas::default();
        let r = model
            .complete(&request(stream), &|d| deltas.push(d))
            .await
            .unwrap();
        assert_eq!(r.reasoning.as_deref(), Some("The user said their name."));
        assert_eq!(r.content, "Hello Bob.");
        if stream {
            assert_eq!(deltas.reasoning(), "The user said their name.");
            assert_eq!(deltas.text(), "Hello Bob.");
        }
    }
}

#[tokio::test]
async fn malformed_arguments_pass_through_raw() {
    for stream in [true, false] {
        let (mock, model) = mock().await;
        let raw = r#"{"label": "human", "content": "Bob"#;
        mock.push(Reply::ToolCalls(vec![
            Call::raw("core_memory_append", raw),
            Call::raw("send_message", "not json at all"),
        ]));
        let r = model.complete(&request(stream), &|_| {}).await.unwrap();
        assert_eq!(r.tool_calls[0].arguments, raw, "stream={stream}");
        assert_eq!(
            r.tool_calls[1].arguments, "not json at all",
            "stream={stream}"
        );
    }
}

#[tokio::test]
async fn history_is_sent_as_the_api_expects() {
    let (mock, model) = mock().await;
    mock.push(Reply::text("done"));
    model.complete(&history(false), &|_| {}).await.unwrap();
    let body = &mock.requests()[0].body;
    assert_eq!(body["tool_choice"], "required");
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 6);
    assert_eq!(
        messages[2],
        json!({"role": "assistant", "content": "Saving that.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "core_memory_append", "arguments": r#"{"label":"human","content":"Name: Bob"}"#}},
            {"id": "call_2", "type": "function", "function": {"name": "send_message", "arguments": r#"{"message":"Hi Bob"}"#}},
        ]})
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "OK"})
    );
    assert_eq!(
        messages[4],
        json!({"role": "tool", "tool_call_id": "call_2", "content": "sent"})
    );
    assert_eq!(messages[5]["role"], "user");
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
}

#[tokio::test]
async fn no_key_sends_no_authorization_header() {
    let mock = MockLlm::start(Script::Queue).await;
    let mut cfg = config(ProviderKind::OpenAi, &mock.base_url());
    cfg.api_key = None;
    chat_model(cfg)
        .unwrap()
        .complete(&request(false), &|_| {})
        .await
        .unwrap();
    assert_eq!(mock.requests()[0].authorization, None);
}

/// Some servers (older llama.cpp, some proxies) send tool calls without ids; ids are minted,
/// unique, and the call still works, streamed or not.
#[tokio::test]
async fn missing_tool_call_ids_are_minted() {
    let router = axum::Router::new().route(
        "/v1/chat/completions",
        post(|axum::Json(body): axum::Json<serde_json::Value>| async move {
            if body["stream"] == true {
                let frames = [
                    json!({"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"type":"function","function":{"name":"send_message","arguments":"{\"message\":"}}]}}]}),
                    json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"hi\"}"}}]}}]}),
                    json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"type":"function","function":{"name":"send_message","arguments":"{}"}}]}}]}),
                    json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
                ];
                let mut frames: Vec<String> = frames.iter().map(|f| f.to_string()).collect();
                frames.push("[DONE]".into());
                sse(&frames)
            } else {
                axum::response::IntoResponse::into_response(axum::Json(json!({
                    "choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
                        "tool_calls":[{"type":"function","function":{"name":"send_message","arguments":"{}"}}]}}]
                })))
            }
        }),
    );
    let base = serve(router).await;
    let model = chat_model(config(ProviderKind::OpenAi, &base)).unwrap();
    let streamed = model.complete(&request(true), &|_| {}).await.unwrap();
    assert_eq!(streamed.tool_calls.len(), 2);
    assert_eq!(streamed.tool_calls[0].arguments, r#"{"message":"hi"}"#);
    let plain = model.complete(&request(false), &|_| {}).await.unwrap();
    let ids: Vec<&str> = streamed
        .tool_calls
        .iter()
        .chain(&plain.tool_calls)
        .map(|c| c.id.as_str())
        .collect();
    assert!(
        ids.iter()
            .all(|id| id.starts_with("call_") && id.len() > 20),
        "{ids:?}"
    );
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 3, "{ids:?}");
}

//! The OpenAI chat-completions endpoint: non-streaming and streaming shapes, queue and rules.

use crate::common::*;
use engram_mock_llm::{Call, MockLlm, Reply, Script, StreamStyle};
use serde_json::{Value, json};

#[tokio::test]
async fn non_stream_text_with_usage() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::text("Hello, Bob!"));
    let body = simple_body(false);
    let res = post(&mock.base_url(), "/chat/completions", &body).await;
    assert_eq!(res.status(), 200);
    let v: Value = res.json().await.unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "mock-small");
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(v["choices"][0]["message"]["content"], "Hello, Bob!");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    let prompt = v["usage"]["prompt_tokens"].as_u64().unwrap();
    assert_eq!(prompt, (body.to_string().len() as u64).div_ceil(4));
    assert_eq!(v["usage"]["completion_tokens"], 3); // 11 chars
    assert_eq!(v["usage"]["total_tokens"], prompt + 3);
    // The queue is empty now: Script::Queue answers "ok".
    let v: Value = chat_json(&mock.base_url(), &body).await;
    assert_eq!(v["choices"][0]["message"]["content"], "ok");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(reqs[0].body, body);
    assert_eq!(reqs[0].authorization.as_deref(), Some("Bearer sk-test"));
    assert_eq!(reqs[0].api_key_header, None);
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
}

#[tokio::test]
async fn stream_text_in_several_chunks_then_usage_then_done() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::text("Nice to meet you, Bob! I'll remember that."));
    let mut body = simple_body(true);
    body["stream_options"] = json!({"include_usage": true});
    let res = post(&mock.base_url(), "/chat/completions", &body).await;
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let events = parse_sse(&res.text().await.unwrap());
    let a = assemble_openai(&events);
    assert_eq!(a.content, "Nice to meet you, Bob! I'll remember that.");
    let content_chunks = events
        .iter()
        .filter(|e| e.data.contains("\"content\":\"") && !e.data.contains("\"content\":\"\""))
        .count();
    assert!(
        content_chunks >= 5,
        "text should arrive in several chunks, got {content_chunks}"
    );
    assert_eq!(a.finish_reason.as_deref(), Some("stop"));
    let usage = a.usage.expect("include_usage asks for a usage chunk");
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 0);
    // The usage chunk is the last before [DONE] and has no choices.
    let usage_chunk = events[events.len() - 2].json();
    assert_eq!(usage_chunk["choices"], json!([]));
    // First chunk carries the role.
    assert_eq!(events[0].json()["choices"][0]["delta"]["role"], "assistant");

    // Without include_usage there is no usage chunk.
    mock.push(Reply::text("plain"));
    let events = chat_events(&mock.base_url(), &simple_body(true)).await;
    let a = assemble_openai(&events);
    assert_eq!(a.content, "plain");
    assert!(a.usage.is_none());
    assert!(
        events
            .iter()
            .all(|e| e.data == "[DONE]" || e.json().get("usage").is_none())
    );
}

fn two_calls() -> Vec<Call> {
    vec![
        Call::new(
            "core_memory_append",
            json!({"label": "human", "content": "Best friend: Alya"}),
        ),
        Call::new(
            "core_memory_append",
            json!({"label": "human", "content": "Alya loves cherry pie"}),
        ),
    ]
}

fn check_two_calls(a: &Assembled) {
    assert_eq!(a.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(a.calls.len(), 2);
    assert_ne!(
        a.calls[0].1, a.calls[1].1,
        "parallel calls need distinct ids"
    );
    assert!(a.calls.iter().all(|c| c.1.starts_with("call_")));
    let args: Vec<Value> = a
        .calls
        .iter()
        .map(|c| serde_json::from_str(&c.3).unwrap())
        .collect();
    assert_eq!(a.calls[0].2, "core_memory_append");
    assert_eq!(
        args[0],
        json!({"label": "human", "content": "Best friend: Alya"})
    );
    assert_eq!(
        args[1],
        json!({"label": "human", "content": "Alya loves cherry pie"})
    );
}

#[tokio::test]
async fn stream_parallel_tool_calls_reassemble() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::ToolCalls(two_calls()));
    let events = chat_events(&mock.base_url(), &simple_body(true)).await;
    let a = assemble_openai(&events);
    check_two_calls(&a);
    // Arguments arrive in several pieces per call.
    let arg_chunks = events
        .iter()
        .filter(|e| e.data.contains("\"tool_calls\":["))
        .count();
    assert!(
        arg_chunks >= 8,
        "arguments should be split, got {arg_chunks} tool-call chunks"
    );
    // Sequential by default: all of call 0 before call 1.
    let indexes: Vec<u64> = events
        .iter()
        .filter(|e| e.data.contains("\"tool_calls\":["))
        .map(|e| {
            e.json()["choices"][0]["delta"]["tool_calls"][0]["index"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert!(indexes.windows(2).all(|w| w[0] <= w[1]), "{indexes:?}");

    // Interleaved on request, and still reassembling to the same calls.
    mock.set_stream_style(StreamStyle {
        interleave_tool_calls: true,
        ..StreamStyle::default()
    });
    mock.push(Reply::ToolCalls(two_calls()));
    let events = chat_events(&mock.base_url(), &simple_body(true)).await;
    let indexes: Vec<u64> = events
        .iter()
        .filter(|e| e.data.contains("\"tool_calls\":["))
        .map(|e| {
            e.json()["choices"][0]["delta"]["tool_calls"][0]["index"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert!(
        indexes.windows(2).any(|w| w[0] > w[1]),
        "expected interleaving: {indexes:?}"
    );
    check_two_calls(&assemble_openai(&events));
}

#[tokio::test]
async fn non_stream_tool_calls_malformed_args_and_fixed_ids() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::TextWithToolCalls {
        text: "Saving that.".into(),
        calls: vec![
            Call::raw("core_memory_append", "{\"label\": \"human\", ").with_id("call_fixed"),
        ],
    });
    let v: Value = chat_json(&mock.base_url(), &simple_body(false)).await;
    let msg = &v["choices"][0]["message"];
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(msg["content"], "Saving that.");
    assert_eq!(msg["tool_calls"][0]["id"], "call_fixed");
    assert_eq!(msg["tool_calls"][0]["type"], "function");
    assert_eq!(
        msg["tool_calls"][0]["function"]["arguments"],
        "{\"label\": \"human\", "
    );
    // Tool-call-only replies have null content.
    mock.push(Reply::ToolCalls(two_calls()));
    let v: Value = chat_json(&mock.base_url(), &simple_body(false)).await;
    assert!(v["choices"][0]["message"]["content"].is_null());
    assert_eq!(
        v["choices"][0]["message"]["tool_calls"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn reasoning_content_stream_and_non_stream() {
    let mock = MockLlm::start(Script::Queue).await;
    let reply = Reply::Reasoning {
        reasoning: "The user greeted me; greet back.".into(),
        text: "Hi there!".into(),
    };
    mock.push(reply.clone());
    let v: Value = chat_json(&mock.base_url(), &simple_body(false)).await;
    assert_eq!(
        v["choices"][0]["message"]["reasoning_content"],
        "The user greeted me; greet back."
    );
    assert_eq!(v["choices"][0]["message"]["content"], "Hi there!");
    mock.push(reply);
    let events = chat_events(&mock.base_url(), &simple_body(true)).await;
    let a = assemble_openai(&events);
    assert_eq!(a.reasoning, "The user greeted me; greet back.");
    assert_eq!(a.content, "Hi there!");
    assert!(
        events
            .iter()
            .filter(|e| e.data.contains("reasoning_content"))
            .count()
            >= 3
    );
}

#[tokio::test]
async fn queue_takes_precedence_over_rules() {
    let mock = MockLlm::start(Script::rules(|view| {
        Reply::Text(format!(
            "rule saw {} messages, model {}",
            view.messages.len(),
            view.model
        ))
    }))
    .await;
    mock.push(Reply::text("queued"));
    assert_eq!(mock.pending(), 1);
    let first: Value = chat_json(&mock.base_url(), &simple_body(false)).await;
    let second: Value = chat_json(&mock.base_url(), &simple_body(false)).await;
    assert_eq!(first["choices"][0]["message"]["content"], "queued");
    assert_eq!(
        second["choices"][0]["message"]["content"],
        "rule saw 1 messages, model mock-small"
    );
    assert_eq!(mock.pending(), 0);
}

#[tokio::test]
async fn models_and_unknown_endpoints() {
    let mock = MockLlm::start(Script::Queue).await;
    let v: Value = client()
        .get(format!("{}/models", mock.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["object"], "list");
    let ids: Vec<&str> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["mock-small", "mock-large", "mock-embed"]);
    let one = client()
        .get(format!("{}/models/mock-large", mock.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(one.status(), 200);
    assert!(mock.violations().is_empty());
    // A wrong path is a 404 and a violation.
    let res = post(
        &mock.root_url(),
        "/v1/v1/chat/completions",
        &simple_body(false),
    )
    .await;
    assert_eq!(res.status(), 404);
    let violations = mock.violations();
    assert_eq!(violations.len(), 1);
    assert!(
        violations[0].starts_with("request 2 (/v1/v1/chat/completions): unknown endpoint POST"),
        "{violations:?}"
    );
}

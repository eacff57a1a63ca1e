//! The Anthropic Messages endpoint: message objects and the event stream.

use crate::common::*;
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use futures::StreamExt;
use serde_json::{Value, json};

fn body(stream: bool) -> Value {
    json!({
        "model": "claude-mock",
        "max_tokens": 512,
        "stream": stream,
        "system": [{"type": "text", "text": "You are helpful."}],
        "tools": [{"name": "core_memory_append", "description": "d", "input_schema": {"type": "object", "properties": {}}}],
        "messages": [{"role": "user", "content": "hello"}],
    })
}

#[tokio::test]
async fn non_stream_message_shapes() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::text("Hi Bob!"));
    mock.push(Reply::Reasoning {
        reasoning: "Greet.".into(),
        text: "Hello!".into(),
    });
    mock.push(Reply::TextWithToolCalls {
        text: "Saving.".into(),
        calls: vec![
            Call::new(
                "core_memory_append",
                json!({"label": "human", "content": "Name: Bob"}),
            ),
            Call::raw("core_memory_append", "{\"label\": "),
        ],
    });
    let v: Value = post_anthropic(&mock.base_url(), &body(false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["type"], "message");
    assert_eq!(v["role"], "assistant");
    assert_eq!(v["model"], "claude-mock");
    assert_eq!(v["content"], json!([{"type": "text", "text": "Hi Bob!"}]));
    assert_eq!(v["stop_reason"], "end_turn");
    assert!(v["usage"]["input_tokens"].as_u64().unwrap() > 10);
    assert_eq!(v["usage"]["output_tokens"], 2);

    let v: Value = post_anthropic(&mock.base_url(), &body(false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["content"][0]["type"], "thinking");
    assert_eq!(v["content"][0]["thinking"], "Greet.");
    assert!(v["content"][0]["signature"].is_string());
    assert_eq!(v["content"][1], json!({"type": "text", "text": "Hello!"}));

    let v: Value = post_anthropic(&mock.base_url(), &body(false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["stop_reason"], "tool_use");
    let content = v["content"].as_array().unwrap();
    assert_eq!(content.len(), 3);
    assert_eq!(content[1]["type"], "tool_use");
    assert!(content[1]["id"].as_str().unwrap().starts_with("toolu_"));
    assert_ne!(content[1]["id"], content[2]["id"]);
    assert_eq!(
        content[1]["input"],
        json!({"label": "human", "content": "Name: Bob"})
    );
    // Malformed arguments cannot be an object; they come through as the raw text.
    assert_eq!(content[2]["input"], json!("{\"label\": "));
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
}

#[tokio::test]
async fn stream_event_order_text() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::text("Nice to meet you, Bob! I'll remember that."));
    let res = post_anthropic(&mock.base_url(), &body(true)).await;
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let events = parse_sse(&res.text().await.unwrap());
    let names: Vec<&str> = events.iter().map(|e| e.event.as_deref().unwrap()).collect();
    assert_eq!(
        &names[..3],
        ["message_start", "ping", "content_block_start"]
    );
    assert_eq!(
        &names[names.len() - 3..],
        ["content_block_stop", "message_delta", "message_stop"]
    );
    assert!(
        names
            .iter()
            .filter(|n| **n == "content_block_delta")
            .count()
            >= 5
    );
    let a = assemble_anthropic(&events);
    assert_eq!(a.text, "Nice to meet you, Bob! I'll remember that.");
    assert_eq!(a.blocks, ["text"]);
    assert_eq!(a.stop_reason.as_deref(), Some("end_turn"));
    assert!(a.input_tokens > 0 && a.output_tokens == 11);
}

#[tokio::test]
async fn stream_thinking_text_and_parallel_tool_use() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::Reasoning {
        reasoning: "The user said hi, so I greet.".into(),
        text: "Hi!".into(),
    });
    mock.push(Reply::ToolCalls(vec![
        Call::new(
            "core_memory_append",
            json!({"label": "human", "content": "Best friend: Alya"}),
        ),
        Call::new(
            "core_memory_append",
            json!({"label": "human", "content": "Alya loves cherry pie"}),
        )
        .with_id("toolu_fixed"),
    ]));
    let a = assemble_anthropic(&parse_sse(
        &post_anthropic(&mock.base_url(), &body(true))
            .await
            .text()
            .await
            .unwrap(),
    ));
    assert_eq!(a.blocks, ["thinking", "text"]);
    assert_eq!(a.thinking, "The user said hi, so I greet.");
    assert_eq!(a.text, "Hi!");

    let events = parse_sse(
        &post_anthropic(&mock.base_url(), &body(true))
            .await
            .text()
            .await
            .unwrap(),
    );
    let a = assemble_anthropic(&events);
    assert_eq!(a.blocks, ["tool_use", "tool_use"]);
    assert_eq!(a.stop_reason.as_deref(), Some("tool_use"));
    assert_eq!(a.calls[1].0, "toolu_fixed");
    let inputs: Vec<Value> = a
        .calls
        .iter()
        .map(|c| serde_json::from_str(&c.2).unwrap())
        .collect();
    assert_eq!(
        inputs[0],
        json!({"label": "human", "content": "Best friend: Alya"})
    );
    assert_eq!(
        inputs[1],
        json!({"label": "human", "content": "Alya loves cherry pie"})
    );
    let json_deltas = events
        .iter()
        .filter(|e| e.data.contains("input_json_delta"))
        .count();
    assert!(
        json_deltas >= 8,
        "input JSON should arrive in pieces, got {json_deltas}"
    );
}

#[tokio::test]
async fn anthropic_faults() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::Error {
        status: 529,
        body: json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        retry_after: Some(1),
    });
    mock.push(Reply::Garbage);
    mock.push(Reply::Garbage);
    let res = post_anthropic(&mock.base_url(), &body(true)).await;
    assert_eq!(res.status(), 529);
    assert_eq!(res.headers()["retry-after"], "1");
    assert_eq!(
        res.json::<Value>().await.unwrap()["error"]["type"],
        "overloaded_error"
    );

    let text = post_anthropic(&mock.base_url(), &body(false))
        .await
        .text()
        .await
        .unwrap();
    assert!(serde_json::from_str::<Value>(&text).is_err());

    let mut stream = post_anthropic(&mock.base_url(), &body(true))
        .await
        .bytes_stream();
    let mut got = Vec::new();
    let mut broke = false;
    while let Some(item) = stream.next().await {
        match item {
            Ok(b) => got.extend_from_slice(&b),
            Err(_) => broke = true,
        }
    }
    let got = String::from_utf8(got).unwrap();
    assert!(
        broke && got.starts_with("event: message_start") && !got.contains("message_stop"),
        "{got}"
    );
}

#[tokio::test]
async fn strict_mode_uses_anthropic_error_shape() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.reject_invalid(true);
    let mut b = body(false);
    b.as_object_mut().unwrap().remove("max_tokens");
    let res = post_anthropic(&mock.base_url(), &b).await;
    assert_eq!(res.status(), 400);
    let v: Value = res.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_tokens")
    );
}

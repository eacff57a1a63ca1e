//! Protocol validation of incoming requests.

use crate::common::*;
use engram_mock_llm::{MockLlm, Reply, Script};
use serde_json::{Value, json};

fn tools() -> Value {
    json!([
        tool(
            "core_memory_append",
            json!({"label": {"type": "string"}, "content": {"type": "string"}})
        ),
        tool("send_message", json!({"message": {"type": "string"}})),
    ])
}

fn call(id: &str, name: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": "{}"}})
}

#[tokio::test]
async fn valid_conversation_with_parallel_calls_passes() {
    let mock = MockLlm::start(Script::Queue).await;
    let body = json!({"model": "mock-small", "tools": tools(), "messages": [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "my best friend is Alya and she loves cherry pie"},
        {"role": "assistant", "content": null, "tool_calls": [call("c1", "core_memory_append"), call("c2", "core_memory_append")]},
        {"role": "tool", "tool_call_id": "c1", "content": "{\"status\":\"OK\"}"},
        {"role": "tool", "tool_call_id": "c2", "content": "{\"status\":\"OK\"}"},
        {"role": "assistant", "content": "Noted!"},
        {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
        {"role": "system", "content": "memory pressure warning"},
    ]});
    assert_eq!(
        post(&mock.base_url(), "/chat/completions", &body)
            .await
            .status(),
        200
    );
    assert_eq!(mock.violations(), Vec::<String>::new());
}

#[tokio::test]
async fn unanswered_tool_call_is_caught() {
    let mock = MockLlm::start(Script::Queue).await;
    let ok = json!({"model": "m", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]});
    post(&mock.base_url(), "/chat/completions", &ok).await;
    // The lab's classic bug: two calls in one response, only one answered.
    let body = json!({"model": "mock-small", "tools": tools(), "messages": [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "tool_calls": [call("c1", "core_memory_append"), call("c2", "core_memory_append")]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "user", "content": "hello?"},
    ]});
    let res = post(&mock.base_url(), "/chat/completions", &body).await;
    assert_eq!(res.status(), 200, "not strict by default");
    let v = mock.violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].starts_with("request 1 (/v1/chat/completions): message 2: tool call id(s) [\"c2\"] not answered before message 4 (user)"), "{v:?}");
}

#[tokio::test]
async fn other_violations_are_named() {
    let mock = MockLlm::start(Script::Queue).await;
    let body = json!({"model": "mock-small", "tools": [
            {"type": "function", "function": {"name": "send_message", "parameters": {"type": "string"}}},
            {"type": "function", "function": {"name": "nothing"}}],
        "messages": [
        {"role": "user", "content": "no system message first"},
        {"role": "assistant", "content": null, "tool_calls": [call("c1", "send_message"), call("c1", "unknown_tool")]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "tool", "tool_call_id": "c1", "content": "for the duplicate id"},
        {"role": "tool", "tool_call_id": "c1", "content": "again"},
        {"role": "tool", "tool_call_id": "nobody", "content": "orphan"},
        {"role": "robot", "content": "beep"},
    ]});
    post(&mock.base_url(), "/chat/completions", &body).await;
    let v = mock.violations().join("\n");
    for needle in [
        "tools[0] (send_message) schema does not have `type: \"object\"`",
        "tools[1] (nothing) has no parameter schema",
        "first message has role \"user\"",
        "duplicate tool call id \"c1\"",
        "\"unknown_tool\", which is not among the tools offered",
        "second tool result for call id \"c1\"",
        "\"nobody\", which no earlier assistant message made",
        "invalid role \"robot\"",
    ] {
        assert!(v.contains(needle), "missing {needle:?} in\n{v}");
    }
}

#[tokio::test]
async fn strict_mode_rejects_like_a_real_provider() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.reject_invalid(true);
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    let res = post(&mock.base_url(), "/chat/completions", &body).await;
    assert_eq!(res.status(), 400);
    let v: Value = res.json().await.unwrap();
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("first message has role")
    );
    // The queued reply was not consumed by the rejected request.
    mock.push(Reply::text("still here"));
    let v: Value = chat_json(&mock.base_url(), &simple_body(false)).await;
    assert_eq!(v["choices"][0]["message"]["content"], "still here");
}

#[tokio::test]
async fn invalid_json_body_is_a_violation() {
    let mock = MockLlm::start(Script::Queue).await;
    let res = client()
        .post(format!("{}/chat/completions", mock.base_url()))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    assert_eq!(mock.requests()[0].body, Value::Null);
    assert!(mock.violations()[0].contains("body is not valid JSON"));
}

#[tokio::test]
async fn anthropic_headers_and_tool_results() {
    let mock = MockLlm::start(Script::Queue).await;
    let tools = json!([{"name": "core_memory_append", "input_schema": {"type": "object", "properties": {}}}]);
    let good = json!({"model": "claude", "max_tokens": 64, "system": "sys", "tools": tools, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "saving"},
            {"type": "tool_use", "id": "t1", "name": "core_memory_append", "input": {}},
            {"type": "tool_use", "id": "t2", "name": "core_memory_append", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t2", "content": "ok"},
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "ok"}]}]},
    ]});
    post_anthropic(&mock.base_url(), &good).await;
    assert_eq!(mock.violations(), Vec::<String>::new());
    assert_eq!(
        mock.requests()[0].api_key_header.as_deref(),
        Some("sk-ant-test")
    );
    // Without the Anthropic headers, and with a tool_use left unanswered.
    let bad = json!({"model": "claude", "max_tokens": 64, "tools": tools, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t9", "name": "core_memory_append", "input": {}}]},
        {"role": "user", "content": "answer me"},
    ]});
    post(&mock.base_url(), "/messages", &bad).await;
    let v = mock.violations();
    assert_eq!(v.len(), 3, "{v:?}");
    assert!(v[0].contains("request 1 (/v1/messages): header `x-api-key` is missing"));
    assert!(v[1].contains("`anthropic-version` is missing"));
    assert!(v[2].contains("[\"t9\"] not answered"));
}

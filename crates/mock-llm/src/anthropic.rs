//! The Anthropic Messages protocol: reading requests, writing messages and the event stream
//! (`message_start`, `content_block_*`, `message_delta`, `message_stop`).

use serde_json::{Value, json};

use crate::view::{Api, ChatView, ViewCall, ViewMessage, content_text};
use crate::wire::{Answer, AnswerCall, Usage, split_chars, split_words};

/// The signature sent with thinking blocks; real ones are opaque, clients only echo them back.
const SIGNATURE: &str = "mock-signature";

/// Reads a Messages body into the neutral view: `tool_result` blocks become `"tool"` messages
/// ahead of the rest of their user message, `tool_use` blocks become calls.
pub(crate) fn parse(body: &Value, body_chars: usize) -> ChatView {
    let system = match body.get("system") {
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        other => content_text(other),
    };
    let mut view = ChatView {
        system,
        stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        model: body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        api: Api::Anthropic,
        body_chars,
        ..ChatView::default()
    };
    for m in body
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let role = m
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let blocks = match m.get("content") {
            Some(Value::Array(blocks)) => blocks.clone(),
            other => vec![json!({"type": "text", "text": content_text(other)})],
        };
        let mut message = ViewMessage {
            role,
            ..ViewMessage::default()
        };
        let mut has_other = false;
        for b in &blocks {
            match b.get("type").and_then(Value::as_str).unwrap_or_default() {
                "text" => {
                    message
                        .text
                        .push_str(b.get("text").and_then(Value::as_str).unwrap_or_default());
                    has_other = true;
                }
                "tool_use" => {
                    message.tool_calls.push(ViewCall {
                        id: b
                            .get("id")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        name: b
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        arguments: b.get("input").map(Value::to_string).unwrap_or_default(),
                    });
                    has_other = true;
                }
                "tool_result" => view.messages.push(ViewMessage {
                    role: "tool".into(),
                    text: content_text(b.get("content")),
                    tool_call_id: b
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    ..ViewMessage::default()
                }),
                // Thinking, images, documents: nothing the rules look at.
                _ => has_other = true,
            }
        }
        if has_other || blocks.is_empty() {
            view.messages.push(message);
        }
    }
    view.tools = body
        .get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    t.get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default();
    view
}

fn stop_reason(answer: &Answer) -> &'static str {
    if answer.calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
}

/// A tool call's input: the parsed arguments, or — for deliberately malformed arguments, which
/// a real non-streaming response cannot carry — the raw text as a JSON string.
fn input_of(call: &AnswerCall) -> Value {
    serde_json::from_str::<Value>(&call.arguments)
        .unwrap_or_else(|_| Value::String(call.arguments.clone()))
}

/// A non-streaming `message` object.
pub(crate) fn message(answer: &Answer, id: &str, model: &str, usage: Usage) -> Value {
    let mut content = Vec::new();
    if let Some(reasoning) = &answer.reasoning {
        content.push(json!({"type": "thinking", "thinking": reasoning, "signature": SIGNATURE}));
    }
    if let Some(text) = answer
        .text
        .as_ref()
        .filter(|t| !t.is_empty() || answer.calls.is_empty())
    {
        content.push(json!({"type": "text", "text": text}));
    }
    for c in &answer.calls {
        content.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input_of(c)}));
    }
    json!({
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(answer),
        "stop_sequence": null,
        "usage": {"input_tokens": usage.prompt, "output_tokens": usage.completion},
    })
}

fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn message_start(id: &str, model: &str, input_tokens: u64) -> String {
    event(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        }}),
    )
}

/// The event stream of an answer: thinking, text and tool-use blocks in that order, each
/// opened, filled with small deltas and closed; then `message_delta` with the stop reason and
/// output tokens, and `message_stop`.
pub(crate) fn stream_frames(answer: &Answer, id: &str, model: &str, usage: Usage) -> Vec<String> {
    let mut frames = vec![
        message_start(id, model, usage.prompt),
        event("ping", &json!({"type": "ping"})),
    ];
    let mut index = 0;
    let mut block = |frames: &mut Vec<String>, start: Value, deltas: Vec<Value>| {
        frames.push(event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        for delta in deltas {
            frames.push(event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        frames.push(event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    };
    if let Some(reasoning) = &answer.reasoning {
        let mut deltas: Vec<Value> = split_words(reasoning)
            .into_iter()
            .map(|p| json!({"type": "thinking_delta", "thinking": p}))
            .collect();
        deltas.push(json!({"type": "signature_delta", "signature": SIGNATURE}));
        block(
            &mut frames,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            deltas,
        );
    }
    if let Some(text) = answer
        .text
        .as_ref()
        .filter(|t| !t.is_empty() || answer.calls.is_empty())
    {
        let deltas = split_words(text)
            .into_iter()
            .map(|p| json!({"type": "text_delta", "text": p}))
            .collect();
        block(&mut frames, json!({"type": "text", "text": ""}), deltas);
    }
    for c in &answer.calls {
        let deltas = split_chars(&c.arguments, 7)
            .into_iter()
            .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
            .collect();
        block(
            &mut frames,
            json!({"type": "tool_use", "id": c.id, "name": c.name, "input": {}}),
            deltas,
        );
    }
    frames.push(event(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": stop_reason(answer), "stop_sequence": null},
                "usage": {"output_tokens": usage.completion}}),
    ));
    frames.push(event("message_stop", &json!({"type": "message_stop"})));
    frames
}

/// A 200 body that breaks off inside a JSON object.
pub(crate) fn garbage_body(id: &str, model: &str) -> String {
    format!(
        r#"{{"id":"{id}","type":"message","role":"assistant","model":"{model}","content":[{{"type":"text","text":"Hel"#
    )
}

/// An event stream that breaks off in the middle of a delta (the server then drops the
/// connection).
pub(crate) fn garbage_frames(id: &str, model: &str) -> Vec<String> {
    vec![
        message_start(id, model, 1),
        event("content_block_start", &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})),
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel".to_string(),
    ]
}

/// Anthropic's error envelope.
pub(crate) fn error_body(message: &str, kind: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// Anthropic's context-length error body.
pub(crate) fn context_length_error(window: u64, tokens: u64) -> Value {
    error_body(
        &format!("prompt is too long: {tokens} tokens > {window} maximum"),
        "invalid_request_error",
    )
}

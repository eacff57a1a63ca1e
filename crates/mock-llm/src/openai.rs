//! The OpenAI chat-completions protocol: reading requests, writing completions and chunk
//! streams (as OpenAI, vLLM and DeepSeek send them).

use serde_json::{Value, json};

use crate::state::StreamStyle;
use crate::view::{Api, ChatView, ViewCall, ViewMessage, content_text};
use crate::wire::{Answer, Usage, split_chars, split_words};

/// Reads a chat-completions body into the neutral view. Lenient: shapes it cannot read come
/// out empty, and validation reports them.
pub(crate) fn parse(body: &Value, body_chars: usize) -> ChatView {
    let mut view = ChatView {
        stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        model: body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        api: Api::OpenAi,
        body_chars,
        ..ChatView::default()
    };
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, m) in messages.iter().enumerate() {
        let role = match m.get("role").and_then(Value::as_str).unwrap_or_default() {
            "developer" => "system",
            other => other,
        };
        let text = content_text(m.get("content"));
        if i == 0 && role == "system" {
            view.system = text;
            continue;
        }
        let tool_calls = m
            .get("tool_calls")
            .and_then(Value::as_array)
            .map(|calls| {
                calls
                    .iter()
                    .map(|c| ViewCall {
                        id: str_at(c, &["id"]),
                        name: str_at(c, &["function", "name"]),
                        arguments: str_at(c, &["function", "arguments"]),
                    })
                    .collect()
            })
            .unwrap_or_default();
        view.messages.push(ViewMessage {
            role: role.to_string(),
            text,
            tool_calls,
            tool_call_id: m
                .get("tool_call_id")
                .and_then(Value::as_str)
                .map(str::to_string),
        });
    }
    view.tools = body
        .get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .map(|t| str_at(t, &["function", "name"]))
                .collect()
        })
        .unwrap_or_default();
    view
}

fn str_at(v: &Value, path: &[&str]) -> String {
    let mut cur = v;
    for key in path {
        match cur.get(key) {
            Some(next) => cur = next,
            None => return String::new(),
        }
    }
    cur.as_str().unwrap_or_default().to_string()
}

/// Whether the request asked for a usage chunk at the end of the stream.
pub(crate) fn include_usage(body: &Value) -> bool {
    body.pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

fn usage_json(usage: Usage) -> Value {
    json!({
        "prompt_tokens": usage.prompt,
        "completion_tokens": usage.completion,
        "total_tokens": usage.prompt + usage.completion,
    })
}

fn finish_reason(answer: &Answer) -> &'static str {
    if answer.calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

/// Identity of one response: the same in every chunk of a stream.
pub(crate) struct Meta<'a> {
    pub id: &'a str,
    pub model: &'a str,
    pub created: u64,
}

/// A non-streaming `chat.completion` object.
pub(crate) fn completion(answer: &Answer, meta: &Meta<'_>, usage: Usage) -> Value {
    let mut message = json!({"role": "assistant", "content": answer.text, "refusal": null});
    if let Some(reasoning) = &answer.reasoning {
        message["reasoning_content"] = json!(reasoning);
    }
    if !answer.calls.is_empty() {
        message["tool_calls"] = answer
            .calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
    }
    json!({
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "system_fingerprint": null,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason(answer)}],
        "usage": usage_json(usage),
    })
}

/// The SSE frames of a streamed answer: role chunk, reasoning and content deltas word by word,
/// tool-call deltas (a header with id and name, then the arguments in small pieces), the
/// finishing chunk, the usage chunk when asked for, and `[DONE]`.
pub(crate) fn stream_frames(
    answer: &Answer,
    meta: &Meta<'_>,
    usage: Usage,
    include_usage: bool,
    style: &StreamStyle,
) -> Vec<String> {
    let chunk = |delta: Value, finish: Option<&str>| -> String {
        let mut c = json!({
            "id": meta.id,
            "object": "chat.completion.chunk",
            "created": meta.created,
            "model": meta.model,
            "system_fingerprint": null,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        if include_usage {
            // With include_usage every chunk carries `usage: null` except the last one.
            c["usage"] = Value::Null;
        }
        frame(&c)
    };
    let mut frames = Vec::new();
    let first_content = if answer.text.is_some() {
        json!("")
    } else {
        Value::Null
    };
    frames.push(chunk(
        json!({"role": "assistant", "content": first_content}),
        None,
    ));
    if let Some(reasoning) = &answer.reasoning {
        for piece in split_words(reasoning) {
            frames.push(chunk(json!({"reasoning_content": piece}), None));
        }
    }
    if let Some(text) = &answer.text {
        for piece in split_words(text) {
            frames.push(chunk(json!({"content": piece}), None));
        }
    }
    let per_call: Vec<Vec<Value>> = answer
        .calls
        .iter()
        .enumerate()
        .map(|(index, c)| {
            let mut deltas =
                vec![json!({"index": index, "id": c.id, "type": "function", "function": {"name": c.name, "arguments": ""}})];
            deltas.extend(
                split_chars(&c.arguments, 7)
                    .into_iter()
                    .filter(|p| !p.is_empty())
                    .map(|p| json!({"index": index, "function": {"arguments": p}})),
            );
            deltas
        })
        .collect();
    for delta in order_call_deltas(per_call, style.interleave_tool_calls) {
        frames.push(chunk(json!({"tool_calls": [delta]}), None));
    }
    frames.push(chunk(json!({}), Some(finish_reason(answer))));
    if include_usage {
        frames.push(frame(&json!({
            "id": meta.id,
            "object": "chat.completion.chunk",
            "created": meta.created,
            "model": meta.model,
            "system_fingerprint": null,
            "choices": [],
            "usage": usage_json(usage),
        })));
    }
    frames.push("data: [DONE]\n\n".to_string());
    frames
}

/// Calls one after another (as OpenAI sends them) or round-robin (which the protocol allows,
/// and which breaks clients that assume the former).
fn order_call_deltas(per_call: Vec<Vec<Value>>, interleave: bool) -> Vec<Value> {
    if !interleave {
        return per_call.into_iter().flatten().collect();
    }
    let longest = per_call.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::new();
    for step in 0..longest {
        for deltas in &per_call {
            if let Some(d) = deltas.get(step) {
                out.push(d.clone());
            }
        }
    }
    out
}

fn frame(v: &Value) -> String {
    format!("data: {v}\n\n")
}

/// A 200 body that breaks off inside a JSON object.
pub(crate) fn garbage_body(meta: &Meta<'_>) -> String {
    format!(
        r#"{{"id":"{}","object":"chat.completion","created":{},"model":"{}","choices":[{{"index":0,"message":{{"role":"assistant","content":"Hel"#,
        meta.id, meta.created, meta.model
    )
}

/// Stream frames that break off in the middle of a chunk (the server then drops the connection).
pub(crate) fn garbage_frames(meta: &Meta<'_>) -> Vec<String> {
    let answer = Answer {
        text: Some("Hello there".into()),
        ..Answer::default()
    };
    let style = StreamStyle::default();
    let mut frames = stream_frames(&answer, meta, Usage::default(), false, &style);
    frames.truncate(2);
    frames.push(format!(
        r#"data: {{"id":"{}","object":"chat.completion.chunk","created":{},"model":"{}","choices":[{{"index":0,"delta":{{"content":"the"#,
        meta.id, meta.created, meta.model
    ));
    frames
}

/// OpenAI's context-length error body.
pub(crate) fn context_length_error(window: u64, tokens: u64) -> Value {
    json!({"error": {
        "message": format!("This model's maximum context length is {window} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages."),
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }})
}

/// An OpenAI-shaped error body for other 4xx answers (unknown endpoint, bad JSON, rejected
/// invalid request).
pub(crate) fn error_body(message: &str, kind: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
}

//! Helpers shared by the integration tests: requests and a small SSE parser.
#![allow(dead_code)]

use serde_json::{Value, json};

/// One server-sent event.
#[derive(Debug, Clone)]
pub struct Event {
    pub event: Option<String>,
    pub data: String,
}

impl Event {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("event data is not JSON ({e}): {}", self.data))
    }
}

/// Splits a complete SSE body into events; panics on a frame without `data:`.
pub fn parse_sse(body: &str) -> Vec<Event> {
    assert!(
        body.ends_with("\n\n"),
        "stream does not end with a blank line: {body:?}"
    );
    body.split("\n\n")
        .filter(|f| !f.is_empty())
        .map(|frame| {
            let mut event = None;
            let mut data = None;
            for line in frame.lines() {
                if let Some(v) = line.strip_prefix("event: ") {
                    event = Some(v.to_string());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data = Some(v.to_string());
                } else {
                    panic!("unexpected SSE line {line:?}");
                }
            }
            Event {
                event,
                data: data.unwrap_or_else(|| panic!("frame without data: {frame:?}")),
            }
        })
        .collect()
}

pub fn client() -> reqwest::Client {
    reqwest::Client::new()
}

/// POSTs an OpenAI chat request and returns the response.
pub async fn post(base: &str, path: &str, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{base}{path}"))
        .header("authorization", "Bearer sk-test")
        .json(body)
        .send()
        .await
        .expect("request failed")
}

/// The JSON answer to an OpenAI chat request.
pub async fn chat_json(base: &str, body: &Value) -> Value {
    post(base, "/chat/completions", body)
        .await
        .json()
        .await
        .expect("a JSON answer")
}

/// The server-sent events answering a streamed OpenAI chat request.
pub async fn chat_events(base: &str, body: &Value) -> Vec<Event> {
    let res = post(base, "/chat/completions", body).await;
    parse_sse(&res.text().await.expect("a readable stream"))
}

/// POSTs an Anthropic request with the headers the API requires.
pub async fn post_anthropic(base: &str, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{base}/messages"))
        .header("x-api-key", "sk-ant-test")
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await
        .expect("request failed")
}

pub fn tool(name: &str, props: Value) -> Value {
    json!({"type": "function", "function": {"name": name, "description": name, "parameters": {"type": "object", "properties": props}}})
}

/// A simple OpenAI body: system + user text.
pub fn simple_body(stream: bool) -> Value {
    json!({
        "model": "mock-small",
        "stream": stream,
        "messages": [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "hello"}],
    })
}

/// Reassembled content of an OpenAI stream.
#[derive(Debug, Default)]
pub struct Assembled {
    pub content: String,
    pub reasoning: String,
    /// (index, id, name, arguments)
    pub calls: Vec<(u64, String, String, String)>,
    pub finish_reason: Option<String>,
    pub usage: Option<Value>,
}

/// Folds OpenAI chunks into the final message; asserts `[DONE]` comes last and only once.
pub fn assemble_openai(events: &[Event]) -> Assembled {
    let mut out = Assembled::default();
    let (last, chunks) = events.split_last().expect("empty stream");
    assert_eq!(last.data, "[DONE]", "stream must end with [DONE]");
    for e in chunks {
        assert_ne!(e.data, "[DONE]", "[DONE] before the end");
        let v = e.json();
        assert_eq!(v["object"], "chat.completion.chunk");
        if let Some(u) = v.get("usage").filter(|u| !u.is_null()) {
            out.usage = Some(u.clone());
        }
        for choice in v["choices"].as_array().unwrap() {
            let d = &choice["delta"];
            if let Some(t) = d["content"].as_str() {
                out.content.push_str(t);
            }
            if let Some(t) = d["reasoning_content"].as_str() {
                out.reasoning.push_str(t);
            }
            for tc in d["tool_calls"].as_array().into_iter().flatten() {
                let index = tc["index"].as_u64().expect("tool call delta without index");
                let pos = match out.calls.iter().position(|c| c.0 == index) {
                    Some(p) => p,
                    None => {
                        out.calls
                            .push((index, String::new(), String::new(), String::new()));
                        out.calls.len() - 1
                    }
                };
                let call = &mut out.calls[pos];
                if let Some(id) = tc["id"].as_str() {
                    call.1.push_str(id);
                }
                if let Some(name) = tc["function"]["name"].as_str() {
                    call.2.push_str(name);
                }
                if let Some(args) = tc["function"]["arguments"].as_str() {
                    call.3.push_str(args);
                }
            }
            if let Some(f) = choice["finish_reason"].as_str() {
                assert!(out.finish_reason.is_none(), "two finish reasons");
                out.finish_reason = Some(f.to_string());
            }
        }
    }
    out
}

/// Reassembled Anthropic message from its event stream.
#[derive(Debug, Default)]
pub struct AnthropicAssembled {
    pub text: String,
    pub thinking: String,
    /// (id, name, input JSON text)
    pub calls: Vec<(String, String, String)>,
    pub stop_reason: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Block types in order.
    pub blocks: Vec<String>,
}

/// Folds Anthropic events into the message, asserting the documented order: `message_start`,
/// then per block `content_block_start` → deltas → `content_block_stop` (indexes 0, 1, …),
/// `message_delta`, `message_stop`; `ping` anywhere; the SSE event name equals `data.type`.
pub fn assemble_anthropic(events: &[Event]) -> AnthropicAssembled {
    let mut out = AnthropicAssembled::default();
    assert!(events.len() >= 3, "too few events");
    let mut open: Option<u64> = None;
    let mut next_index = 0u64;
    let mut seen_delta = false;
    for (i, e) in events.iter().enumerate() {
        let v = e.json();
        let kind = v["type"].as_str().unwrap().to_string();
        assert_eq!(
            e.event.as_deref(),
            Some(kind.as_str()),
            "event name must match data.type"
        );
        match kind.as_str() {
            "message_start" => {
                assert_eq!(i, 0, "message_start must come first");
                assert_eq!(v["message"]["role"], "assistant");
                assert_eq!(v["message"]["content"], json!([]));
                out.input_tokens = v["message"]["usage"]["input_tokens"].as_u64().unwrap();
            }
            "ping" => {}
            "content_block_start" => {
                assert!(
                    open.is_none() && !seen_delta,
                    "block started inside another or after message_delta"
                );
                let index = v["index"].as_u64().unwrap();
                assert_eq!(index, next_index, "block indexes count up from 0");
                open = Some(index);
                let block = &v["content_block"];
                let bt = block["type"].as_str().unwrap().to_string();
                if bt == "tool_use" {
                    assert_eq!(block["input"], json!({}));
                    out.calls.push((
                        block["id"].as_str().unwrap().into(),
                        block["name"].as_str().unwrap().into(),
                        String::new(),
                    ));
                }
                out.blocks.push(bt);
            }
            "content_block_delta" => {
                assert_eq!(
                    Some(v["index"].as_u64().unwrap()),
                    open,
                    "delta for a block that is not open"
                );
                let d = &v["delta"];
                match d["type"].as_str().unwrap() {
                    "text_delta" => out.text.push_str(d["text"].as_str().unwrap()),
                    "thinking_delta" => out.thinking.push_str(d["thinking"].as_str().unwrap()),
                    "signature_delta" => assert!(d["signature"].is_string()),
                    "input_json_delta" => out
                        .calls
                        .last_mut()
                        .unwrap()
                        .2
                        .push_str(d["partial_json"].as_str().unwrap()),
                    other => panic!("unknown delta {other}"),
                }
            }
            "content_block_stop" => {
                assert_eq!(Some(v["index"].as_u64().unwrap()), open);
                open = None;
                next_index += 1;
            }
            "message_delta" => {
                assert!(open.is_none(), "message_delta inside a block");
                seen_delta = true;
                out.stop_reason = v["delta"]["stop_reason"].as_str().map(str::to_string);
                out.output_tokens = v["usage"]["output_tokens"].as_u64().unwrap();
            }
            "message_stop" => assert_eq!(i, events.len() - 1, "message_stop must come last"),
            other => panic!("unknown event {other}"),
        }
    }
    assert!(seen_delta, "no message_delta");
    assert_eq!(
        events.last().unwrap().event.as_deref(),
        Some("message_stop")
    );
    out
}

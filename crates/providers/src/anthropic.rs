//! Anthropic's Messages API (`POST {base}/messages`, `x-api-key`, `anthropic-version: 2023-06-01`).

use crate::chat::{self, ChatWire, Emit, f32_to_f64, incomplete};
use crate::errors::Failure;
use crate::recover::{self, arguments_text};
use crate::transport::{Events, SseItem, Transport};
use crate::types::{
    ChatMessage, ChatModel, ChatRequest, ChatResponse, Delta, ProviderConfig, ProviderError,
    TokenUsage, ToolChoice,
};
use async_trait::async_trait;
use engram_core::ToolCall;
use serde_json::{Map, Value, json};
use std::collections::HashMap;

/// `max_tokens` is required by the Messages API; this is sent when the request has none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A chat model behind Anthropic's Messages API.
pub(crate) struct AnthropicChat {
    transport: Transport,
}

impl AnthropicChat {
    /// A client for `config`.
    pub fn new(config: &ProviderConfig) -> Result<Self, ProviderError> {
        Ok(Self {
            transport: Transport::new(config)?,
        })
    }
}

impl ChatWire for AnthropicChat {
    const PATH: &'static str = "messages";

    fn transport(&self) -> &Transport {
        &self.transport
    }

    fn parse_response(value: &Value) -> Result<ChatResponse, String> {
        parse_response(value)
    }

    async fn read_stream<'a>(
        &'a self,
        mut events: Events<'a>,
        emit: Emit<'a>,
    ) -> Result<ChatResponse, Failure> {
        let mut state = StreamState::default();
        while let Some(item) = events.next_json().await? {
            let SseItem::Json(data) = item else { continue };
            if data.get("type").and_then(|t| t.as_str()) == Some("error") {
                return Err(self
                    .transport
                    .ctx
                    .stream_error(data.get("error").unwrap_or(&data)));
            }
            state.apply(&data, emit);
            if state.stopped {
                break;
            }
        }
        if !state.stopped && state.stop_reason.is_none() {
            return Err(incomplete(&self.transport.ctx));
        }
        Ok(state.finish())
    }
}

#[async_trait]
impl ChatModel for AnthropicChat {
    #[tracing::instrument(skip_all, fields(api = "anthropic", model = %req.model, stream = req.stream))]
    async fn complete(
        &self,
        req: &ChatRequest,
        on_delta: &(dyn Fn(Delta) + Send + Sync),
    ) -> Result<ChatResponse, ProviderError> {
        // Anthropic's tool calls are structured blocks, so only their ids and arguments need
        // checking (Anthropic-compatible servers may repeat or omit ids); text stays as sent.
        let reply = chat::complete(self, &request_body(req), req.stream, on_delta).await?;
        Ok(recover::normalise_calls(reply))
    }
}

/// The JSON body of a Messages request.
///
/// System messages before the first other message become the top-level `system` (joined by a
/// blank line); later ones (alerts) become user text, as the API has no system role in
/// `messages`. Tool results become `tool_result` blocks of a user message; consecutive messages
/// of one role are merged, as the API requires alternation, with `tool_result` blocks first in a
/// user message as it also requires. Tool-call arguments that are not a JSON object are sent as
/// `{}` (the API only takes objects; the model learns of its mistake from the tool's result).
pub(crate) fn request_body(req: &ChatRequest) -> Value {
    let mut system = Vec::new();
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    let mut push = |role: &'static str, blocks: Vec<Value>| {
        if blocks.is_empty() {
            return;
        }
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    };
    let text = |t: &str| {
        if t.is_empty() {
            vec![]
        } else {
            vec![json!({"type": "text", "text": t})]
        }
    };
    let mut leading = true;
    for m in &req.messages {
        let is_system = matches!(m, ChatMessage::System { .. });
        leading &= is_system;
        match m {
            ChatMessage::System { content } if leading => system.push(content.as_str()),
            ChatMessage::System { content } | ChatMessage::User { content } => {
                push("user", text(content))
            }
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks = text(content);
                blocks.extend(tool_calls.iter().map(|c| {
                    let input = serde_json::from_str::<Value>(&c.arguments)
                        .ok()
                        .filter(|v| v.is_object())
                        .unwrap_or(json!({}));
                    json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input})
                }));
                push("assistant", blocks);
            }
            ChatMessage::Tool {
                tool_call_id,
                content,
                ..
            } => {
                let mut block = json!({"type": "tool_result", "tool_use_id": tool_call_id});
                if !content.is_empty() {
                    block["content"] = json!(content);
                }
                push("user", vec![block]);
            }
        }
    }
    let messages: Vec<Value> = turns
        .into_iter()
        .map(|(role, mut blocks)| {
            if role == "user" {
                // Stable: tool results first, then text, each in their original order.
                blocks
                    .sort_by_key(|b| b.get("type").and_then(|t| t.as_str()) != Some("tool_result"));
            }
            json!({"role": role, "content": blocks})
        })
        .collect();

    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert(
        "max_tokens".into(),
        json!(req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    if !system.is_empty() {
        body.insert("system".into(), json!(system.join("\n\n")));
    }
    body.insert("messages".into(), Value::Array(messages));
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = match req.tool_choice {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "any",
        };
        body.insert("tool_choice".into(), json!({"type": choice}));
    }
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(f32_to_f64(t)));
    }
    body.insert("stream".into(), json!(req.stream));
    Value::Object(body)
}

/// Anthropic's stop reasons in OpenAI's words, which the loop speaks.
fn finish_reason(stop_reason: &str) -> String {
    match stop_reason {
        "end_turn" | "stop_sequence" => "stop",
        "tool_use" => "tool_calls",
        "max_tokens" => "length",
        other => other,
    }
    .to_owned()
}

/// Input tokens including cache writes and reads (all of them fill the context window).
fn input_tokens(usage: &Value) -> Option<u64> {
    let base = usage.get("input_tokens")?.as_u64()?;
    let cached: u64 = ["cache_creation_input_tokens", "cache_read_input_tokens"]
        .iter()
        .filter_map(|k| usage.get(k).and_then(|v| v.as_u64()))
        .sum();
    Some(base + cached)
}

/// A non-streamed answer as sent: ids may be empty (see [`recover::normalise_calls`]). `Err`
/// says what is wrong with the body.
pub(crate) fn parse_response(value: &Value) -> Result<ChatResponse, String> {
    let blocks = value
        .get("content")
        .and_then(|c| c.as_array())
        .ok_or_else(|| "no `content` in the answer".to_owned())?;
    let mut out = ChatResponse::default();
    let mut reasoning = String::new();
    for block in blocks {
        match block.get("type").and_then(|t| t.as_str()) {
            Some("text") => out.content.push_str(
                block
                    .get("text")
                    .and_then(|t| t.as_str())
                    .unwrap_or_default(),
            ),
            Some("thinking") => reasoning.push_str(
                block
                    .get("thinking")
                    .and_then(|t| t.as_str())
                    .unwrap_or_default(),
            ),
            Some("tool_use") => out.tool_calls.push(ToolCall {
                id: block
                    .get("id")
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned(),
                name: block
                    .get("name")
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned(),
                arguments: arguments_text(block.get("input")),
            }),
            _ => {}
        }
    }
    out.reasoning = (!reasoning.is_empty()).then_some(reasoning);
    out.finish_reason = value
        .get("stop_reason")
        .and_then(|s| s.as_str())
        .map(finish_reason);
    out.usage = value.get("usage").and_then(|u| {
        Some(TokenUsage {
            prompt_tokens: input_tokens(u)?,
            completion_tokens: u.get("output_tokens").and_then(|v| v.as_u64()).unwrap_or(0),
        })
    });
    Ok(out)
}

/// A `tool_use` block being assembled from `input_json_delta` pieces.
struct PartialCall {
    id: String,
    name: String,
    /// The block's initial `input` (`{}` when streamed in pieces).
    initial: Value,
    json: String,
}

/// What a stream has said so far.
#[derive(Default)]
struct StreamState {
    content: String,
    reasoning: String,
    calls: Vec<PartialCall>,
    /// Content block index → position in `calls`.
    slots: HashMap<u64, usize>,
    stop_reason: Option<String>,
    input_tokens: Option<u64>,
    output_tokens: u64,
    /// `message_stop` arrived.
    stopped: bool,
}

impl StreamState {
    /// Takes one event (by its `type` field), passing text and thinking pieces to `emit`.
    fn apply(&mut self, event: &Value, emit: &(dyn Fn(Delta) + Send + Sync)) {
        let str_at = |v: &Value, k: &str| {
            v.get(k)
                .and_then(|x| x.as_str())
                .unwrap_or_default()
                .to_owned()
        };
        match event
            .get("type")
            .and_then(|t| t.as_str())
            .unwrap_or_default()
        {
            "message_start" => {
                if let Some(u) = event.pointer("/message/usage") {
                    self.input_tokens = input_tokens(u).or(self.input_tokens);
                    self.output_tokens = u
                        .get("output_tokens")
                        .and_then(|v| v.as_u64())
                        .unwrap_or(self.output_tokens);
                }
            }
            "content_block_start" => {
                let index = event.get("index").and_then(|i| i.as_u64()).unwrap_or(0);
                let block = event.get("content_block").unwrap_or(&Value::Null);
                match block.get("type").and_then(|t| t.as_str()) {
                    Some("tool_use") => {
                        self.calls.push(PartialCall {
                            id: str_at(block, "id"),
                            name: str_at(block, "name"),
                            initial: block.get("input").cloned().unwrap_or(json!({})),
                            json: String::new(),
                        });
                        self.slots.insert(index, self.calls.len() - 1);
                    }
                    Some("text") => self.text(str_at(block, "text"), emit),
                    Some("thinking") => self.thinking(str_at(block, "thinking"), emit),
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = event.get("delta").unwrap_or(&Value::Null);
                match delta.get("type").and_then(|t| t.as_str()) {
                    Some("text_delta") => self.text(str_at(delta, "text"), emit),
                    Some("thinking_delta") => self.thinking(str_at(delta, "thinking"), emit),
                    Some("input_json_delta") => {
                        let index = event.get("index").and_then(|i| i.as_u64()).unwrap_or(0);
                        if let Some(&slot) = self.slots.get(&index) {
                            self.calls[slot]
                                .json
                                .push_str(&str_at(delta, "partial_json"));
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(|r| r.as_str()) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(u) = event.get("usage") {
                    // Cumulative counts; newer API versions repeat the input counts here.
                    self.output_tokens = u
                        .get("output_tokens")
                        .and_then(|v| v.as_u64())
                        .unwrap_or(self.output_tokens);
                    if u.get("input_tokens")
                        .is_some_and(|v| v.as_u64().is_some_and(|n| n > 0))
                    {
                        self.input_tokens = input_tokens(u);
                    }
                }
            }
            "message_stop" => self.stopped = true,
            _ => {} // ping, content_block_stop, and event types added later
        }
    }

    fn text(&mut self, piece: String, emit: &(dyn Fn(Delta) + Send + Sync)) {
        if !piece.is_empty() {
            self.content.push_str(&piece);
            emit(Delta::Text(piece));
        }
    }

    fn thinking(&mut self, piece: String, emit: &(dyn Fn(Delta) + Send + Sync)) {
        if !piece.is_empty() {
            self.reasoning.push_str(&piece);
            emit(Delta::Reasoning(piece));
        }
    }

    /// The accumulated answer as sent (as [`parse_response`]). Tool arguments are the streamed
    /// JSON text as sent.
    fn finish(self) -> ChatResponse {
        ChatResponse {
            content: self.content,
            reasoning: (!self.reasoning.is_empty()).then_some(self.reasoning),
            tool_calls: self
                .calls
                .into_iter()
                .map(|c| ToolCall {
                    id: c.id,
                    name: c.name,
                    arguments: if c.json.is_empty() {
                        c.initial.to_string()
                    } else {
                        c.json
                    },
                })
                .collect(),
            finish_reason: self.stop_reason.as_deref().map(finish_reason),
            usage: self.input_tokens.map(|p| TokenUsage {
                prompt_tokens: p,
                completion_tokens: self.output_tokens,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ToolSpec;
    use std::sync::Mutex;

    fn call(id: &str, args: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "f".into(),
            arguments: args.into(),
        }
    }

    #[test]
    fn request_body_merges_roles_and_tool_results() {
        let req = ChatRequest {
            model: "claude".into(),
            messages: vec![
                ChatMessage::System {
                    content: "one".into(),
                },
                ChatMessage::System {
                    content: "two".into(),
                },
                ChatMessage::User {
                    content: "hi".into(),
                },
                ChatMessage::User {
                    content: "again".into(),
                },
                ChatMessage::Assistant {
                    content: "calling".into(),
                    tool_calls: vec![call("a", r#"{"x":1}"#), call("b", "{bad")],
                },
                ChatMessage::Tool {
                    tool_call_id: "a".into(),
                    name: "f".into(),
                    content: "r1".into(),
                },
                ChatMessage::Tool {
                    tool_call_id: "b".into(),
                    name: "f".into(),
                    content: "r2".into(),
                },
                ChatMessage::System {
                    content: "alert".into(),
                },
                ChatMessage::User {
                    content: "{\"type\":\"heartbeat\"}".into(),
                },
                ChatMessage::Assistant {
                    content: String::new(),
                    tool_calls: vec![],
                },
            ],
            tools: vec![ToolSpec {
                name: "f".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
            tool_choice: ToolChoice::Required,
            max_tokens: None,
            temperature: None,
            stream: false,
        };
        let body = request_body(&req);
        assert_eq!(
            body,
            json!({
                "model": "claude",
                "max_tokens": 4096,
                "system": "one\n\ntwo",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": "again"}]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "calling"},
                        {"type": "tool_use", "id": "a", "name": "f", "input": {"x": 1}},
                        {"type": "tool_use", "id": "b", "name": "f", "input": {}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "a", "content": "r1"},
                        {"type": "tool_result", "tool_use_id": "b", "content": "r2"},
                        {"type": "text", "text": "alert"},
                        {"type": "text", "text": "{\"type\":\"heartbeat\"}"},
                    ]},
                ],
                "tools": [{"name": "f", "description": "d", "input_schema": {"type": "object"}}],
                "tool_choice": {"type": "any"},
                "stream": false,
            })
        );
    }

    #[test]
    fn stream_events_reassemble_text_thinking_and_tool_input() {
        let seen = Mutex::new(Vec::new());
        let emit = |d: Delta| seen.lock().unwrap().push(d);
        let mut s = StreamState::default();
        let events = [
            json!({"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}),
            json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}),
            json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t1","name":"f","input":{}}}),
            json!({"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"t2","name":"g","input":{}}}),
            json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}}),
            json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":":1}"}}),
            json!({"type":"ping"}),
            json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":42}}),
            json!({"type":"message_stop"}),
        ];
        for e in &events {
            s.apply(e, &emit);
        }
        assert!(s.stopped);
        let r = s.finish();
        assert_eq!(r.content, "Hi");
        assert_eq!(r.reasoning.as_deref(), Some("hmm"));
        assert_eq!(
            r.tool_calls,
            vec![
                ToolCall {
                    id: "t1".into(),
                    name: "f".into(),
                    arguments: r#"{"a":1}"#.into()
                },
                ToolCall {
                    id: "t2".into(),
                    name: "g".into(),
                    arguments: "{}".into()
                }
            ]
        );
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(
            r.usage,
            Some(TokenUsage {
                prompt_tokens: 15,
                completion_tokens: 42
            })
        );
        assert_eq!(
            *seen.lock().unwrap(),
            vec![Delta::Reasoning("hmm".into()), Delta::Text("Hi".into())]
        );
    }

    #[test]
    fn non_streamed_messages_parse() {
        let r = parse_response(&json!({
            "content": [
                {"type": "thinking", "thinking": "t", "signature": "s"},
                {"type": "text", "text": "a"},
                {"type": "tool_use", "id": "x", "name": "f", "input": {"k": "v"}},
            ],
            "stop_reason": "max_tokens",
            "usage": {"input_tokens": 3, "output_tokens": 4},
        }))
        .unwrap();
        assert_eq!(r.content, "a");
        assert_eq!(r.reasoning.as_deref(), Some("t"));
        assert_eq!(r.tool_calls[0].arguments, r#"{"k":"v"}"#);
        assert_eq!(r.finish_reason.as_deref(), Some("length"));
        assert_eq!(
            r.usage,
            Some(TokenUsage {
                prompt_tokens: 3,
                completion_tokens: 4
            })
        );
        assert!(parse_response(&json!({"type": "message"})).is_err());
    }
}

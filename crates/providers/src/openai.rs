//! OpenAI Chat Completions (`POST {base}/chat/completions`), spoken by OpenAI and by every
//! OpenAI-compatible server (Ollama, LM Studio, vLLM, llama.cpp server, OpenRouter). Every
//! reply goes through [`recover::normalise`], as local models behind these servers often leave
//! their thinking and tool calls in the text.

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

/// A chat model behind an OpenAI-compatible `chat/completions` endpoint.
pub(crate) struct OpenAiChat {
    transport: Transport,
    /// api.openai.com wants `max_completion_tokens`; other servers know `max_tokens`.
    official: bool,
}

impl OpenAiChat {
    /// A client for `config`.
    pub fn new(config: &ProviderConfig) -> Result<Self, ProviderError> {
        Ok(Self {
            transport: Transport::new(config)?,
            official: is_official(&config.base_url),
        })
    }
}

impl ChatWire for OpenAiChat {
    const PATH: &'static str = "chat/completions";

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
        let mut acc = StreamState::default();
        let mut done = false;
        while let Some(item) = events.next_json().await? {
            match item {
                SseItem::Done => {
                    done = true;
                    break;
                }
                SseItem::Json(data) => {
                    if let Some(error) = data.get("error").filter(|e| !e.is_null()) {
                        return Err(self.transport.ctx.stream_error(error));
                    }
                    acc.apply(&data, emit);
                }
            }
        }
        if !done && acc.finish_reason.is_none() {
            return Err(incomplete(&self.transport.ctx));
        }
        Ok(acc.finish())
    }
}

#[async_trait]
impl ChatModel for OpenAiChat {
    #[tracing::instrument(skip_all, fields(api = "openai", model = %req.model, stream = req.stream))]
    async fn complete(
        &self,
        req: &ChatRequest,
        on_delta: &(dyn Fn(Delta) + Send + Sync),
    ) -> Result<ChatResponse, ProviderError> {
        let reply = chat::complete(
            self,
            &request_body(req, self.official),
            req.stream,
            on_delta,
        )
        .await?;
        Ok(recover::normalise(reply, &req.tools))
    }
}

/// True for OpenAI's own API (by host).
fn is_official(base_url: &str) -> bool {
    base_url
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split(['/', ':']).next())
        == Some("api.openai.com")
}

/// The JSON body of a Chat Completions request.
pub(crate) fn request_body(req: &ChatRequest, official: bool) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert(
        "messages".into(),
        Value::Array(req.messages.iter().map(message).collect()),
    );
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters,
                }})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = match req.tool_choice {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "required",
        };
        body.insert("tool_choice".into(), json!(choice));
    }
    if let Some(max) = req.max_tokens {
        let key = if official {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body.insert(key.into(), json!(max));
    }
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(f32_to_f64(t)));
    }
    body.insert("stream".into(), json!(req.stream));
    if req.stream {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

/// One message in Chat Completions form. Tool-call arguments go back exactly as the model gave
/// them, malformed or not.
fn message(m: &ChatMessage) -> Value {
    match m {
        ChatMessage::System { content } => json!({"role": "system", "content": content}),
        ChatMessage::User { content } => json!({"role": "user", "content": content}),
        ChatMessage::Assistant {
            content,
            tool_calls,
        } if tool_calls.is_empty() => {
            json!({"role": "assistant", "content": content})
        }
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => {
            let calls: Vec<Value> = tool_calls
                .iter()
                .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                .collect();
            let content = if content.is_empty() {
                Value::Null
            } else {
                json!(content)
            };
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
        ChatMessage::Tool {
            tool_call_id,
            content,
            ..
        } => {
            json!({"role": "tool", "tool_call_id": tool_call_id, "content": content})
        }
    }
}

/// A non-streamed answer as sent: ids may be empty, arguments are raw (see
/// [`recover::normalise`]). `Err` says what is wrong with the body.
pub(crate) fn parse_response(value: &Value) -> Result<ChatResponse, String> {
    let choice = value
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| "no `choices` in the answer".to_owned())?;
    let msg = choice
        .get("message")
        .filter(|m| m.is_object())
        .ok_or_else(|| "no `message` in the choice".to_owned())?;
    let reasoning = text_of(msg.get("reasoning_content")).or_else(|| text_of(msg.get("reasoning")));
    let tool_calls = msg
        .get("tool_calls")
        .and_then(|c| c.as_array())
        .map(|calls| {
            calls
                .iter()
                .map(|c| {
                    let function = c.get("function").unwrap_or(&Value::Null);
                    ToolCall {
                        id: c
                            .get("id")
                            .and_then(|v| v.as_str())
                            .unwrap_or_default()
                            .to_owned(),
                        name: function
                            .get("name")
                            .and_then(|v| v.as_str())
                            .unwrap_or_default()
                            .to_owned(),
                        arguments: arguments_text(function.get("arguments")),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(ChatResponse {
        content: text_of(msg.get("content")).unwrap_or_default(),
        reasoning,
        tool_calls,
        finish_reason: choice
            .get("finish_reason")
            .and_then(|v| v.as_str())
            .map(str::to_owned),
        usage: value.get("usage").and_then(usage),
    })
}

/// Message text: a string, or an array of `{type:"text", text}` parts. Empty counts as none.
fn text_of(v: Option<&Value>) -> Option<String> {
    let text = match v? {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(|t| t.as_str()))
            .collect(),
        _ => return None,
    };
    (!text.is_empty()).then_some(text)
}

/// `{"prompt_tokens", "completion_tokens"}`.
fn usage(v: &Value) -> Option<TokenUsage> {
    let prompt = v.get("prompt_tokens")?.as_u64()?;
    let completion = v
        .get("completion_tokens")
        .and_then(|c| c.as_u64())
        .unwrap_or(0);
    Some(TokenUsage {
        prompt_tokens: prompt,
        completion_tokens: completion,
    })
}

/// A tool call being assembled from stream fragments.
#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// What a stream has said so far.
#[derive(Default)]
pub(crate) struct StreamState {
    content: String,
    reasoning: String,
    /// In order of first appearance.
    calls: Vec<PartialCall>,
    /// The server's `index` → position in `calls`.
    slots: HashMap<u64, usize>,
    finish_reason: Option<String>,
    usage: Option<TokenUsage>,
}

impl StreamState {
    /// Takes one `chat.completion.chunk`, passing text and reasoning pieces to `emit`.
    pub fn apply(&mut self, chunk: &Value, emit: &(dyn Fn(Delta) + Send + Sync)) {
        if let Some(u) = chunk.get("usage").and_then(usage) {
            self.usage = Some(u);
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return;
        };
        if let Some(delta) = choice.get("delta") {
            let reasoning =
                text_of(delta.get("reasoning_content")).or_else(|| text_of(delta.get("reasoning")));
            if let Some(r) = reasoning {
                self.reasoning.push_str(&r);
                emit(Delta::Reasoning(r));
            }
            if let Some(t) = text_of(delta.get("content")) {
                self.content.push_str(&t);
                emit(Delta::Text(t));
            }
            for fragment in delta
                .get("tool_calls")
                .and_then(|c| c.as_array())
                .into_iter()
                .flatten()
            {
                self.take_fragment(fragment);
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(|v| v.as_str()) {
            self.finish_reason = Some(reason.to_owned());
        }
    }

    /// Adds one `delta.tool_calls[]` entry. The id and name come only in a call's first fragment;
    /// the arguments in pieces. A fragment carrying a new id at an index already holding another
    /// id starts a new call (some servers give every parallel call index 0).
    fn take_fragment(&mut self, fragment: &Value) {
        let id = fragment
            .get("id")
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty());
        let index = fragment.get("index").and_then(|v| v.as_u64());
        let existing = match index {
            Some(i) => self.slots.get(&i).copied(),
            // No index: continue the last call unless this is plainly a new one.
            None => (!self.calls.is_empty()).then(|| self.calls.len() - 1),
        };
        let slot = match existing {
            Some(s)
                if id.is_none_or(|id| self.calls[s].id.is_empty() || self.calls[s].id == id) =>
            {
                s
            }
            _ => {
                self.calls.push(PartialCall::default());
                let s = self.calls.len() - 1;
                self.slots.insert(index.unwrap_or(s as u64), s);
                s
            }
        };
        let call = &mut self.calls[slot];
        if let Some(id) = id {
            call.id = id.to_owned();
        }
        let function = fragment.get("function").unwrap_or(&Value::Null);
        if let Some(name) = function.get("name").and_then(|v| v.as_str())
            && call.name.is_empty()
        {
            call.name = name.to_owned();
        }
        match function.get("arguments") {
            Some(Value::String(piece)) => call.arguments.push_str(piece),
            v @ Some(Value::Object(_)) => call.arguments = arguments_text(v),
            _ => {}
        }
    }

    /// The accumulated answer as sent (as [`parse_response`]).
    pub fn finish(self) -> ChatResponse {
        ChatResponse {
            content: self.content,
            reasoning: (!self.reasoning.is_empty()).then_some(self.reasoning),
            tool_calls: self
                .calls
                .into_iter()
                .map(|c| ToolCall {
                    id: c.id,
                    name: c.name,
                    arguments: c.arguments,
                })
                .collect(),
            finish_reason: self.finish_reason,
            usage: self.usage,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ToolSpec;
    use std::sync::Mutex;

    fn req(stream: bool) -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages: vec![
                ChatMessage::System {
                    content: "sys".into(),
                },
                ChatMessage::User {
                    content: "hi".into(),
                },
                ChatMessage::Assistant {
                    content: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "f".into(),
                        arguments: "{bad".into(),
                    }],
                },
                ChatMessage::Tool {
                    tool_call_id: "call_1".into(),
                    name: "f".into(),
                    content: "ok".into(),
                },
            ],
            tools: vec![ToolSpec {
                name: "f".into(),
                description: "does f".into(),
                parameters: json!({"type":"object"}),
            }],
            tool_choice: ToolChoice::Required,
            max_tokens: Some(100),
            temperature: Some(0.7),
            stream,
        }
    }

    #[test]
    fn request_body_has_the_wire_shape() {
        let body = request_body(&req(true), false);
        assert_eq!(
            body,
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{bad"}}
                    ]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
                ],
                "tools": [{"type": "function", "function": {"name": "f", "description": "does f", "parameters": {"type": "object"}}}],
                "tool_choice": "required",
                "max_tokens": 100,
                "temperature": 0.7,
                "stream": true,
                "stream_options": {"include_usage": true},
            })
        );
        let official = request_body(&req(false), true);
        assert_eq!(official["max_completion_tokens"], 100);
        assert!(official.get("max_tokens").is_none());
        assert!(official.get("stream_options").is_none());
        assert!(is_official("https://api.openai.com/v1"));
        assert!(!is_official("http://127.0.0.1:11434/v1"));
    }

    #[test]
    fn stream_fragments_reassemble_parallel_calls() {
        let seen = Mutex::new(Vec::new());
        let emit = |d: Delta| seen.lock().unwrap().push(d);
        let mut s = StreamState::default();
        let chunks = [
            json!({"choices":[{"delta":{"reasoning_content":"hmm"}}]}),
            json!({"choices":[{"delta":{"content":"Hi"}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":""}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":"{\"x\""}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"y\":1}"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":":2}"}}]}}]}),
            json!({"choices":[{"delta":{},"finish_reason":"tool_calls"}]}),
            json!({"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}}),
        ];
        for c in &chunks {
            s.apply(c, &emit);
        }
        let r = s.finish();
        assert_eq!(r.content, "Hi");
        assert_eq!(r.reasoning.as_deref(), Some("hmm"));
        assert_eq!(
            r.tool_calls,
            vec![
                ToolCall {
                    id: "a".into(),
                    name: "f".into(),
                    arguments: "{\"y\":1}".into()
                },
                ToolCall {
                    id: "b".into(),
                    name: "g".into(),
                    arguments: "{\"x\":2}".into()
                },
            ]
        );
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(
            r.usage,
            Some(TokenUsage {
                prompt_tokens: 5,
                completion_tokens: 7
            })
        );
        assert_eq!(
            *seen.lock().unwrap(),
            vec![Delta::Reasoning("hmm".into()), Delta::Text("Hi".into())]
        );
    }

    #[test]
    fn calls_without_ids_get_unique_minted_ids_and_same_index_new_ids_split() {
        let mut s = StreamState::default();
        let emit = |_d: Delta| {};
        s.apply(&json!({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{}"}}]}}]}), &emit);
        s.apply(&json!({"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"name":"g","arguments":"{}"}}]}}]}), &emit);
        let r = s.finish();
        assert_eq!(r.tool_calls.len(), 2, "no id, yet two calls by index");
        let r = recover::normalise(r, &[]);
        assert!(
            r.tool_calls
                .iter()
                .all(|c| c.id.starts_with("call_") && c.id.len() > 30)
        );
        assert_ne!(r.tool_calls[0].id, r.tool_calls[1].id);

        let mut s = StreamState::default();
        s.apply(&json!({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]}}]}), &emit);
        s.apply(&json!({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}), &emit);
        let r = s.finish();
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[1].name, "g");
    }

    #[test]
    fn non_streamed_answers_keep_malformed_arguments_raw() {
        let r = parse_response(&json!({
            "choices":[{"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
                "reasoning_content":"think",
                "tool_calls":[{"type":"function","function":{"name":"f","arguments":"{\"label\": \"human\", "}}]}}],
            "usage":{"prompt_tokens":1,"completion_tokens":2}
        }))
        .unwrap();
        assert_eq!(r.tool_calls[0].arguments, "{\"label\": \"human\", ");
        assert_eq!(r.tool_calls[0].id, "", "ids are minted by `recover`");
        assert_eq!(r.reasoning.as_deref(), Some("think"));
        assert_eq!(r.content, "");
        assert!(parse_response(&json!({"nope": 1})).is_err());
    }
}

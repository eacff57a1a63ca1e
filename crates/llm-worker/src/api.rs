//! The OpenAI Chat Completions shapes the worker speaks, and the pure mapping between them and
//! what the generator needs: the request as read, the chunks and answers as written, and the
//! JSON answer format used when a model's chat template has no way to call tools. Nothing here
//! touches llama.cpp, so all of it is unit-tested.

use serde::Deserialize;
use serde_json::{Map, Value, json};

/// Completion tokens when a request sets no `max_tokens`.
pub const DEFAULT_MAX_TOKENS: u32 = 512;

/// A `POST /v1/chat/completions` body, as far as the worker reads it.
#[derive(Clone, Debug, Deserialize)]
pub struct ChatRequest {
    /// The conversation in OpenAI form (roles `system`, `user`, `assistant`, `tool`).
    pub messages: Vec<Value>,
    /// Tools in OpenAI form (`{"type":"function","function":{name,description,parameters}}`).
    #[serde(default)]
    pub tools: Vec<Value>,
    /// `"auto"`, `"required"`, `"none"`, or `{"type":"function",…}` (treated as required).
    #[serde(default)]
    pub tool_choice: Option<Value>,
    /// Cap on completion tokens (`max_completion_tokens` is read too).
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// The newer name of `max_tokens`.
    #[serde(default)]
    pub max_completion_tokens: Option<u32>,
    /// Sampling temperature; 0 or less samples greedily.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Stream the answer as server-sent events.
    #[serde(default)]
    pub stream: bool,
    /// `{"include_usage": true}` adds a last chunk with the token counts.
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    /// Seed of the sampler; random when absent.
    #[serde(default)]
    pub seed: Option<u32>,
}

/// `stream_options` of a request.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct StreamOptions {
    /// Whether the stream ends with a usage chunk.
    #[serde(default)]
    pub include_usage: bool,
}

/// Whether and how the model must call a tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolMode {
    /// No tools offered, or `tool_choice: "none"`: plain text.
    None,
    /// The model decides.
    Auto,
    /// The model must call one.
    Required,
}

impl ChatRequest {
    /// The completion-token limit in force: `max_completion_tokens`, else `max_tokens`, else
    /// [`DEFAULT_MAX_TOKENS`]; at least 1.
    pub fn token_limit(&self) -> u32 {
        self.max_completion_tokens
            .or(self.max_tokens)
            .unwrap_or(DEFAULT_MAX_TOKENS)
            .max(1)
    }

    /// The tool mode the request asks for. A named function counts as `Required` (the model
    /// then chooses among all tools; small models follow the grammar, not the name).
    pub fn tool_mode(&self) -> ToolMode {
        if self.tools.is_empty() {
            return ToolMode::None;
        }
        match &self.tool_choice {
            None => ToolMode::Auto,
            Some(Value::String(s)) if s == "none" => ToolMode::None,
            Some(Value::String(s)) if s == "required" => ToolMode::Required,
            Some(Value::Object(_)) => ToolMode::Required,
            Some(_) => ToolMode::Auto,
        }
    }

    /// `tool_choice` as llama.cpp's template code reads it (`auto`, `required`, `none`).
    pub fn tool_choice_name(&self) -> &'static str {
        match self.tool_mode() {
            ToolMode::None => "none",
            ToolMode::Auto => "auto",
            ToolMode::Required => "required",
        }
    }

    /// Checks what the worker needs to answer at all. `Err` says what is wrong (an HTTP 400).
    pub fn validate(&self) -> Result<(), String> {
        if self.messages.is_empty() {
            return Err("`messages` is empty".into());
        }
        for (i, m) in self.messages.iter().enumerate() {
            let role = m.get("role").and_then(Value::as_str);
            if !matches!(
                role,
                Some("system" | "user" | "assistant" | "tool" | "developer")
            ) {
                return Err(format!("message {i} has no known `role`"));
            }
        }
        for (i, t) in self.tools.iter().enumerate() {
            if tool_name(t).is_none() {
                return Err(format!("tool {i} has no `function.name`"));
            }
        }
        Ok(())
    }
}

/// The name of an OpenAI tool definition.
fn tool_name(tool: &Value) -> Option<&str> {
    tool.pointer("/function/name").and_then(Value::as_str)
}

/// Token counts of one completion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Tokens of the rendered prompt.
    pub prompt_tokens: u32,
    /// Tokens generated.
    pub completion_tokens: u32,
}

impl Usage {
    /// The OpenAI `usage` object.
    pub fn to_json(self) -> Value {
        json!({
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        })
    }
}

/// One streamed chunk whose only choice carries `delta`.
pub fn delta_chunk(id: &str, model: &str, created: u64, delta: Value) -> Value {
    json!({
        "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": null}],
    })
}

/// The chunk that ends the choice with `finish_reason`.
pub fn finish_chunk(id: &str, model: &str, created: u64, finish_reason: &str) -> Value {
    json!({
        "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
        "choices": [{"index": 0, "delta": {}, "finish_reason": finish_reason}],
    })
}

/// The usage chunk of `stream_options.include_usage` (no choices).
pub fn usage_chunk(id: &str, model: &str, created: u64, usage: Usage) -> Value {
    json!({
        "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
        "choices": [], "usage": usage.to_json(),
    })
}

/// A non-streamed answer with the assistant `message`.
pub fn completion(
    id: &str,
    model: &str,
    created: u64,
    message: Value,
    finish_reason: &str,
    usage: Usage,
) -> Value {
    json!({
        "id": id, "object": "chat.completion", "created": created, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage.to_json(),
    })
}

/// An OpenAI error body. `code` is machine-readable (`context_length_exceeded`,
/// `invalid_request_error`, `server_error`).
pub fn error_body(code: &str, message: &str) -> Value {
    let kind = if code == "server_error" {
        "server_error"
    } else {
        "invalid_request_error"
    };
    json!({"error": {"message": message, "type": kind, "code": code}})
}

/// The assistant message in OpenAI form from what the generator found: `content` (`null`
/// when empty and there are calls), `tool_calls` (each `{id,type,function:{name,arguments}}`,
/// arguments as JSON text) and `reasoning_content` when there was some.
pub fn assistant_message(content: &str, reasoning: &str, calls: &[ToolCallOut]) -> Value {
    let mut msg = Map::new();
    msg.insert("role".into(), json!("assistant"));
    msg.insert(
        "content".into(),
        if content.is_empty() && !calls.is_empty() {
            Value::Null
        } else {
            json!(content)
        },
    );
    if !reasoning.is_empty() {
        msg.insert("reasoning_content".into(), json!(reasoning));
    }
    if !calls.is_empty() {
        msg.insert(
            "tool_calls".into(),
            Value::Array(calls.iter().map(ToolCallOut::to_json).collect()),
        );
    }
    Value::Object(msg)
}

/// One tool call of an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCallOut {
    /// The call id (`call_…`).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as JSON text.
    pub arguments: String,
}

impl ToolCallOut {
    /// The OpenAI form of the call.
    pub fn to_json(&self) -> Value {
        json!({"id": self.id, "type": "function",
               "function": {"name": self.name, "arguments": self.arguments}})
    }

    /// The streamed form: one delta that carries the whole call at `index`.
    pub fn to_delta(&self, index: usize) -> Value {
        json!({"tool_calls": [{"index": index, "id": self.id, "type": "function",
               "function": {"name": self.name, "arguments": self.arguments}}]})
    }
}

/// Reads llama.cpp's OpenAI-style message (`parse_response_oaicompat`) into content, reasoning
/// and calls; calls without an id get one from `new_id`.
pub fn read_parsed_message(
    msg: &Value,
    new_id: &mut dyn FnMut() -> String,
) -> (String, String, Vec<ToolCallOut>) {
    let text = |key: &str| {
        msg.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let calls = msg
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .filter_map(|c| {
                    let name = c.pointer("/function/name")?.as_str()?.to_owned();
                    let arguments = match c.pointer("/function/arguments") {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Null) | None => "{}".to_owned(),
                        Some(other) => other.to_string(),
                    };
                    let id = c
                        .get("id")
                        .and_then(Value::as_str)
                        .filter(|id| !id.is_empty())
                        .map_or_else(&mut *new_id, str::to_owned);
                    Some(ToolCallOut {
                        id,
                        name,
                        arguments,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    (text("content"), text("reasoning_content"), calls)
}

/// Gives the tool calls of a streamed delta (from llama.cpp's diff) an id and a type where
/// the first piece of a call has none, so clients can tell calls apart. `seen` holds the
/// indexes already opened, with their ids.
pub fn fill_call_ids(
    delta: &mut Value,
    seen: &mut Vec<(u64, String)>,
    new_id: &mut dyn FnMut() -> String,
) {
    let Some(calls) = delta.get_mut("tool_calls").and_then(Value::as_array_mut) else {
        return;
    };
    for call in calls {
        let Some(obj) = call.as_object_mut() else {
            continue;
        };
        let index = obj.get("index").and_then(Value::as_u64).unwrap_or(0);
        if seen.iter().any(|(i, _)| *i == index) {
            // A continuation: the id went with the first piece; a repeated empty one confuses
            // clients that key calls by id.
            if obj.get("id").and_then(Value::as_str) == Some("") {
                obj.remove("id");
            }
            continue;
        }
        let id = obj
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .map_or_else(&mut *new_id, str::to_owned);
        obj.insert("id".into(), json!(id));
        obj.insert("type".into(), json!("function"));
        seen.push((index, id));
    }
}

/// How many bytes of `text` can be shown without showing the start of a stop string that may
/// still be completing: the text minus its longest suffix that is a proper prefix of a stop.
pub fn safe_prefix_len(text: &str, stops: &[String]) -> usize {
    let mut keep = text.len();
    for stop in stops {
        // Longest k < stop.len() with text ending in stop[..k].
        for k in (1..stop.len()).rev() {
            if !stop.is_char_boundary(k) {
                continue;
            }
            if text.ends_with(&stop[..k]) {
                keep = keep.min(text.len() - k);
                break;
            }
        }
    }
    keep
}

/// The first stop string in `text`: the byte offset where the text must end.
pub fn find_stop(text: &str, stops: &[String]) -> Option<usize> {
    stops
        .iter()
        .filter(|s| !s.is_empty())
        .filter_map(|s| text.find(s.as_str()))
        .min()
}

// ---------------------------------------------------------------------------------------------
// The JSON answer format for templates without tool calls.
//
// Many small models' chat templates (SmolLM2's among them) render no tools and have no tool-call
// syntax, so llama.cpp has neither a grammar nor a parser for their calls. Such a model is told
// the tools in its system message and answers with one JSON object, which a grammar derived from
// the tool schemas makes well-formed: `{"tool_call": {"name": …, "arguments": {…}}}` or
// `{"response": "…"}`. Earlier turns are shown to it in the same form, so it sees its own
// pattern.
// ---------------------------------------------------------------------------------------------

/// The JSON schema of one answer in the JSON format: a call of one of `tools`, or (unless
/// `mode` is `Required`) a reply. `loose_arguments` replaces every tool's argument schema with
/// "any object", for schemas llama.cpp's converter cannot turn into a grammar.
pub fn answer_schema(tools: &[Value], mode: ToolMode, loose_arguments: bool) -> Value {
    let mut variants: Vec<Value> = tools
        .iter()
        .filter_map(|t| {
            let name = tool_name(t)?;
            let params = t
                .pointer("/function/parameters")
                .filter(|p| p.is_object() && !loose_arguments)
                .cloned()
                .unwrap_or_else(|| json!({"type": "object"}));
            Some(json!({
                "type": "object",
                "properties": {"tool_call": {
                    "type": "object",
                    "properties": {"name": {"const": name}, "arguments": params},
                    "required": ["name", "arguments"],
                    "additionalProperties": false,
                }},
                "required": ["tool_call"],
                "additionalProperties": false,
            }))
        })
        .collect();
    if mode != ToolMode::Required {
        variants.push(json!({
            "type": "object",
            "properties": {"response": {"type": "string"}},
            "required": ["response"],
            "additionalProperties": false,
        }));
    }
    json!({"oneOf": variants})
}

/// The instructions that tell a model without tool-call syntax its tools and the JSON format.
pub fn tools_instructions(tools: &[Value], mode: ToolMode) -> String {
    let mut out = String::from("\n\n# Tools\n\nYou can call these tools:\n");
    for t in tools {
        let Some(name) = tool_name(t) else { continue };
        let description = t
            .pointer("/function/description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let params = t
            .pointer("/function/parameters")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"}));
        out.push_str(&format!(
            "- {name}: {description}\n  arguments (JSON schema): {params}\n"
        ));
    }
    out.push_str(
        "\nAnswer with exactly one JSON object and nothing else. To call a tool: \
         {\"tool_call\": {\"name\": \"<tool name>\", \"arguments\": {<arguments>}}}",
    );
    if mode == ToolMode::Required {
        out.push_str(". Always call a tool.");
    } else {
        out.push_str(". To answer directly: {\"response\": \"<your answer>\"}.");
    }
    out
}

/// The conversation rewritten for the JSON format: the tool instructions appended to the
/// system message (or a system message made for them), earlier assistant turns shown as the
/// JSON they stand for, tool results as user messages that say which tool answered, and
/// consecutive messages of one role merged (many templates insist on alternating roles).
pub fn json_format_messages(messages: &[Value], tools: &[Value], mode: ToolMode) -> Vec<Value> {
    let instructions = tools_instructions(tools, mode);
    let mut names: Vec<(String, String)> = Vec::new();
    let mut out: Vec<(String, String)> = Vec::new();
    let push = |out: &mut Vec<(String, String)>, role: &str, text: String| match out.last_mut() {
        Some((last, content)) if last == role && role != "assistant" => {
            content.push_str("\n\n");
            content.push_str(&text);
        }
        _ => out.push((role.to_owned(), text)),
    };
    for m in messages {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
        let content = content_text(m.get("content"));
        match role {
            "system" | "developer" => push(&mut out, "system", content),
            "assistant" => {
                let calls = m
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                if calls.is_empty() {
                    push(
                        &mut out,
                        "assistant",
                        json!({"response": content}).to_string(),
                    );
                    continue;
                }
                let lines: Vec<String> = calls
                    .iter()
                    .map(|c| {
                        let name = c
                            .pointer("/function/name")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        if let Some(id) = c.get("id").and_then(Value::as_str) {
                            names.push((id.to_owned(), name.to_owned()));
                        }
                        let args = match c.pointer("/function/arguments") {
                            Some(Value::String(s)) => {
                                serde_json::from_str(s).unwrap_or_else(|_| json!(s))
                            }
                            Some(v) => v.clone(),
                            None => json!({}),
                        };
                        json!({"tool_call": {"name": name, "arguments": args}}).to_string()
                    })
                    .collect();
                push(&mut out, "assistant", lines.join("\n"));
            }
            "tool" => {
                let id = m.get("tool_call_id").and_then(Value::as_str);
                let name = m
                    .get("name")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or_else(|| {
                        names
                            .iter()
                            .find(|(i, _)| Some(i.as_str()) == id)
                            .map(|(_, n)| n.clone())
                    })
                    .unwrap_or_else(|| "the tool".to_owned());
                push(&mut out, "user", format!("Result of {name}: {content}"));
            }
            _ => push(&mut out, "user", content),
        }
    }
    match out.first_mut() {
        Some((role, content)) if role == "system" => content.push_str(&instructions),
        _ => out.insert(0, ("system".into(), instructions.trim_start().to_owned())),
    }
    out.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

/// The text of a message's `content`: a string, or the text parts of an array joined.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// What a JSON-format answer says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JsonAnswer {
    /// `{"response": text}`.
    Reply(String),
    /// `{"tool_call": {name, arguments}}`, arguments as JSON text.
    Call {
        /// Tool name.
        name: String,
        /// Arguments as JSON text.
        arguments: String,
    },
    /// Not a complete answer of the format (cut off at the token limit): the text as it is.
    Raw(String),
}

/// Reads a complete JSON-format answer.
pub fn read_json_answer(text: &str) -> JsonAnswer {
    let parsed: Option<Value> = serde_json::from_str(text.trim()).ok();
    if let Some(reply) = parsed
        .as_ref()
        .and_then(|v| v.get("response"))
        .and_then(Value::as_str)
    {
        return JsonAnswer::Reply(reply.to_owned());
    }
    if let Some(call) = parsed.as_ref().and_then(|v| v.get("tool_call"))
        && let Some(name) = call.get("name").and_then(Value::as_str)
    {
        let arguments = call
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| json!({}))
            .to_string();
        return JsonAnswer::Call {
            name: name.to_owned(),
            arguments,
        };
    }
    JsonAnswer::Raw(text.to_owned())
}

/// The reply text of a JSON-format answer as far as it has been written, for streaming:
/// `Some(text)` once the answer is recognisably `{"response": "…`, decoded up to the last
/// complete character; `None` while it is something else (a tool call) or too short to tell.
pub fn partial_reply(text: &str) -> Option<String> {
    let rest = text.trim_start().strip_prefix('{')?.trim_start();
    let rest = rest.strip_prefix("\"response\"")?.trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let body = rest.strip_prefix('"')?;
    // The string body up to its closing quote (an unescaped `"`), or all of it so far.
    let mut end = body.len();
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let mut raw = &body[..end];
    // A trailing escape may be incomplete (`\`, `\u00`, the first half of a surrogate pair):
    // cut back to before the last backslash until the rest decodes.
    for _ in 0..3 {
        if let Ok(s) = serde_json::from_str::<String>(&format!("\"{raw}\"")) {
            return Some(s);
        }
        raw = &raw[..raw.rfind('\\')?];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: Value) -> ChatRequest {
        serde_json::from_value(body).expect("a request")
    }

    fn tool(name: &str) -> Value {
        json!({"type": "function", "function": {
            "name": name, "description": format!("does {name}"),
            "parameters": {"type": "object", "properties": {"message": {"type": "string"}},
                           "required": ["message"]},
        }})
    }

    #[test]
    fn requests_are_read_with_their_limits_and_tool_choice() {
        let r = request(json!({"messages": [{"role": "user", "content": "hi"}]}));
        assert_eq!(r.token_limit(), DEFAULT_MAX_TOKENS);
        assert_eq!(r.tool_mode(), ToolMode::None);
        assert!(!r.stream);
        assert!(r.validate().is_ok());

        let r = request(json!({
            "messages": [{"role": "user", "content": "hi"}], "max_tokens": 7,
            "tools": [tool("send_message")], "tool_choice": "required",
            "stream": true, "stream_options": {"include_usage": true}, "temperature": 0.0,
        }));
        assert_eq!(r.token_limit(), 7);
        assert_eq!(r.tool_mode(), ToolMode::Required);
        assert_eq!(r.tool_choice_name(), "required");
        assert!(r.stream_options.unwrap().include_usage);
        assert_eq!(r.temperature, Some(0.0));

        let r = request(json!({
            "messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 9,
            "max_tokens": 100, "tools": [tool("a")],
        }));
        assert_eq!(r.token_limit(), 9, "the newer name wins");
        assert_eq!(r.tool_mode(), ToolMode::Auto);

        let r = request(json!({
            "messages": [{"role": "user", "content": "hi"}], "tools": [tool("a")],
            "tool_choice": "none",
        }));
        assert_eq!(r.tool_mode(), ToolMode::None);
        let r = request(json!({
            "messages": [{"role": "user", "content": "hi"}], "tools": [tool("a")],
            "tool_choice": {"type": "function", "function": {"name": "a"}},
        }));
        assert_eq!(r.tool_mode(), ToolMode::Required);
    }

    #[test]
    fn malformed_requests_are_refused_with_the_reason() {
        let r = request(json!({"messages": []}));
        assert!(r.validate().unwrap_err().contains("empty"));
        let r = request(json!({"messages": [{"content": "no role"}]}));
        assert!(r.validate().unwrap_err().contains("role"));
        let r = request(json!({"messages": [{"role": "user", "content": "x"}],
                               "tools": [{"type": "function", "function": {}}]}));
        assert!(r.validate().unwrap_err().contains("function.name"));
    }

    #[test]
    fn chunks_and_answers_have_the_openai_shape() {
        let d = delta_chunk("c1", "m", 5, json!({"content": "Hi"}));
        assert_eq!(d["object"], "chat.completion.chunk");
        assert_eq!(d["choices"][0]["delta"]["content"], "Hi");
        assert!(d["choices"][0]["finish_reason"].is_null());
        let f = finish_chunk("c1", "m", 5, "length");
        assert_eq!(f["choices"][0]["finish_reason"], "length");
        let usage = Usage {
            prompt_tokens: 10,
            completion_tokens: 3,
        };
        let u = usage_chunk("c1", "m", 5, usage);
        assert_eq!(u["choices"], json!([]));
        assert_eq!(u["usage"]["total_tokens"], 13);

        let call = ToolCallOut {
            id: "call_1".into(),
            name: "send_message".into(),
            arguments: r#"{"message":"hi"}"#.into(),
        };
        let msg = assistant_message("", "", std::slice::from_ref(&call));
        assert!(msg["content"].is_null(), "content is null beside calls");
        assert_eq!(msg["tool_calls"][0]["function"]["name"], "send_message");
        assert_eq!(
            msg["tool_calls"][0]["function"]["arguments"],
            r#"{"message":"hi"}"#
        );
        let full = completion("c1", "m", 5, msg, "tool_calls", usage);
        assert_eq!(full["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(full["usage"]["prompt_tokens"], 10);
        assert_eq!(
            assistant_message("hello", "hmm", &[]),
            json!({"role": "assistant", "content": "hello", "reasoning_content": "hmm"})
        );
        assert_eq!(
            call.to_delta(2)["tool_calls"][0]["index"],
            2,
            "a whole call streams as one delta"
        );
        let e = error_body("context_length_exceeded", "too long");
        assert_eq!(e["error"]["code"], "context_length_exceeded");
        assert_eq!(e["error"]["type"], "invalid_request_error");
    }

    #[test]
    fn parsed_messages_and_deltas_get_call_ids() {
        let mut n = 0;
        let mut new_id = || {
            n += 1;
            format!("call_{n}")
        };
        let parsed = json!({"role": "assistant", "content": "",
        "tool_calls": [
            {"type": "function", "function": {"name": "a", "arguments": "{\"x\":1}"}},
            {"id": "given", "type": "function", "function": {"name": "b", "arguments": {"y": 2}}},
        ]});
        let (content, reasoning, calls) = read_parsed_message(&parsed, &mut new_id);
        assert_eq!((content.as_str(), reasoning.as_str()), ("", ""));
        assert_eq!(calls[0].id, "call_1");
        assert_eq!(calls[0].arguments, r#"{"x":1}"#);
        assert_eq!(calls[1].id, "given");
        assert_eq!(calls[1].arguments, r#"{"y":2}"#);

        let mut seen = Vec::new();
        let mut first = json!({"tool_calls": [{"index": 0, "id": "", "function": {"name": "a", "arguments": ""}}]});
        fill_call_ids(&mut first, &mut seen, &mut new_id);
        assert_eq!(first["tool_calls"][0]["id"], "call_2");
        assert_eq!(first["tool_calls"][0]["type"], "function");
        let mut more =
            json!({"tool_calls": [{"index": 0, "id": "", "function": {"arguments": "{\"x\""}}]});
        fill_call_ids(&mut more, &mut seen, &mut new_id);
        assert!(more["tool_calls"][0].get("id").is_none(), "{more}");
        let mut text = json!({"content": "hi"});
        fill_call_ids(&mut text, &mut seen, &mut new_id);
        assert_eq!(text, json!({"content": "hi"}));
    }

    #[test]
    fn stop_strings_are_held_back_until_they_cannot_start_here() {
        let stops = vec!["<|im_end|>".to_owned()];
        assert_eq!(safe_prefix_len("Hello <|im", &stops), "Hello ".len());
        assert_eq!(safe_prefix_len("Hello <", &stops), "Hello ".len());
        assert_eq!(safe_prefix_len("Hello", &stops), 5);
        assert_eq!(safe_prefix_len("a < b", &stops), 5);
        assert_eq!(find_stop("Hi<|im_end|>more", &stops), Some(2));
        assert_eq!(find_stop("Hi", &stops), None);
        assert_eq!(safe_prefix_len("héllo", &["é!".to_owned()]), 6);
    }

    #[test]
    fn the_json_format_offers_each_tool_and_a_reply_unless_a_call_is_required() {
        let tools = [tool("send_message"), tool("core_memory_append")];
        let auto = answer_schema(&tools, ToolMode::Auto, false);
        let variants = auto["oneOf"].as_array().unwrap();
        assert_eq!(variants.len(), 3);
        assert_eq!(
            variants[0]["properties"]["tool_call"]["properties"]["name"]["const"],
            "send_message"
        );
        assert_eq!(
            variants[0]["properties"]["tool_call"]["properties"]["arguments"]["required"],
            json!(["message"])
        );
        assert_eq!(variants[2]["required"], json!(["response"]));
        let required = answer_schema(&tools, ToolMode::Required, true);
        let variants = required["oneOf"].as_array().unwrap();
        assert_eq!(variants.len(), 2, "no reply variant");
        assert_eq!(
            variants[1]["properties"]["tool_call"]["properties"]["arguments"],
            json!({"type": "object"}),
            "loose arguments"
        );
        let text = tools_instructions(&tools, ToolMode::Required);
        assert!(text.contains("- send_message: does send_message"), "{text}");
        assert!(text.contains("Always call a tool"), "{text}");
        assert!(!text.contains("\"response\""), "{text}");
    }

    #[test]
    fn conversations_are_rewritten_for_the_json_format() {
        let tools = [tool("send_message")];
        let messages = vec![
            json!({"role": "system", "content": "You are Sam."}),
            json!({"role": "user", "content": "hi"}),
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_a", "type": "function",
                 "function": {"name": "send_message", "arguments": "{\"message\":\"Hello!\"}"}}]}),
            json!({"role": "tool", "tool_call_id": "call_a", "content": "{\"status\":\"OK\"}"}),
            json!({"role": "user", "content": "how are you?"}),
            json!({"role": "assistant", "content": "Fine."}),
        ];
        let out = json_format_messages(&messages, &tools, ToolMode::Auto);
        let roles: Vec<&str> = out.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "user", "assistant"]);
        let system = out[0]["content"].as_str().unwrap();
        assert!(system.starts_with("You are Sam.\n\n# Tools"), "{system}");
        assert_eq!(
            serde_json::from_str::<Value>(out[2]["content"].as_str().unwrap()).unwrap(),
            json!({"tool_call": {"name": "send_message", "arguments": {"message": "Hello!"}}})
        );
        assert_eq!(
            out[3]["content"], "Result of send_message: {\"status\":\"OK\"}\n\nhow are you?",
            "the tool result and the next user message merge"
        );
        assert_eq!(out[4]["content"], r#"{"response":"Fine."}"#);

        let bare = json_format_messages(
            &[json!({"role": "user", "content": [{"type": "text", "text": "hi"}]})],
            &tools,
            ToolMode::Auto,
        );
        assert_eq!(bare[0]["role"], "system", "a system message is made");
        assert!(bare[0]["content"].as_str().unwrap().starts_with("# Tools"));
        assert_eq!(bare[1]["content"], "hi");
    }

    #[test]
    fn json_answers_are_read_whole_and_in_part() {
        assert_eq!(
            read_json_answer(r#" {"response": "Hi \"Bob\""} "#),
            JsonAnswer::Reply("Hi \"Bob\"".into())
        );
        assert_eq!(
            read_json_answer(
                r#"{"tool_call": {"name": "send_message", "arguments": {"message": "x"}}}"#
            ),
            JsonAnswer::Call {
                name: "send_message".into(),
                arguments: r#"{"message":"x"}"#.into()
            }
        );
        assert_eq!(
            read_json_answer(r#"{"response": "cut of"#),
            JsonAnswer::Raw(r#"{"response": "cut of"#.into())
        );

        assert_eq!(partial_reply(r#"{"resp"#), None);
        assert_eq!(partial_reply(r#"{"response": "#), None);
        assert_eq!(partial_reply(r#"{"response": ""#), Some(String::new()));
        assert_eq!(
            partial_reply(r#"{ "response" : "Hello, \"wor"#),
            Some("Hello, \"wor".into())
        );
        assert_eq!(partial_reply(r#"{"response": "a\"#), Some("a".into()));
        assert_eq!(partial_reply(r#"{"response": "a\u00e"#), Some("a".into()));
        assert_eq!(
            partial_reply(r#"{"response": "line\nnext\u00e9"} "#),
            Some("line\nnext\u{e9}".into())
        );
        assert_eq!(
            partial_reply(r#"{"response": "x\ud83d"#),
            Some("x".into()),
            "half a surrogate pair waits"
        );
        assert_eq!(partial_reply(r#"{"tool_call": {"#), None);
    }
}

//! Making a real model's reply well-formed, whatever the server did with it.
//!
//! Small local models behind llama.cpp's `llama-server`, Ollama, LM Studio or vLLM often answer
//! in a shape the server did not turn into Chat Completions fields: a chat template without a
//! tool parser (or a server run without one) leaves the model's own tool-call syntax in
//! `content`, reasoning models leave their `<think>` section there, and some servers send tool
//! calls without ids or with arguments in an odd form. [`normalise`] repairs one finished reply
//! (streamed or not) so the agent loop sees what a well-behaved server would have sent:
//!
//! - `<think>…</think>` and `<thinking>…</thinking>` sections move from the content to the
//!   reasoning (after any reasoning the server gave). A reply that starts inside a section (an
//!   unclosed `<think>` at its start, or a `</think>` with no opening tag, as when the chat
//!   template opened the section in the prompt) is reasoning up to the close, or to the end.
//! - When tools were offered and the reply has no tool calls, calls written into the content
//!   are recovered: Hermes/Qwen `<tool_call>{…}</tool_call>` blocks, Mistral `[TOOL_CALLS]`
//!   (the JSON list and the newer `name[ARGS]{…}` form), Llama 3.x `<|python_tag|>`, fenced
//!   JSON blocks, or JSON that is the whole content. Only calls of offered tools count; the
//!   text around them stays the content, trimmed.
//! - Every call's arguments become JSON text (see [`normalise_calls`]) and every call gets an id
//!   of its own.
//!
//! Deliberately not done: malformed JSON is never repaired (the tool's error tells the model
//! what went wrong). While the reply streams, [`crate::LiveTags`] splits its deltas the same
//! way (thinking as reasoning, tool-call syntax not shown); the returned reply is the truth.

use crate::types::{ChatResponse, ToolSpec};
use engram_core::ToolCall;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::ops::Range;

/// Section tags moved to the reasoning, as (open, close) pairs.
const THINK_TAGS: [(&str, &str); 2] = [("<think>", "</think>"), ("<thinking>", "</thinking>")];

/// Keys that name the tool in a call object, in order of preference. `name` is Hermes, Qwen,
/// Llama and Mistral; `function`, `tool` and `tool_name` are what finetunes and older MemGPT
/// wrappers write.
const NAME_KEYS: [&str; 4] = ["name", "function", "tool", "tool_name"];

/// Keys that hold a call's arguments, in order of preference. `arguments` is Hermes, Qwen and
/// Mistral; `parameters` is Llama 3.x; the others are what finetunes and agent frameworks write.
const ARGUMENT_KEYS: [&str; 6] = [
    "arguments",
    "parameters",
    "args",
    "params",
    "tool_input",
    "input",
];

/// Keys a call object may carry besides names and arguments. An object with any other key is
/// data, not a call, even if its `name` happens to be a tool's.
const OTHER_CALL_KEYS: [&str; 2] = ["id", "type"];

/// The reply with its thinking moved to the reasoning, tool calls written into its content
/// recovered (only when `tools` is non-empty and the reply has no tool calls), and all tool
/// calls made well-formed by [`normalise_calls`].
///
/// When calls are recovered, the content is what is left around them (trimmed) and the finish
/// reason becomes `tool_calls` unless it was `length` (the model was cut off, which the loop
/// should still see). A reply with nothing in it stays as it is (see
/// [`ChatResponse::is_empty`]). Never fails: what cannot be recognised stays content.
pub(crate) fn normalise(mut reply: ChatResponse, tools: &[ToolSpec]) -> ChatResponse {
    if let Some((content, sections)) = split_thinking(&reply.content) {
        reply.content = content;
        let given = reply.reasoning.take().filter(|r| !r.is_empty());
        let mut parts: Vec<String> = given.into_iter().collect();
        parts.extend(sections);
        reply.reasoning = (!parts.is_empty()).then(|| parts.join("\n\n"));
    }
    if reply.tool_calls.is_empty() && !tools.is_empty() {
        let offered: HashSet<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        if let Some((content, calls)) = recover_calls(&reply.content, &offered) {
            tracing::debug!(
                calls = calls.len(),
                "tool calls recovered from the reply text"
            );
            reply.content = content;
            reply.tool_calls = calls;
            if reply.finish_reason.as_deref() != Some("length") {
                reply.finish_reason = Some("tool_calls".to_owned());
            }
        }
    }
    normalise_calls(reply)
}

/// The reply with every tool call well-formed and nothing else touched: arguments as JSON
/// text ([`fix_arguments`]) and ids unique within the reply, so each call can be answered by
/// its own `tool_call_id`. A missing (empty) id gets a fresh one; of two calls with one id, the
/// later gets a fresh one. For APIs whose replies need no more (Anthropic).
pub(crate) fn normalise_calls(mut reply: ChatResponse) -> ChatResponse {
    let mut seen = HashSet::new();
    for call in &mut reply.tool_calls {
        call.arguments = fix_arguments(std::mem::take(&mut call.arguments));
        if call.id.trim().is_empty() || seen.contains(&call.id) {
            call.id = mint_call_id();
        }
        seen.insert(call.id.clone());
    }
    reply
}

/// A fresh tool-call id, `call_<uuid v4>`, for calls that came without one (or with one an
/// earlier call of the reply already had).
fn mint_call_id() -> String {
    format!("call_{}", uuid::Uuid::new_v4())
}

/// A call's arguments from the wire as text: a string as sent (even if it is not JSON), `""`
/// when absent or `null`, anything else (an object some servers send unencoded) serialised.
/// [`fix_arguments`] later turns `""` into `{}`.
pub(crate) fn arguments_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => other.to_string(),
    }
}

/// Arguments text as tools expect it: empty, blank or `null` becomes `{}`; a JSON string that
/// holds a JSON object (double-encoded, `"{\"a\":1}"`) is decoded once; anything else is kept
/// exactly as it was, malformed or not, so the tool's error can tell the model.
fn fix_arguments(arguments: String) -> String {
    let trimmed = arguments.trim();
    if trimmed.is_empty() || trimmed == "null" {
        return "{}".to_owned();
    }
    if trimmed.starts_with('"')
        && let Ok(Value::String(inner)) = serde_json::from_str::<Value>(trimmed)
    {
        if inner.trim().is_empty() {
            return "{}".to_owned();
        }
        if matches!(serde_json::from_str::<Value>(&inner), Ok(Value::Object(_))) {
            return inner;
        }
    }
    arguments
}

/// `content` without its think sections, and the sections' trimmed, non-empty texts in order;
/// `None` when it has no section (so a reply without one is left byte for byte).
///
/// A closing tag before any opening tag ends a section that started with the reply (templates
/// of reasoning models open it in the prompt). An opening tag without a close is a section to
/// the end only when nothing but whitespace precedes it; elsewhere it is taken as text.
fn split_thinking(content: &str) -> Option<(String, Vec<String>)> {
    let mut sections = Vec::new();
    let mut answer = String::new();
    let mut rest = content;
    let mut touched = false;
    let first_open = earliest(rest, THINK_TAGS.map(|(open, _)| open)).map(|(at, _)| at);
    if let Some((at, i)) = earliest(rest, THINK_TAGS.map(|(_, close)| close))
        && first_open.is_none_or(|open| at < open)
    {
        sections.push(&rest[..at]);
        rest = &rest[at + THINK_TAGS[i].1.len()..];
        touched = true;
    }
    while let Some((at, i)) = earliest(rest, THINK_TAGS.map(|(open, _)| open)) {
        let (open, close) = THINK_TAGS[i];
        let inside = &rest[at + open.len()..];
        if let Some(end) = inside.find(close) {
            answer.push_str(&rest[..at]);
            sections.push(&inside[..end]);
            rest = &inside[end + close.len()..];
        } else if answer.trim().is_empty() && rest[..at].trim().is_empty() {
            sections.push(inside);
            rest = "";
        } else {
            break;
        }
        touched = true;
    }
    if !touched {
        return None;
    }
    answer.push_str(rest);
    let sections = sections
        .into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    Some((answer.trim().to_owned(), sections))
}

/// The earliest occurrence in `text` of any of `needles`: (byte offset, which needle).
fn earliest<const N: usize>(text: &str, needles: [&str; N]) -> Option<(usize, usize)> {
    needles
        .iter()
        .enumerate()
        .filter_map(|(i, n)| text.find(n).map(|at| (at, i)))
        .min()
}

/// Tool calls found in a stretch of content, and the bytes they took (markers included).
struct Found {
    span: Range<usize>,
    calls: Vec<ToolCall>,
}

/// Finds the calls one format writes into a reply's content, given the offered tool names.
type Finder = fn(&str, &HashSet<&str>) -> Vec<Found>;

/// The formats, in the order they are tried: those with a marker first, as the marker makes
/// them unambiguous; bare JSON last.
const FORMATS: [Finder; 5] = [hermes, mistral, python_tag, fenced, whole];

/// The calls written into `content` in the first format that yields any, with the content left
/// around them (trimmed); `None` when there are none.
fn recover_calls(content: &str, offered: &HashSet<&str>) -> Option<(String, Vec<ToolCall>)> {
    let found = FORMATS
        .iter()
        .map(|find| find(content, offered))
        .find(|found| !found.is_empty())?;
    let mut rest = String::new();
    let mut at = 0;
    let mut calls = Vec::new();
    for f in found {
        rest.push_str(&content[at..f.span.start]);
        at = f.span.end;
        calls.extend(f.calls);
    }
    rest.push_str(&content[at..]);
    Some((rest.trim().to_owned(), calls))
}

/// Hermes and Qwen: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`, one block per call
/// (a block holding several objects or a list is taken too). A missing close tag is forgiven,
/// as small models often stop right after the JSON.
fn hermes(content: &str, offered: &HashSet<&str>) -> Vec<Found> {
    after_markers(content, "<tool_call>", |body| {
        let (calls, end) = json_calls(body, offered)?;
        Some((calls, end + closing(&body[end..], &["</tool_call>"])))
    })
}

/// Mistral: `[TOOL_CALLS] [{"name": …, "arguments": {…}}]` (Mistral 7B v0.3 and its era), or
/// `[TOOL_CALLS]name[ARGS]{…}` once per call (newer tokenizers; some put `[CALL_ID]id` before
/// `[ARGS]`).
fn mistral(content: &str, offered: &HashSet<&str>) -> Vec<Found> {
    after_markers(content, "[TOOL_CALLS]", |body| {
        if body.trim_start().starts_with(['[', '{']) {
            return json_calls(body, offered);
        }
        let (head, _) = body.split_once("[ARGS]")?;
        let (name, id) = head.split_once("[CALL_ID]").unwrap_or((head, ""));
        let name = name.trim();
        if !offered.contains(name) {
            return None;
        }
        let args_at = head.len() + "[ARGS]".len();
        let (arguments, len) = first_json(&body[args_at..])?;
        let call = ToolCall {
            id: id.trim().to_owned(),
            name: name.to_owned(),
            arguments: arguments_text(Some(&arguments)),
        };
        Some((vec![call], args_at + len))
    })
}

/// Llama 3.x: `<|python_tag|>` followed by `{"name": …, "parameters": {…}}` objects (several
/// separated by `;`), when the server left the tag in the text.
fn python_tag(content: &str, offered: &HashSet<&str>) -> Vec<Found> {
    after_markers(content, "<|python_tag|>", |body| {
        let (calls, end) = json_calls(body, offered)?;
        Some((
            calls,
            end + closing(&body[end..], &["<|eom_id|>", "<|eot_id|>"]),
        ))
    })
}

/// Fenced blocks (```` ```json ````, ```` ``` ````, ```` ```tool_call ````…) whose whole body is
/// call JSON; other fenced blocks stay content.
fn fenced(content: &str, offered: &HashSet<&str>) -> Vec<Found> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(open) = content[from..].find("```").map(|i| from + i) {
        let info = &content[open + 3..];
        let info_len = info.len()
            - info
                .trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                .len();
        let body_at = open + 3 + info_len;
        let Some(close) = content[body_at..].find("```").map(|i| body_at + i) else {
            break;
        };
        let body = &content[body_at..close];
        if let Some((calls, end)) = json_calls(body, offered)
            && body[end..].trim().is_empty()
        {
            found.push(Found {
                span: open..close + 3,
                calls,
            });
        }
        from = close + 3;
    }
    found
}

/// Content that is nothing but call JSON: one object, a list, or objects separated by `;`
/// (Llama 3.x without its tag, or Hermes when the server dropped the tags as special tokens).
fn whole(content: &str, offered: &HashSet<&str>) -> Vec<Found> {
    match json_calls(content, offered) {
        Some((calls, end)) if is_separator_only(&content[end..]) => vec![Found {
            span: 0..content.len(),
            calls,
        }],
        _ => Vec::new(),
    }
}

/// Every place `marker` occurs in `content` whose following text `body` reads as calls;
/// `body` returns them and how many bytes after the marker they took.
fn after_markers(
    content: &str,
    marker: &str,
    body: impl Fn(&str) -> Option<(Vec<ToolCall>, usize)>,
) -> Vec<Found> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = content[from..].find(marker).map(|i| from + i) {
        let body_at = at + marker.len();
        from = body_at;
        if let Some((calls, len)) = body(&content[body_at..]) {
            found.push(Found {
                span: at..body_at + len,
                calls,
            });
            from = body_at + len;
        }
    }
    found
}

/// The length of one of `tags` at the start of `text` after whitespace (with that whitespace),
/// or 0 when none is there.
fn closing(text: &str, tags: &[&str]) -> usize {
    let trimmed = text.trim_start();
    tags.iter()
        .find(|tag| trimmed.starts_with(**tag))
        .map_or(0, |tag| text.len() - trimmed.len() + tag.len())
}

/// True for text made only of whitespace and the separators models put between call objects.
fn is_separator_only(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_whitespace() || c == ';' || c == ',')
}

/// The calls at the start of `text`: JSON values (each a call object or a list of them)
/// separated by whitespace, `;` or `,`, read until the first value that is not calls. Returns
/// them with the byte offset just after the last one; `None` when the first is not calls.
fn json_calls(text: &str, offered: &HashSet<&str>) -> Option<(Vec<ToolCall>, usize)> {
    let mut calls = Vec::new();
    let mut end = 0;
    loop {
        let rest = &text[end..];
        let skip = rest.len()
            - rest
                .trim_start_matches(|c: char| c.is_whitespace() || c == ';' || c == ',')
                .len();
        let Some((value, len)) = first_json(&rest[skip..]) else {
            break;
        };
        let Some(more) = calls_of(&value, offered) else {
            break;
        };
        calls.extend(more);
        end += skip + len;
    }
    (!calls.is_empty()).then_some((calls, end))
}

/// The JSON object or array at the start of `text` (after whitespace) and the byte offset just
/// after it; `None` when `text` does not start with one that parses. serde_json's stream
/// deserializer finds where the value ends, so text may follow it.
fn first_json(text: &str) -> Option<(Value, usize)> {
    if !text.trim_start().starts_with(['{', '[']) {
        return None;
    }
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let value = values.next()?.ok()?;
    Some((value, values.byte_offset()))
}

/// The calls a JSON value stands for: a call object, a non-empty list of them, or an object
/// holding such a list under `tool_calls` (the message shape written out). `None` when any part
/// is not a call of an offered tool.
fn calls_of(value: &Value, offered: &HashSet<&str>) -> Option<Vec<ToolCall>> {
    match value {
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|item| item.as_object().and_then(|o| call_of(o, offered)))
            .collect(),
        Value::Object(o) if o.len() == 1 && o.contains_key("tool_calls") => {
            calls_of(&o["tool_calls"], offered)
        }
        Value::Object(o) => call_of(o, offered).map(|c| vec![c]),
        _ => None,
    }
}

/// One call object: the tool's name under one of [`NAME_KEYS`] and its arguments under one of
/// [`ARGUMENT_KEYS`] (absent means none), an optional `id`; or OpenAI's own shape,
/// `{"id", "type": "function", "function": {"name", "arguments"}}`. `None` for an object with
/// other keys or naming a tool that was not offered.
fn call_of(o: &Map<String, Value>, offered: &HashSet<&str>) -> Option<ToolCall> {
    let id = || {
        o.get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    if let Some(Value::Object(function)) = o.get("function") {
        if o.keys()
            .any(|k| !["function", "id", "type"].contains(&k.as_str()))
        {
            return None;
        }
        let mut call = call_of(function, offered)?;
        if call.id.is_empty() {
            call.id = id();
        }
        return Some(call);
    }
    let known = |k: &str| {
        NAME_KEYS.contains(&k) || ARGUMENT_KEYS.contains(&k) || OTHER_CALL_KEYS.contains(&k)
    };
    if !o.keys().all(|k| known(k)) {
        return None;
    }
    let name = NAME_KEYS
        .iter()
        .find_map(|k| o.get(*k).and_then(Value::as_str))?;
    if !offered.contains(name) {
        return None;
    }
    Some(ToolCall {
        id: id(),
        name: name.to_owned(),
        arguments: arguments_text(ARGUMENT_KEYS.iter().find_map(|k| o.get(*k))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Vec<ToolSpec> {
        ["send_message", "core_memory_append"]
            .map(|name| ToolSpec {
                name: name.into(),
                description: String::new(),
                parameters: json!({"type": "object"}),
            })
            .into()
    }

    fn reply(content: &str) -> ChatResponse {
        ChatResponse {
            content: content.into(),
            finish_reason: Some("stop".into()),
            ..ChatResponse::default()
        }
    }

    /// `content` normalised with both tools offered.
    fn norm(content: &str) -> ChatResponse {
        normalise(reply(content), &tools())
    }

    /// The recovered calls as (name, parsed arguments).
    fn calls(r: &ChatResponse) -> Vec<(&str, Value)> {
        r.tool_calls
            .iter()
            .map(|c| {
                let args = serde_json::from_str(&c.arguments)
                    .unwrap_or_else(|e| panic!("{:?} is not JSON: {e}", c.arguments));
                (c.name.as_str(), args)
            })
            .collect()
    }

    fn assert_fresh_ids(r: &ChatResponse) {
        let ids: HashSet<&str> = r.tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids.len(), r.tool_calls.len(), "ids must be unique: {ids:?}");
        assert!(
            ids.iter()
                .all(|id| id.starts_with("call_") && id.len() > 30)
        );
    }

    #[test]
    fn think_sections_move_to_the_reasoning() {
        let r = norm("<think>\nThe user gave a name.\n</think>\n\nHello Bob!");
        assert_eq!(r.content, "Hello Bob!");
        assert_eq!(r.reasoning.as_deref(), Some("The user gave a name."));

        let r = norm("<thinking>one</thinking>Hi <think>two</think>there");
        assert_eq!(r.content, "Hi there");
        assert_eq!(r.reasoning.as_deref(), Some("one\n\ntwo"));

        // After what the server already separated.
        let mut given = reply("<think>mine</think>ok");
        given.reasoning = Some("server's".into());
        let r = normalise(given, &[]);
        assert_eq!(r.reasoning.as_deref(), Some("server's\n\nmine"));
        assert_eq!(r.content, "ok");

        // Qwen3 with thinking off leaves an empty section: removed, no reasoning.
        let r = norm("<think>\n\n</think>\n\nJust the answer.");
        assert_eq!(r.content, "Just the answer.");
        assert_eq!(r.reasoning, None);
    }

    #[test]
    fn unclosed_and_unopened_think_sections() {
        // Cut off while thinking: all of it is reasoning.
        let r = norm("  <think>Let me consider the options and");
        assert_eq!(r.content, "");
        assert_eq!(
            r.reasoning.as_deref(),
            Some("Let me consider the options and")
        );
        // The template opened the section in the prompt: only the close is in the reply.
        let r = norm("The user wants a greeting.\n</think>\n\nHello!");
        assert_eq!(r.content, "Hello!");
        assert_eq!(r.reasoning.as_deref(), Some("The user wants a greeting."));
        // A tag mentioned mid-text without a close is text.
        let r = norm("Wrap it in <think> tags.");
        assert_eq!(r.content, "Wrap it in <think> tags.");
        assert_eq!(r.reasoning, None);
        // No tags: content untouched, even its whitespace.
        assert_eq!(norm("  plain\n").content, "  plain\n");
    }

    #[test]
    fn hermes_blocks_become_calls_and_text_stays() {
        let r = norm(
            "Let me note that.\n<tool_call>\n{\"name\": \"core_memory_append\", \"arguments\": {\"label\": \"human\", \"content\": \"Bob\"}}\n</tool_call>\n<tool_call>\n{\"arguments\": {\"message\": \"Hi Bob\"}, \"name\": \"send_message\"}\n</tool_call>",
        );
        assert_eq!(r.content, "Let me note that.");
        assert_eq!(
            calls(&r),
            vec![
                (
                    "core_memory_append",
                    json!({"label": "human", "content": "Bob"})
                ),
                ("send_message", json!({"message": "Hi Bob"})),
            ]
        );
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
        assert_fresh_ids(&r);
    }

    #[test]
    fn hermes_edge_cases() {
        // No close tag at the end of the reply.
        let r =
            norm("<tool_call>\n{\"name\": \"send_message\", \"arguments\": {\"message\": \"a\"}}");
        assert_eq!(calls(&r), vec![("send_message", json!({"message": "a"}))]);
        assert_eq!(r.content, "");
        // Two objects in one block.
        let r = norm(
            "<tool_call>{\"name\": \"send_message\", \"arguments\": {}}\n{\"name\": \"send_message\", \"arguments\": {\"message\": \"b\"}}</tool_call>",
        );
        assert_eq!(r.tool_calls.len(), 2);
        // Malformed JSON in a block is left as text, the good block still counts.
        let r = norm(
            "<tool_call>{\"name\": \"send_message\", \"arguments\": {</tool_call>\n<tool_call>{\"name\": \"send_message\"}</tool_call>",
        );
        assert_eq!(
            r.content,
            "<tool_call>{\"name\": \"send_message\", \"arguments\": {</tool_call>"
        );
        assert_eq!(calls(&r), vec![("send_message", json!({}))]);
        // A tool that was not offered stays content.
        let r = norm("<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>");
        assert!(r.tool_calls.is_empty());
        assert_eq!(
            r.content,
            "<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>"
        );
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn llama_json_with_and_without_python_tag() {
        let r = norm(
            "<|python_tag|>{\"name\": \"send_message\", \"parameters\": {\"message\": \"Hi\"}}<|eom_id|>",
        );
        assert_eq!(calls(&r), vec![("send_message", json!({"message": "Hi"}))]);
        assert_eq!(r.content, "");

        let r = norm(
            "{\"name\": \"core_memory_append\", \"parameters\": {\"label\": \"human\", \"content\": \"x\"}}; {\"name\": \"send_message\", \"parameters\": {\"message\": \"y\"}}",
        );
        assert_eq!(
            calls(&r).iter().map(|c| c.0).collect::<Vec<_>>(),
            ["core_memory_append", "send_message"]
        );
        assert_eq!(r.content, "");
    }

    #[test]
    fn mistral_list_and_args_forms() {
        let r = norm(
            "[TOOL_CALLS] [{\"name\": \"send_message\", \"arguments\": {\"message\": \"Hi\"}, \"id\": \"a1B2c3D4e\"}, {\"name\": \"core_memory_append\", \"arguments\": {\"label\": \"human\", \"content\": \"Bob\"}}]",
        );
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].id, "a1B2c3D4e", "a given id is kept");
        assert!(r.tool_calls[1].id.starts_with("call_"));
        assert_eq!(r.content, "");

        let r = norm(
            "[TOOL_CALLS]send_message[ARGS]{\"message\": \"Hi\"}[TOOL_CALLS]core_memory_append[CALL_ID]x9[ARGS]{\"label\": \"human\", \"content\": \"Bob\"}",
        );
        assert_eq!(
            calls(&r),
            vec![
                ("send_message", json!({"message": "Hi"})),
                (
                    "core_memory_append",
                    json!({"label": "human", "content": "Bob"})
                )
            ]
        );
        assert_eq!(r.tool_calls[1].id, "x9");
        assert_eq!(r.content, "");
    }

    #[test]
    fn fenced_and_bare_json() {
        let r = norm(
            "Sure.\n```json\n{\"name\": \"send_message\", \"arguments\": {\"message\": \"Hi\"}}\n```\nDone.",
        );
        assert_eq!(calls(&r), vec![("send_message", json!({"message": "Hi"}))]);
        assert_eq!(r.content, "Sure.\n\nDone.");
        // One line, and a list.
        let r = norm("```json [{\"name\": \"send_message\", \"arguments\": {}}] ```");
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.content, "");
        // A fenced block of other JSON stays.
        let code = "```json\n{\"name\": \"Bob\", \"age\": 3}\n```";
        assert_eq!(norm(code).content, code);
        assert!(norm(code).tool_calls.is_empty());
        // Bare JSON that is the whole content.
        let r = norm("  {\"name\": \"send_message\", \"arguments\": {\"message\": \"Hi\"}}\n");
        assert_eq!(r.tool_calls.len(), 1);
        // Bare JSON inside text is text.
        let text = "Call {\"name\": \"send_message\", \"arguments\": {}} later";
        assert_eq!(norm(text).content, text);
        // A JSON object naming a tool that was not offered stays content.
        let other = "{\"name\": \"web_search\", \"arguments\": {\"q\": \"x\"}}";
        assert_eq!(norm(other).content, other);
        assert!(norm(other).tool_calls.is_empty());
    }

    #[test]
    fn other_call_shapes() {
        for content in [
            r#"{"function": "send_message", "arguments": {"message": "m"}}"#,
            r#"{"function": "send_message", "params": {"message": "m"}}"#,
            r#"{"tool": "send_message", "tool_input": {"message": "m"}}"#,
            r#"{"tool": "send_message", "args": {"message": "m"}}"#,
            r#"{"type": "function", "function": {"name": "send_message", "arguments": "{\"message\": \"m\"}"}}"#,
            r#"{"tool_calls": [{"name": "send_message", "arguments": {"message": "m"}}]}"#,
        ] {
            let r = norm(content);
            assert_eq!(
                calls(&r),
                vec![("send_message", json!({"message": "m"}))],
                "{content}"
            );
            assert_eq!(r.content, "", "{content}");
        }
        // An object with keys a call does not have is data.
        let data = r#"{"name": "send_message", "description": "Reply", "parameters": {}}"#;
        assert!(norm(data).tool_calls.is_empty());
    }

    #[test]
    fn nothing_is_recovered_without_tools_or_with_native_calls() {
        let text = "<tool_call>{\"name\": \"send_message\", \"arguments\": {}}</tool_call>";
        let r = normalise(reply(text), &[]);
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.content, text);

        let mut native = reply(text);
        native.tool_calls.push(ToolCall {
            id: "call_x".into(),
            name: "core_memory_append".into(),
            arguments: "{}".into(),
        });
        let r = normalise(native, &tools());
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.content, text);
    }

    #[test]
    fn tool_calls_inside_thinking_are_not_calls() {
        let r = norm(
            "<think>Maybe <tool_call>{\"name\": \"send_message\", \"arguments\": {}}</tool_call>? No.</think>Hello.",
        );
        assert!(r.tool_calls.is_empty());
        assert_eq!(r.content, "Hello.");
        assert!(r.reasoning.unwrap().contains("<tool_call>"));
    }

    #[test]
    fn a_cut_off_reply_keeps_its_length_reason() {
        let mut r = reply("<tool_call>{\"name\": \"send_message\", \"arguments\": {}}</tool_call>");
        r.finish_reason = Some("length".into());
        let r = normalise(r, &tools());
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.finish_reason.as_deref(), Some("length"));
    }

    #[test]
    fn arguments_are_fixed() {
        assert_eq!(fix_arguments(String::new()), "{}");
        assert_eq!(fix_arguments("  ".into()), "{}");
        assert_eq!(fix_arguments("null".into()), "{}");
        assert_eq!(fix_arguments(r#""""#.into()), "{}");
        assert_eq!(
            fix_arguments(r#""{\"message\": \"hi\"}""#.into()),
            r#"{"message": "hi"}"#,
            "double-encoded is decoded once"
        );
        // Malformed or not an object inside: kept as it was.
        for raw in [r#"{"label": "hu"#, "not json", r#""just text""#, "[1,2]"] {
            assert_eq!(fix_arguments(raw.into()), raw);
        }
        assert_eq!(arguments_text(Some(&json!({"a": 1}))), r#"{"a":1}"#);
        assert_eq!(arguments_text(Some(&json!("{\"a\":1}"))), r#"{"a":1}"#);
        assert_eq!(arguments_text(Some(&Value::Null)), "");
        assert_eq!(arguments_text(None), "");
        // Recovered calls with arguments as a string, or none at all.
        let r = norm(
            r#"<tool_call>{"name": "send_message", "arguments": "{\"message\": \"s\"}"}</tool_call>"#,
        );
        assert_eq!(calls(&r), vec![("send_message", json!({"message": "s"}))]);
        let r = norm(r#"<tool_call>{"name": "send_message", "arguments": null}</tool_call>"#);
        assert_eq!(r.tool_calls[0].arguments, "{}");
    }

    #[test]
    fn ids_are_minted_and_made_unique() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "send_message".into(),
            arguments: "{}".into(),
        };
        let r = normalise_calls(ChatResponse {
            tool_calls: vec![call("a"), call(""), call("a"), call(" "), call("b")],
            ..ChatResponse::default()
        });
        let ids: Vec<&str> = r.tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids[0], "a", "the first keeps its id");
        assert_eq!(ids[4], "b");
        assert!(ids[1..4].iter().all(|id| id.starts_with("call_")));
        assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 5);
        assert_ne!(mint_call_id(), mint_call_id());
    }

    #[test]
    fn empty_replies_stay_empty_and_are_detectable() {
        let r = norm("");
        assert!(r.is_empty());
        assert_eq!(r, reply(""));
        let r = norm("<think></think>");
        assert!(r.is_empty(), "{r:?}");
        assert!(!norm("<think>hmm</think>").is_empty(), "reasoning counts");
    }
}

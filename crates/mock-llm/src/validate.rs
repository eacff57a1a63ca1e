//! Protocol checks on incoming chat requests. A real provider answers most of these with a 400
//! (often only in production, with a real key); here they are collected so a test can assert
//! that the agent never sent a broken conversation. Each problem is one sentence; the server
//! prefixes it with the request index.

use std::collections::HashSet;

use axum::http::HeaderMap;
use serde_json::Value;

/// The body's `messages`, or `None` with the problem noted when it is missing, not an array,
/// or empty (both APIs refuse those).
fn non_empty_messages<'a>(body: &'a Value, p: &mut Vec<String>) -> Option<&'a Vec<Value>> {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        p.push("`messages` is missing or not an array".into());
        return None;
    };
    if messages.is_empty() {
        p.push("`messages` is empty".into());
        return None;
    }
    Some(messages)
}

/// Problems in an OpenAI chat-completions body.
pub(crate) fn openai_chat(body: &Value) -> Vec<String> {
    let mut p = Vec::new();
    if !body.is_object() {
        return vec!["body is not a JSON object".into()];
    }
    check_model(body, &mut p);
    let tool_names = openai_tools(body.get("tools"), &mut p);
    let Some(messages) = non_empty_messages(body, &mut p) else {
        return p;
    };
    let first_role = messages[0]
        .get("role")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !matches!(first_role, "system" | "developer") {
        p.push(format!(
            "first message has role {first_role:?}, expected the system message"
        ));
    }
    let mut calls = CallTracker::default();
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
        match role {
            "system" | "developer" | "user" => {
                calls.end_of_results(i, role, &mut p);
                if !is_content(m.get("content")) {
                    p.push(format!("message {i} ({role}) has no text content"));
                }
            }
            "assistant" => {
                calls.end_of_results(i, role, &mut p);
                let tool_calls = m.get("tool_calls");
                let has_calls = matches!(tool_calls, Some(Value::Array(a)) if !a.is_empty());
                if !has_calls && !is_content(m.get("content")) {
                    p.push(format!(
                        "message {i} (assistant) has neither content nor tool_calls"
                    ));
                }
                match tool_calls {
                    None | Some(Value::Null) => {}
                    Some(Value::Array(list)) => {
                        for (j, c) in list.iter().enumerate() {
                            let id = c.get("id").and_then(Value::as_str).unwrap_or_default();
                            let name = c
                                .pointer("/function/name")
                                .and_then(Value::as_str)
                                .unwrap_or_default();
                            if c.get("type").and_then(Value::as_str) != Some("function") {
                                p.push(format!(
                                    "message {i} tool_calls[{j}] has no `type: \"function\"`"
                                ));
                            }
                            if !c
                                .pointer("/function/arguments")
                                .is_some_and(Value::is_string)
                            {
                                p.push(format!(
                                    "message {i} tool_calls[{j}] arguments are not a string"
                                ));
                            }
                            calls.call(i, id, name, &tool_names, &mut p);
                        }
                    }
                    Some(_) => p.push(format!("message {i} tool_calls is not an array")),
                }
            }
            "tool" => {
                let id = m
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                calls.result(i, id, &mut p);
                if !is_content(m.get("content")) {
                    p.push(format!("message {i} (tool) content is not text"));
                }
            }
            other => {
                calls.end_of_results(i, other, &mut p);
                p.push(format!("message {i} has invalid role {other:?}"));
            }
        }
    }
    calls.end_of_results(messages.len(), "end of messages", &mut p);
    p
}

/// Problems in an Anthropic Messages body and its headers.
pub(crate) fn anthropic_messages(body: &Value, headers: &HeaderMap) -> Vec<String> {
    let mut p = Vec::new();
    for header in ["x-api-key", "anthropic-version"] {
        if !headers.contains_key(header) {
            p.push(format!("header `{header}` is missing"));
        }
    }
    if !body.is_object() {
        p.push("body is not a JSON object".into());
        return p;
    }
    check_model(body, &mut p);
    if body
        .get("max_tokens")
        .and_then(Value::as_u64)
        .is_none_or(|n| n == 0)
    {
        p.push("`max_tokens` is missing or not a positive integer".into());
    }
    match body.get("system") {
        None | Some(Value::String(_)) => {}
        Some(Value::Array(blocks))
            if blocks
                .iter()
                .all(|b| b.get("type").and_then(Value::as_str) == Some("text")) => {}
        Some(_) => p.push("`system` is neither a string nor a list of text blocks".into()),
    }
    let tool_names = anthropic_tools(body.get("tools"), &mut p);
    let Some(messages) = non_empty_messages(body, &mut p) else {
        return p;
    };
    if messages[0].get("role").and_then(Value::as_str) != Some("user") {
        p.push("first message is not from the user".into());
    }
    let mut calls = CallTracker::default();
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
        let blocks: Vec<Value> = match m.get("content") {
            Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
            Some(Value::Array(a)) => a.clone(),
            _ => {
                p.push(format!(
                    "message {i} content is neither a string nor a list of blocks"
                ));
                Vec::new()
            }
        };
        let kind = |b: &Value| {
            b.get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        match role {
            "user" => {
                let mut seen_other = false;
                for b in &blocks {
                    if kind(b) == "tool_result" {
                        if seen_other {
                            p.push(format!(
                                "message {i}: tool_result blocks must come before other content"
                            ));
                            seen_other = false;
                        }
                        let id = b
                            .get("tool_use_id")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        calls.result(i, id, &mut p);
                    } else {
                        seen_other = true;
                    }
                }
                // Anthropic wants every tool_use answered in the very next (user) message.
                calls.end_of_results(i + 1, "the next message", &mut p);
            }
            "assistant" => {
                calls.end_of_results(i, role, &mut p);
                for b in &blocks {
                    if kind(b) == "tool_use" {
                        let id = b.get("id").and_then(Value::as_str).unwrap_or_default();
                        let name = b.get("name").and_then(Value::as_str).unwrap_or_default();
                        if !b.get("input").is_some_and(Value::is_object) {
                            p.push(format!(
                                "message {i}: tool_use {id:?} input is not an object"
                            ));
                        }
                        calls.call(i, id, name, &tool_names, &mut p);
                    }
                }
            }
            other => {
                calls.end_of_results(i, other, &mut p);
                p.push(format!(
                    "message {i} has invalid role {other:?} (only user and assistant)"
                ));
            }
        }
    }
    calls.end_of_results(messages.len(), "end of messages", &mut p);
    p
}

fn check_model(body: &Value, p: &mut Vec<String>) {
    if body
        .get("model")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        p.push("`model` is missing".into());
    }
}

fn is_content(content: Option<&Value>) -> bool {
    match content {
        Some(Value::String(_)) => true,
        Some(Value::Array(parts)) => parts.iter().all(Value::is_object),
        _ => false,
    }
}

/// Tool names as OpenAI accepts them: `^[a-zA-Z0-9_-]{1,64}$`.
fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn check_schema(schema: Option<&Value>, what: &str, p: &mut Vec<String>) {
    match schema {
        Some(Value::Object(map)) => {
            if map.get("type").and_then(Value::as_str) != Some("object") {
                p.push(format!("{what} schema does not have `type: \"object\"`"));
            }
            if map
                .get("properties")
                .is_some_and(|props| !props.is_object())
            {
                p.push(format!("{what} schema `properties` is not an object"));
            }
            if map
                .get("required")
                .is_some_and(|r| !r.as_array().is_some_and(|a| a.iter().all(Value::is_string)))
            {
                p.push(format!("{what} schema `required` is not a list of names"));
            }
        }
        Some(_) => p.push(format!("{what} schema is not a JSON object")),
        None => p.push(format!("{what} has no parameter schema")),
    }
}

fn openai_tools(tools: Option<&Value>, p: &mut Vec<String>) -> HashSet<String> {
    let mut names = HashSet::new();
    let list = match tools {
        None | Some(Value::Null) => return names,
        Some(Value::Array(list)) => list,
        Some(_) => {
            p.push("`tools` is not an array".into());
            return names;
        }
    };
    for (i, t) in list.iter().enumerate() {
        if t.get("type").and_then(Value::as_str) != Some("function") {
            p.push(format!("tools[{i}] has no `type: \"function\"`"));
        }
        let name = t
            .pointer("/function/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        add_tool_name(i, name, &mut names, p);
        check_schema(
            t.pointer("/function/parameters"),
            &format!("tools[{i}] ({name})"),
            p,
        );
    }
    names
}

fn anthropic_tools(tools: Option<&Value>, p: &mut Vec<String>) -> HashSet<String> {
    let mut names = HashSet::new();
    let list = match tools {
        None => return names,
        Some(Value::Array(list)) => list,
        Some(_) => {
            p.push("`tools` is not an array".into());
            return names;
        }
    };
    for (i, t) in list.iter().enumerate() {
        let name = t.get("name").and_then(Value::as_str).unwrap_or_default();
        add_tool_name(i, name, &mut names, p);
        // Anthropic's server tools (web search, …) carry a versioned `type` and no schema.
        let custom = t
            .get("type")
            .and_then(Value::as_str)
            .is_none_or(|k| k == "custom");
        if custom {
            check_schema(t.get("input_schema"), &format!("tools[{i}] ({name})"), p);
        }
    }
    names
}

fn add_tool_name(i: usize, name: &str, names: &mut HashSet<String>, p: &mut Vec<String>) {
    if !valid_tool_name(name) {
        p.push(format!("tools[{i}] name {name:?} is not a valid tool name"));
    }
    if !names.insert(name.to_string()) {
        p.push(format!("tools[{i}] name {name:?} is offered twice"));
    }
}

/// Follows tool calls through a conversation: each id once, each answered exactly once, and
/// answered before the conversation moves on.
#[derive(Default)]
struct CallTracker {
    /// Ids called in the latest assistant message and not yet answered, with that message's index.
    pending: Vec<String>,
    pending_from: usize,
    called: HashSet<String>,
    answered: HashSet<String>,
}

impl CallTracker {
    fn call(
        &mut self,
        i: usize,
        id: &str,
        name: &str,
        tools: &HashSet<String>,
        p: &mut Vec<String>,
    ) {
        if id.is_empty() {
            p.push(format!("message {i}: tool call to {name:?} has no id"));
            return;
        }
        if !self.called.insert(id.to_string()) {
            p.push(format!("message {i}: duplicate tool call id {id:?}"));
        }
        if !tools.contains(name) {
            p.push(format!("message {i}: tool call {id:?} names tool {name:?}, which is not among the tools offered"));
        }
        if self.pending.is_empty() {
            self.pending_from = i;
        }
        self.pending.push(id.to_string());
    }

    fn result(&mut self, i: usize, id: &str, p: &mut Vec<String>) {
        if let Some(pos) = self.pending.iter().position(|x| x == id) {
            self.pending.remove(pos);
            self.answered.insert(id.to_string());
        } else if self.answered.contains(id) {
            p.push(format!(
                "message {i}: second tool result for call id {id:?}"
            ));
        } else if self.called.contains(id) {
            p.push(format!(
                "message {i}: tool result for call id {id:?} comes after the conversation moved on"
            ));
        } else {
            p.push(format!("message {i}: tool result for call id {id:?}, which no earlier assistant message made"));
        }
    }

    /// The run of results after a tool-calling message ends at message `i` (`what` says what
    /// comes there); anything still pending was never answered.
    fn end_of_results(&mut self, i: usize, what: &str, p: &mut Vec<String>) {
        if !self.pending.is_empty() {
            p.push(format!(
                "message {}: tool call id(s) {:?} not answered before message {i} ({what})",
                self.pending_from, self.pending
            ));
            self.pending.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Value {
        json!([{"type": "function", "function": {"name": "send_message", "parameters": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}}}])
    }

    #[test]
    fn parallel_calls_answered_in_any_order_pass() {
        let body = json!({"model": "m", "tools": tools(), "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "send_message", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "send_message", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "b", "content": "ok"},
            {"role": "tool", "tool_call_id": "a", "content": "ok"},
            {"role": "user", "content": "bye"}]});
        assert_eq!(openai_chat(&body), Vec::<String>::new());
    }

    #[test]
    fn half_answered_parallel_calls_fail() {
        let body = json!({"model": "m", "tools": tools(), "messages": [
            {"role": "system", "content": "s"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "send_message", "arguments": "{}"}},
                {"id": "a", "type": "function", "function": {"name": "nope", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "ok"},
            {"role": "tool", "tool_call_id": "zzz", "content": "ok"},
            {"role": "user", "content": "bye"}]});
        let p = openai_chat(&body);
        assert!(
            p.iter().any(|s| s.contains("duplicate tool call id")),
            "{p:?}"
        );
        assert!(p.iter().any(|s| s.contains("\"nope\"")), "{p:?}");
        assert!(
            p.iter()
                .any(|s| s.contains("not answered before message 4")),
            "{p:?}"
        );
        assert!(p.iter().any(|s| s.contains("\"zzz\"")), "{p:?}");
    }

    #[test]
    fn bad_tool_schemas_and_roles() {
        let body = json!({"model": "m",
            "tools": [{"type": "function", "function": {"name": "bad name", "parameters": "{}"}}],
            "messages": [{"role": "user", "content": "hi"}, {"role": "function", "content": "x"}]});
        let p = openai_chat(&body);
        assert_eq!(p.len(), 4, "{p:?}");
    }

    #[test]
    fn anthropic_results_must_follow_at_once() {
        let mut headers = HeaderMap::new();
        headers.insert("x-api-key", "k".parse().unwrap());
        let body = json!({"model": "m", "max_tokens": 100, "tools": [{"name": "t", "input_schema": {"type": "object"}}],
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "u1", "name": "t", "input": {}}]},
                {"role": "user", "content": [{"type": "text", "text": "later"}]},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1", "content": "late"}]}]});
        let p = anthropic_messages(&body, &headers);
        assert!(p.iter().any(|s| s.contains("anthropic-version")), "{p:?}");
        assert!(p.iter().any(|s| s.contains("not answered")), "{p:?}");
        assert!(
            p.iter()
                .any(|s| s.contains("after the conversation moved on")),
            "{p:?}"
        );
        assert_eq!(p.len(), 3, "{p:?}");
    }
}

//! What a real model server enforces and how it counts: a context length it refuses prompts
//! over, a tokenizer that may count differently from Engram's estimate, and a small model that
//! ignores `max_tokens` when asked for a summary.
//!
//! Off by default ([`MockLlm::set_limits`](crate::MockLlm::set_limits) turns it on): without
//! limits the server estimates usage from the request body's size and never refuses on its own.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ChatView;

/// Tokens the chat format adds per message, the figure Engram's estimator uses too.
const PER_MESSAGE: u64 = 4;

/// How the scripted model counts, limits and misbehaves. Also accepted as JSON by
/// `POST /_mock/limits`, e.g. `{"context_window": 4096, "token_factor": 1.25}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// Refuse any prompt over this many **tokens** (as counted below) with the provider's
    /// context-length error, the way llama.cpp, Ollama and OpenAI do. `None`: no limit.
    pub context_window: Option<u64>,
    /// The server's tokenizer relative to Engram's estimate for models whose tokenizer it does
    /// not know (one token per four characters of each text, plus per-message and per-tool
    /// overheads): 1.0 counts alike, 1.25 counts a quarter more. The count is what `usage`
    /// reports as `prompt_tokens` and what `context_window` is checked against.
    pub token_factor: f64,
    /// Answer summarisation requests (no tools offered, "summar…" in the prompt) with the
    /// whole request echoed back — far more than `max_tokens` allows, as small models and
    /// servers that ignore `max_tokens` do. Queued replies still come first.
    pub ramble_summaries: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            context_window: None,
            token_factor: 1.0,
            ramble_summaries: false,
        }
    }
}

impl Limits {
    /// A server that refuses prompts over `tokens`, counting as Engram estimates.
    pub fn window(tokens: u64) -> Self {
        Self {
            context_window: Some(tokens),
            ..Self::default()
        }
    }

    /// The prompt tokens of a request body on `api`, scaled by `token_factor`.
    pub(crate) fn count(&self, body: &Value, anthropic: bool) -> u64 {
        let raw = if anthropic {
            anthropic_tokens(body)
        } else {
            openai_tokens(body)
        };
        (raw as f64 * self.token_factor.max(0.0)).ceil() as u64
    }
}

/// Characters / 4, rounded up.
fn text(s: &str) -> u64 {
    s.chars().count().div_ceil(4) as u64
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Text of a content value: a string, or the `text` of each part.
fn content(v: Option<&Value>) -> u64 {
    match v {
        Some(Value::String(s)) => text(s),
        Some(Value::Array(parts)) => parts.iter().map(|p| text(str_of(p, "text"))).sum(),
        _ => 0,
    }
}

/// A tool schema: name, description and the JSON of its parameters.
fn tool(name: &str, description: &str, parameters: Option<&Value>) -> u64 {
    text(name) + text(description) + parameters.map_or(0, |p| text(&p.to_string())) + 8
}

fn openai_tokens(body: &Value) -> u64 {
    let messages = body.get("messages").and_then(Value::as_array);
    let mut total = 0;
    for m in messages.into_iter().flatten() {
        total += PER_MESSAGE + content(m.get("content"));
        if str_of(m, "role") == "tool" {
            total += 2;
        }
        for call in m
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let f = call.get("function").unwrap_or(&Value::Null);
            total += text(str_of(f, "name")) + text(str_of(f, "arguments")) + 3;
        }
    }
    let tools = body.get("tools").and_then(Value::as_array);
    for t in tools.into_iter().flatten() {
        let f = t.get("function").unwrap_or(&Value::Null);
        total += tool(
            str_of(f, "name"),
            str_of(f, "description"),
            f.get("parameters"),
        );
    }
    total
}

fn anthropic_tokens(body: &Value) -> u64 {
    let mut total = match body.get("system") {
        None | Some(Value::Null) => 0,
        system => PER_MESSAGE + content(system),
    };
    let messages = body.get("messages").and_then(Value::as_array);
    for m in messages.into_iter().flatten() {
        total += PER_MESSAGE;
        match m.get("content") {
            Some(Value::Array(blocks)) => {
                for b in blocks {
                    total += match str_of(b, "type") {
                        "tool_use" => {
                            let input = b.get("input").map(Value::to_string).unwrap_or_default();
                            text(str_of(b, "name")) + text(&input) + 3
                        }
                        "tool_result" => content(b.get("content")) + 2,
                        _ => text(str_of(b, "text")),
                    };
                }
            }
            other => total += content(other),
        }
    }
    let tools = body.get("tools").and_then(Value::as_array);
    for t in tools.into_iter().flatten() {
        total += tool(
            str_of(t, "name"),
            str_of(t, "description"),
            t.get("input_schema"),
        );
    }
    total
}

/// What a model that ignores `max_tokens` makes of a summarisation request: everything it was
/// given, restated at length (so a stored summary that is not bounded nests and grows).
pub(crate) fn ramble(view: &ChatView) -> String {
    let given: Vec<&str> = view
        .messages
        .iter()
        .filter(|m| m.role == "user")
        .map(|m| m.text.as_str())
        .collect();
    format!(
        "Here is a thorough summary of everything so far. {} To restate the most important points once more in full: {}",
        given.join("\n"),
        given.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_like_engrams_estimate_and_scales() {
        let body = json!({
            "messages": [
                {"role": "system", "content": "12345678"},
                {"role": "user", "content": "1234"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "abcd", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"}
            ],
            "tools": [{"type": "function", "function": {"name": "abcd", "description": "", "parameters": {}}}]
        });
        // 4+2, 4+1, 4+0+(1+1+3), 4+1+2, tool 1+0+1+8
        let plain = Limits::default().count(&body, false);
        assert_eq!(plain, 6 + 5 + 9 + 7 + 10);
        let more = Limits {
            token_factor: 1.25,
            ..Limits::default()
        };
        assert_eq!(
            more.count(&body, false),
            (plain as f64 * 1.25).ceil() as u64
        );
    }

    #[test]
    fn anthropic_bodies_are_counted_too() {
        let body = json!({
            "system": "12345678",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "1234"}]}],
            "tools": [{"name": "abcd", "description": "", "input_schema": {}}]
        });
        assert_eq!(Limits::default().count(&body, true), 6 + 5 + 10);
    }
}

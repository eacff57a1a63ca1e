//! A provider-neutral view of one chat request, for rules and the brain.

use serde_json::Value;

/// Which API a request came in on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Api {
    /// `POST /v1/chat/completions`.
    #[default]
    OpenAi,
    /// `POST /v1/messages`.
    Anthropic,
}

/// One chat request, parsed the same way whichever API it came in on.
///
/// OpenAI's first system (or developer) message becomes [`ChatView::system`]; later system
/// messages (alerts) stay in `messages` with role `"system"`. Anthropic's top-level `system`
/// becomes `system`, and each `tool_result` block becomes its own `"tool"` message placed before
/// the rest of its user message, so both APIs look like OpenAI's message list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChatView {
    /// The system message: instructions plus the compiled memory.
    pub system: String,
    /// The conversation after the system message.
    pub messages: Vec<ViewMessage>,
    /// Names of the tools offered.
    pub tools: Vec<String>,
    /// Whether a streamed answer was asked for.
    pub stream: bool,
    /// The requested model id.
    pub model: String,
    /// The API the request came in on.
    pub api: Api,
    /// Length of the whole request body in characters (for token estimates).
    pub body_chars: usize,
}

/// One message of a [`ChatView`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ViewMessage {
    /// `"system"`, `"user"`, `"assistant"` or `"tool"` (OpenAI's `developer` reads as `system`;
    /// anything else is kept verbatim and reported as a violation).
    pub role: String,
    /// The text content (text parts joined); for tool messages the result content.
    pub text: String,
    /// Tool calls of an assistant message.
    pub tool_calls: Vec<ViewCall>,
    /// For tool messages: the call answered.
    pub tool_call_id: Option<String>,
}

/// A tool call inside an assistant message of the request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ViewCall {
    /// The tool-call id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as JSON text.
    pub arguments: String,
}

impl ViewCall {
    /// The arguments parsed as JSON (`Value::Null` when malformed).
    pub fn args(&self) -> Value {
        serde_json::from_str(&self.arguments).unwrap_or(Value::Null)
    }
}

/// A tool result, joined with the call it answers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolResultView {
    /// The call answered.
    pub call_id: String,
    /// The tool's name, from the matching call (empty if there was none).
    pub name: String,
    /// The raw content of the tool message.
    pub content: String,
    /// False when the content is Engram's/Letta's envelope with `"status": "Failed"`.
    pub ok: bool,
    /// The envelope's `message` (as text) or, without an envelope, the whole content.
    pub message: String,
}

impl ViewMessage {
    /// The hidden-message type when this is a user-role JSON message the loop made up
    /// (`{"type":"heartbeat",…}`, system alerts, …). `user_message` wrappers are not hidden.
    pub fn hidden_type(&self) -> Option<String> {
        if self.role != "user" {
            return None;
        }
        let kind = json_object_type(&self.text)?;
        (kind != "user_message").then_some(kind)
    }

    /// Whether this is a heartbeat (`{"type":"heartbeat",…}` in the user role).
    pub fn is_heartbeat(&self) -> bool {
        self.hidden_type().as_deref() == Some("heartbeat")
    }

    /// Whether this is a message a person typed (user role, not hidden).
    pub fn is_real_user(&self) -> bool {
        self.role == "user" && self.hidden_type().is_none()
    }

    /// The user's words: the text, unwrapped from a MemGPT `{"type":"user_message","message":…}`
    /// envelope when it is one.
    pub fn user_text(&self) -> String {
        if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(self.text.trim())
            && map.get("type").and_then(Value::as_str) == Some("user_message")
            && let Some(message) = map.get("message").and_then(Value::as_str)
        {
            return message.to_string();
        }
        self.text.clone()
    }
}

fn json_object_type(text: &str) -> Option<String> {
    let trimmed = text.trim();
    if !trimmed.starts_with('{') {
        return None;
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Object(map)) => map.get("type").and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}

impl ChatView {
    /// Whether a tool of this name is offered.
    pub fn has_tool(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t == name)
    }

    /// Index of the latest message a person typed, if any.
    pub fn last_user_index(&self) -> Option<usize> {
        self.messages.iter().rposition(ViewMessage::is_real_user)
    }

    /// The words of the latest message a person typed (heartbeats and alerts skipped,
    /// `user_message` envelopes unwrapped).
    pub fn last_user_text(&self) -> Option<String> {
        self.last_user_index().map(|i| self.messages[i].user_text())
    }

    /// The messages after the latest real user message: what the agent has done this turn.
    pub fn current_turn(&self) -> &[ViewMessage] {
        match self.last_user_index() {
            Some(i) => &self.messages[i + 1..],
            None => &self.messages,
        }
    }

    /// Tool calls made so far in the current turn, in order.
    pub fn turn_calls(&self) -> Vec<ViewCall> {
        self.current_turn()
            .iter()
            .flat_map(|m| m.tool_calls.iter().cloned())
            .collect()
    }

    /// Tool results received so far in the current turn, in order.
    pub fn turn_results(&self) -> Vec<ToolResultView> {
        let turn = self.current_turn();
        turn.iter()
            .filter(|m| m.role == "tool")
            .map(|m| self.result_view(m))
            .collect()
    }

    /// The tool results at the very end of the conversation (the answers to the last step's
    /// calls); empty when the last message is not a tool result.
    pub fn last_tool_results(&self) -> Vec<ToolResultView> {
        let start = self
            .messages
            .iter()
            .rposition(|m| m.role != "tool")
            .map_or(0, |i| i + 1);
        self.messages[start..]
            .iter()
            .map(|m| self.result_view(m))
            .collect()
    }

    fn result_view(&self, m: &ViewMessage) -> ToolResultView {
        let call_id = m.tool_call_id.clone().unwrap_or_default();
        let name = self
            .messages
            .iter()
            .flat_map(|m| m.tool_calls.iter())
            .find(|c| c.id == call_id)
            .map(|c| c.name.clone())
            .unwrap_or_default();
        let (ok, message) = match serde_json::from_str::<Value>(m.text.trim()) {
            Ok(Value::Object(map)) if map.contains_key("status") => {
                let ok = map.get("status").and_then(Value::as_str) != Some("Failed");
                let message = match map.get("message") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                (ok, message)
            }
            _ => (true, m.text.clone()),
        };
        ToolResultView {
            call_id,
            name,
            content: m.text.clone(),
            ok,
            message,
        }
    }

    /// The value of the core-memory block `label` in the system message, parsed from
    /// `<label>…<value>\n…\n</value>…</label>` (DESIGN.md §3). `None` when there is no such
    /// block; `Some("")` for an empty one.
    pub fn system_block(&self, label: &str) -> Option<String> {
        block_value(&self.system, label)
    }

    /// A rough token count of the whole request: characters / 4, rounded up.
    pub fn estimated_tokens(&self) -> usize {
        self.body_chars.div_ceil(4)
    }
}

/// Finds `<label>` … `<value>` … `</value>` … `</label>` in compiled memory text.
pub(crate) fn block_value(system: &str, label: &str) -> Option<String> {
    let open = format!("<{label}>");
    let close = format!("</{label}>");
    let mut from = 0;
    while let Some(pos) = system[from..].find(&open) {
        let start = from + pos + open.len();
        let end = system[start..]
            .find(&close)
            .map_or(system.len(), |e| start + e);
        let section = &system[start..end];
        if let Some(v) = section.find("<value>") {
            let rest = &section[v + "<value>".len()..];
            if let Some(e) = rest.find("</value>") {
                let value = &rest[..e];
                let value = value.strip_prefix('\n').unwrap_or(value);
                let value = value.strip_suffix('\n').unwrap_or(value);
                return Some(value.to_string());
            }
        }
        from = start;
    }
    None
}

/// Joins the text of an OpenAI/Anthropic content value: a string, or an array of parts whose
/// `text` fields are concatenated; `null` and other shapes read as empty.
pub(crate) fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.as_str()),
                _ => p.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_block_value() {
        let system = "Be nice.\n<memory_blocks>\n<persona>\n<value>\nI am Sam.\n</value>\n</persona>\n<human>\n<description>\nAbout the <human>.\n</description>\n<metadata>\n- chars_current=9\n</metadata>\n<value>\nName: Bob\nLikes pie\n</value>\n</human>\n<empty>\n<value>\n</value>\n</empty>\n</memory_blocks>";
        assert_eq!(
            block_value(system, "human").as_deref(),
            Some("Name: Bob\nLikes pie")
        );
        assert_eq!(block_value(system, "persona").as_deref(), Some("I am Sam."));
        assert_eq!(block_value(system, "empty").as_deref(), Some(""));
        assert_eq!(block_value(system, "tasks"), None);
    }

    #[test]
    fn hidden_and_wrapped_user_messages() {
        let hb = ViewMessage {
            role: "user".into(),
            text: r#"{"type":"heartbeat","reason":"x"}"#.into(),
            ..Default::default()
        };
        assert!(hb.is_heartbeat() && !hb.is_real_user());
        let wrapped = ViewMessage {
            role: "user".into(),
            text: r#"{"type":"user_message","message":"hi"}"#.into(),
            ..Default::default()
        };
        assert!(wrapped.is_real_user());
        assert_eq!(wrapped.user_text(), "hi");
    }
}

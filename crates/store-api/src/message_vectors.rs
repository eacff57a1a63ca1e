//! Vectors of recall memory (messages), so conversation search finds by meaning as well as by
//! words: what a backfill reads and writes on any backend ([`MessageStore`]'s
//! `messages_without_vectors` and `fill_message_vectors`).
//!
//! A message's vector is stored with the agent's embedding model handle at the time, and
//! search reads only vectors of the agent's *current* model: after a model change those
//! messages count by their words until the backfill gives them a vector of the new model. Only
//! text a person would search for is embedded ([`embeddable_text`]): what users and the agent
//! said, and the text arguments of the agent's tool calls; not system text, heartbeats, alerts
//! or tool results (which echo what was searched or stored). A message whose text changes
//! loses its vector.
//!
//! [`MessageStore`]: crate::MessageStore

use engram_core::{Message, MessageId, MessageKind, Role};

/// The text of `m` worth embedding, or `None` when it has none: user and assistant chat
/// messages only; an assistant message's text is its content followed by the string values
/// of its tool calls' arguments (the classic loop speaks through `send_message`, and memory
/// tools carry what was remembered). Malformed arguments are taken as they are.
pub fn embeddable_text(m: &Message) -> Option<String> {
    if !matches!(m.role, Role::User | Role::Assistant)
        || matches!(m.kind, MessageKind::Heartbeat | MessageKind::Alert)
    {
        return None;
    }
    let mut parts: Vec<String> = Vec::new();
    if !m.content.trim().is_empty() {
        parts.push(m.content.trim().to_owned());
    }
    for call in &m.tool_calls {
        match serde_json::from_str::<serde_json::Value>(&call.arguments) {
            Ok(v) => collect_strings(&v, &mut parts),
            Err(_) if !call.arguments.trim().is_empty() => {
                parts.push(call.arguments.trim().to_owned())
            }
            Err(_) => {}
        }
    }
    let text = parts.join("\n");
    (!text.is_empty()).then_some(text)
}

fn collect_strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) if !s.trim().is_empty() => out.push(s.trim().to_owned()),
        serde_json::Value::Array(items) => items.iter().for_each(|i| collect_strings(i, out)),
        serde_json::Value::Object(map) => map.values().for_each(|i| collect_strings(i, out)),
        _ => {}
    }
}

/// A message waiting for a vector of the agent's current model.
#[derive(Clone, Debug, PartialEq)]
pub struct UnembeddedMessage {
    /// Where a backfill goes on from: pass it as `after` to get the next batch (the
    /// message's place in the store, increasing in the order messages were written).
    pub cursor: i64,
    /// The message.
    pub message: Message,
}

/// A vector computed for a message: the message, the text it was computed from
/// ([`embeddable_text`], or empty when it has none) and the vector (empty when the text is).
#[derive(Clone, Debug, PartialEq)]
pub struct MessageVector {
    /// The message.
    pub id: MessageId,
    /// The text embedded; the vector is stored only if the message still has this text.
    pub text: String,
    /// Unit length or not (search uses cosine); empty exactly when `text` is.
    pub vector: Vec<f32>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_core::{AgentId, ToolCall};

    fn message(role: Role, kind: MessageKind, content: &str, calls: &[&str]) -> Message {
        Message {
            id: MessageId::default(),
            agent_id: AgentId::from("agent-x".to_owned()),
            seq: 1,
            role,
            kind,
            content: content.into(),
            reasoning: Some("inner thoughts are not searched by meaning".into()),
            tool_calls: calls
                .iter()
                .map(|a| ToolCall {
                    id: "c".into(),
                    name: "send_message".into(),
                    arguments: (*a).into(),
                })
                .collect(),
            tool_call_id: None,
            tool_name: None,
            run_id: None,
            step_id: None,
            in_context: true,
            created_at: engram_core::Timestamp::default(),
        }
    }

    #[test]
    fn only_what_people_and_the_agent_said_is_embedded() {
        let chat = MessageKind::Chat;
        assert_eq!(
            embeddable_text(&message(Role::User, chat, " I adopted a puppy ", &[])).as_deref(),
            Some("I adopted a puppy")
        );
        let classic = message(
            Role::Assistant,
            chat,
            "",
            &[r#"{"message": "Congratulations!", "request_heartbeat": false}"#],
        );
        assert_eq!(
            embeddable_text(&classic).as_deref(),
            Some("Congratulations!")
        );
        let both = message(
            Role::Assistant,
            chat,
            "Saved.",
            &[r#"{"tags": ["a", "b"]}"#, "not json"],
        );
        assert_eq!(
            embeddable_text(&both).as_deref(),
            Some("Saved.\na\nb\nnot json")
        );
        assert_eq!(
            embeddable_text(&message(Role::Assistant, chat, "", &[r#"{"n": 3}"#])),
            None
        );
        for (role, kind) in [
            (Role::System, chat),
            (Role::Tool, chat),
            (Role::User, MessageKind::Heartbeat),
            (Role::User, MessageKind::Alert),
        ] {
            assert_eq!(embeddable_text(&message(role, kind, "text", &[])), None);
        }
    }
}

//! What a step makes of a reply that is not shaped the way the loop expects. Real small models
//! answer with nothing, or write their answer as plain text in the classic loop, where plain
//! text is the agent's hidden inner monologue: the user would see silence either way.

use engram_core::error::ProviderFault;
use engram_core::{Message, MessageId, Role, StopReason, ToolCall};
use engram_providers::{ChatResponse, ProviderError};
use std::time::Duration;

/// Whether a reply says nothing a person or the loop could use: no text and no tool call
/// (reasoning alone does not count: it is never shown as an answer).
pub(crate) fn says_nothing(response: &ChatResponse) -> bool {
    response.content.trim().is_empty() && response.tool_calls.is_empty()
}

/// The error that ends a run whose model answered with nothing, even when asked twice.
pub(crate) fn empty_reply_error() -> ProviderError {
    ProviderError::new(
        ProviderFault::BadResponse,
        "The model answered with nothing, twice in a row. Send the message again, or choose \
         another model in the agent's settings: small local models sometimes stop at once.",
    )
}

/// The error that ends a step whose model was still writing after `limit`.
pub(crate) fn step_timeout_error(limit: Duration) -> ProviderError {
    ProviderError::new(
        ProviderFault::Timeout,
        format!(
            "The model was still writing after {} s, the time one step may take, so the run was \
             stopped; what it wrote is kept. A lower output limit (the agent's max tokens) or a \
             faster model avoids this.",
            limit.as_secs()
        ),
    )
}

/// Classic loop: the user sees only what the model passes to `send_message`. A model that
/// writes its answer as plain text instead (small models often do) would leave the user with
/// silence, so the text is delivered through a `send_message` call made on its behalf, with
/// an id (`call_engram_…`, from the step's assistant message `id`) that shows it was not the
/// model's. Its own history then shows the right way to answer, which steers it next time.
///
/// Changes `response` only when `send_message` was offered, the reply has text and no tool
/// call; returns whether it did.
pub(crate) fn deliver_plain_text(
    response: &mut ChatResponse,
    offered: &[String],
    id: &MessageId,
) -> bool {
    let text = response.content.trim();
    if text.is_empty()
        || !response.tool_calls.is_empty()
        || !offered.iter().any(|t| t == "send_message")
    {
        return false;
    }
    let uuid = id
        .as_str()
        .strip_prefix(MessageId::PREFIX)
        .unwrap_or(id.as_str())
        .trim_start_matches('-');
    response.tool_calls.push(ToolCall {
        id: format!("call_engram_{uuid}"),
        name: "send_message".into(),
        arguments: serde_json::json!({ "message": text }).to_string(),
    });
    response.content.clear();
    true
}

/// Whether the run's committed `messages` told the user nothing: no text in the tool loop, no
/// `send_message` call in the classic loop.
pub(crate) fn told_nothing(messages: &[Message], classic: bool) -> bool {
    !messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .any(|m| {
            if classic {
                m.tool_calls.iter().any(|c| c.name == "send_message")
            } else {
                !m.content.trim().is_empty()
            }
        })
}

/// Whether the run's last assistant message is empty: no text and no tool call.
pub(crate) fn ends_empty(messages: &[Message]) -> bool {
    messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .is_some_and(|m| m.content.trim().is_empty() && m.tool_calls.is_empty())
}

/// The error that tells the user why a run (ended with `stop`: the model's own end of turn, no
/// progress, or the step limit of `steps`) never answered them.
pub(crate) fn no_answer_error(stop: StopReason, steps: u32) -> ProviderError {
    let why = match stop {
        StopReason::NoProgress => {
            "kept repeating the same tool calls, so the run was stopped".to_owned()
        }
        StopReason::MaxSteps => format!("used all {steps} steps of the run"),
        _ => "ended its turn".to_owned(),
    };
    ProviderError::new(
        ProviderFault::BadResponse,
        format!(
            "The model {why} without answering you. Send the message again, or choose another \
             model in the agent's settings."
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(content: &str, calls: Vec<ToolCall>) -> ChatResponse {
        ChatResponse {
            content: content.into(),
            tool_calls: calls,
            ..ChatResponse::default()
        }
    }

    fn offered() -> Vec<String> {
        vec!["send_message".into(), "core_memory_append".into()]
    }

    #[test]
    fn plain_text_in_the_classic_loop_becomes_a_send_message_call() {
        let id = MessageId::new();
        let mut r = reply("  Hello Bob!  ", vec![]);
        assert!(deliver_plain_text(&mut r, &offered(), &id));
        assert_eq!(r.content, "");
        assert_eq!(r.tool_calls.len(), 1);
        let call = &r.tool_calls[0];
        assert_eq!(call.name, "send_message");
        assert!(call.id.starts_with("call_engram_"), "{}", call.id);
        assert!(!call.id.contains("message-"), "{}", call.id);
        let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap();
        assert_eq!(args, serde_json::json!({"message": "Hello Bob!"}));
    }

    #[test]
    fn a_reply_with_calls_without_text_or_without_send_message_is_left_alone() {
        let id = MessageId::new();
        let call = ToolCall {
            id: "c1".into(),
            name: "core_memory_append".into(),
            arguments: "{}".into(),
        };
        let mut with_call = reply("thinking", vec![call]);
        assert!(!deliver_plain_text(&mut with_call, &offered(), &id));
        assert_eq!(with_call.content, "thinking");
        let mut blank = reply("  \n", vec![]);
        assert!(!deliver_plain_text(&mut blank, &offered(), &id));
        let mut no_tool = reply("Hello", vec![]);
        assert!(!deliver_plain_text(
            &mut no_tool,
            &["core_memory_append".into()],
            &id
        ));
        assert_eq!(no_tool.content, "Hello");
    }

    #[test]
    fn reasoning_alone_is_an_empty_reply() {
        let mut r = reply(" ", vec![]);
        r.reasoning = Some("hmm".into());
        assert!(says_nothing(&r));
        assert!(!says_nothing(&reply("hi", vec![])));
    }
}

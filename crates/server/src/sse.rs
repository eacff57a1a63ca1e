//! A run's [`RunEvent`]s as Letta's stream chunks.
//!
//! Without token streaming each committed message becomes its Letta messages as soon as its
//! step commits (`reasoning_message`, `tool_call_message`, `tool_return_message`,
//! `assistant_message`). With `stream_tokens` text and reasoning go out as deltas while the
//! model writes them — every delta of one step shares one id — and the committed message then
//! adds only what was not streamed (tool calls). The run ends with `stop_reason` and
//! `usage_statistics`; a failure adds an `error_message` before them. The route appends
//! `data: [DONE]`.

use engram_core::{LoopStyle, MessageId, Role, RunEvent, RunId};
use engram_service::letta;
use serde_json::{Value, json};

/// Turns one run's events into Letta chunks; one per response stream.
pub struct ChunkMapper {
    style: LoopStyle,
    stream_tokens: bool,
    run_id: Option<RunId>,
    step_id: Option<String>,
    /// The id shared by this step's text deltas and by its reasoning deltas.
    text_id: MessageId,
    reasoning_id: MessageId,
    streamed_text: bool,
    streamed_reasoning: bool,
}

impl ChunkMapper {
    /// A mapper for an agent of `style`; `stream_tokens` as the request asked.
    pub fn new(style: LoopStyle, stream_tokens: bool) -> Self {
        Self {
            style,
            stream_tokens,
            run_id: None,
            step_id: None,
            text_id: MessageId::new(),
            reasoning_id: MessageId::new(),
            streamed_text: false,
            streamed_reasoning: false,
        }
    }

    fn delta(&self, id: &MessageId, message_type: &str, field: &str, text: String) -> Value {
        let mut v = json!({
            "id": id,
            "date": crate::shapes::time(&chrono::Utc::now()),
            "message_type": message_type,
            "run_id": self.run_id,
            "step_id": self.step_id,
        });
        v[field] = Value::String(text);
        if message_type == "reasoning_message" {
            v["source"] = json!("non_reasoner_model");
        }
        v
    }

    /// The chunks `event` becomes (often none).
    pub fn map(&mut self, event: RunEvent) -> Vec<Value> {
        match event {
            RunEvent::RunStarted { run_id, .. } => {
                self.run_id = Some(run_id);
                Vec::new()
            }
            RunEvent::StepStarted { step_id, .. } => {
                self.step_id = Some(step_id.to_string());
                self.text_id = MessageId::new();
                self.reasoning_id = MessageId::new();
                self.streamed_text = false;
                self.streamed_reasoning = false;
                Vec::new()
            }
            RunEvent::TextDelta { delta } if self.stream_tokens => {
                self.streamed_text = true;
                vec![self.delta(&self.text_id, "assistant_message", "content", delta)]
            }
            RunEvent::ReasoningDelta { delta } if self.stream_tokens => {
                self.streamed_reasoning = true;
                vec![self.delta(&self.reasoning_id, "reasoning_message", "reasoning", delta)]
            }
            RunEvent::Message { message } if message.role != Role::User => {
                let mut chunks = letta::letta_messages(&message, self.style);
                if message.role == Role::Assistant {
                    chunks.retain(|c| match c["message_type"].as_str() {
                        Some("assistant_message") => !self.streamed_text,
                        Some("reasoning_message") => !self.streamed_reasoning,
                        _ => true,
                    });
                }
                chunks
            }
            RunEvent::ApprovalRequested { approval } => vec![letta::approval_request(&approval)],
            RunEvent::Error { error } => vec![json!({
                "message_type": "error_message",
                "id": MessageId::new(),
                "date": crate::shapes::time(&chrono::Utc::now()),
                "run_id": self.run_id,
                "error_type": error.code,
                "message": error.message,
                "detail": error.details.map(|d| d.to_string()),
            })],
            RunEvent::Done {
                stop_reason, usage, ..
            } => vec![
                letta::stop_reason(stop_reason),
                letta::usage_statistics(&usage),
            ],
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_core::{StepId, StopReason, Usage};

    #[test]
    fn token_deltas_of_a_step_share_an_id_and_the_run_ends_with_stop_and_usage() {
        let mut m = ChunkMapper::new(LoopStyle::ToolLoop, true);
        m.map(RunEvent::StepStarted {
            step_id: StepId::new(),
            index: 1,
        });
        let a = m.map(RunEvent::TextDelta {
            delta: "Hel".into(),
        });
        let b = m.map(RunEvent::TextDelta { delta: "lo".into() });
        assert_eq!(a[0]["message_type"], "assistant_message");
        assert_eq!(a[0]["id"], b[0]["id"]);
        assert_eq!(b[0]["content"], "lo");
        let end = m.map(RunEvent::Done {
            run_id: RunId::new(),
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
        });
        assert_eq!(end[0]["message_type"], "stop_reason");
        assert_eq!(end[1]["message_type"], "usage_statistics");
    }

    #[test]
    fn without_token_streaming_deltas_are_dropped() {
        let mut m = ChunkMapper::new(LoopStyle::ToolLoop, false);
        assert!(m.map(RunEvent::TextDelta { delta: "x".into() }).is_empty());
    }
}

//! Runs and steps: stop reasons, usage, tool results and the events a run streams.

use crate::{
    AgentId, Block, ErrorBody, Message, PendingApproval, RunId, StepId, Timestamp, ToolCall,
};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Why a run ended. Serialized with Letta's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The agent finished its turn.
    EndTurn,
    /// The step limit was reached.
    MaxSteps,
    /// The user stopped the run.
    Cancelled,
    /// The model provider failed and retries did not help.
    LlmApiError,
    /// Something else failed; the stored conversation is still valid.
    Error,
    /// A terminal tool rule ended the run.
    ToolRule,
    /// Classic loop: the model answered without calling a tool and no heartbeat was requested.
    NoToolCall,
    /// The model kept repeating itself: a step whose every tool call (name, arguments and
    /// result) already happened twice earlier in the run. Engram's own reason; Letta has none.
    NoProgress,
    /// The model called a tool a person must approve first (Letta's `requires_approval`):
    /// the call is stored unanswered and the run waits for an approve or deny.
    RequiresApproval,
}

impl StopReason {
    /// The snake_case name, as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EndTurn => "end_turn",
            Self::MaxSteps => "max_steps",
            Self::Cancelled => "cancelled",
            Self::LlmApiError => "llm_api_error",
            Self::Error => "error",
            Self::ToolRule => "tool_rule",
            Self::NoToolCall => "no_tool_call",
            Self::NoProgress => "no_progress",
            Self::RequiresApproval => "requires_approval",
        }
    }
}

/// Token usage, in **tokens**, summed over `step_count` steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct Usage {
    /// Tokens sent to the model.
    #[ts(type = "number")]
    pub prompt_tokens: u64,
    /// Tokens the model produced.
    #[ts(type = "number")]
    pub completion_tokens: u64,
    /// `prompt_tokens + completion_tokens`.
    #[ts(type = "number")]
    pub total_tokens: u64,
    /// LLM calls made.
    pub step_count: u32,
}

impl Usage {
    /// Adds one step's token counts.
    pub fn add_step(&mut self, prompt_tokens: u64, completion_tokens: u64) {
        self.prompt_tokens += prompt_tokens;
        self.completion_tokens += completion_tokens;
        self.total_tokens = self.prompt_tokens + self.completion_tokens;
        self.step_count += 1;
    }
}

/// A recorded step: one LLM call and the tool calls it returned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// `step-<uuid>`.
    pub id: StepId,
    /// The agent.
    pub agent_id: AgentId,
    /// The run it belongs to.
    pub run_id: RunId,
    /// 1-based position in the run.
    pub index: u32,
    /// The model handle called.
    pub model: String,
    /// Prompt tokens (provider-reported when available, else our count).
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// The provider's finish reason (`stop`, `tool_calls`, `length`…).
    pub finish_reason: Option<String>,
    /// When the step started.
    pub started_at: Timestamp,
    /// Wall time of the LLM call, in milliseconds.
    pub llm_ms: u64,
    /// Wall time of the whole step (compile + call + tools + commit), in milliseconds.
    pub step_ms: u64,
}

/// How one run (a turn) ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct RunRecord {
    /// `run-<uuid>`; the messages of the run carry it.
    pub id: RunId,
    /// The agent.
    pub agent_id: AgentId,
    /// Why it ended.
    pub stop_reason: StopReason,
    /// What failed, when it failed.
    pub error: Option<ErrorBody>,
    /// What it used: tokens and LLM calls, summed over its steps (a stopped step counts what
    /// was sent and what arrived).
    pub usage: Usage,
    /// When it ended.
    pub ended_at: Timestamp,
}

/// The status of a tool result, as in Letta's envelope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub enum ToolStatus {
    /// The tool ran.
    #[serde(rename = "OK")]
    Ok,
    /// The tool refused or failed; `message` says why, for the model to read.
    Failed,
}

/// The JSON envelope of every tool result: `{"status":"OK"|"Failed","message":…,"time":…}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ToolReturn {
    /// OK or Failed.
    pub status: ToolStatus,
    /// The result, or the error for the model to read.
    pub message: String,
    /// When the tool ran, e.g. `2026-11-21 02:38:00 PM UTC+0000`.
    pub time: String,
}

impl ToolReturn {
    /// A successful result.
    pub fn ok(message: impl Into<String>, now: Timestamp) -> Self {
        Self {
            status: ToolStatus::Ok,
            message: message.into(),
            time: format_time(now),
        }
    }

    /// A failure the model should read and react to.
    pub fn failed(message: impl Into<String>, now: Timestamp) -> Self {
        Self {
            status: ToolStatus::Failed,
            message: message.into(),
            time: format_time(now),
        }
    }

    /// The envelope as stored in the tool message's content.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }

    /// Reads an envelope back from a tool message's content; `None` if it is not one.
    pub fn parse(content: &str) -> Option<Self> {
        serde_json::from_str(content).ok()
    }
}

/// The time format used inside messages the model reads (`2026-11-21 02:38:00 PM UTC+0000`).
pub fn format_time(t: Timestamp) -> String {
    t.format("%Y-%m-%d %I:%M:%S %p UTC%z").to_string()
}

/// What a run streams while it works. Events carry deltas, not accumulated text; any transport
/// can forward them (Tauri `Channel`, SSE, the CLI's terminal).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunEvent {
    /// The run began.
    RunStarted {
        /// The run.
        run_id: RunId,
        /// The agent.
        agent_id: AgentId,
    },
    /// A step (LLM call) began.
    StepStarted {
        /// The step.
        step_id: StepId,
        /// 1-based position in the run.
        index: u32,
    },
    /// Reply text as it arrives.
    TextDelta {
        /// New text.
        delta: String,
    },
    /// Reasoning / inner monologue as it arrives.
    ReasoningDelta {
        /// New text.
        delta: String,
    },
    /// The model called a tool (sent once the call is complete).
    ToolCall {
        /// The call.
        call: ToolCall,
    },
    /// A tool finished.
    ToolResult {
        /// The call answered.
        tool_call_id: String,
        /// The tool.
        name: String,
        /// OK or Failed.
        status: ToolStatus,
        /// Result or error text.
        message: String,
    },
    /// A block changed (by this run's tools).
    MemoryChanged {
        /// The agent whose tool changed it.
        agent_id: AgentId,
        /// The block after the change (its value may include edits others made meanwhile).
        block: Block,
        /// The tool call that made the change (the last one, when a step edited the block
        /// several times).
        tool_call_id: Option<String>,
    },
    /// A message was committed to recall memory.
    Message {
        /// The stored message.
        message: Message,
    },
    /// A tool call waits for a person (sent after its step committed; the run then ends with
    /// stop reason `requires_approval`).
    ApprovalRequested {
        /// The call and where it is stored.
        approval: PendingApproval,
    },
    /// Usage of the step just finished.
    Usage {
        /// That step's tokens (`step_count` = 1).
        usage: Usage,
    },
    /// The run ended (always the last event, also after an error or cancel).
    Done {
        /// The run.
        run_id: RunId,
        /// Why it ended.
        stop_reason: StopReason,
        /// Totals of the run.
        usage: Usage,
    },
    /// Something failed; a `Done` event follows.
    Error {
        /// What failed.
        error: ErrorBody,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_round_trips_with_letta_field_names() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-21T14:38:00Z")
            .unwrap()
            .to_utc();
        let r = ToolReturn::failed("no such block", now);
        let json = r.to_json();
        assert_eq!(
            json,
            r#"{"status":"Failed","message":"no such block","time":"2026-11-21 02:38:00 PM UTC+0000"}"#
        );
        assert_eq!(ToolReturn::parse(&json), Some(r));
    }

    #[test]
    fn events_are_tagged() {
        let json = serde_json::to_value(RunEvent::TextDelta { delta: "hi".into() }).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"type": "text_delta", "delta": "hi"})
        );
    }
}

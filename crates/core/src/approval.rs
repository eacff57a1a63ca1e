//! Tool calls a person approves: Letta's `requires_approval` tool rule, as data.
//!
//! When the model calls a tool under that rule, the step commits with the call unanswered and a
//! [`PendingApproval`] row beside it, and the run ends with stop reason `requires_approval`. A
//! person then sends an [`ApprovalDecision`]: approve (the tool runs) or deny (the call is
//! answered with a `Failed` result carrying the reason); either way the loop goes on. Letta's
//! wire shapes: `approval_request_message` and an `approval` message with `approve`/`reason`.

use crate::{AgentId, MessageId, RunId, StepId, Timestamp, ToolCall};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// A tool call waiting for a person's decision. At most one per agent: calls are decided one
/// at a time, in the order the model made them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct PendingApproval {
    /// The agent whose run is paused.
    pub agent_id: AgentId,
    /// The run the call belongs to (it goes on after the decision).
    pub run_id: RunId,
    /// The step whose assistant message made the call.
    pub step_id: StepId,
    /// That assistant message (Letta's `approval_request_id`).
    pub message_id: MessageId,
    /// The call: tool name, raw JSON arguments, `tool_call_id`.
    pub tool_call: ToolCall,
    /// When the run paused.
    pub requested_at: Timestamp,
    /// The MCP server the tool comes from, so the person sees where the call would go; `None`
    /// for built-in and Python tools. Filled in when the pending call is read, not stored.
    #[serde(default)]
    #[ts(optional)]
    pub server: Option<String>,
}

/// A person's answer to a [`PendingApproval`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, TS)]
#[ts(export, optional_fields)]
pub struct ApprovalDecision {
    /// The call decided; `None` means the one pending call. A different id than the pending
    /// one is refused (`invalid_input`), so a stale window cannot decide the wrong call.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// `true` runs the tool; `false` answers the call with a `Failed` result.
    pub approve: bool,
    /// Why (shown to the model on a denial; optional).
    #[serde(default)]
    pub reason: Option<String>,
}

impl PendingApproval {
    /// The error a new message gets while this call waits (`conflict`): it names the call and
    /// what to do.
    pub fn blocks_new_message(&self) -> crate::Error {
        crate::Error::Conflict(format!(
            "a tool call is waiting for your approval: {}({}) [tool_call_id {}]; approve or deny \
             it before sending a new message",
            self.tool_call.name, self.tool_call.arguments, self.tool_call.id
        ))
    }
}

/// What the model reads when a person denied its call: the reason, or that none was given.
pub fn denied_message(reason: Option<&str>) -> String {
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) => format!("The user denied this tool call, so it did not run. Their reason: {r}"),
        None => "The user denied this tool call, so it did not run. They gave no reason.".into(),
    }
}

//! Steps: one model call and everything it changed (messages, block edits, passages, a paused
//! tool call), committed as one transaction — under the agent's lease when a run holds one.
//!
//! The rules for a step's block edits are the same on every backend and live here as plain
//! functions ([`call_groups`], [`rebase`], [`result_index`], [`restate`]); each backend runs
//! them inside its own transaction:
//! - each [`BlockWrite`] carries an operation, not a value, applied to the block as stored at
//!   commit, so edits made since the step started (by hand, by another agent on a shared
//!   block, by another replica) are kept;
//! - the writes of one tool call succeed or fail together; when one no longer applies, the
//!   call's earlier writes are undone and its stored result becomes a `Failed` one showing the
//!   block's current value, so the model can retry. Every tool call still gets one result;
//! - a whole-value write ([`BlockOp::Rewrite`]) is not made stale by this same step's earlier
//!   writes: one based on the version the block had when the commit first touched it is
//!   re-based onto the step's own latest version.

use crate::Lease;
use async_trait::async_trait;
use engram_core::{
    AgentId, Block, BlockEdit, BlockId, BlockOp, Editor, Message, NewMessage, NewPassage, Passage,
    PendingApproval, Result, Role, RunId, Step, Timestamp, ToolReturn, ToolStatus,
};
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// One block edit a tool call made, with the block's label: what the chat shows as a diff
/// under the tool call named by the edit's [`Editor::Agent`] `tool_call_id`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct ToolEdit {
    /// The stored history row (old and new value, versions, step, tool call).
    pub edit: BlockEdit,
    /// The block's label.
    pub label: String,
}

/// The tokens one model used in an agent's steps (see [`StepStore::usage_by_model`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelUsage {
    /// The model's handle as the steps recorded it, `provider/model`.
    pub model: String,
    /// Prompt (input) tokens, summed.
    pub prompt_tokens: u64,
    /// Completion (output) tokens, summed.
    pub completion_tokens: u64,
    /// How many steps called it.
    pub steps: u64,
}

/// Everything one step wrote. The agent is `step.agent_id`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepCommit {
    /// The step's record (usage, timings).
    pub step: Step,
    /// Messages to append (the assistant message, then one tool result per call, …). Those
    /// without a run or step id get the step's.
    pub messages: Vec<NewMessage>,
    /// Block edits made by the step's tools, applied in order to the values stored at commit.
    pub block_writes: Vec<BlockWrite>,
    /// Archival passages inserted by the step's tools.
    pub passages: Vec<NewPassage>,
    /// Whether the step pauses on a call a person must approve, or answers one (stored in the
    /// same transaction as the messages, so a pending call is never lost or left unmarked).
    #[serde(default)]
    pub approval: ApprovalWrite,
}

impl StepCommit {
    /// The step's messages as they are appended: each without a run or step id gets the
    /// step's.
    pub fn stamped_messages(&self) -> Vec<NewMessage> {
        self.messages
            .iter()
            .map(|m| {
                let mut m = m.clone();
                m.run_id.get_or_insert_with(|| self.step.run_id.clone());
                m.step_id.get_or_insert_with(|| self.step.id.clone());
                m
            })
            .collect()
    }
}

/// What [`StepStore::commit_step`] stored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CommittedStep {
    /// The appended messages, with ids and `seq`.
    pub messages: Vec<Message>,
    /// Each change a [`BlockWrite`] made, in order (writes that changed nothing or were
    /// refused are not listed).
    pub blocks: Vec<BlockChange>,
    /// Tool calls whose block writes no longer applied at commit: their stored results were
    /// turned into `Failed` ones showing the block's current value.
    pub refused: Vec<String>,
    /// The inserted passages.
    pub passages: Vec<Passage>,
}

/// One edit of a block by a step: an operation re-applied to the block's value as stored at
/// commit time (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockWrite {
    /// The block to change.
    pub block_id: BlockId,
    /// What to do to its current value (checked against its limit, in characters).
    pub op: BlockOp,
    /// Who made the change (recorded in the block's history). For [`Editor::Agent`] with a
    /// `tool_call_id` whose tool result is among the step's messages, a write that no longer
    /// applies turns that result into a `Failed` one instead of failing the step.
    pub editor: Editor,
    /// Rewrite the (OK) tool result to describe the block as committed (memory tools, whose
    /// result is the block's value); user tools keep their own return value.
    pub restate_result: bool,
}

impl BlockWrite {
    /// The tool call that made this write, if an agent's tool made it.
    pub fn tool_call_id(&self) -> Option<&str> {
        match &self.editor {
            Editor::Agent { tool_call_id, .. } => tool_call_id.as_deref(),
            _ => None,
        }
    }
}

/// A block as a step left it, and the tool call that changed it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockChange {
    /// The block after the change, as stored (new version).
    pub block: Block,
    /// The tool call that made the change.
    pub tool_call_id: Option<String>,
}

/// What a step commit does to the agent's pending approval (Letta's `requires_approval`
/// rule: at most one paused call per agent).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum ApprovalWrite {
    /// Nothing (an ordinary step).
    #[default]
    Keep,
    /// The step paused on this call: store it as the agent's pending approval. Its
    /// `message_id` must be the id of one of the step's messages (mint it beforehand).
    Request(PendingApproval),
    /// The step answers the pending call: remove it, and store this one when the step paused
    /// again on a later call of the same message.
    Resolve(Option<PendingApproval>),
}

/// Steps and the paused tool calls they leave, on any backend.
///
/// Guarantees, beyond each method's docs:
/// - **A commit is one transaction**: the step row, its block writes (with history rows
///   naming the step), its passages, its messages (appended in context, after every message
///   committed before, `seq` as [`MessageStore`](crate::MessageStore) numbers them) and its
///   approval write are all stored, or nothing is.
/// - **Under a lease, a commit is fenced**: with `lease`, the commit first checks, in its own
///   transaction, that the lease is still the agent's current unexpired one, and holds it
///   until the commit ends; a replica that lost its lease (paused past it, cut off) writes
///   nothing and gets `LeaseLost`.
#[async_trait]
pub trait StepStore: Send + Sync {
    /// Commits `c` all or nothing, fenced by `lease` when given (see the trait docs).
    ///
    /// Errors (nothing stored): `LeaseLost`; `NotFound("agent")`; `NotFound("block")` or
    /// `Invalid` (the refusal) for a write that has no tool result in the step to answer with;
    /// `Invalid` for an empty passage; `Conflict` if the step id or a message id exists, or
    /// the step asks for an approval while another is pending; `NotFound("pending approval")`
    /// when it resolves one that is no longer pending (another window decided first).
    async fn commit_step(&self, lease: Option<&Lease>, c: &StepCommit) -> Result<CommittedStep>;

    /// The agent's steps, oldest first (start time, then index); only those of `run` when
    /// given. Errors: `NotFound("agent")`.
    async fn list_steps(&self, agent: &AgentId, run: Option<&RunId>) -> Result<Vec<Step>>;

    /// The block edits made by the agent's steps in `runs`, in the order they were made (two
    /// edits in one step are two rows, each with its own old and new value): what a reloaded
    /// chat shows under each tool call. Errors: `NotFound("agent")`.
    async fn tool_edits(&self, agent: &AgentId, runs: &[RunId]) -> Result<Vec<ToolEdit>>;

    /// The tokens the agent's steps used, per model: one row per model its steps called (only
    /// `run`'s steps when given), by model name. What a cost total prices.
    /// Errors: `NotFound("agent")`.
    async fn usage_by_model(&self, agent: &AgentId, run: Option<&RunId>)
    -> Result<Vec<ModelUsage>>;

    /// The tool call the agent's paused run waits on, if any (its `server` is filled in by
    /// backends that know the agent's MCP tools). Errors: `NotFound("agent")`.
    async fn pending_approval(&self, agent: &AgentId) -> Result<Option<PendingApproval>>;

    /// Forgets the agent's pending approval without answering the call (the message that made
    /// it left the context, e.g. after a reset); the next repair answers it as interrupted.
    /// Returns whether one was pending. Errors: `NotFound("agent")`.
    async fn drop_pending_approval(&self, agent: &AgentId) -> Result<bool>;

    /// Makes the agent's context valid for providers again, in one transaction (see
    /// [`crate::diagnose`]; the calls of the message a pending approval names are left for the
    /// person to decide):
    /// - every in-context assistant tool call without a result gets a `Failed` result
    ///   ([`crate::INTERRUPTED`]; role `Tool`, the call's id and tool name, the assistant
    ///   message's run and step) right after the last existing result of that message (or
    ///   right after the message), stamped `now` (truncated to microseconds);
    /// - tool messages that answer no call of an earlier in-context assistant message, or
    ///   repeat a result already given, leave the context (they stay in recall memory).
    ///
    /// Returns how many results were inserted. Errors: `NotFound("agent")`.
    async fn repair_tool_calls(&self, agent: &AgentId, now: Timestamp) -> Result<usize>;

    /// Whether [`repair_tool_calls`](Self::repair_tool_calls) may have something to do: a
    /// read, asked beside the other reads before a run so that the repair (a write under
    /// the agent's lease) is called only when needed. `false` only when the repair would
    /// change nothing now; by default `true`, for a store whose repair checks cheaply by
    /// itself. Errors: `NotFound("agent")` (or none, when answering `true` unread).
    async fn needs_repair(&self, agent: &AgentId) -> Result<bool> {
        let _ = agent;
        Ok(true)
    }
}

/// The writes of each tool call, in order: ranges of `writes` (a call's writes are
/// consecutive, as a call runs to its end before the next; writes without a tool call are one
/// range each).
pub fn call_groups(writes: &[BlockWrite]) -> Vec<Range<usize>> {
    let mut groups = Vec::new();
    let mut i = 0;
    while i < writes.len() {
        let call = writes[i].tool_call_id();
        let mut end = i + 1;
        while call.is_some() && end < writes.len() && writes[end].tool_call_id() == call {
            end += 1;
        }
        groups.push(i..end);
        i = end;
    }
    groups
}

/// `op` as applied to a block now at `current` version, when the commit first saw the block
/// at `first_seen`: a rewrite based on `first_seen` is re-based onto `current` (this step's
/// own earlier writes do not make it stale); anything else is unchanged.
pub fn rebase(op: &BlockOp, first_seen: u64, current: u64) -> BlockOp {
    match op {
        BlockOp::Rewrite {
            value,
            based_on_version,
        } if *based_on_version == first_seen => BlockOp::Rewrite {
            value: value.clone(),
            based_on_version: current,
        },
        op => op.clone(),
    }
}

/// Index of the tool message answering `call` in `msgs`.
pub fn result_index(msgs: &[NewMessage], call: &str) -> Option<usize> {
    msgs.iter()
        .position(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(call))
}

/// Replaces the status and message of a stored tool-result envelope, keeping its time.
pub fn restate(msg: &mut NewMessage, status: ToolStatus, message: String) {
    let mut envelope = ToolReturn::parse(&msg.content).unwrap_or_else(|| ToolReturn {
        status,
        message: String::new(),
        time: engram_core::run::format_time(Timestamp::from(std::time::SystemTime::now())),
    });
    envelope.status = status;
    envelope.message = message;
    msg.content = envelope.to_json();
}

/// The message a tool call's refused write answers with when its block is gone.
pub fn gone_message(id: &BlockId) -> String {
    format!("The block {id} no longer exists (it was deleted meanwhile); nothing was written.")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(call: Option<&str>) -> BlockWrite {
        BlockWrite {
            block_id: BlockId::from("block-1"),
            op: BlockOp::Append { text: "x".into() },
            editor: match call {
                Some(id) => Editor::Agent {
                    agent_id: AgentId::from("agent-1"),
                    tool_call_id: Some(id.into()),
                },
                None => Editor::User,
            },
            restate_result: true,
        }
    }

    #[test]
    fn a_calls_writes_form_one_group_and_writes_without_a_call_stand_alone() {
        let writes = [
            write(Some("a")),
            write(Some("a")),
            write(None),
            write(None),
            write(Some("b")),
        ];
        assert_eq!(call_groups(&writes), vec![0..2, 2..3, 3..4, 4..5]);
        assert!(call_groups(&[]).is_empty());
    }

    #[test]
    fn only_a_rewrite_based_on_the_first_seen_version_is_rebased() {
        let rewrite = |v| BlockOp::Rewrite {
            value: "new".into(),
            based_on_version: v,
        };
        assert_eq!(rebase(&rewrite(3), 3, 5), rewrite(5));
        assert_eq!(
            rebase(&rewrite(2), 3, 5),
            rewrite(2),
            "stale before the step"
        );
        let append = BlockOp::Append { text: "x".into() };
        assert_eq!(rebase(&append, 3, 5), append);
    }
}

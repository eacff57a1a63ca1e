//! Changing a conversation that already happened: rolling it back to just before one message
//! (regenerate, edit & resend), deleting a message, changing a message's text, emptying the
//! context window. Each is one transaction, fenced by the agent's lease when the caller holds
//! one, so on a database shared by replicas it can never interleave with a run on another
//! replica.
//!
//! A rollback puts a block back to its value before the first rolled-back edit **only when no
//! other writer touched it since** (a hand edit, another agent on a shared block, an undo):
//! every history row of the block from that edit on must come from a rolled-back step, from an
//! earlier rollback, or from one of the agent's own steps that an earlier rollback removed
//! (regenerating a turn, then rolling back further, undoes only the agent's own work).
//! Otherwise the whole rollback is refused with a conflict naming the blocks, and nothing
//! changes — a rollback never silently wipes someone else's edit (DESIGN.md §8b). The restore
//! is a new write (version bumped, history row by [`Editor::Rollback`]), so a window that read
//! the turn's version sees its save refused instead of writing over the restored value.
//!
//! [`Editor::Rollback`]: engram_core::Editor::Rollback

use crate::Lease;
use async_trait::async_trait;
use engram_core::{
    AgentId, BlockId, Error, Message, MessageId, Passage, Result, RunId, ToolCall, Usage,
};
use serde::{Deserialize, Serialize};

/// What rolling back the conversation from one message undoes (shown before it is done, and
/// returned once it is done).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct TurnRollback {
    /// The agent.
    pub agent_id: AgentId,
    /// The first message removed (a user message for regenerate and edit & resend).
    pub from_message: MessageId,
    /// Every message removed (that one and all after it), oldest first.
    pub messages: Vec<MessageId>,
    /// The runs (turns) whose messages, steps and usage are removed.
    pub runs: Vec<RunId>,
    /// What the removed steps used (tokens and LLM calls).
    pub usage: Usage,
    /// Blocks whose edits by the removed steps are undone.
    pub blocks: Vec<BlockRevert>,
    /// Archival passages the removed steps inserted, which are deleted.
    pub passages: Vec<Passage>,
}

impl TurnRollback {
    /// The blocks that another writer changed after the rolled-back edits: while any is listed,
    /// the rollback is refused.
    pub fn conflicts(&self) -> impl Iterator<Item = &BlockRevert> {
        self.blocks.iter().filter(|b| b.changed_later)
    }

    /// The refusal of a rollback with [`conflicts`](Self::conflicts), naming the blocks.
    pub fn conflict_error(&self) -> Error {
        let labels: Vec<String> = self.conflicts().map(|b| format!("'{}'", b.label)).collect();
        let one = labels.len() == 1;
        Error::Conflict(format!(
            "cannot roll back this turn: the {} {} changed by someone else after the turn \
             edited {}; nothing was rolled back (edit the {} by hand instead)",
            if one { "block" } else { "blocks" },
            labels.join(", "),
            if one { "it" } else { "them" },
            if one { "block" } else { "blocks" },
        ))
    }
}

/// One block a rollback puts back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct BlockRevert {
    /// The block.
    pub block_id: BlockId,
    /// Its label.
    pub label: String,
    /// Its value now.
    pub current_value: String,
    /// The value it goes back to (before the first rolled-back edit).
    pub restored_value: String,
    /// Its version now.
    #[ts(type = "number")]
    pub version: u64,
    /// How many edits of the rolled-back steps are undone.
    pub edits: u32,
    /// Another writer (a person, another agent, an undo) changed the block after the first
    /// rolled-back edit: restoring it would lose that change, so the rollback is refused.
    pub changed_later: bool,
}

/// The refusal for deleting a tool result on its own.
pub fn tool_result_alone() -> Error {
    Error::invalid(
        "a tool result cannot be deleted on its own; delete the assistant message that made \
         the call",
    )
}

/// Changes to a conversation that already happened (see the module docs). With `lease`, a
/// write first checks, in its own transaction, that the lease is still the agent's current
/// unexpired one and holds it until the write ends, as a step's commit does.
#[async_trait]
pub trait RewriteStore: Send + Sync {
    /// What [`rollback_from`](Self::rollback_from) would undo, without changing anything:
    /// blocks with `changed_later` set would make it refuse.
    ///
    /// Errors: `NotFound("agent")`; `NotFound("message", id)` when `from` is not one of the
    /// agent's messages.
    async fn rollback_preview(&self, agent: &AgentId, from: &MessageId) -> Result<TurnRollback>;

    /// Removes the conversation from message `from` on, in one transaction: those messages
    /// (recall search follows), the runs they belong to with their steps and usage, the
    /// passages those steps inserted, and their block edits — each block goes back to its
    /// value before the first of them, as a new version recorded by `Editor::Rollback`. The
    /// old history rows stay (they are what happened). Returns what was undone.
    ///
    /// Errors (nothing changes): `LeaseLost`; `NotFound("agent")`, `NotFound("message", id)`;
    /// `Conflict` naming the blocks another writer changed after the turn's edits
    /// ([`TurnRollback::conflict_error`]).
    async fn rollback_from(
        &self,
        lease: Option<&Lease>,
        agent: &AgentId,
        from: &MessageId,
    ) -> Result<TurnRollback>;

    /// Deletes one of the agent's messages from recall memory (and the context window), in one
    /// transaction: an assistant message's tool calls take their tool results along, so no
    /// call is left unanswered and no result answers nothing. Memory edits and passages stay.
    /// Returns the ids removed, the message first.
    ///
    /// Errors (nothing changes): `LeaseLost`; `NotFound("message", id)` when it is not one of
    /// the agent's messages; `Invalid` for a tool result ([`tool_result_alone`]).
    async fn delete_message(
        &self,
        lease: Option<&Lease>,
        agent: &AgentId,
        id: &MessageId,
    ) -> Result<Vec<MessageId>>;

    /// Empties the agent's context window, in one transaction: every message leaves it (they
    /// stay in recall memory), the summary is cleared, and a pending approval is dropped (its
    /// call left the window). Returns how many messages left.
    ///
    /// Errors (nothing changes): `LeaseLost`; `NotFound("agent")`.
    async fn reset_context(&self, lease: Option<&Lease>, agent: &AgentId) -> Result<usize>;

    /// Sets one of the agent's messages' text (Letta's message modify) and, when given, its
    /// reasoning and its tool calls (same ids, new arguments), in one transaction: the model
    /// sees them from its next step, recall's words search finds the new text. A stored vector
    /// of the message no longer describes it and goes. Returns the message as stored.
    ///
    /// Errors (nothing changes): `LeaseLost`; `NotFound("message", id)` when it is not one of
    /// the agent's messages.
    async fn update_message_text(
        &self,
        lease: Option<&Lease>,
        agent: &AgentId,
        id: &MessageId,
        content: &str,
        reasoning: Option<&str>,
        tool_calls: Option<&[ToolCall]>,
    ) -> Result<Message>;

    /// The agent's last user message a person wrote (not a heartbeat or system alert): the
    /// one "regenerate" sends again. `None` when there is none.
    ///
    /// Errors: `NotFound("agent")`.
    async fn last_user_message(&self, agent: &AgentId) -> Result<Option<Message>>;
}

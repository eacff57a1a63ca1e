//! Sleep-time passes: each agent's settings and reading position, and the record of every
//! pass with the changes it wrote. A pass decides its changes while the chat goes on and
//! writes them all at its end, at once ([`SleeptimeStore::commit_pass`]), so a pass that fails
//! or is killed leaves nothing half-written. The design follows Letta's sleep-time agents
//! (Lin et al., 2025, "Sleep-time Compute"): memory is reorganised between conversations, not
//! during them.

use crate::BlockWrite;
use async_trait::async_trait;
use engram_core::{
    AgentId, MessageId, NewPassage, PassId, PassUsage, PassageId, Result, SleeptimePass,
    SleeptimeSettings, SupersedeKind, Timestamp,
};
use std::time::Duration;

/// The app setting (see [`SettingStore`](crate::SettingStore)) holding the budget over every
/// agent's passes, a JSON [`SleeptimeBudget`](engram_core::SleeptimeBudget).
pub const BUDGET_SETTING: &str = "sleeptime.budget";

/// What waits for an agent's next pass (see [`SleeptimeStore::pass_backlog`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassBacklog {
    /// The person's chat messages after the reading position: what counts toward the
    /// agent's `frequency`.
    pub turns: u32,
    /// Compactions of the conversation since the last pass that ran to its end.
    pub compactions: u32,
    /// The last message the passes read (Letta's `last_processed_message_id`); `None` before
    /// the first pass.
    pub last_read: Option<MessageId>,
    /// When the agent's newest message was stored (`None` without messages): an idle timer
    /// set by one replica learns from it that a later turn ran on another.
    pub last_message_at: Option<Timestamp>,
}

/// A change to archival memory a pass decided on.
#[derive(Clone, Debug, PartialEq)]
pub enum PassageOp {
    /// Store a new passage under `id` (minted by the pass, so later ops can name it).
    Add {
        /// The id it gets.
        id: PassageId,
        /// The passage.
        passage: NewPassage,
    },
    /// Mark `passage_id` as no longer current: replaced by, or merged into, `by`.
    Supersede {
        /// The passage replaced.
        passage_id: PassageId,
        /// Its successor (one of the agent's passages, possibly added by this pass).
        by: Option<PassageId>,
        /// Replaced or merged.
        how: SupersedeKind,
    },
}

/// What a pass writes at its end: its record (without changes; the store fills them in) and
/// its operations, in the order decided.
#[derive(Clone, Debug)]
pub struct PassCommit {
    /// The record; `status` should be `Done`.
    pub pass: SleeptimePass,
    /// Block edits; their editor is replaced by the pass.
    pub block_writes: Vec<BlockWrite>,
    /// Archival changes.
    pub passage_ops: Vec<PassageOp>,
}

/// The text of the reason a committed pass carries when `left_out` of its changes no longer
/// applied (memory changed meanwhile); `None` when all applied.
pub fn left_out_reason(left_out: u32) -> Option<String> {
    (left_out > 0).then(|| {
        format!(
            "{left_out} change{} no longer applied (memory changed meanwhile) and {} left out",
            if left_out == 1 { "" } else { "s" },
            if left_out == 1 { "was" } else { "were" },
        )
    })
}

/// The `Conflict` for undoing an edit of the block `label` whose changed text
/// `later_edits` edits made after it rewrote: only restoring the whole value before it could
/// undo it, losing them.
pub fn cannot_undo_alone(label: &str, later_edits: u32) -> engram_core::Error {
    engram_core::Error::Conflict(format!(
        "this edit of '{label}' cannot be undone on its own: {later_edits} later edit{} changed \
         the same text; restoring the value before it would undo {} too",
        if later_edits == 1 { "" } else { "s" },
        if later_edits == 1 { "it" } else { "them" },
    ))
}

/// A unified line diff of `old` → `new`, as a pass's block change shows it.
pub fn block_diff(old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(2)
        .to_string()
}

/// Sleep-time passes on any backend.
///
/// Guarantees, beyond each method's docs:
/// - **A pass's changes are one transaction**: its block edits, passages added and
///   superseded, its record with one change per effect, and the agent's reading position.
/// - **Block edits are operations on the current value**: each is re-applied to the block as
///   stored at commit time, so an edit made meanwhile by hand or by the chat is kept; a
///   whole-value rewrite whose block moved on is rebased onto the current value when the text
///   it changed is still there exactly once ([`engram_core::block_op::revert_value`] of the
///   reverse), and otherwise left out and counted in the record's `reason`.
/// - **Nothing is deleted**: a passage that stopped being current is marked superseded (or
///   merged) with a link to its successor.
/// - **Undo is all or nothing**: undoing a pass writes every change back in one transaction,
///   or nothing when a later edit rewrote what one of them wrote.
/// - **One pass per agent at a time, across replicas**: a pass runs under a claim
///   ([`claim_pass`](Self::claim_pass)) that expires on its own if its holder dies.
///
/// The budget over every agent is the app setting [`BUDGET_SETTING`].
#[async_trait]
pub trait SleeptimeStore: Send + Sync {
    /// The agent's sleep-time settings (defaults when never set). Errors: `NotFound("agent")`.
    async fn sleeptime_settings(&self, agent: &AgentId) -> Result<SleeptimeSettings>;

    /// Stores the agent's sleep-time settings (its reading position is kept).
    ///
    /// Errors: `NotFound("agent")`; `Invalid` for a frequency, step limit or timeout of 0.
    async fn set_sleeptime_settings(&self, agent: &AgentId, s: &SleeptimeSettings) -> Result<()>;

    /// The `seq` of the last message the agent's passes read (0 before the first): it only
    /// moves forward, with each pass that ran to its end. Errors: `NotFound("agent")`.
    async fn last_read_seq(&self, agent: &AgentId) -> Result<i64>;

    /// Records a pass that wrote nothing (skipped, failed); a pass with changes goes through
    /// [`commit_pass`](Self::commit_pass). A record with status `Done` moves the reading
    /// position to its `last_seq`. Errors: `NotFound("agent")`; `Conflict` for a pass id
    /// already recorded.
    async fn record_pass(&self, pass: &SleeptimePass) -> Result<()>;

    /// Writes a pass and all its changes in one transaction (see the trait docs); returns the
    /// record as stored, its status `Done`, with one change per effect in order.
    ///
    /// Errors (nothing written): `NotFound("agent")`; `Invalid` for a passage without text;
    /// `Conflict` for a pass id already recorded.
    async fn commit_pass(&self, commit: &PassCommit) -> Result<SleeptimePass>;

    /// One pass with its changes. Errors: `NotFound("sleep-time pass")`.
    async fn get_pass(&self, id: &PassId) -> Result<SleeptimePass>;

    /// The agent's passes, newest first (start time, then the order they were stored), at
    /// most `limit`, with their changes. Errors: `NotFound("agent")`.
    async fn list_passes(&self, agent: &AgentId, limit: usize) -> Result<Vec<SleeptimePass>>;

    /// What waits for the agent's next pass, read at once. Errors: `NotFound("agent")`.
    async fn pass_backlog(&self, agent: &AgentId) -> Result<PassBacklog>;

    /// What passes used since `since`: the agent's when given, else every agent's together.
    /// Every pass that ran counts (failed and undone ones too: their tokens were spent);
    /// skipped ones do not. Dollars are at each pass model's price as
    /// [`get_pass`](Self::get_pass) prices it. Errors: `Storage`.
    async fn pass_usage(&self, agent: Option<&AgentId>, since: Timestamp) -> Result<PassUsage>;

    /// Undoes the change numbered `index` of `pass`, or with `None` every change still
    /// standing (newest first), in one transaction: a block edit by its reverse operation on
    /// the current value (recorded as an undo), a superseded passage made current again, an
    /// added passage taken away. A change already undone is left as it is; when none stands
    /// the pass's status becomes `Undone`. Returns the record as stored.
    ///
    /// Errors (nothing written): `NotFound("sleep-time pass" | "change")`; `Conflict` when a
    /// later edit rewrote the text a block edit wrote, or a passage it added was replaced by
    /// another since; `Invalid` when a block's reverted value no longer fits its limit.
    async fn undo_pass_changes(&self, pass: &PassId, index: Option<u32>) -> Result<SleeptimePass>;

    /// Claims the agent for `pass` for `ttl` (by the database's clock): `true` when no other
    /// pass holds an unexpired claim, else `false` and nothing changes. Claiming again with
    /// the same pass extends its claim. A SQLite database keeps claims in its process's
    /// memory, as it keeps leases ([`LeaseStore`](crate::LeaseStore)): they end with it.
    /// Errors: `NotFound("agent")`.
    async fn claim_pass(&self, agent: &AgentId, pass: &PassId, ttl: Duration) -> Result<bool>;

    /// Gives up `pass`'s claim on the agent; a claim no longer held (expired and taken, or
    /// never made) is left alone. Errors: `Storage`.
    async fn release_pass(&self, agent: &AgentId, pass: &PassId) -> Result<()>;
}

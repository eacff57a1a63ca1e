//! Sleep-time passes: each agent's settings and reading position, and the record of every
//! pass with the changes it wrote. A pass decides its changes while the chat goes on and
//! writes them all at its end, at once ([`SleeptimeStore::commit_pass`]), so a pass that fails
//! or is killed leaves nothing half-written. The design follows Letta's sleep-time agents
//! (Lin et al., 2025, "Sleep-time Compute"): memory is reorganised between conversations, not
//! during them.

use crate::BlockWrite;
use async_trait::async_trait;
use engram_core::{
    AgentId, NewPassage, PassId, PassageId, Result, SleeptimePass, SleeptimeSettings, SupersedeKind,
};

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
///
/// Undoing a pass, its backlog, token usage and the global budget are the SQLite store's
/// alone for now.
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
}

//! The storage interface: what a backend must provide for Engram to keep agents in it.
//!
//! Two backends implement it: the SQLite store of the desktop app (`engram-store`, one file,
//! one process) and the PostgreSQL store of a server (`engram-store-pg`, one database shared
//! by several replicas). The interface is cut along the store's groups — one trait per concern
//! — so each concern is moved onto it, and tested on both backends, as a unit. Today:
//! - [`AgentStore`]: an agent's row and its blocks at creation;
//! - [`BlockStore`]: blocks and their versioned operations, with history;
//! - [`ContextStore`]: the context window's messages, compactions, the cached system prompt,
//!   the memory counts it shows and how runs ended;
//! - [`ImportStore`]: whole agent files (agents with blocks, history, messages, passages and
//!   tools) written in one transaction;
//! - [`LeaseStore`]: one holder per agent, with fencing tokens checked at commit;
//! - [`MessageStore`]: recall memory, the message history paged by `seq` and cut into the
//!   chat's windows ([`window`]), with a words search;
//! - [`PassageStore`]: archival memory, tagged passages listed by time, with a words search;
//! - [`RewriteStore`]: changes to a conversation that happened (rollback, delete, a message's
//!   new text, reset), fenced by the agent's lease;
//! - [`SettingStore`]: model providers without their keys, and the app's key-value settings
//!   (token calibrations among them);
//! - [`SleeptimeStore`]: sleep-time settings, reading positions and passes, each written
//!   with its changes in one transaction;
//! - [`StepStore`]: a step's commit fenced by the agent's lease, the tool call a paused run
//!   waits on, and the repair of a context a crash left with unanswered calls;
//! - [`ToolStore`]: user tools, unique by name, and the agents' references to them;
//! - [`UserStore`]: a shared server's users, their token hashes and access to agents.
//!
//! [`FolderStore`] (an agent's folders as its runtime reads them) is the SQLite store's alone
//! for now, outside [`Backend`]. Writing folders and the rest follow the same way.
//!
//! # Async, dyn-compatible
//! Every method is `async` and the traits are object-safe (`Arc<dyn Backend>`), with `Send`
//! futures:
//! - the PostgreSQL client (`tokio-postgres`) is async: a call waits on the network, and a
//!   replica serves many requests while others wait on the database;
//! - the backend is chosen at run time (`engram serve --database postgres://…` or the
//!   desktop's file), so the service holds one `dyn` backend instead of being generic over it
//!   through every layer;
//! - the SQLite store stays synchronous inside: its implementation calls the same short
//!   methods the service calls today, on the caller's task (each holds the connection for
//!   well under a millisecond to a few milliseconds, as now).
//!
//! The cost is one boxed future per call (`async-trait`), nothing next to a database round
//! trip.
//!
//! # The contract
//! The same test suite runs against both backends (`crates/store-pg/tests/it/contract`).
//! What every implementation guarantees, beyond each method's docs:
//! - **Writes that belong together are one transaction**: an agent with its blocks; a block
//!   edit with its history row; a batch of messages; a batch of passages. Nothing is written when a method returns an error.
//! - **Block edits are operations on the current version**: [`BlockStore::apply_block_op`]
//!   re-applies the operation to the block as stored when the write happens, holding the block
//!   (the SQLite write lock, a PostgreSQL row lock) until its history row is written, and
//!   re-checks the limit stored then. Concurrent edits from any number of connections,
//!   processes or replicas are all kept, each with its history row and version.
//! - **Errors are [`engram_core::Error`]**: `NotFound` for missing rows, `Invalid` for bad
//!   input (a bad label, a value over the limit), `Conflict` for a label or id clash,
//!   `StaleVersion` for a whole-value write based on a version that is no longer current,
//!   `Storage` when the database fails.
//! - Timestamps come back truncated to microseconds, so a value returned by a write equals
//!   what a later read returns.

mod bus;
mod context;
mod folders;
mod import;
mod lists;
mod message_vectors;
mod messages;
mod passages;
mod ranking;
mod repair;
mod rewrite;
mod settings;
mod sharing;
mod sleeptime;
mod steps;
mod tools;
mod users;
pub mod window;
mod words;

pub use bus::{BusEvent, NoticeBus};
pub use context::ContextStore;
pub use folders::{FileWindow, FolderStore, TextPart};
pub use import::{
    EXTRAS_SETTING_PREFIX, ImportAgent, ImportBlock, ImportBundle, ImportMessage, ImportStore,
    ImportSupersession, ImportedIds, ImportedTool, added_status, check_bundle, is_same_tool,
    tool_candidate,
};
pub use lists::{AgentList, BlockList};
pub use message_vectors::{MessageVector, UnembeddedMessage, embeddable_text};
pub use messages::{Hit, MessageSearch, MessageStore, SEQ_GAP, SeqOrder};
pub use passages::{
    PassageList, PassagePage, PassageRange, PassageSearch, PassageStore, check_vector,
};
pub use ranking::{
    Bm25, CandidateDepth, Candidates, MessageQuery, NeighbourMap, PassageQuery, Ranker, Ranking,
};
pub use repair::{
    CallRow, Diagnosis, INTERRUPTED, Orphans, diagnose, interrupted_result, slot_between,
};
pub use rewrite::{BlockRevert, RewriteStore, TurnRollback, tool_result_alone};
pub use settings::{
    CALIBRATION_SETTING_PREFIX, Calibration, ProviderRow, SettingStore, calibration_key,
    no_embedding_model_for_endpoint, no_pending_endpoint,
};
pub use sharing::{BlockAgent, SharedBlock, shared_blocks};
pub use sleeptime::{
    BUDGET_SETTING, PassBacklog, PassCommit, PassageOp, SleeptimeStore, block_diff,
    cannot_undo_alone, left_out_reason,
};
pub use steps::{
    ApprovalWrite, BlockChange, BlockWrite, CommittedStep, ModelUsage, StepCommit, StepStore,
    ToolEdit, call_groups, gone_message, rebase, restate, result_index,
};
pub use tools::ToolStore;
pub use users::UserStore;
pub use window::{Compaction, MessageWindow, WindowAt};
pub use words::{MAX_QUERY_WORDS, QueryWords, query_words};

use async_trait::async_trait;
use engram_core::{
    Agent, AgentId, AgentPatch, Block, BlockEdit, BlockId, BlockOp, BlockPatch, EditId, Editor,
    NewBlock, OpOutcome, Result, Timestamp,
};
use std::time::Duration;

/// An agent's tags as they are kept: in the given order, blank ones and repeats dropped.
pub fn clean_tags(tags: &[String]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for t in tags {
        if !t.trim().is_empty() && !out.contains(&t.as_str()) {
            out.push(t);
        }
    }
    out
}

/// Agents: the row with its settings, created together with its blocks.
#[async_trait]
pub trait AgentStore: Send + Sync {
    /// Stores `agent` (built by the caller: id, times, settings, optional summary), creates
    /// `blocks` and attaches them, then attaches the existing blocks `attach`, in that order,
    /// in one transaction. New blocks get
    /// [`DEFAULT_BLOCK_LIMIT`](engram_core::DEFAULT_BLOCK_LIMIT) characters unless given a
    /// limit (the default is raised to fit the value). Returns the agent (times truncated to
    /// microseconds) and its blocks in attach order.
    ///
    /// Errors: `Invalid` for a bad label or a value over an explicit limit;
    /// `NotFound("block")` for an unknown id in `attach`; `Conflict` if the agent id exists or
    /// two blocks share a label.
    async fn create_agent(
        &self,
        agent: &Agent,
        blocks: &[NewBlock],
        attach: &[BlockId],
    ) -> Result<(Agent, Vec<Block>)>;

    /// One agent. Errors: `NotFound("agent", id)`.
    async fn get_agent(&self, id: &AgentId) -> Result<Agent>;

    /// Every agent, oldest first (creation time, then id).
    async fn list_agents(&self) -> Result<Vec<Agent>>;

    /// A page of the agents passing `q`'s filters, in the list's order (see [`AgentList`]),
    /// filtered and paged by the database, so a page costs about the same however many
    /// agents there are. A cursor that names no agent gives an empty page.
    async fn page_agents(&self, q: &AgentList) -> Result<Vec<Agent>>;

    /// How many agents pass `q`'s filters (cursors and limit aside).
    async fn count_agents(&self, q: &AgentList) -> Result<u64>;

    /// Applies `patch` to the agent as stored (see [`AgentPatch::apply_to`]) in one
    /// transaction and returns it; new instructions drop the cached system prompt.
    /// Errors: `NotFound("agent")`.
    async fn update_agent(&self, id: &AgentId, patch: &AgentPatch) -> Result<Agent>;

    /// The agent's tags, in their order. Errors: `NotFound("agent")`.
    async fn agent_tags(&self, id: &AgentId) -> Result<Vec<String>>;

    /// Replaces the agent's tags with `tags` as [`clean_tags`] keeps them.
    /// Errors: `NotFound("agent")`.
    async fn set_agent_tags(&self, id: &AgentId, tags: &[String]) -> Result<()>;

    /// Deletes the agent and its links to blocks in one transaction; blocks attached to no
    /// other agent go too (shared blocks stay). Errors: `NotFound("agent", id)`.
    async fn delete_agent(&self, id: &AgentId) -> Result<()>;
}

/// Core-memory blocks: rows of their own, attached to agents (a label is unique per agent),
/// versioned, with an edit history. Limits are in **characters**.
#[async_trait]
pub trait BlockStore: Send + Sync {
    /// Creates a standalone block, version 1 (attach it with
    /// [`attach_block`](Self::attach_block)).
    ///
    /// Errors: `Invalid` for a bad label or a value over an explicit limit.
    async fn create_block(&self, new: &NewBlock) -> Result<Block>;

    /// Creates a block, version 1, and attaches it to `agent` after its other blocks, in one
    /// transaction (the memory panel's "add block").
    ///
    /// Errors (nothing written): `NotFound("agent")`; `Invalid` for a bad label or a value over
    /// an explicit limit; `Conflict` when the agent already has a block with that label.
    async fn create_agent_block(&self, agent: &AgentId, new: &NewBlock) -> Result<Block>;

    /// One block. Errors: `NotFound("block", id)`.
    async fn get_block(&self, id: &BlockId) -> Result<Block>;

    /// Every block (attached or not), oldest first (creation time, then id), optionally only
    /// those labelled `label`.
    async fn list_blocks(&self, label: Option<&str>) -> Result<Vec<Block>>;

    /// A page of every block (attached or not), in the list's order (see [`BlockList`]),
    /// paged by the database. A cursor that names no block gives an empty page.
    async fn page_blocks(&self, q: &BlockList) -> Result<Vec<Block>>;

    /// The agent's blocks in attach order. Errors: `NotFound("agent")`.
    async fn agent_blocks(&self, agent: &AgentId) -> Result<Vec<Block>>;

    /// The agent's block labelled `label`. Errors: `NotFound("agent")`,
    /// `NotFound("block", label)`.
    async fn agent_block(&self, agent: &AgentId, label: &str) -> Result<Block>;

    /// Attaches an existing block after the agent's other blocks; attaching it again does
    /// nothing.
    ///
    /// Errors: `NotFound("agent" | "block")`; `Conflict` when the agent has another block with
    /// that label (checked under a lock, so two concurrent attaches cannot both pass).
    async fn attach_block(&self, agent: &AgentId, block: &BlockId) -> Result<()>;

    /// Detaches a block from an agent (the block stays); detaching an unattached block does
    /// nothing. Errors: `NotFound("agent" | "block")`.
    async fn detach_block(&self, agent: &AgentId, block: &BlockId) -> Result<()>;

    /// Applies `patch` to the block as stored, in one transaction, and returns the block as
    /// stored after it. With `patch.version`, the block must still be at that version. The
    /// value must fit the limit (new or old); a new label must be valid and free on every
    /// agent the block is attached to. A change bumps the version; a changed value leaves a
    /// history row by `editor`. A patch that changes nothing writes nothing.
    ///
    /// Errors: `NotFound("block")`; `StaleVersion` with the current block; `Invalid` (over
    /// the limit, bad label); `Conflict` on a label clash.
    async fn update_block(
        &self,
        id: &BlockId,
        patch: &BlockPatch,
        editor: &Editor,
    ) -> Result<Block>;

    /// Applies `op` (append, replace, insert, rewrite-at-version) to the block's value as
    /// stored now, re-checking read-only and the limit stored now, in one transaction with
    /// its history row by `editor`. See [`BlockOp::apply`] for each operation's rules.
    ///
    /// Errors: `NotFound("block")`; `Storage`. An operation that does not apply (text not
    /// found, over the limit, a stale rewrite, a read-only block) is an
    /// [`OpOutcome::Refused`] carrying the block as stored, not an error.
    async fn apply_block_op(
        &self,
        id: &BlockId,
        op: &BlockOp,
        editor: &Editor,
    ) -> Result<OpOutcome>;

    /// The agents `block` is attached to (whom a change to it concerns).
    /// Errors: `NotFound("block")`.
    async fn block_agents(&self, block: &BlockId) -> Result<Vec<AgentId>>;

    /// Every block, oldest first, with the agents it is attached to (oldest agent first; none
    /// for a standalone block): where each block is shared, and what can be attached to
    /// another agent. Errors: `Storage`.
    async fn shared_blocks(&self) -> Result<Vec<SharedBlock>>;

    /// One recorded edit (of any block), by id. Errors: `NotFound("edit")`.
    async fn block_edit(&self, id: &EditId) -> Result<BlockEdit>;

    /// Up to `limit` recorded edits of a block, newest first. Errors: `NotFound("block")`.
    async fn block_history(&self, id: &BlockId, limit: usize) -> Result<Vec<BlockEdit>>;

    /// Deletes a block with its links and history. Errors: `NotFound("block")`.
    async fn delete_block(&self, id: &BlockId) -> Result<()>;
}

/// A holder's right to run an agent's steps until `expires_at`. Whoever holds the current
/// lease of an agent is the only one whose step commits are accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The agent.
    pub agent_id: AgentId,
    /// Who holds it (a replica's name and run, for people reading the table).
    pub holder: String,
    /// The fencing token: one more at every acquisition of this agent's lease, never reused.
    /// A commit names it and is refused unless it is still the current, unexpired one.
    pub token: u64,
    /// When it ends unless renewed, by the database's clock (microseconds).
    pub expires_at: Timestamp,
}

impl Lease {
    /// Checks that a write to `agent` may be fenced by `lease` (absent, or the agent's own).
    /// Errors: `Invalid` for another agent's lease.
    pub fn check_for(lease: Option<&Lease>, agent: &AgentId) -> Result<()> {
        match lease {
            Some(l) if &l.agent_id != agent => Err(engram_core::Error::invalid(
                "a write to an agent is fenced by that agent's own lease",
            )),
            _ => Ok(()),
        }
    }
}

/// The answer to [`LeaseStore::acquire_lease`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseGrant {
    /// The lease is yours, with a new fencing token.
    Granted(Lease),
    /// Someone else holds it until `expires_at` (database clock).
    Busy {
        /// Who holds it.
        holder: String,
        /// When their lease ends unless renewed.
        expires_at: Timestamp,
    },
}

/// Leases per agent: at most one holder runs an agent at a time, across every process or
/// replica on the database, and a holder that lost its lease (paused past it, cut off) can
/// never commit: commits check the fencing token in their own transaction.
///
/// Times are read from the database's clock (PostgreSQL's `clock_timestamp()`), so replicas
/// whose clocks disagree still agree on expiry. A SQLite database is one process's: its leases
/// live in that process's memory (shared by every handle on the file) and use the machine's
/// clock.
#[async_trait]
pub trait LeaseStore: Send + Sync {
    /// Takes the agent's lease for `ttl` when nobody holds it (never held, released or
    /// expired), with a fencing token one above the last one given for this agent; else says
    /// who holds it. A holder asking again while it holds the lease is busy too: it renews.
    ///
    /// Errors: `NotFound("agent")`; `Storage`.
    async fn acquire_lease(
        &self,
        agent: &AgentId,
        holder: &str,
        ttl: Duration,
    ) -> Result<LeaseGrant>;

    /// Extends a lease still held to `ttl` from now (same token).
    ///
    /// Errors: `LeaseLost` when it expired or was taken since; `Storage`.
    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease>;

    /// Gives the lease up now, so the next holder need not wait for it to expire. Releasing a
    /// lease no longer held does nothing.
    ///
    /// Errors: `Storage`.
    async fn release_lease(&self, lease: &Lease) -> Result<()>;

    /// [`BlockStore::apply_block_op`] under `lease`: in the same transaction, first checks that
    /// `lease` is still the agent's current, unexpired lease, and holds it (no one can take it
    /// over) until the edit is committed. This is the check a step's commit makes.
    ///
    /// Errors: `LeaseLost` (nothing written); as `apply_block_op` otherwise.
    async fn apply_block_op_leased(
        &self,
        lease: &Lease,
        id: &BlockId,
        op: &BlockOp,
        editor: &Editor,
    ) -> Result<OpOutcome>;
}

/// Everything a backend provides: what the service will hold as `Arc<dyn Backend>`.
pub trait Backend:
    AgentStore
    + BlockStore
    + ContextStore
    + ImportStore
    + LeaseStore
    + MessageStore
    + PassageStore
    + RewriteStore
    + SettingStore
    + SleeptimeStore
    + StepStore
    + ToolStore
    + UserStore
{
}

impl<
    T: AgentStore
        + BlockStore
        + ContextStore
        + ImportStore
        + LeaseStore
        + MessageStore
        + PassageStore
        + RewriteStore
        + SettingStore
        + SleeptimeStore
        + StepStore
        + ToolStore
        + UserStore,
> Backend for T
{
}

//! Bulk import: a whole set of agents with their blocks, history, messages and passages,
//! written in one transaction (an agent file lands completely or not at all).
//!
//! The caller (the agent-file crate) builds fully formed rows with fresh ids; a backend checks
//! what the database must guarantee ([`check_bundle`]: valid labels, values within limits, one
//! label per agent, references to blocks of the bundle; and ids not yet taken) and writes
//! them. Messages get `seq` numbers [`SEQ_GAP`](crate::SEQ_GAP) apart in the order given.
//!
//! What Engram does not model yet (tool rules of other systems, Letta-only settings) travels
//! as a JSON document per agent in the settings under [`EXTRAS_SETTING_PREFIX`]`<agent id>`, so
//! a later feature can make it live and exports can give it back.

use async_trait::async_trait;
use engram_core::memory::check_limit;
use engram_core::trust::ImportedToolStatus;
use engram_core::{
    Agent, AgentId, Block, BlockEdit, BlockId, Error, NewMessage, NewPassage, PassageId,
    PendingEndpoint, Result, Step, Tool,
};
use std::collections::{HashMap, HashSet};

/// Settings key prefix of an agent's agent-file extras (`agent_file_extras.<agent id>`): a JSON
/// object with what an imported file carried that Engram cannot run yet (custom tools with their
/// source and schema, tool rules, the original model settings, tags, groups).
pub const EXTRAS_SETTING_PREFIX: &str = "agent_file_extras.";

/// A block to create, with its recorded edits (oldest first).
#[derive(Clone, Debug, PartialEq)]
pub struct ImportBlock {
    /// The block row as it will be stored (fresh id, kept times).
    pub block: Block,
    /// Its edit history, oldest first; `block_id` is ignored (the row's id is used).
    pub history: Vec<BlockEdit>,
}

/// One message of an imported history.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportMessage {
    /// The message; `id` (else a fresh one) and `created_at` (else now) are kept.
    pub message: NewMessage,
    /// Whether it is in the context window.
    pub in_context: bool,
}

/// An agent to create.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportAgent {
    /// The agent row (fresh id, settings, summary, kept times).
    pub agent: Agent,
    /// Blocks to attach, in context order; each must be a block of the bundle.
    pub block_ids: Vec<BlockId>,
    /// The whole history, oldest first (stored `SEQ_GAP` apart in this order).
    pub messages: Vec<ImportMessage>,
    /// Archival passages.
    pub passages: Vec<NewPassage>,
    /// The ids to store `passages` under, one each in order (a copy of a database keeps
    /// them); empty: fresh ids. Errors: `Conflict` when one is taken.
    pub passage_ids: Vec<PassageId>,
    /// Agent-file extras kept under [`EXTRAS_SETTING_PREFIX`]; `None` stores nothing.
    pub extras: Option<serde_json::Value>,
    /// The agent's tags (Letta's `tags`), in order.
    pub tags: Vec<String>,
    /// Its step (usage) history as recorded by the Engram that exported it: ids as given
    /// (the importer mints fresh ones), `agent_id` is replaced by the agent's.
    pub steps: Vec<Step>,
    /// Base URLs the file asked for, stored inactive until the user accepts them (their
    /// `agent_id` is replaced by the agent's).
    pub pending_endpoints: Vec<PendingEndpoint>,
    /// Sleep-time settings, when the file gave some.
    pub sleeptime: Option<engram_core::SleeptimeSettings>,
    /// Which of `passages` were replaced, and by which (indexes into `passages`).
    pub superseded: Vec<ImportSupersession>,
}

/// A passage of an import that was no longer current when it was exported.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportSupersession {
    /// Its index in [`ImportAgent::passages`].
    pub passage: usize,
    /// The index of the passage that replaced it, if any.
    pub by: Option<usize>,
    /// Replaced or merged.
    pub kind: engram_core::SupersedeKind,
    /// When.
    pub at: engram_core::Timestamp,
}

/// Everything one import writes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImportBundle {
    /// Blocks, possibly shared by several agents of the bundle.
    pub blocks: Vec<ImportBlock>,
    /// Agents.
    pub agents: Vec<ImportAgent>,
    /// User tools the agents use. An import never changes a stored tool: a tool whose name
    /// is free is added as given (a file's tools untrusted); one identical to the stored tool
    /// of its name (same source and schema) is that tool; any other gets a free name
    /// (`name_2`, `name_3`, …; its `def` and the bundle's tool lists and rules follow).
    pub tools: Vec<Tool>,
}

/// What became of one tool of a bundle.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportedTool {
    /// The name the file gave it.
    pub requested_name: String,
    /// The tool as stored (for `Existing`, the stored tool the file's copy matched).
    pub tool: Tool,
    /// Added, added under a new name, or matched an existing tool.
    pub status: ImportedToolStatus,
}

/// The ids an import created, in bundle order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImportedIds {
    /// The new agents.
    pub agents: Vec<AgentId>,
    /// The new blocks.
    pub blocks: Vec<BlockId>,
    /// The bundle's tools, in bundle order.
    pub tools: Vec<ImportedTool>,
}

/// Checks what a bundle must satisfy before anything is written: every block's label is
/// usable and its value within its limit; every block an agent attaches is a block of the
/// bundle; no agent has two blocks with one label.
///
/// Errors: `Invalid` for a bad label or a value over its limit; `NotFound("block")` for an
/// attached block not in the bundle; `Conflict` for two blocks of one agent with one label.
pub fn check_bundle(bundle: &ImportBundle) -> Result<()> {
    for ib in &bundle.blocks {
        let b = &ib.block;
        engram_core::memory::check_label(&b.label)
            .map_err(|e| Error::invalid(format!("invalid block label {:?}: {e}", b.label)))?;
        check_limit("", &b.value, b.limit)
            .map_err(|e| Error::Invalid(format!("block {:?}: {e}", b.label)))?;
    }
    let labels: HashMap<&BlockId, &str> = bundle
        .blocks
        .iter()
        .map(|ib| (&ib.block.id, ib.block.label.as_str()))
        .collect();
    for ia in &bundle.agents {
        if !ia.passage_ids.is_empty() && ia.passage_ids.len() != ia.passages.len() {
            return Err(Error::invalid(format!(
                "{} passage ids for {} passages",
                ia.passage_ids.len(),
                ia.passages.len()
            )));
        }
        let mut seen = HashSet::new();
        for id in &ia.block_ids {
            let label = labels
                .get(id)
                .ok_or_else(|| Error::not_found("block", id.as_str()))?;
            if !seen.insert(*label) {
                return Err(Error::Conflict(format!(
                    "an agent cannot have two blocks labelled {label:?}"
                )));
            }
        }
    }
    Ok(())
}

/// The `n`-th name a bundle's tool `t` tries (see [`ImportBundle::tools`]): its own name
/// first, then `name_2`, `name_3`, … (cut to stay within 64 characters), its `def` and schema
/// following the name.
pub fn tool_candidate(t: &Tool, n: u32) -> Tool {
    if n <= 1 {
        return t.clone();
    }
    let suffix = format!("_{n}");
    let mut keep = t.name.len().min(64 - suffix.len());
    while !t.name.is_char_boundary(keep) {
        keep -= 1;
    }
    let name = format!("{}{suffix}", &t.name[..keep]);
    let mut r = t.clone();
    r.source_code = t
        .source_code
        .as_ref()
        .map(|src| src.replace(&format!("def {}(", t.name), &format!("def {name}(")));
    r.json_schema["name"] = serde_json::json!(name);
    r.name = name;
    r
}

/// Whether a bundle's tool is the stored tool `stored` (see [`ImportBundle::tools`]): the same
/// source and schema, and no right a file never gets (the network, unsandboxed runs) granted
/// to the stored one.
pub fn is_same_tool(stored: &Tool, candidate: &Tool) -> bool {
    stored.source_code == candidate.source_code
        && stored.json_schema == candidate.json_schema
        && !stored.network
        && !stored.allow_unsandboxed
}

/// What the status of a tool placed under its `n`-th candidate name is, when it is new.
pub fn added_status(n: u32) -> ImportedToolStatus {
    if n <= 1 {
        ImportedToolStatus::Added
    } else {
        ImportedToolStatus::Renamed
    }
}

/// Bulk import: writes a whole [`ImportBundle`] in one transaction.
#[async_trait]
pub trait ImportStore: Send + Sync {
    /// Writes `bundle` in one transaction and returns the ids it created, after
    /// [`check_bundle`]. Tools are placed first (see [`ImportBundle::tools`]; an agent's tool
    /// list and rules follow a rename), then blocks (each once, however many agents attach
    /// it) with their history, then each agent with its block links (in the given order),
    /// pending endpoints, messages (`seq` [`SEQ_GAP`](crate::SEQ_GAP) apart in the given
    /// order, `in_context` and times kept; a kept summary recorded as a compaction after the
    /// last message out of context), passages with their supersessions, sleep-time settings,
    /// steps, tags and extras. Times are truncated to microseconds.
    ///
    /// Errors (nothing is written): as [`check_bundle`]; `Invalid` for an empty passage or a
    /// supersession naming a passage outside the bundle; `Conflict` when an id exists.
    async fn import_bundle(&self, bundle: &ImportBundle) -> Result<ImportedIds>;
}

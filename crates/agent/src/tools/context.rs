//! What the tools of one step work on: the agent, its blocks as the step sees them, and the
//! writes queued for the step's commit.

use crate::Embedder;
use crate::python::PythonHost;
use engram_core::{Agent, Block, BlockId, NewPassage, Timestamp, Tool};
use engram_store::BlockWrite;
use engram_store_api::{Backend, FolderStore};
use std::collections::HashMap;
use std::sync::Arc;

/// The state tools work on during one step. Block edits are operations: each is tried on a
/// fresh read of the block plus the step's earlier edits (so a later call in the same step
/// sees an earlier one, and the model sees others' edits), and queued to be applied again to
/// the stored value when the step commits, in one transaction.
pub struct ToolContext<'a> {
    /// The agent running the tools.
    pub agent: &'a Agent,
    /// For searches and fresh reads of blocks.
    pub store: &'a dyn Backend,
    /// The agent's folders, where the backend keeps any (see [`FolderStore`]).
    pub folders: Option<&'a dyn FolderStore>,
    /// Working copies of the agent's blocks: the last read plus this step's queued edits;
    /// `version` is the stored version of that read.
    pub blocks: Vec<Block>,
    /// The version of each block the model read in this step's context window (what a
    /// whole-value rewrite by the model is based on).
    pub read_versions: HashMap<BlockId, u64>,
    /// Block writes to commit with the step.
    pub writes: Vec<BlockWrite>,
    /// Passages to commit with the step.
    pub passages: Vec<NewPassage>,
    /// The embedding model, when the agent has one.
    pub embedder: Option<&'a Embedder>,
    /// The reranker of archival search, when one is configured.
    pub reranker: Option<&'a dyn crate::Reranker>,
    /// The step's clock.
    pub now: Timestamp,
    /// The user tools attached to the agent.
    pub custom: &'a [Tool],
    /// Where user tools run.
    pub python: &'a Arc<PythonHost>,
    /// Calls tools of MCP servers (`None`: such calls fail, saying so).
    pub mcp: Option<&'a dyn crate::McpCaller>,
}

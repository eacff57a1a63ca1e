//! The pieces an import passes between its stages: the importer's options, the file's blocks
//! and agents resolved to one shape whatever the file's version, and the conversion's state.

use crate::extension::{AgentExt, BlockExt};
use crate::model::{BlockAf, EmbeddingConfigAf, LlmConfigAf, MessageAf, ToolAf};
use engram_core::{AgentId, EditId, Timestamp, Tool};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// What the importer needs to know about this Engram.
#[derive(Clone, Debug)]
pub struct ImportOptions<'a> {
    /// Names of Engram's built-in tools (`engram_agent::tools::BUILTIN_TOOLS`); only these are
    /// attached as runnable.
    pub builtin_tools: &'a [&'a str],
    /// Model handle for agents whose file has no `llm_config`.
    pub default_model: &'a str,
    /// "Now": the time of rows whose file gives none.
    pub now: Timestamp,
    /// The file's name as the user gave it (recorded as the origin of its tools and
    /// endpoints), e.g. `support.af`.
    pub file_name: &'a str,
}

/// One block of the file, wherever it was defined.
pub(super) struct BlockIn<'a> {
    pub(super) path: String,
    pub(super) block: &'a BlockAf,
    pub(super) ext: Option<&'a BlockExt>,
    pub(super) created_at: Option<&'a str>,
    pub(super) updated_at: Option<&'a str>,
}

/// One agent of the file, resolved to indices, whatever the version.
pub(super) struct AgentIn<'a> {
    /// Path prefix of the agent's fields (`` for v1, `agents[0].` for v2).
    pub(super) path: String,
    pub(super) local_id: String,
    pub(super) format: &'static str,
    pub(super) name: Option<&'a str>,
    pub(super) description: Option<&'a str>,
    pub(super) system: Option<&'a str>,
    pub(super) agent_type: Option<&'a str>,
    pub(super) llm: Option<&'a LlmConfigAf>,
    pub(super) embedding: Option<&'a EmbeddingConfigAf>,
    pub(super) tags: &'a [String],
    pub(super) tool_rules: &'a [Value],
    pub(super) blocks: Vec<usize>,
    pub(super) tools: Vec<&'a ToolAf>,
    pub(super) messages: &'a [MessageAf],
    pub(super) in_context: Vec<usize>,
    pub(super) created_at: Option<&'a str>,
    pub(super) updated_at: Option<&'a str>,
    pub(super) ext: Option<&'a AgentExt>,
    pub(super) extra: &'a Map<String, Value>,
}

/// Shared state of one conversion.
pub(super) struct Ctx<'a> {
    pub(super) opts: &'a ImportOptions<'a>,
    pub(super) warnings: Vec<String>,
    pub(super) agent_ids: HashMap<String, AgentId>,
    pub(super) edit_ids: HashMap<String, EditId>,
    /// User tools found in the file, by name.
    pub(super) tools: Vec<Tool>,
}

pub(super) type Resolved<'a> = (Vec<BlockIn<'a>>, Vec<AgentIn<'a>>, Shared<'a>);

/// File-level sections of a v2 file that belong to its agents (empty for v1).
#[derive(Clone, Copy, Default)]
pub(super) struct Shared<'a> {
    pub(super) groups: &'a [Value],
    pub(super) skills: &'a [Value],
    pub(super) files: &'a [Value],
    pub(super) sources: &'a [Value],
    pub(super) mcp_servers: &'a [Value],
}

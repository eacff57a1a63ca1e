//! The `engram` object Engram adds to the v2 files it writes: what Letta's format leaves out,
//! so that Engram → .af → Engram loses nothing. Letta ignores it.
//!
//! Shape (version 1):
//! ```json
//! "engram": {
//!   "version": 1,
//!   "agents": { "agent-0": { "loop_style": "classic", "max_steps": 50, "llm": {…},
//!       "embedding": null, "tools": ["send_message", …], "summary": "…",
//!       "created_at": "…", "updated_at": "…",
//!       "messages": [ {"role", "kind", "content", "reasoning", "tool_calls", "tool_call_id",
//!                      "tool_name", "run_id", "step_id", "in_context", "created_at"} … ],
//!       "passages": [ {"text", "tags", "created_at"} … ],
//!       "extras": {…} } },
//!   "blocks": { "block-0": { "created_at", "updated_at",
//!       "history": [ {"id": "edit-0", "editor": {…}, "old_value", "new_value", "created_at"} … ] } }
//! }
//! ```
//! `messages` is the whole recall history in order, not only the context window. Agent ids
//! inside editors and edit ids inside undo editors are file-local (`agent-0`, `edit-3`).

use crate::model::nullable;
use engram_core::{
    Editor, EmbeddingConfig, LlmConfig, LoopStyle, MessageKind, Role, Timestamp, ToolCall,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The extension version this crate writes and reads.
pub const EXTENSION_VERSION: u32 = 1;

/// The `engram` object of a v2 file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Extension {
    /// Must be [`EXTENSION_VERSION`].
    pub version: u32,
    /// Per agent, by file-local id.
    #[serde(default, deserialize_with = "nullable")]
    pub agents: BTreeMap<String, AgentExt>,
    /// Per block, by file-local id.
    #[serde(default, deserialize_with = "nullable")]
    pub blocks: BTreeMap<String, BlockExt>,
}

/// What Engram keeps of an agent beyond Letta's fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentExt {
    /// Loop style.
    pub loop_style: LoopStyle,
    /// Step limit per run.
    pub max_steps: u32,
    /// Model settings as Engram stores them.
    pub llm: LlmConfig,
    /// Embedding settings.
    #[serde(default)]
    pub embedding: Option<EmbeddingConfig>,
    /// Attached built-in tools, in order.
    #[serde(default, deserialize_with = "nullable")]
    pub tools: Vec<String>,
    /// The recursive summary.
    #[serde(default)]
    pub summary: Option<String>,
    /// When the agent was created.
    pub created_at: Timestamp,
    /// When its settings last changed.
    pub updated_at: Timestamp,
    /// The whole history, oldest first.
    #[serde(default, deserialize_with = "nullable")]
    pub messages: Vec<MessageExt>,
    /// Archival memory, oldest first.
    #[serde(default, deserialize_with = "nullable")]
    pub passages: Vec<PassageExt>,
    /// Agent-file extras kept from an earlier import (custom tools, tool rules…).
    #[serde(default)]
    pub extras: Option<serde_json::Value>,
}

/// One message of the full history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MessageExt {
    /// Role.
    pub role: Role,
    /// Kind.
    #[serde(default)]
    pub kind: MessageKind,
    /// Text as the model saw it.
    #[serde(default)]
    pub content: String,
    /// Reasoning.
    #[serde(default)]
    pub reasoning: Option<String>,
    /// Tool calls.
    #[serde(default, deserialize_with = "nullable")]
    pub tool_calls: Vec<ToolCall>,
    /// The call answered.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// The tool's name.
    #[serde(default)]
    pub tool_name: Option<String>,
    /// The run that wrote it.
    #[serde(default)]
    pub run_id: Option<String>,
    /// The step that wrote it.
    #[serde(default)]
    pub step_id: Option<String>,
    /// In the context window.
    pub in_context: bool,
    /// When.
    pub created_at: Timestamp,
}

/// One archival passage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PassageExt {
    /// Text.
    pub text: String,
    /// Tags, in order.
    #[serde(default, deserialize_with = "nullable")]
    pub tags: Vec<String>,
    /// When it was stored.
    pub created_at: Timestamp,
}

/// What Engram keeps of a block beyond Letta's fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockExt {
    /// When the block was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// Its version (bumped by every committed change); absent in files of older Engrams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// Its edits, oldest first.
    #[serde(default, deserialize_with = "nullable")]
    pub history: Vec<EditExt>,
}

/// One recorded edit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EditExt {
    /// File-local edit id (`edit-0`), referred to by undo editors.
    pub id: String,
    /// Who made it (agent and edit ids file-local).
    pub editor: Editor,
    /// Value before.
    pub old_value: String,
    /// Value after.
    pub new_value: String,
    /// The block's version before the edit, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_version: Option<u64>,
    /// The block's version after the edit, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_version: Option<u64>,
    /// When.
    pub created_at: Timestamp,
}

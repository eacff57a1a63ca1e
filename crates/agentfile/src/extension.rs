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
//!       "passages": [ {"text", "tags", "created_at", "embedding", "embedding_model"} … ],
//!       "steps": [ {"id", "run_id", "index", "model", "prompt_tokens", "completion_tokens",
//!                   "finish_reason", "started_at", "llm_ms", "step_ms"} … ],
//!       "extras": {…} } },
//!   "blocks": { "block-0": { "created_at", "updated_at",
//!       "history": [ {"id": "edit-0", "editor": {…}, "old_value", "new_value", "created_at"} … ] } },
//!   "sources": { "source-0": { "embedding": {…} | null } },
//!   "files": { "file-0": { "sha256", "page_starts": [1, 40, …],
//!       "chunks": [ {"text", "page", "heading", "line_start", "line_end"} … ] } },
//!   "file_windows": { "file_agent-0": { "offset": 1, "length": 100 } }
//! }
//! ```
//! `messages` is the whole recall history in order, not only the context window. Agent ids
//! inside editors and edit ids inside undo editors are file-local (`agent-0`, `edit-3`).
//!
//! A passage's `embedding` is its stored vector as standard base64 (RFC 4648, padded) of
//! little-endian IEEE-754 `f32`s — 4 bytes per dimension, so a 1,536-dimension vector takes
//! 8,192 characters instead of ~30,000 as a JSON number array — and `embedding_model` names
//! the embedding model that made it (`openai/text-embedding-3-small`). An import keeps the
//! vector only when the imported agent's embedding model is that same model; otherwise the
//! passage arrives without one (and is embedded again by the agent's own model).
//!
//! `steps` is the usage history (one row per LLM call: tokens, model, timings) that the
//! token and cost totals are computed from; step ids are minted afresh on import, and the
//! messages' `step_id`s follow. Both fields are absent in files of older Engrams.

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
    /// Per folder (Letta's `sources`), by file-local id (absent in files of older Engrams).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub sources: BTreeMap<String, SourceExt>,
    /// Per document (Letta's `files`), by file-local id.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub files: BTreeMap<String, FileExt>,
    /// Per agent-file link (Letta's `files_agents`), by file-local id: the window's lines.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub file_windows: BTreeMap<String, FileWindowExt>,
}

/// What Engram keeps of a folder beyond Letta's fields.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SourceExt {
    /// The model its passages are embedded with; `None`: searched by words alone.
    #[serde(default)]
    pub embedding: Option<EmbeddingConfig>,
}

/// What Engram keeps of a document beyond Letta's fields (whose `content` is its text): how
/// it was cut into passages, so an import needs no reading again.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FileExt {
    /// SHA-256 of the original bytes, lower-case hex (an unchanged re-upload is a no-op).
    #[serde(default)]
    pub sha256: String,
    /// First line (1-based) of each page, for paged documents.
    #[serde(default, deserialize_with = "nullable")]
    pub page_starts: Vec<u32>,
    /// Its passages, in order.
    #[serde(default, deserialize_with = "nullable")]
    pub chunks: Vec<ChunkExt>,
}

/// One passage of a document with where it came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChunkExt {
    /// Its text.
    pub text: String,
    /// Page (1-based) of a paged document.
    #[serde(default)]
    pub page: Option<u32>,
    /// The heading it sits under.
    #[serde(default)]
    pub heading: Option<String>,
    /// First line (1-based).
    pub line_start: u32,
    /// Last line (inclusive).
    pub line_end: u32,
}

/// The lines an agent's window on a document shows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FileWindowExt {
    /// First line shown (1-based).
    pub offset: u32,
    /// Lines shown.
    pub length: u32,
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
    /// Usage history, oldest first (absent in files of older Engrams).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub steps: Vec<StepExt>,
    /// Sleep-time settings (absent when never set, and in files of older Engrams).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleeptime: Option<engram_core::SleeptimeSettings>,
}

/// One recorded step (an LLM call): what it cost and how long it took.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepExt {
    /// The step id as stored by the exporting Engram (`step-<uuid>`); messages name it.
    pub id: String,
    /// The run it belonged to.
    pub run_id: String,
    /// 1-based position in the run.
    pub index: u32,
    /// Model handle called (`openai/gpt-4o-mini`).
    pub model: String,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Provider's finish reason.
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// When it started.
    pub started_at: Timestamp,
    /// Wall time of the LLM call, in milliseconds.
    pub llm_ms: u64,
    /// Wall time of the whole step, in milliseconds.
    pub step_ms: u64,
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
    /// The stored vector: base64 of little-endian `f32`s (see the module docs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<String>,
    /// The embedding model that made `embedding` (`provider/model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_model: Option<String>,
    /// Set when the fact was replaced (a history entry, not a current passage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded: Option<SupersededExt>,
}

/// How a passage stopped being current.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SupersededExt {
    /// Replaced or merged.
    pub kind: engram_core::SupersedeKind,
    /// When.
    pub at: Timestamp,
    /// The index (in the agent's `passages`) of the passage that replaced it.
    #[serde(default)]
    pub by: Option<usize>,
}

/// Encodes a vector for [`PassageExt::embedding`]: base64 of little-endian `f32`s.
pub fn encode_vector(v: &[f32]) -> String {
    use base64::Engine as _;
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes [`PassageExt::embedding`]. Errors (a message for the file's error): text that is
/// not base64, a length that is not a whole number of `f32`s, no dimensions, or a value that
/// is NaN or infinite.
pub fn decode_vector(text: &str) -> Result<Vec<f32>, String> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| format!("not base64: {e}"))?;
    if bytes.is_empty() || bytes.len() % 4 != 0 {
        return Err(format!(
            "{} bytes is not a whole, non-zero number of 4-byte f32 values",
            bytes.len()
        ));
    }
    let v: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if v.iter().any(|x| !x.is_finite()) {
        return Err("a value is NaN or infinite".into());
    }
    Ok(v)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_survive_base64_exactly() {
        let v = vec![0.0, -1.5, 3.25e-7, f32::MAX, f32::MIN_POSITIVE];
        let text = encode_vector(&v);
        assert_eq!(text.len(), 28, "4 bytes a dimension, base64-padded");
        assert_eq!(decode_vector(&text).unwrap(), v);
    }

    #[test]
    fn bad_vectors_are_refused_with_a_reason() {
        assert!(decode_vector("not base64!").unwrap_err().contains("base64"));
        assert!(decode_vector("AAA=").unwrap_err().contains("2 bytes"));
        assert!(decode_vector("").is_err());
        let nan = encode_vector(&[f32::NAN]);
        assert!(decode_vector(&nan).unwrap_err().contains("NaN"));
    }
}

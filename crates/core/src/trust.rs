//! Trust: where a tool came from, which source the user approved, and endpoints that wait for
//! the user's approval (DESIGN.md §8b).
//!
//! Code and endpoints that arrive in an agent file are untrusted: a tool runs only while the
//! SHA-256 of its current source equals the hash the user trusted, and a file's base URL is
//! kept aside until the user accepts it. Tools the user writes in Engram are trusted as written.

use crate::{AgentId, Timestamp};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The SHA-256 of a tool's source, as 64 lowercase hex digits (the hash over the UTF-8 bytes
/// exactly as stored, no normalisation: any change of the text changes the hash).
pub fn source_hash(source: &str) -> String {
    format!("{:x}", Sha256::digest(source.as_bytes()))
}

/// Where a user tool came from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolOrigin {
    /// Written by the user in Engram (CLI, window, or the authenticated REST API).
    User,
    /// Brought by an imported agent file.
    AgentFile {
        /// The file's name as given at import (e.g. `support.af`; `an agent file` when unknown).
        file: String,
        /// The name of the agent in the file that carried the tool.
        agent: String,
    },
    /// Stored before Engram recorded where tools came from; treated like a file's tool.
    #[default]
    Unknown,
}

impl ToolOrigin {
    /// Words for people: `you`, `agent file support.af (agent Ada)`, `an earlier version of
    /// Engram`.
    pub fn describe(&self) -> String {
        match self {
            Self::User => "you".into(),
            Self::AgentFile { file, agent } => format!("agent file {file} (agent {agent})"),
            Self::Unknown => "an earlier version of Engram (origin not recorded)".into(),
        }
    }
}

/// Which of an agent's model settings an endpoint is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
pub enum EndpointKind {
    /// The chat model (`llm.base_url`).
    Llm,
    /// The embedding model (`embedding.base_url`).
    Embedding,
}

impl EndpointKind {
    /// `"llm"` or `"embedding"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Llm => "llm",
            Self::Embedding => "embedding",
        }
    }
}

/// A base URL an imported file set for an agent, kept inactive until the user accepts it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct PendingEndpoint {
    /// The agent it is for.
    pub agent_id: AgentId,
    /// Chat model or embedding model.
    pub kind: EndpointKind,
    /// The URL the file asked for, as written.
    pub base_url: String,
    /// The file it came from (its name as given at import).
    pub source: String,
    /// When it was imported.
    pub created_at: Timestamp,
}

/// What an import did with one tool of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
pub enum ImportedToolStatus {
    /// Stored under the file's name.
    Added,
    /// Stored under a new name, because a different tool already had the file's name.
    Renamed,
    /// Identical (source and schema) to a tool already stored under that name; that tool is
    /// used and nothing was written.
    Existing,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_sha256_hex_of_the_exact_text() {
        assert_eq!(
            source_hash(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_ne!(source_hash("def f(): pass"), source_hash("def f(): pass "));
    }

    #[test]
    fn origins_read_and_write_as_tagged_json() {
        let o = ToolOrigin::AgentFile {
            file: "x.af".into(),
            agent: "Ada".into(),
        };
        let v = serde_json::to_value(&o).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"kind": "agent_file", "file": "x.af", "agent": "Ada"})
        );
        assert_eq!(serde_json::from_value::<ToolOrigin>(v).unwrap(), o);
        assert_eq!(o.describe(), "agent file x.af (agent Ada)");
    }
}

//! Prefixed string ids in Letta's form (`agent-<uuid>`, `block-<uuid>`, …).
//!
//! Ids are opaque strings: imported files may carry ids of other shapes, so parsing never
//! rejects a string; only [`new`](AgentId::new) decides the shape of ids Engram mints.

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ts_rs::TS)]
        #[serde(transparent)]
        #[ts(export)]
        pub struct $name(String);

        impl $name {
            /// The prefix of ids this type mints, without the dash.
            pub const PREFIX: &'static str = $prefix;

            /// A fresh id: `"<prefix>-<uuid v4>"`.
            pub fn new() -> Self {
                Self(format!("{}-{}", $prefix, uuid::Uuid::new_v4()))
            }

            /// The id as stored and sent on the wire.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(s)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_owned())
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

id_type!(
    /// Identifies an agent: `agent-<uuid>`.
    AgentId, "agent");
id_type!(
    /// Identifies a core-memory block: `block-<uuid>`.
    BlockId, "block");
id_type!(
    /// Identifies a message in recall memory: `message-<uuid>`.
    MessageId, "message");
id_type!(
    /// Identifies an archival passage: `passage-<uuid>`.
    PassageId, "passage");
id_type!(
    /// Identifies a run (one user message and the steps it started): `run-<uuid>`.
    RunId, "run");
id_type!(
    /// Identifies one step (one LLM call and its tool calls): `step-<uuid>`.
    StepId, "step");
id_type!(
    /// Identifies one recorded edit of a block: `edit-<uuid>`.
    EditId, "edit");
id_type!(
    /// Identifies a tool: `tool-<uuid>` (built-ins: `tool-builtin-<name>`).
    ToolId, "tool");
id_type!(
    /// Identifies a configured MCP server: `mcp_server-<uuid>` (Letta's prefix).
    McpServerId, "mcp_server");
id_type!(
    /// Identifies one sleep-time pass over an agent's memory: `sleeptime_pass-<uuid>`.
    PassId, "sleeptime_pass");
id_type!(
    /// Identifies a folder of documents agents can read: `source-<uuid>` (Letta's prefix,
    /// from when folders were called sources).
    FolderId, "source");
id_type!(
    /// Identifies one file of a folder: `file-<uuid>`.
    FileId, "file");
id_type!(
    /// Identifies an MCP client's write waiting for the user's approval: `client_write-<uuid>`.
    ClientWriteId, "client_write");
id_type!(
    /// Identifies a user of a shared server: `user-<uuid>`.
    UserId, "user");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_ids_carry_their_prefix_and_differ() {
        let a = AgentId::new();
        let b = AgentId::new();
        assert!(a.as_str().starts_with("agent-"));
        assert_eq!(a.as_str().len(), "agent-".len() + 36);
        assert_ne!(a, b);
    }

    #[test]
    fn ids_serialize_as_plain_strings() {
        let id = BlockId::from("block-0");
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"block-0\"");
    }
}

//! A memory write by an MCP client that waits for the user's approval.
//!
//! A client of Engram's memory server (`engram mcp serve`) can be set so that its writes wait
//! for the user: the write is not applied but stored as a [`PendingClientWrite`] that the
//! window shows beside the tool calls waiting for approval. Approving applies it then, to the
//! block as it is at that moment (so an edit made meanwhile that conflicts with it refuses it,
//! as any stale edit is refused); denying answers the client with a tool error; without an
//! answer in time the write is withdrawn. The row is stored, so a reload of the window still
//! shows it; it lives only while the memory server that asked waits for the answer.

use crate::{AgentId, ClientWriteId, Timestamp};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// A client's write waiting for the user's decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct PendingClientWrite {
    /// Its id, named when deciding.
    pub id: ClientWriteId,
    /// The client's name (the author the edit will carry in block history).
    pub client: String,
    /// The agent whose memory it would change.
    pub agent_id: AgentId,
    /// That agent's name when the write was asked for.
    pub agent_name: String,
    /// The MCP tool called: `memory` or `add_memory`.
    pub tool: String,
    /// The command: `create`, `str_replace`, `insert`, `delete`, `rename`, or `add_memory`.
    pub action: String,
    /// The file as the client named it (`/memories/human.md`); `archival memory` for
    /// `add_memory`.
    pub path: String,
    /// The block's label, when it names a block.
    #[serde(default)]
    #[ts(optional)]
    pub label: Option<String>,
    /// What would change, in a sentence (e.g. "rename to /memories/notes.md").
    pub summary: String,
    /// The text before (the block's value when the write was asked for); `None` for a new file
    /// or a note.
    #[serde(default)]
    #[ts(optional)]
    pub before: Option<String>,
    /// The text after, as it would be if applied now; `None` when the file would go.
    #[serde(default)]
    #[ts(optional)]
    pub after: Option<String>,
    /// When the client asked.
    pub requested_at: Timestamp,
    /// When the client stops waiting: the write is withdrawn then.
    pub expires_at: Timestamp,
}

/// What deciding a [`PendingClientWrite`] did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ClientWriteOutcome {
    /// `applied`, `refused` (the edit no longer applies to the block as it is now; nothing
    /// was written) or `denied`.
    pub status: String,
    /// What the client is told: the tool's result, or why nothing was written.
    pub message: String,
}

/// What the client reads when the user declined its write.
pub fn declined_message(reason: Option<&str>) -> String {
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) => {
            format!("The user declined this write, so nothing was written. Their reason: {r}")
        }
        None => "The user declined this write, so nothing was written.".into(),
    }
}

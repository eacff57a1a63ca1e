//! When each client of the memory server was last seen, and how it came (stdio or HTTP): one
//! setting per client, so servers in several processes never overwrite each other's entries.
//! Servers note a client at most once a minute (see `engram_mcp_memory`), so this costs no
//! write per call.

use crate::rooms::MemoryServer;
use engram_core::{Error, Result, Timestamp};
use serde::{Deserialize, Serialize};

/// The settings key prefix; the client's name follows.
const SEEN_PREFIX: &str = "mcp_memory_seen.";

/// A client the memory server served.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct ClientSeen {
    /// The client's name (the author of its writes).
    pub name: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// When it last made a request (to the minute).
    pub last_seen: Timestamp,
}

impl MemoryServer<'_> {
    /// Records that client `name` made a request now over `transport` (`stdio` or `http`).
    /// Errors: `storage`.
    pub fn note_client(self, name: &str, transport: &str) -> Result<()> {
        let seen = ClientSeen {
            name: name.to_owned(),
            transport: transport.to_owned(),
            last_seen: chrono::Utc::now(),
        };
        let json = serde_json::to_string(&seen).map_err(|e| Error::Internal(e.to_string()))?;
        self.engram
            .store
            .settings()
            .set(&format!("{SEEN_PREFIX}{name}"), &json)
    }

    /// Every client seen, most recent first. Unreadable entries are skipped.
    /// Errors: `storage`.
    pub fn clients_seen(self) -> Result<Vec<ClientSeen>> {
        let mut seen: Vec<ClientSeen> = self
            .engram
            .store
            .settings()
            .with_prefix(SEEN_PREFIX)?
            .into_iter()
            .filter_map(|(_, v)| serde_json::from_str(&v).ok())
            .collect();
        seen.sort_by_key(|s| std::cmp::Reverse(s.last_seen));
        Ok(seen)
    }
}

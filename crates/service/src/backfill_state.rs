//! Which agents' missing vectors are being filled in, and which wait for the vectors of
//! passages just written: shared by the background backfills (`embeddings`) and the searches
//! that wait for them.

use engram_core::AgentId;
use std::collections::HashMap;
use std::sync::Mutex;

/// Every agent's background backfill, shared by the tasks and by the searches that wait for
/// one.
pub(crate) struct Backfills {
    /// Agents being backfilled now, each with whether more was asked for meanwhile (then the
    /// backfill runs again when it ends, so rows committed during its last batch are not left
    /// behind).
    pub running: Mutex<HashMap<AgentId, bool>>,
    /// Agents with passages written since their backfill last ended, and how many.
    pub fresh: Mutex<HashMap<AgentId, u64>>,
    /// Agents whose backfill after a run is due soon (see `Engram::backfill_after_run`).
    pub due: Mutex<std::collections::HashSet<AgentId>>,
    /// Counts backfills that ended, for whoever waits for one.
    pub ended: tokio::sync::watch::Sender<u64>,
}

impl Default for Backfills {
    fn default() -> Self {
        Self {
            running: Mutex::default(),
            fresh: Mutex::default(),
            due: Mutex::default(),
            ended: tokio::sync::watch::channel(0).0,
        }
    }
}

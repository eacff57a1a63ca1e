//! Leases per agent for the storage interface's `LeaseStore`, and the claims of sleep-time
//! passes (`SleeptimeStore::claim_pass`), kept in memory.
//!
//! A SQLite database is used by one process at a time for runs (the desktop app is a single
//! instance), so the table lives in memory, one per database file and process: every
//! [`Store`](crate::Store) handle this process opens on the file shares it (an in-memory
//! database has its own). Times come from the machine's clock. Fencing tokens start at 1 for
//! each agent in each process: no holder outlives the process that gave it its token, and a
//! pass's claim ends with the process that ran it.

use engram_core::{AgentId, Error, PassId, Timestamp};
use engram_store_api::{Lease, LeaseGrant};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// The lease table of each database file this process has open.
static TABLES: Mutex<Vec<(PathBuf, Weak<Mutex<Table>>)>> = Mutex::new(Vec::new());

/// The lease table of the database at `path` (shared with every other open handle on it), or a
/// table of its own for an in-memory database (`None`).
pub(crate) fn table_for(path: Option<&Path>) -> Arc<Mutex<Table>> {
    let Some(path) = path else {
        return Arc::default();
    };
    let path = path.canonicalize().unwrap_or_else(|_| path.to_owned());
    let mut tables = TABLES.lock().unwrap_or_else(|p| p.into_inner());
    tables.retain(|(_, t)| t.strong_count() > 0);
    if let Some(table) = tables
        .iter()
        .find(|(p, _)| *p == path)
        .and_then(|(_, t)| t.upgrade())
    {
        return table;
    }
    let table = Arc::default();
    tables.push((path, Arc::downgrade(&table)));
    table
}

/// The current lease of each agent that ever had one since the store was opened.
#[derive(Debug, Default)]
pub(crate) struct Table {
    rows: HashMap<AgentId, Lease>,
    /// The pass running for each agent, until when.
    passes: HashMap<AgentId, (PassId, Timestamp)>,
}

fn plus(now: Timestamp, ttl: Duration) -> Timestamp {
    now + chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::MAX)
}

impl Table {
    /// Grants the lease when nobody holds it at `now`, with the next token.
    pub(crate) fn acquire(
        &mut self,
        agent: &AgentId,
        holder: &str,
        ttl: Duration,
        now: Timestamp,
    ) -> LeaseGrant {
        let token = match self.rows.get(agent) {
            Some(held) if held.expires_at > now => {
                return LeaseGrant::Busy {
                    holder: held.holder.clone(),
                    expires_at: held.expires_at,
                };
            }
            Some(old) => old.token + 1,
            None => 1,
        };
        let lease = Lease {
            agent_id: agent.clone(),
            holder: holder.to_owned(),
            token,
            expires_at: plus(now, ttl),
        };
        self.rows.insert(agent.clone(), lease.clone());
        LeaseGrant::Granted(lease)
    }

    /// The stored lease when `lease` is still the current, unexpired one at `now`.
    pub(crate) fn current(&mut self, lease: &Lease, now: Timestamp) -> Option<&mut Lease> {
        self.rows
            .get_mut(&lease.agent_id)
            .filter(|held| held.token == lease.token && held.expires_at > now)
    }

    /// Extends `lease` to `ttl` from `now` while it is current.
    pub(crate) fn renew(&mut self, lease: &Lease, ttl: Duration, now: Timestamp) -> Option<Lease> {
        let held = self.current(lease, now)?;
        held.expires_at = plus(now, ttl);
        Some(held.clone())
    }

    /// Ends `lease` at `now` while it is current.
    pub(crate) fn release(&mut self, lease: &Lease, now: Timestamp) {
        if let Some(held) = self.current(lease, now) {
            held.expires_at = now;
        }
    }

    /// Claims `agent` for `pass` until `ttl` after `now`, unless another pass holds an
    /// unexpired claim.
    pub(crate) fn claim_pass(
        &mut self,
        agent: &AgentId,
        pass: &PassId,
        ttl: Duration,
        now: Timestamp,
    ) -> bool {
        if let Some((held, until)) = self.passes.get(agent)
            && held != pass
            && *until > now
        {
            return false;
        }
        self.passes
            .insert(agent.clone(), (pass.clone(), plus(now, ttl)));
        true
    }

    /// Ends `pass`'s claim on `agent`, if it holds it.
    pub(crate) fn release_pass(&mut self, agent: &AgentId, pass: &PassId) {
        if self.passes.get(agent).is_some_and(|(held, _)| held == pass) {
            self.passes.remove(agent);
        }
    }
}

/// The error for a lease that is no longer the agent's current, unexpired one.
pub(crate) fn lost(lease: &Lease) -> Error {
    Error::LeaseLost {
        agent: lease.agent_id.to_string(),
        token: lease.token,
    }
}

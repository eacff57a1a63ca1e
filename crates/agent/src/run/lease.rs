//! The agent's lease while a run works on it: taken when the run starts (after the
//! process's own turn, so runs of one process queue on the turn and never poll), renewed in
//! the background, given back when the run ends. Every step the run commits names the lease,
//! and the store refuses the commit once the lease is no longer current — a runtime paused
//! past its lease, or cut off from the database while another replica took the agent over,
//! writes nothing more.
//!
//! On the desktop's SQLite file the lease table is the process's own, so the turn alone decides
//! and the lease is always free; on a database shared by replicas it is what keeps one run per
//! agent across all of them.

use crate::outcome::LoopSettings;
use engram_core::{AgentId, Error, Result, RunId};
use engram_store_api::{Lease, LeaseGrant, LeaseStore};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The longest pause between two tries for a busy lease.
const MAX_POLL: Duration = Duration::from_millis(250);

/// A lease held by a run, or by a change to the conversation that must not interleave with a
/// run on another replica (see the module docs). Dropping it stops the renewals and gives the
/// lease back in the background; [`release`](Self::release) gives it back at once.
pub struct LeaseHold {
    lease: Lease,
    store: Arc<dyn LeaseStore>,
    renewer: tokio::task::JoinHandle<()>,
    released: AtomicBool,
}

/// Who holds a lease, for people reading the table: this process and the run.
fn holder(run: &RunId) -> String {
    format!("engram pid {} {run}", std::process::id())
}

impl LeaseHold {
    /// Takes `agent`'s lease for `run`, waiting while another holder has it, up to
    /// `settings.lease_wait`; then renews it every third of `settings.lease_ttl`.
    ///
    /// Errors: `AgentBusy` when the wait ends with the lease still held; the store's
    /// (`NotFound("agent")`, `Storage`).
    pub(crate) async fn take(
        store: Arc<dyn LeaseStore>,
        agent: &AgentId,
        run: &RunId,
        settings: &LoopSettings,
    ) -> Result<Self> {
        let me = holder(run);
        let started = Instant::now();
        let mut pause = Duration::from_millis(10);
        let lease = loop {
            match store.acquire_lease(agent, &me, settings.lease_ttl).await? {
                LeaseGrant::Granted(lease) => break lease,
                LeaseGrant::Busy { holder, .. } => {
                    let waited = started.elapsed();
                    if waited >= settings.lease_wait {
                        return Err(Error::AgentBusy {
                            agent: agent.to_string(),
                            holder,
                            waited_ms: waited.as_millis() as u64,
                        });
                    }
                    tokio::time::sleep(pause.min(settings.lease_wait - waited)).await;
                    pause = (pause * 2).min(MAX_POLL);
                }
            }
        };
        Ok(Self::held(store, lease, settings))
    }

    /// [`take`](Self::take) without waiting: `None` while another holder has the lease.
    /// Errors: the store's.
    pub(crate) async fn try_take(
        store: Arc<dyn LeaseStore>,
        agent: &AgentId,
        run: &RunId,
        settings: &LoopSettings,
    ) -> Result<Option<Self>> {
        Ok(
            match store
                .acquire_lease(agent, &holder(run), settings.lease_ttl)
                .await?
            {
                LeaseGrant::Granted(lease) => Some(Self::held(store, lease, settings)),
                LeaseGrant::Busy { .. } => None,
            },
        )
    }

    /// A granted lease, renewed from now on.
    fn held(store: Arc<dyn LeaseStore>, lease: Lease, settings: &LoopSettings) -> Self {
        let renewer = tokio::spawn(renew(store.clone(), lease.clone(), settings.lease_ttl));
        Self {
            lease,
            store,
            renewer,
            released: AtomicBool::new(false),
        }
    }

    /// The lease, for the run's commits (and the fenced writes of its holder).
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// Stops the renewals and gives the lease back now, so the next run (here or on another
    /// replica) need not wait for it to expire; once only (a second call does nothing). A
    /// failure is logged: the lease then expires. Nothing may commit under the lease after.
    pub async fn release(&self) {
        self.renewer.abort();
        if self.released.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Err(e) = self.store.release_lease(&self.lease).await {
            tracing::warn!(agent_id = %self.lease.agent_id, error = %e, "could not give the agent's lease back; it expires on its own");
        }
    }
}

impl Drop for LeaseHold {
    fn drop(&mut self) {
        self.renewer.abort();
        if *self.released.get_mut() {
            return;
        }
        // A run that ended early (an error, a dropped future) still gives the lease back.
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let (store, lease) = (self.store.clone(), self.lease.clone());
            handle.spawn(async move {
                let _ = store.release_lease(&lease).await;
            });
        }
    }
}

/// Renews `lease` every third of `ttl` until it is lost (then the run's next commit is refused,
/// which ends the run) or the task is aborted.
async fn renew(store: Arc<dyn LeaseStore>, lease: Lease, ttl: Duration) {
    let every = ttl / 3;
    loop {
        tokio::time::sleep(every).await;
        if let Err(e) = store.renew_lease(&lease, ttl).await {
            tracing::warn!(agent_id = %lease.agent_id, error = %e, "the agent's lease could not be renewed; the run's next commit will be refused if it was lost");
            if matches!(e, Error::LeaseLost { .. }) {
                return;
            }
        }
    }
}

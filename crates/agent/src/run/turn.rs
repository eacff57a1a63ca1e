//! One run per agent at a time. The runtime is the one owner of "who holds this agent": a
//! run, an approval decision or a change to the conversation takes the agent's [`Turn`], and
//! the next waits until it is dropped. A run queued behind another holds a [`Claim`] from the
//! moment it is accepted, so "is the agent busy" counts it before it gets the turn.

use engram_core::{AgentId, Error, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// One agent's turn: the lock, and how many claims hold or wait for it.
#[derive(Default)]
struct TurnSlot {
    lock: Arc<tokio::sync::Mutex<()>>,
    claims: AtomicUsize,
}

/// A place in the agent's queue (see `Runtime::claim`): the agent counts as busy while it
/// lives. [`turn`](Self::turn) waits for the turn itself.
pub struct Claim {
    agent: AgentId,
    slot: Arc<TurnSlot>,
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.slot.claims.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Claim {
    /// The agent claimed.
    pub fn agent(&self) -> &AgentId {
        &self.agent
    }

    /// Waits for the agent's turn. Claims get it in the order they wait for it.
    pub async fn turn(self) -> Turn {
        let guard = self.slot.lock.clone().lock_owned().await;
        Turn {
            _guard: guard,
            claim: self,
        }
    }

    /// The agent's turn if this is its only claim (nothing else runs, waits or changes the
    /// conversation), else `None`: for a run that rewrites the conversation, which must not
    /// overtake or be overtaken.
    pub fn turn_alone(self) -> Option<Turn> {
        if self.slot.claims.load(Ordering::Acquire) != 1 {
            return None;
        }
        let guard = self.slot.lock.clone().try_lock_owned().ok()?;
        Some(Turn {
            _guard: guard,
            claim: self,
        })
    }
}

/// An agent's turn, held (see `Runtime::turn`): while it lives, no other run or approval
/// decision of that agent runs. Dropping it lets the next one go.
pub struct Turn {
    // Declared first so the lock is released before the claim stops counting: nothing can
    // see the agent free while the lock is still held.
    _guard: tokio::sync::OwnedMutexGuard<()>,
    claim: Claim,
}

impl Turn {
    /// The agent whose turn this is.
    pub fn agent(&self) -> &AgentId {
        &self.claim.agent
    }
}

/// Every agent's turn slot.
#[derive(Default)]
pub(super) struct Turns {
    slots: Mutex<HashMap<AgentId, Arc<TurnSlot>>>,
}

impl Turns {
    /// See [`Runtime::claim`](super::Runtime::claim).
    pub fn claim(&self, agent_id: &AgentId) -> Result<Claim> {
        let slot = {
            let mut slots = self
                .slots
                .lock()
                .map_err(|_| Error::Internal("run registry poisoned".into()))?;
            slots.entry(agent_id.clone()).or_default().clone()
        };
        slot.claims.fetch_add(1, Ordering::AcqRel);
        Ok(Claim {
            agent: agent_id.clone(),
            slot,
        })
    }

    /// See [`Runtime::is_busy`](super::Runtime::is_busy).
    pub fn is_busy(&self, agent_id: &AgentId) -> bool {
        self.slots
            .lock()
            .ok()
            .and_then(|s| {
                s.get(agent_id)
                    .map(|s| s.claims.load(Ordering::Acquire) > 0)
            })
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_queued_claim_keeps_the_agent_busy_until_it_is_dropped() {
        let turns = Turns::default();
        let (a, b) = (AgentId::from("agent-a"), AgentId::from("agent-b"));
        let first = turns.claim(&a).unwrap();
        let second = turns.claim(&a).unwrap();
        let other = turns.claim(&b).unwrap();
        assert!(turns.is_busy(&a) && turns.is_busy(&b));
        // Two claims of one agent: neither may take the turn alone (a rewrite would race
        // the other run), and the lock is still free.
        let first = first.turn().await;
        assert!(turns.claim(&a).unwrap().turn_alone().is_none());
        assert!(other.turn_alone().is_some(), "another agent is not held up");
        drop(first);
        // The queued claim alone gets the turn; once it goes, the agent is free.
        let second = second.turn_alone().expect("the only claim, the lock free");
        assert_eq!(second.agent(), &a);
        drop(second);
        assert!(!turns.is_busy(&a) && !turns.is_busy(&b));
        assert!(turns.claim(&a).unwrap().turn_alone().is_some());
    }
}

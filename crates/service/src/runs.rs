//! The run registry: every run in flight (or queued for its agent's turn), keyed by its run
//! id, with its cancel token and what it streamed so far.
//!
//! One registry serves every transport: the caller that started a run reads its events as
//! they come; a window that joins late ([`Registry::attach`], e.g. after a reload) gets what
//! the run streamed so far (text deltas merged, so this grows with the reply, not its token
//! count), then the live tail; any transport stops a run by its id. An entry lives exactly as
//! long as the run's [`Entry`] guard, so a run that ends, fails or is dropped leaves no trace.

use engram_core::{AgentId, RunEvent, RunId, Timestamp};
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A run in the registry, as [`Runs::running`](crate::Runs::running) lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningRun {
    /// The run (the id its events and stored messages carry).
    pub run_id: RunId,
    /// The agent it runs.
    pub agent_id: AgentId,
    /// When it was started (it may still wait for an earlier run of its agent).
    pub started_at: Timestamp,
}

/// A run's events for one reader: what it streamed before the reader joined, then each later
/// event, ending when the run ends (after its `done` event). Read with [`next`](Self::next)
/// or as a [`futures::Stream`].
#[derive(Debug)]
pub struct RunEvents {
    run_id: RunId,
    agent_id: AgentId,
    so_far: VecDeque<RunEvent>,
    live: mpsc::UnboundedReceiver<RunEvent>,
}

impl RunEvents {
    pub(crate) fn new(
        run_id: RunId,
        agent_id: AgentId,
        so_far: impl IntoIterator<Item = RunEvent>,
        live: mpsc::UnboundedReceiver<RunEvent>,
    ) -> Self {
        Self {
            run_id,
            agent_id,
            so_far: so_far.into_iter().collect(),
            live,
        }
    }

    /// The run these events belong to.
    pub fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// The agent that runs.
    pub fn agent_id(&self) -> &AgentId {
        &self.agent_id
    }

    /// The next event; `None` once the run ended.
    pub async fn next(&mut self) -> Option<RunEvent> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<RunEvent>> {
        match self.so_far.pop_front() {
            Some(e) => Poll::Ready(Some(e)),
            None => self.live.poll_recv(cx),
        }
    }
}

impl futures::Stream for RunEvents {
    type Item = RunEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<RunEvent>> {
        self.get_mut().poll_event(cx)
    }
}

struct Slot {
    key: u64,
    run_id: RunId,
    agent_id: AgentId,
    started_at: Timestamp,
    token: CancellationToken,
    events: Vec<RunEvent>,
    watchers: Vec<mpsc::UnboundedSender<RunEvent>>,
}

/// The runs in flight, in the order they were started.
#[derive(Default)]
pub(crate) struct Registry {
    slots: Mutex<Vec<Slot>>,
    next_key: AtomicU64,
}

/// A run's place in the registry; dropping it removes the run (and ends every attached
/// reader's stream).
pub(crate) struct Entry<'a> {
    registry: &'a Registry,
    key: u64,
}

impl Drop for Entry<'_> {
    fn drop(&mut self) {
        if let Ok(mut slots) = self.registry.slots.lock() {
            slots.retain(|s| s.key != self.key);
        }
    }
}

impl Entry<'_> {
    /// Records an event of the run and hands it to every attached reader.
    pub(crate) fn push(&self, event: &RunEvent) {
        self.registry.with_slot(self.key, |slot| {
            slot.watchers.retain(|w| w.send(event.clone()).is_ok());
            match (slot.events.last_mut(), event) {
                (Some(RunEvent::TextDelta { delta: a }), RunEvent::TextDelta { delta: b })
                | (
                    Some(RunEvent::ReasoningDelta { delta: a }),
                    RunEvent::ReasoningDelta { delta: b },
                ) => a.push_str(b),
                _ => slot.events.push(event.clone()),
            }
        });
    }
}

impl Registry {
    /// Adds a run of `agent` stored as `run_id`, stopped through `token`.
    pub(crate) fn register(
        &self,
        agent: &AgentId,
        run_id: RunId,
        token: CancellationToken,
    ) -> Entry<'_> {
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut slots) = self.slots.lock() {
            slots.push(Slot {
                key,
                run_id,
                agent_id: agent.clone(),
                started_at: chrono::Utc::now(),
                token,
                events: Vec::new(),
                watchers: Vec::new(),
            });
        }
        Entry {
            registry: self,
            key,
        }
    }

    fn with_slot(&self, key: u64, f: impl FnOnce(&mut Slot)) {
        if let Ok(mut slots) = self.slots.lock()
            && let Some(slot) = slots.iter_mut().find(|s| s.key == key)
        {
            f(slot);
        }
    }

    /// Joins the first run (oldest) that `pick` accepts: its events so far, then the rest.
    pub(crate) fn attach(&self, pick: impl Fn(&RunId, &AgentId) -> bool) -> Option<RunEvents> {
        let mut slots = self.slots.lock().ok()?;
        let slot = slots.iter_mut().find(|s| pick(&s.run_id, &s.agent_id))?;
        // Under the lock, so no event falls between the copy and the subscription.
        let (tx, rx) = mpsc::unbounded_channel();
        slot.watchers.push(tx);
        Some(RunEvents::new(
            slot.run_id.clone(),
            slot.agent_id.clone(),
            slot.events.clone(),
            rx,
        ))
    }

    /// Cancels every run `pick` accepts; returns how many.
    pub(crate) fn cancel(&self, pick: impl Fn(&RunId, &AgentId) -> bool) -> usize {
        let Ok(slots) = self.slots.lock() else {
            return 0;
        };
        slots
            .iter()
            .filter(|s| pick(&s.run_id, &s.agent_id))
            .map(|s| s.token.cancel())
            .count()
    }

    /// The runs `pick` accepts, oldest first.
    pub(crate) fn list(&self, pick: impl Fn(&AgentId) -> bool) -> Vec<RunningRun> {
        let Ok(slots) = self.slots.lock() else {
            return Vec::new();
        };
        slots
            .iter()
            .filter(|s| pick(&s.agent_id))
            .map(|s| RunningRun {
                run_id: s.run_id.clone(),
                agent_id: s.agent_id.clone(),
                started_at: s.started_at,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(d: &str) -> RunEvent {
        RunEvent::TextDelta { delta: d.into() }
    }

    #[tokio::test]
    async fn late_readers_get_merged_deltas_then_the_rest_and_the_end() {
        let registry = Registry::default();
        let agent = AgentId::from("agent-1");
        let run = RunId::new();
        let entry = registry.register(&agent, run.clone(), CancellationToken::new());
        entry.push(&delta("Hel"));
        entry.push(&delta("lo"));
        let mut late = registry.attach(|_, a| *a == agent).expect("running");
        assert_eq!(late.run_id(), &run);
        entry.push(&delta("!"));
        assert_eq!(late.next().await, Some(delta("Hello")));
        assert_eq!(late.next().await, Some(delta("!")));
        drop(entry);
        assert_eq!(late.next().await, None, "the stream ends with the run");
        assert!(registry.attach(|_, a| *a == agent).is_none());
        assert!(registry.list(|_| true).is_empty());
    }

    #[test]
    fn runs_are_cancelled_by_id_or_by_agent_and_listed_per_agent() {
        let registry = Registry::default();
        let (a, b) = (AgentId::from("agent-a"), AgentId::from("agent-b"));
        let (ta, tb, tc) = (
            CancellationToken::new(),
            CancellationToken::new(),
            CancellationToken::new(),
        );
        let first = RunId::new();
        let ea = registry.register(&a, first.clone(), ta.clone());
        let eb = registry.register(&b, RunId::new(), tb.clone());
        let ec = registry.register(&a, RunId::new(), tc.clone());
        let listed: Vec<RunId> = registry
            .list(|x| *x == a)
            .into_iter()
            .map(|r| r.run_id)
            .collect();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0], first, "oldest first");

        assert_eq!(registry.cancel(|id, _| *id == first), 1);
        assert!(ta.is_cancelled() && !tb.is_cancelled() && !tc.is_cancelled());
        assert_eq!(registry.cancel(|_, x| *x == a), 2);
        assert!(tc.is_cancelled() && !tb.is_cancelled());
        drop(ec);
        assert_eq!(
            registry.list(|x| *x == a).len(),
            1,
            "the other run of the agent left"
        );
        drop((ea, eb));
        assert_eq!(registry.cancel(|_, _| true), 0);
    }
}

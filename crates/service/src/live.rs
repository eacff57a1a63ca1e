//! Re-attaching to a run in flight: a window reloaded (or opened) while an agent runs gets
//! what the run streamed so far, then every further event, up to `done` (Engram issue #10,
//! "reloading during a run shows no busy state and no Stop").
//!
//! Each run's events pass through [`LiveRuns::push`] on their way to the caller that started
//! it; text deltas are kept merged, so what a run holds grows with its reply, not with its
//! token count.

use crate::Engram;
use engram_core::{AgentId, RunEvent};
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::mpsc;

/// A run joined late: what it streamed so far, then the rest as it comes.
#[derive(Debug)]
pub struct RunAttachment {
    /// The run's events so far, oldest first (consecutive text and reasoning deltas merged).
    pub so_far: Vec<RunEvent>,
    /// Every later event; ends after the run's `done` event (or when the run's task ends).
    pub events: mpsc::UnboundedReceiver<RunEvent>,
}

#[derive(Default)]
struct LiveRun {
    events: Vec<RunEvent>,
    watchers: Vec<mpsc::UnboundedSender<RunEvent>>,
}

/// The runs in flight, per agent, in the order they were started (keyed by run handle id).
#[derive(Default)]
pub(crate) struct LiveRuns {
    runs: Mutex<HashMap<AgentId, Vec<(u64, LiveRun)>>>,
}

impl LiveRuns {
    /// A run of `agent` begins (it may wait for an earlier one to finish).
    pub(crate) fn begin(&self, agent: &AgentId, id: u64) {
        if let Ok(mut runs) = self.runs.lock() {
            runs.entry(agent.clone())
                .or_default()
                .push((id, LiveRun::default()));
        }
    }

    /// Records an event of run `id` and hands it to everyone attached.
    pub(crate) fn push(&self, agent: &AgentId, id: u64, event: &RunEvent) {
        let Ok(mut runs) = self.runs.lock() else {
            return;
        };
        let Some(run) = runs
            .get_mut(agent)
            .and_then(|v| v.iter_mut().find(|(i, _)| *i == id))
            .map(|(_, r)| r)
        else {
            return;
        };
        run.watchers.retain(|w| w.send(event.clone()).is_ok());
        match (run.events.last_mut(), event) {
            (Some(RunEvent::TextDelta { delta: a }), RunEvent::TextDelta { delta: b })
            | (
                Some(RunEvent::ReasoningDelta { delta: a }),
                RunEvent::ReasoningDelta { delta: b },
            ) => a.push_str(b),
            _ => run.events.push(event.clone()),
        }
    }

    /// Run `id` ended: its watchers' streams end too.
    pub(crate) fn end(&self, agent: &AgentId, id: u64) {
        if let Ok(mut runs) = self.runs.lock()
            && let Some(v) = runs.get_mut(agent)
        {
            v.retain(|(i, _)| *i != id);
            if v.is_empty() {
                runs.remove(agent);
            }
        }
    }

    fn attach(&self, agent: &AgentId) -> Option<RunAttachment> {
        let mut runs = self.runs.lock().ok()?;
        let (_, run) = runs.get_mut(agent)?.first_mut()?;
        // Under the lock, so no event falls between the copy and the subscription.
        let (tx, rx) = mpsc::unbounded_channel();
        run.watchers.push(tx);
        Some(RunAttachment {
            so_far: run.events.clone(),
            events: rx,
        })
    }
}

impl Engram {
    /// Joins the agent's run in flight (the oldest, when several are queued): its events so
    /// far and a stream of the rest. `None` when the agent is not running. Stop it as usual
    /// with [`cancel_runs`](Self::cancel_runs).
    pub fn attach_run(&self, agent: &AgentId) -> Option<RunAttachment> {
        self.live.attach(agent)
    }

    /// Whether the agent has a run in flight (or waiting its turn).
    pub fn is_running(&self, agent: &AgentId) -> bool {
        self.live
            .runs
            .lock()
            .is_ok_and(|runs| runs.get(agent).is_some_and(|v| !v.is_empty()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn late_watchers_get_merged_deltas_then_the_rest_and_the_end() {
        let live = LiveRuns::default();
        let agent = AgentId::from("agent-1");
        live.begin(&agent, 7);
        let delta = |d: &str| RunEvent::TextDelta { delta: d.into() };
        live.push(&agent, 7, &delta("Hel"));
        live.push(&agent, 7, &delta("lo"));
        let mut late = live.attach(&agent).expect("running");
        assert_eq!(late.so_far, [delta("Hello")]);
        live.push(&agent, 7, &delta("!"));
        assert_eq!(late.events.try_recv().unwrap(), delta("!"));
        live.end(&agent, 7);
        assert!(
            late.events.try_recv().is_err(),
            "the stream ends with the run"
        );
        assert!(live.attach(&agent).is_none());
        // Another agent's run is not this one's.
        live.begin(&AgentId::from("agent-2"), 8);
        assert!(live.attach(&agent).is_none());
    }
}

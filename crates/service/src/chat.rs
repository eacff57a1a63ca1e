//! Chatting: starting runs, and stopping them.

use crate::Engram;
use engram_agent::{EventSink, RunOutcome};
use engram_core::{AgentId, Error, NewMessage, Result};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Registers a run's cancel token while it runs; unregisters it when dropped.
pub struct RunHandle<'a> {
    engram: &'a Engram,
    agent: AgentId,
    pub(crate) id: u64,
    pub(crate) token: CancellationToken,
}

impl Drop for RunHandle<'_> {
    fn drop(&mut self) {
        self.engram.live.end(&self.agent, self.id);
        if let Ok(mut runs) = self.engram.runs.lock()
            && let Some(tokens) = runs.get_mut(&self.agent)
        {
            tokens.retain(|(id, _)| *id != self.id);
            if tokens.is_empty() {
                runs.remove(&self.agent);
            }
        }
    }
}

impl Engram {
    /// Sends a user message to an agent and runs it to the end of its turn, streaming events
    /// into `events`. The run can be stopped with [`cancel_runs`](Self::cancel_runs) or with
    /// `cancel`. Errors: `invalid_input` for an empty message, `not_found`, and configuration
    /// errors (no provider, no key, `context_window_too_small` when the model's window cannot
    /// hold the agent) before anything is written; `conflict` while a tool call waits for
    /// approval (see [`resolve_approval`](Self::resolve_approval)); failures during the run are
    /// in the outcome.
    pub async fn send_message(
        &self,
        agent: &AgentId,
        text: &str,
        events: &EventSink,
        cancel: CancellationToken,
    ) -> Result<RunOutcome> {
        if text.trim().is_empty() {
            return Err(Error::invalid("the message is empty"));
        }
        self.check_pending_endpoints(agent)?;
        let handle = self.register(agent, cancel);
        self.live.begin(agent, handle.id);
        // The run's events pass through here on their way to the caller, so that other windows
        // hear about the messages and memory edits the run commits.
        let (tx, mut rx) = mpsc::unbounded_channel();
        let run = async {
            let outcome = self
                .runtime
                .run(agent, NewMessage::user(text), &tx, &handle.token)
                .await;
            drop(tx);
            outcome
        };
        let forward = self.forward(agent, handle.id, &mut rx, events);
        let (outcome, ()) = tokio::join!(run, forward);
        drop(handle);
        outcome
    }

    /// Stops every run of the agent (the one in flight keeps what already arrived). Returns how
    /// many runs were told to stop.
    pub fn cancel_runs(&self, agent: &AgentId) -> usize {
        let Ok(runs) = self.runs.lock() else { return 0 };
        runs.get(agent).map_or(0, |tokens| {
            tokens.iter().for_each(|(_, t)| t.cancel());
            tokens.len()
        })
    }

    /// Stops every run of every agent (each keeps what already arrived), e.g. before the
    /// process exits. Returns how many runs were told to stop.
    pub fn cancel_all_runs(&self) -> usize {
        let Ok(runs) = self.runs.lock() else { return 0 };
        runs.values().flatten().map(|(_, t)| t.cancel()).count()
    }

    pub(crate) fn register(&self, agent: &AgentId, token: CancellationToken) -> RunHandle<'_> {
        let id = self
            .next_run
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut runs) = self.runs.lock() {
            runs.entry(agent.clone())
                .or_default()
                .push((id, token.clone()));
        }
        RunHandle {
            engram: self,
            agent: agent.clone(),
            id,
            token,
        }
    }
}

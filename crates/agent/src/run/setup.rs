//! What a run carries from step to step.

use super::LeaseHold;
use crate::rules::Rules;
use crate::{Embedder, EventSink};
use engram_core::{Agent, RunEvent, RunId, Usage};
use engram_providers::ChatModel;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What a run needs before anything is written (see `Runtime::setup`): the agent as it was
/// read when the run began and its model clients.
pub(crate) struct Setup {
    pub agent: Agent,
    pub model: Arc<dyn ChatModel>,
    pub embedder: Option<Embedder>,
    /// Whether the context may need a repair before the run writes (see
    /// `StepStore::needs_repair`): true unless the store said otherwise.
    pub repair: bool,
}

/// One run as it goes: what every step reads (the setup, where events go, the cancel
/// switch) and what the steps add up (the tool-rule history, the tokens used).
pub(crate) struct RunContext<'a> {
    pub setup: &'a Setup,
    pub run_id: RunId,
    pub events: &'a EventSink,
    pub cancel: &'a CancellationToken,
    /// The agent's lease the run holds; every commit names it, and the run's end gives it
    /// back.
    pub hold: &'a LeaseHold,
    /// Which tools ran, for the agent's tool rules (narrowing what the next call may use).
    pub rules: Rules,
    /// Tokens sent and received over every step so far.
    pub usage: Usage,
}

impl RunContext<'_> {
    /// Sends a run event; a reader that went away loses nothing stored.
    pub fn emit(&self, event: RunEvent) {
        let _ = self.events.send(event);
    }
}

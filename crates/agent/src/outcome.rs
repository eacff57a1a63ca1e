//! What a run is configured with and what it returns.

use engram_core::{ErrorBody, Message, RunId, StopReason, Usage};
use std::time::Duration;

/// Thresholds of context-window management, as fractions of the model's context window, and
/// the wall-clock bound of one step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoopSettings {
    /// Warn the model (hidden alert) once the context passes this share (default 0.75).
    pub warn_at: f32,
    /// Compact before the call once the context passes this share (default 0.9).
    pub compact_at: f32,
    /// Compaction evicts the oldest messages until the context is under this share (default 0.7).
    pub compact_to: f32,
    /// How long one model call of a step may take, streaming included (default
    /// [`LoopSettings::DEFAULT_STEP_TIME_LIMIT`]). A model that is still writing then is stopped:
    /// what arrived is kept and the run ends with a `timeout` provider error. The output limit
    /// bounds a rambling model in tokens; this bounds it in time (a slow CPU model may take
    /// minutes for the same tokens).
    pub step_time_limit: Duration,
    /// How long a run's lease on its agent lasts unless renewed (renewed every third of it,
    /// default 30 s): a replica that stops renewing (paused, cut off) loses the agent this long
    /// after, and its later commits are refused.
    pub lease_ttl: Duration,
    /// How long a new run waits for an agent whose lease another holder (a run on another
    /// replica) has, before it gives up with `agent_busy` (default 30 s).
    pub lease_wait: Duration,
}

impl LoopSettings {
    /// Five minutes: far above a hosted model's slowest step, and what a small model on a
    /// laptop CPU needs for a full default output limit.
    pub const DEFAULT_STEP_TIME_LIMIT: Duration = Duration::from_secs(300);
}

impl Default for LoopSettings {
    fn default() -> Self {
        Self {
            warn_at: 0.75,
            compact_at: 0.9,
            compact_to: 0.7,
            step_time_limit: Self::DEFAULT_STEP_TIME_LIMIT,
            lease_ttl: Duration::from_secs(30),
            lease_wait: Duration::from_secs(30),
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOutcome {
    /// The run.
    pub run_id: RunId,
    /// Every message the run committed, the user's first, in order.
    pub messages: Vec<Message>,
    /// Why it ended.
    pub stop_reason: StopReason,
    /// Tokens and steps.
    pub usage: Usage,
    /// What failed, when `stop_reason` is an error.
    pub error: Option<ErrorBody>,
}

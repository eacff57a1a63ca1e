//! What a run is configured with and what it returns.

use engram_core::{ErrorBody, Message, RunId, StopReason, Usage};

/// Thresholds of context-window management, as fractions of the model's context window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoopSettings {
    /// Warn the model (hidden alert) once the context passes this share (default 0.75).
    pub warn_at: f32,
    /// Compact before the call once the context passes this share (default 0.9).
    pub compact_at: f32,
    /// Compaction evicts the oldest messages until the context is under this share (default 0.7).
    pub compact_to: f32,
}

impl Default for LoopSettings {
    fn default() -> Self {
        Self {
            warn_at: 0.75,
            compact_at: 0.9,
            compact_to: 0.7,
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

//! Sleep-time passes: a background agent that reads what was said since its last pass and
//! tidies the primary agent's memory (rewrites blocks, moves detail to archival memory,
//! supersedes and merges passages). Settings per agent, global budgets, and the record each
//! pass leaves so a person can see and undo what it did.

use crate::{AgentId, BlockId, EditId, LlmConfig, PassId, PassageId, SupersedeKind, Timestamp};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// User turns between two passes when none is set (Letta's `sleeptime_agent_frequency`).
pub const DEFAULT_FREQUENCY: u32 = 5;
/// Model calls a pass may make when none is set.
pub const DEFAULT_PASS_STEPS: u32 = 8;
/// Seconds a pass may take, model calls included, when none is set.
pub const DEFAULT_PASS_TIMEOUT_SECS: u32 = 120;

/// An agent's sleep-time settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export, optional_fields)]
#[serde(default)]
pub struct SleeptimeSettings {
    /// Whether passes run at all (Letta's `enable_sleeptime`).
    pub enabled: bool,
    /// A pass runs after every this many user turns (at least 1).
    pub frequency: u32,
    /// The model the pass uses; `None` uses the agent's own (a cheaper or local one saves
    /// money: passes are background work).
    pub llm: Option<LlmConfig>,
    /// Model calls per pass (its step limit, at least 1).
    pub max_steps: u32,
    /// Seconds a pass may take in all; past it the pass ends and writes nothing.
    pub timeout_secs: u32,
    /// Seconds without a new message after which a pass runs on what is unread (`None`: no
    /// idle passes).
    pub idle_secs: Option<u32>,
    /// Passes per rolling 24 hours for this agent (`None`: no limit of its own).
    pub passes_per_day: Option<u32>,
    /// Model tokens (prompt + completion) per rolling 24 hours for this agent's passes.
    #[ts(type = "number | null")]
    pub tokens_per_day: Option<u64>,
    /// US dollars per rolling 24 hours for this agent's passes, counted at the price of each
    /// pass's model (passes on a model without a price cost nothing here).
    pub usd_per_day: Option<f64>,
}

impl Default for SleeptimeSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            frequency: DEFAULT_FREQUENCY,
            llm: None,
            max_steps: DEFAULT_PASS_STEPS,
            timeout_secs: DEFAULT_PASS_TIMEOUT_SECS,
            idle_secs: None,
            passes_per_day: None,
            tokens_per_day: None,
            usd_per_day: None,
        }
    }
}

/// Limits over every agent's passes, per rolling 24 hours (`None`: no limit).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, TS)]
#[ts(export, optional_fields)]
#[serde(default)]
pub struct SleeptimeBudget {
    /// Passes of all agents together.
    pub passes_per_day: Option<u32>,
    /// Tokens of all agents' passes together.
    #[ts(type = "number | null")]
    pub tokens_per_day: Option<u64>,
    /// US dollars of all agents' passes together (at each pass model's price).
    pub usd_per_day: Option<f64>,
}

/// What passes used over a stretch of time (see `SleeptimeRows::usage`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PassUsage {
    /// Passes that ran (skipped ones do not count).
    pub passes: u32,
    /// Prompt plus completion tokens.
    pub tokens: u64,
    /// US dollars at each pass model's price (models without a price count 0).
    pub usd: f64,
}

/// What started a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
pub enum PassTrigger {
    /// The agent's `frequency` of user turns was reached.
    Turns,
    /// The conversation was compacted (older messages left the context window).
    Compaction,
    /// Nothing was said for the agent's `idle_secs`.
    Idle,
    /// Asked for (CLI, window, REST).
    Manual,
}

impl PassTrigger {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Turns => "turns",
            Self::Compaction => "compaction",
            Self::Idle => "idle",
            Self::Manual => "manual",
        }
    }

    /// Parses a stored name (unknown names read as `Manual`).
    pub fn parse(s: &str) -> Self {
        match s {
            "turns" => Self::Turns,
            "compaction" => Self::Compaction,
            "idle" => Self::Idle,
            _ => Self::Manual,
        }
    }
}

/// How a pass ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
pub enum PassStatus {
    /// It ran and its changes were written (possibly none).
    Done,
    /// A model call failed or it ran out of time: nothing was written.
    Failed,
    /// It did not run (over budget); `reason` says why.
    Skipped,
    /// It ran, and every change it made was undone since.
    Undone,
}

impl PassStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
            Self::Undone => "undone",
        }
    }

    /// Parses a stored name (unknown names read as `Failed`).
    pub fn parse(s: &str) -> Self {
        match s {
            "done" => Self::Done,
            "skipped" => Self::Skipped,
            "undone" => Self::Undone,
            _ => Self::Failed,
        }
    }
}

/// One change a pass made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct PassChange {
    /// Its number within the pass (0, 1, …), what undo names.
    pub index: u32,
    /// What changed.
    pub kind: PassChangeKind,
    /// When it was undone, if it was.
    pub undone_at: Option<Timestamp>,
}

/// What one change of a pass was.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PassChangeKind {
    /// A block's value changed (one recorded edit in the block's history).
    BlockEdit {
        /// The edit in the block's history (undone through the block's versioned undo).
        edit_id: EditId,
        /// The block.
        block_id: BlockId,
        /// Its label when the pass ran.
        label: String,
        /// A unified line diff of the value before and after.
        diff: String,
    },
    /// A passage was added to archival memory.
    PassageAdded {
        /// The new passage.
        passage_id: PassageId,
        /// Its text.
        text: String,
    },
    /// A passage stopped being current: superseded by, or merged into, `by`.
    PassageSuperseded {
        /// The passage replaced.
        passage_id: PassageId,
        /// Its text.
        text: String,
        /// Replaced or merged.
        how: SupersedeKind,
        /// The passage that holds the fact now.
        by: Option<PassageId>,
    },
}

/// The record of one pass.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct SleeptimePass {
    /// `sleeptime_pass-<uuid>`.
    pub id: PassId,
    /// The primary agent whose memory the pass tended.
    pub agent_id: AgentId,
    /// What started it.
    pub trigger: PassTrigger,
    /// How it ended.
    pub status: PassStatus,
    /// Why it failed or was skipped.
    pub reason: Option<String>,
    /// The model handle it used.
    pub model: String,
    /// When it started.
    pub started_at: Timestamp,
    /// When it ended.
    pub ended_at: Timestamp,
    /// How many messages of the conversation it read.
    pub messages_read: u32,
    /// The sequence number of the last message it read (the next pass starts after it).
    #[ts(type = "number")]
    pub last_seq: i64,
    /// Model calls made.
    pub model_calls: u32,
    /// Prompt tokens of those calls.
    #[ts(type = "number")]
    pub prompt_tokens: u64,
    /// Completion tokens of those calls.
    #[ts(type = "number")]
    pub completion_tokens: u64,
    /// What the calls cost in US dollars at the model's price (`None`: the model has no price).
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Every change, in the order made.
    pub changes: Vec<PassChange>,
}

impl SleeptimePass {
    /// Prompt plus completion tokens.
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }
}

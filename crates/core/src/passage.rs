//! Archival memory: passages the agent stores and searches.

use crate::{AgentId, PassageId, Timestamp};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// One entry of an agent's archival memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct Passage {
    /// `passage-<uuid>`.
    pub id: PassageId,
    /// The owning agent.
    pub agent_id: AgentId,
    /// The text.
    pub text: String,
    /// Tags for filtering, in insertion order, without duplicates.
    pub tags: Vec<String>,
    /// When it was stored.
    pub created_at: Timestamp,
}

/// A passage to be stored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct NewPassage {
    /// The text (non-empty).
    pub text: String,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The text's embedding at the model's native dimension, when the agent has an embedding
    /// model. Vectors of one agent must share a dimension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<Vec<f32>>,
    /// Keep an existing time (imports); `None` means now.
    #[serde(default)]
    pub created_at: Option<Timestamp>,
}

/// How a tag filter matches a passage's tags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
pub enum TagMatch {
    /// At least one of the tags.
    #[default]
    Any,
    /// Every one of the tags.
    All,
}

/// A search result: the passage and its rank score (higher is better; the scale depends on
/// whether BM25 alone or reciprocal-rank fusion produced it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct PassageHit {
    /// The matching passage.
    pub passage: Passage,
    /// Relevance, higher is better.
    pub score: f64,
}

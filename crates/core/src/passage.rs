//! Archival memory: passages the agent stores and searches.

use crate::{AgentId, PassId, PassageId, Timestamp};
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
    /// Set when the fact stopped being current: replaced by a newer passage or merged into
    /// another. Such passages stay (nothing is deleted) but searches and lists leave them out
    /// unless asked for the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub superseded: Option<Supersession>,
}

/// How a passage stopped being current.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
pub enum SupersedeKind {
    /// A newer fact replaced it ("lives in Lisbon" → "moved to Porto").
    Superseded,
    /// It said the same as other passages and was folded into one of them.
    Merged,
}

impl SupersedeKind {
    /// The stored name (`superseded`, `merged`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Superseded => "superseded",
            Self::Merged => "merged",
        }
    }

    /// Parses a stored name; anything else is `None`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "superseded" => Some(Self::Superseded),
            "merged" => Some(Self::Merged),
            _ => None,
        }
    }
}

/// When, how and by what a passage was replaced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct Supersession {
    /// Replaced or merged.
    pub kind: SupersedeKind,
    /// When.
    pub at: Timestamp,
    /// The passage that holds the fact now, when there is one.
    pub by: Option<PassageId>,
    /// The sleep-time pass that made the change (`None`: by hand).
    pub pass_id: Option<PassId>,
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
    /// Whether the search brought this passage along as context rather than as a match: it
    /// holds none of the query's words and sits next to a passage that does. Set only for
    /// searches by words alone (with a query vector every passage has a similarity of its
    /// own); `false` otherwise.
    #[serde(default)]
    pub context: bool,
}

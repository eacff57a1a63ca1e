//! What a ranked search reads from a store before anything is ranked, and the ranking it hands
//! back. The store finds candidates — words (BM25 on SQLite, `ts_rank` on PostgreSQL), cosine
//! from a vector index or an exact scan, the rows written just before and after each hit — and
//! loads the rows a ranking names; how candidates become one ranking (neighbour smoothing,
//! fusion, the depths) is `engram_retrieval`'s, passed in as a [`Ranker`] to
//! [`PassageStore::rank_passages`](crate::PassageStore::rank_passages) and
//! [`MessageStore::rank_messages`](crate::MessageStore::rank_messages).

use engram_core::{Role, TagMatch, Timestamp};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Row keys with scores, best first. A row key is the store's own handle of a row during one
/// search: meaningful only handed back to the `rank_*` call that gave it.
pub type Ranking = Vec<(i64, f64)>;

/// For row keys of a ranking, the rows just before and after each (`[before, after]`, by
/// time, within 30 minutes, passing the search's filters); a key it lacks has none.
pub type NeighbourMap = HashMap<i64, [Option<i64>; 2]>;

/// How many candidates a search reads from each side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CandidateDepth {
    /// BM25 candidates.
    pub lexical: usize,
    /// Vector candidates.
    pub vector: usize,
}

/// A BM25 ranking (row key, score > 0; higher is better; best first) and its hits' neighbours
/// (empty where the search has no notion of neighbours, e.g. the passages of files).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bm25 {
    /// The hits, best first.
    pub ranking: Ranking,
    /// The neighbours of each hit.
    pub neighbours: NeighbourMap,
}

/// The candidates of one search.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Candidates {
    /// The lexical side; `None` when the query has no words to match (blank, or punctuation
    /// alone). `Some` with an empty ranking: words that nothing matched.
    pub lexical: Option<Bm25>,
    /// The vector side (row key, cosine; best first); `None` without a query vector.
    pub vector: Option<Ranking>,
}

/// How a search's candidates become one ranking: `engram_retrieval`'s, handed to a store.
pub type Ranker<'a> = &'a (dyn Fn(Candidates) -> Ranking + Send + Sync);

/// An archival memory search.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PassageQuery {
    /// Free text, made safe as in conversation search (words quoted and ORed). Empty: the
    /// newest passages matching the filters (or, with `embedding`, the nearest ones). Text
    /// without word characters matches nothing by BM25.
    pub query: String,
    /// Only passages carrying these tags (see `tag_match`); empty means no tag filter.
    pub tags: Vec<String>,
    /// Whether a passage needs any or all of `tags`.
    pub tag_match: TagMatch,
    /// Only passages created at or after this time.
    pub start: Option<Timestamp>,
    /// Only passages created at or before this time.
    pub end: Option<Timestamp>,
    /// Maximum number of hits.
    pub top_k: usize,
    /// The query's embedding, from the agent's embedding model. When given, passages whose
    /// stored vector has the same dimension are also ranked by cosine similarity and the two
    /// rankings are fused (`engram_retrieval::fuse`: 0.7 × lexical share of the best + 0.3 × cosine).
    pub embedding: Option<Vec<f32>>,
    /// Also rank passages that were superseded or merged (the history of facts that
    /// changed); by default only current passages are searched.
    #[serde(default)]
    pub include_superseded: bool,
}

/// A conversation (recall memory) search.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageQuery {
    /// Free text. Split into words, each matched as a quoted FTS5 term, joined by OR (BM25 ranks
    /// messages matching more words higher). Empty or whitespace-only: the newest messages
    /// matching the filters. Text without any word characters (only punctuation or emoji)
    /// matches nothing.
    pub query: String,
    /// Only these roles; empty means user, assistant and tool. System messages are searched
    /// only when `System` is listed.
    pub roles: Vec<Role>,
    /// Only messages created at or after this time.
    pub start: Option<Timestamp>,
    /// Only messages created at or before this time.
    pub end: Option<Timestamp>,
    /// Maximum number of hits.
    pub limit: usize,
}

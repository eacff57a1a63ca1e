//! What a search reads from the store before anything is ranked, and the ranking it hands
//! back. The store finds candidates — BM25 over its full-text tables, cosine from the vector
//! index or an exact scan, the rows written just before and after each hit — and loads the rows
//! a ranking names, all in one read; how candidates become one ranking (neighbour smoothing,
//! fusion, the depths) is `engram_retrieval`'s, passed in as the closure of
//! [`PassageRows::rank`](crate::PassageRows::rank),
//! [`MessageRows::rank`](crate::MessageRows::rank) and
//! [`FolderRows::rank_agent_files`](crate::FolderRows::rank_agent_files).

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

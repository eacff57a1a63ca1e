//! Every number that shapes archival search's ranking, in one place, each with what it was
//! measured against. The figures are evidence recall@5 on the LoCoMo development set
//! (`benches/retrieval.rs` prints them; docs/retrieval.md explains how to re-measure).

use crate::expand::Expansion;

/// How many of the store's best hits a reranker reads (when the search asks for fewer).
/// Each one is a full model pass, so this bounds a search's cost; deeper candidates rarely
/// reach the first five after reranking.
pub const RERANK_CANDIDATES: usize = 30;

/// How deep the hybrid ranking is asked for the hits a reranker reads from (their first
/// [`Reranker::depth`](crate::Reranker::depth)). A deeper pool of lexical and vector
/// candidates orders the head better: on the development set, late interaction over the
/// first 15 of a 50-deep answer found 0.764 recall@5 against 0.753 over a 15-deep one. A
/// deeper hybrid search costs milliseconds; the model pass that follows costs hundreds.
pub const RERANK_POOL: usize = 50;

/// Archival search's pseudo-relevance feedback as shipped: off, because it did not pay on the
/// development set (`benches/retrieval.rs` prints the sweep).
pub const EXPANSION: Expansion = Expansion {
    weight: 0.0,
    feedback_hits: 5,
    terms: 10,
};

/// The late-interaction relevance's share of a reranked hit's score (the hybrid score has the
/// rest). Chosen on the development set (conversations 1–3 to choose, 4–5 to check): with two
/// neighbours a side, 0.8 (0.764 recall@5, against 0.759 at 0.7); 0.6 without neighbours was
/// 0.709, and a pure MaxSim order (1.0) was best on tune but lost the check half.
pub const LATE_INTERACTION_WEIGHT: f64 = 0.8;

/// How much of a candidate's MaxSim is that of it read together with its neighbouring
/// passages (the rest is its own). On the development set with two neighbours a side, 0.85
/// found 0.764 against 0.757 for 0.7 and 0.749 for a half; both halves agree.
pub const LATE_INTERACTION_CONTEXT_SHARE: f64 = 0.85;

/// How many passages on each side of a candidate late interaction reads it with. On the
/// development set (over the first 15, share 0.7, weight 0.8): one a side 0.742, two 0.757,
/// three 0.756 at a third more texts to encode.
pub const LATE_INTERACTION_NEIGHBOUR_REACH: usize = 2;

/// How many of the hybrid search's first hits late interaction re-scores. With two neighbours
/// a side, 20 found 0.768 against 0.764 for 15 but encodes 64 distinct texts a search against
/// 48 (one neighbour a side over 20, as before, was 43); 10 found 0.748.
pub const LATE_INTERACTION_DEPTH: usize = 15;

/// The weight of the lexical side in hybrid scores; the vector side gets the rest (see
/// [`crate::fuse::fuse`]). Tuned on the development set with all-MiniLM-L6-v2
/// (`benches/retrieval.rs` prints the sweep): recall@5 0.627 at 0.4, 0.651 at 0.5, 0.665 at
/// 0.6, 0.680 at 0.7, 0.677 at 0.8, against 0.662 for words alone and 0.582 for equal-weight
/// rank fusion. The small model is much weaker than BM25 on this set (0.417 alone), so it
/// mostly breaks ties and lifts paraphrases that share no word with the query.
pub const LEXICAL_WEIGHT: f64 = 0.7;

/// The share of a hit's score each neighbour receives (see
/// [`crate::neighbours::smooth_by_neighbours`]); tuned on the development set, where 0.3 to
/// 0.7 all beat no smoothing and 0.5 was best.
pub const NEIGHBOUR_SHARE: f64 = 0.5;

/// How many candidates each side of a search reads for every hit asked for: fusion needs more
/// than `top_k` from each side (a row ranked 8th by both can beat one ranked 1st by only one
/// of them), and a neighbour can overtake a hit.
pub const CANDIDATE_FACTOR: usize = 4;

/// The fewest candidates each side of a search reads (see [`CANDIDATE_FACTOR`]).
pub const MIN_CANDIDATES: usize = 50;

/// How many candidates a side reads for a search asking for `limit` hits:
/// `max(limit · CANDIDATE_FACTOR, MIN_CANDIDATES)`.
pub fn candidates_for(limit: usize) -> usize {
    limit.saturating_mul(CANDIDATE_FACTOR).max(MIN_CANDIDATES)
}

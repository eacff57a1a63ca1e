//! The hybrid ranking: the store's lexical and vector candidates of one search, smoothed over
//! neighbours and fused, for archival memory, recall (the message history) and the passages
//! of an agent's folders. The store reads the candidates and loads the ranked rows in one read;
//! the order is decided here (the closures passed to the store's `rank_*` primitives).
//!
//! [`HybridSearch`] gives these rankings as methods of the store, for callers that want the
//! hybrid ranking alone; archival search proper (with a reranker) is [`crate::search()`].

use crate::fuse::{LEXICAL_WEIGHT, fuse, relative};
use crate::neighbours::{Neighbours, smooth_by_neighbours};
use crate::tuning::candidates_for;
use engram_core::{AgentId, ChunkHit, PassageHit, Result};
use engram_store::{
    Bm25, CandidateDepth, Candidates, MessageHit, MessageQuery, PassageQuery, Ranking, Store,
};
use engram_store_api::{FolderStore, MessageStore, PassageStore};

/// The lexical side of a search: BM25 smoothed over neighbours (`mode`), cut to `limit`
/// (`None`: not cut), as shares of the best hit.
fn lexical(bm25: Option<Bm25>, mode: Neighbours, limit: Option<usize>) -> Ranking {
    let Some(bm25) = bm25 else {
        return Vec::new();
    };
    let mut smoothed = smooth_by_neighbours(&bm25.ranking, mode, &bm25.neighbours);
    if let Some(limit) = limit {
        smoothed.truncate(limit);
    }
    relative(&smoothed)
}

/// Searches the agent's archival memory by its hybrid ranking alone (no reranker), `q.top_k`
/// hits at most, best first.
///
/// Scores are relevance in `0..=1`, comparable between lexical and hybrid searches: a
/// lexical hit's BM25 score (smoothed over neighbouring passages: each hit lends half its
/// score to the passages written just before and after it) as a share of the best hit's;
/// with a query embedding, that blended with the cosine similarity ([`fuse`]; passages
/// without a vector of the query's dimension count only by their words); a vector-only search
/// (blank text, or text no passage matched) gives the cosine itself; a blank search without an
/// embedding lists the newest passages with score 0.
///
/// Errors: `NotFound("agent")`; `Invalid` for an empty or non-finite query embedding.
pub async fn passages(
    store: &(dyn PassageStore + '_),
    agent: &AgentId,
    q: &PassageQuery,
) -> Result<Vec<PassageHit>> {
    let (depth, ranker) = passage_ranking(q);
    store.rank_passages(agent, q, depth, &ranker).await
}

/// The depths and the ranking of an archival search (see [`passages`]): what every store is
/// handed, whatever reads its candidates.
fn passage_ranking(
    q: &PassageQuery,
) -> (CandidateDepth, impl Fn(Candidates) -> Ranking + Send + Sync) {
    // With a vector side, the lexical side is cut to the vector side's depth before fusion.
    let hybrid = q.embedding.is_some();
    let lexical_limit = if hybrid {
        candidates_for(q.top_k)
    } else {
        q.top_k
    };
    let depth = CandidateDepth {
        lexical: candidates_for(lexical_limit),
        vector: candidates_for(q.top_k),
    };
    let top_k = q.top_k;
    let ranker = move |c: Candidates| {
        let text = lexical(c.lexical, Neighbours::Admit, Some(lexical_limit));
        let Some(vector) = c.vector else {
            return text;
        };
        let mut fused = if text.is_empty() {
            vector
        } else {
            fuse(&text, &vector, LEXICAL_WEIGHT)
        };
        fused.truncate(top_k);
        fused
    };
    (depth, ranker)
}

/// Searches the agent's whole history (see [`MessageRows::rank`](engram_store::MessageRows::rank) for what is searched and
/// filtered): BM25 with each hit lending half its score to matching messages just before and
/// after it (a question and its answer rise together; every hit contains a query word); with
/// `embedding` (the query's vector from the agent's current embedding model) also by meaning,
/// fused as archival search does ([`fuse`], [`LEXICAL_WEIGHT`]), so a hit need not share a word
/// with the query. An empty query lists the newest matching messages. At most `q.limit` hits.
///
/// Errors: `NotFound("agent")`; `Invalid` for an empty or non-finite query vector.
pub async fn messages(
    store: &(dyn MessageStore + '_),
    agent: &AgentId,
    q: &MessageQuery,
    embedding: Option<&[f32]>,
) -> Result<Vec<MessageHit>> {
    let (depth, ranker) = message_ranking(q);
    store
        .rank_messages(agent, q, embedding, depth, &ranker)
        .await
}

/// The depths and the ranking of a recall search (see [`messages`]).
fn message_ranking(
    q: &MessageQuery,
) -> (CandidateDepth, impl Fn(Candidates) -> Ranking + Send + Sync) {
    let pool = candidates_for(q.limit);
    let depth = CandidateDepth {
        lexical: pool,
        vector: pool,
    };
    let limit = q.limit;
    let ranker = move |c: Candidates| {
        let no_words = c.lexical.is_none();
        let mut ranking = lexical(c.lexical, Neighbours::Rerank, None);
        if let Some(vector) = c.vector {
            // As in archival search: no words to match, the cosine itself.
            ranking = if no_words {
                vector
            } else {
                fuse(&ranking, &vector, LEXICAL_WEIGHT)
            };
        }
        ranking.truncate(limit);
        ranking
    };
    (depth, ranker)
}

/// Searches the passages of the folders attached to `agent`: BM25 over `query`'s words,
/// fused with cosine similarity to `embedding` (the query's vector and the handle of the
/// model that made it; only passages embedded by that model take part). Returns at most
/// `limit` hits, best first, scores in `0..=1`. A blank query or one without words searches by
/// meaning alone (or finds nothing without a vector). Errors: `NotFound("agent")`.
pub async fn files(
    store: &(dyn FolderStore + '_),
    agent: &AgentId,
    query: &str,
    embedding: Option<(&str, &[f32])>,
    limit: usize,
) -> Result<Vec<ChunkHit>> {
    let (depth, ranker) = file_ranking(limit);
    store
        .rank_agent_files(agent, query, embedding, depth, &ranker)
        .await
}

/// The depths and the ranking of a search of an agent's files (see [`files`]).
fn file_ranking(limit: usize) -> (CandidateDepth, impl Fn(Candidates) -> Ranking + Send + Sync) {
    let pool = candidates_for(limit);
    let depth = CandidateDepth {
        lexical: pool,
        vector: pool,
    };
    let ranker = move |c: Candidates| {
        let words = c.lexical.map(|b| b.ranking).unwrap_or_default();
        let vector = c.vector.unwrap_or_default();
        let mut fused = fuse(&relative(&words), &vector, LEXICAL_WEIGHT);
        fused.truncate(limit);
        fused
    };
    (depth, ranker)
}

/// The hybrid rankings as methods of the store (see the module docs).
pub trait HybridSearch {
    /// Archival memory by the hybrid ranking alone: [`passages`].
    fn search_passages(&self, agent: &AgentId, q: &PassageQuery) -> Result<Vec<PassageHit>>;
    /// The message history by words: [`messages`] without a vector.
    fn search_messages(&self, agent: &AgentId, q: &MessageQuery) -> Result<Vec<MessageHit>>;
    /// The message history by words and, with `embedding`, meaning: [`messages`].
    fn search_messages_by(
        &self,
        agent: &AgentId,
        q: &MessageQuery,
        embedding: Option<&[f32]>,
    ) -> Result<Vec<MessageHit>>;
    /// The passages of the agent's folders: [`files`].
    fn search_agent_files(
        &self,
        agent: &AgentId,
        query: &str,
        embedding: Option<(&str, &[f32])>,
        limit: usize,
    ) -> Result<Vec<ChunkHit>>;
}

/// On the SQLite store, at once (its reads are synchronous): the same depths and rankings as
/// the async searches over any backend.
impl HybridSearch for Store {
    fn search_passages(&self, agent: &AgentId, q: &PassageQuery) -> Result<Vec<PassageHit>> {
        let (depth, ranker) = passage_ranking(q);
        self.passages().rank(agent, q, depth, ranker)
    }

    fn search_messages(&self, agent: &AgentId, q: &MessageQuery) -> Result<Vec<MessageHit>> {
        self.search_messages_by(agent, q, None)
    }

    fn search_messages_by(
        &self,
        agent: &AgentId,
        q: &MessageQuery,
        embedding: Option<&[f32]>,
    ) -> Result<Vec<MessageHit>> {
        let (depth, ranker) = message_ranking(q);
        self.messages().rank(agent, q, embedding, depth, ranker)
    }

    fn search_agent_files(
        &self,
        agent: &AgentId,
        query: &str,
        embedding: Option<(&str, &[f32])>,
        limit: usize,
    ) -> Result<Vec<ChunkHit>> {
        let (depth, ranker) = file_ranking(limit);
        self.folders()
            .rank_agent_files(agent, query, embedding, depth, ranker)
    }
}

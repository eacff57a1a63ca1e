//! The last stage of archival search: a reranker reads the query and each of the first
//! candidates of the hybrid ranking and gives a relevance that reorders them. Two kinds exist:
//! late interaction over the built-in embedding model ([`crate::late`], the default) and a
//! cross-encoder from a weights folder ([`CrossEncoderReranker`]). [`crate::search`] calls
//! whichever the caller passes; a reranker that fails or declines leaves the hybrid ranking.

use crate::tuning::RERANK_CANDIDATES;
use async_trait::async_trait;
use engram_core::{AgentId, PassageId};
use engram_embed::rerank_local::LocalReranker;
use std::sync::Arc;

/// One candidate of a search, as a reranker reads it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Candidate {
    /// The passage's id (a reranker may keep what it computed for a passage by it).
    pub id: PassageId,
    /// The passage's text.
    pub text: String,
    /// The texts of the passages written around it, oldest first: up to
    /// [`Reranker::neighbour_reach`] on each side (see
    /// [`PassageRows::neighbours`](engram_store::PassageRows::neighbours)); empty when the
    /// reranker reads none. In a conversation stored turn by turn, an answer often spans a
    /// question and its reply, or a few turns.
    pub neighbours: Vec<String>,
    /// The ids of [`neighbours`](Self::neighbours), in the same order.
    pub neighbour_ids: Vec<PassageId>,
}

/// Why a reranker could not score a search's candidates. The search then keeps the hybrid
/// ranking; the message is for logs and notices.
#[derive(Debug, thiserror::Error)]
pub enum RerankError {
    /// The cross-encoder's weights folder is missing a file or damaged, or a model pass
    /// failed (the inner error names the folder).
    #[error(transparent)]
    CrossEncoder(#[from] engram_embed::rerank_local::RerankError),
    /// The embedding model could not give the word-piece vectors late interaction compares.
    #[error("late interaction could not encode: {0}")]
    Encode(String),
    /// The agent's stored statistics or vectors could not be read.
    #[error("late interaction could not read the agent's passages: {0}")]
    Store(#[from] engram_core::Error),
    /// Anything else a reranker reports (e.g. a reranker written for a test).
    #[error("{0}")]
    Other(String),
}

/// Scores candidates for a query (late interaction or a cross-encoder in practice).
#[async_trait]
pub trait Reranker: Send + Sync {
    /// The relevance of each of `candidates` to `query`, in `0..=1` and input order (higher is
    /// more relevant). `agent` is whose memory is searched (for notices). `Ok(None)`: this
    /// reranker does not read this agent's searches (a late-interaction reranker built on the
    /// built-in embedding model declines an agent with another model); the hybrid ranking
    /// stands, silently. Errors: [`RerankError`] (the model could not be loaded or run).
    async fn relevance(
        &self,
        agent: &AgentId,
        query: &str,
        candidates: &[Candidate],
    ) -> Result<Option<Vec<f64>>, RerankError>;

    /// How much of a reranked hit's score the relevance decides, in `0..=1`: the score is
    /// `(1 − weight) · the hybrid score + weight · relevance` (both `0..=1`). 1, the default,
    /// is the reranker's order alone (a cross-encoder); a weaker signal blends (measured in
    /// `benches/retrieval.rs`).
    fn weight(&self) -> f64 {
        1.0
    }

    /// How many of the hybrid ranking's best hits it reads (at least the search's `top_k`):
    /// [`RERANK_CANDIDATES`] by default.
    fn depth(&self) -> usize {
        RERANK_CANDIDATES
    }

    /// How many passages on each side of a candidate it reads with it
    /// ([`Candidate::neighbours`]): 0 by default, which saves looking them up.
    fn neighbour_reach(&self) -> usize {
        0
    }
}

/// A cross-encoder's logit as a relevance in `0..=1` (the logistic function), the scale the
/// UI's score bar reads: 0.5 at logit 0, above 0.99 at logit 5.
pub fn relevance(logit: f32) -> f64 {
    1.0 / (1.0 + (-f64::from(logit)).exp())
}

/// What a cross-encoder reranker tells its owner after each search it scored: the agent and
/// `None` on success, or the error (the service turns it into a notice and a status line).
pub type Outcome =
    Arc<dyn Fn(&AgentId, Option<&engram_embed::rerank_local::RerankError>) + Send + Sync>;

/// A cross-encoder (see `engram_embed::rerank`) as archival search's reranker: each candidate
/// read alone with the query, its logit turned into a relevance by [`relevance`], ranking
/// alone (weight 1).
pub struct CrossEncoderReranker {
    model: Arc<LocalReranker>,
    outcome: Outcome,
}

impl CrossEncoderReranker {
    /// A reranker over `model` that reports every search's outcome to `outcome`.
    pub fn new(model: Arc<LocalReranker>, outcome: Outcome) -> Self {
        Self { model, outcome }
    }
}

#[async_trait]
impl Reranker for CrossEncoderReranker {
    async fn relevance(
        &self,
        agent: &AgentId,
        query: &str,
        candidates: &[Candidate],
    ) -> Result<Option<Vec<f64>>, RerankError> {
        // A cross-encoder reads each candidate alone.
        let texts: Vec<String> = candidates.iter().map(|c| c.text.clone()).collect();
        let result = self.model.score(query, &texts).await;
        (self.outcome)(agent, result.as_ref().err());
        Ok(Some(result?.into_iter().map(relevance).collect()))
    }
}

//! Late interaction as archival search's reranker when no cross-encoder is configured: the
//! query's and each candidate's word-piece vectors from the built-in embedding model,
//! compared token by token (ColBERT's MaxSim, `engram_embed::late`), each query word weighted
//! by its BM25 IDF among the agent's own passages, blended with the hybrid score. Measured on
//! the LoCoMo development set (`benches/retrieval.rs`, README Performance): evidence
//! recall@5 0.690 → 0.709 over the hybrid search's first 20 hits at weight 0.6, and in no
//! question category below words alone. Unweighted MaxSim reached 0.712 but pulled up the
//! turns of a speaker a question names (a name most passages hold), losing the adversarial
//! category to words alone (0.722 < 0.747); weighted, it is 0.751.
//!
//! Only agents whose embedding model is the built-in one are reranked, and only while that
//! model is in memory (the search has just embedded its query with it): a search never loads
//! or downloads a model for this, and an agent on a remote model is left as the store ranks it.

use crate::local_model::LocalModels;
use async_trait::async_trait;
use engram_core::AgentId;
use engram_embed::late::{content_words, weighted_max_sim};
use engram_store::Store;
use std::sync::Arc;

/// The late-interaction relevance's share of a reranked hit's score (the hybrid score has the
/// rest); with IDF-weighted MaxSim the development set's sweep (conversations 1–3 to choose,
/// 4–5 to check) was flat from 0.5 to 0.6 (0.708–0.709, 0.6 one question better on the tune
/// half), 0.8 lost on the check half and the adversarial floor, and a pure MaxSim order (1.0)
/// fell below the hybrid.
pub const LATE_INTERACTION_WEIGHT: f64 = 0.6;

/// How many of the hybrid search's first hits are re-scored: each is one short model pass,
/// and 30 or 50 found nothing more than 20 on the development set.
pub const LATE_INTERACTION_DEPTH: usize = 20;

pub(crate) struct LateInteraction {
    pub(crate) store: Store,
    pub(crate) local: Arc<LocalModels>,
}

#[async_trait]
impl engram_agent::Reranker for LateInteraction {
    async fn relevance(
        &self,
        agent: &AgentId,
        query: &str,
        texts: &[String],
    ) -> std::result::Result<Option<Vec<f64>>, String> {
        let Some(model) = self
            .store
            .get_agent(agent)
            .ok()
            .and_then(|a| a.embedding)
            .and_then(|e| {
                let (provider, name) = e.model.split_once('/')?;
                provider
                    .eq_ignore_ascii_case(engram_embed::PROVIDER)
                    .then(|| self.local.existing(name))
                    .flatten()
            })
            .filter(|m| m.is_loaded())
        else {
            return Ok(None);
        };
        let encoder = model.encoder().await.map_err(|e| e.to_string())?;
        let mut all = Vec::with_capacity(texts.len() + 1);
        all.push(query.to_owned());
        all.extend_from_slice(texts);
        let vectors = tokio::task::spawn_blocking(move || encoder.token_vectors(&all))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        let (q, passages) = vectors.split_first().ok_or("no query vectors")?;
        let q = idf_weighted(&self.store, agent, q)?;
        Ok(Some(
            passages
                .iter()
                .map(|p| f64::from(weighted_max_sim(&q, &p.vectors)).clamp(0.0, 1.0))
                .collect(),
        ))
    }

    fn weight(&self) -> f64 {
        LATE_INTERACTION_WEIGHT
    }

    fn depth(&self) -> usize {
        LATE_INTERACTION_DEPTH
    }
}

/// The query's content-word pieces, each weighted by its word's BM25 IDF among `agent`'s
/// passages (from the agent's own full-text index): a word most passages hold, like the name
/// of a speaker in a long conversation, counts for little, as it does in BM25.
fn idf_weighted<'q>(
    store: &Store,
    agent: &AgentId,
    query: &'q engram_embed::TokenVectors,
) -> std::result::Result<Vec<(&'q [f32], f64)>, String> {
    let words = content_words(query);
    let names: Vec<String> = words.iter().map(|(w, _)| w.clone()).collect();
    let stats = store
        .passage_term_stats(agent, &names)
        .map_err(|e| e.to_string())?;
    Ok(words
        .iter()
        .enumerate()
        .flat_map(|(i, (_, pieces))| {
            let idf = stats.idf(i);
            pieces.iter().map(move |v| (*v, idf))
        })
        .collect())
}

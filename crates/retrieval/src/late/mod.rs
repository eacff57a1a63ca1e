//! Late interaction as archival search's reranker when no cross-encoder is configured: the
//! query's and each candidate's word-piece vectors from the built-in embedding model,
//! compared token by token (ColBERT's MaxSim, [`maxsim`]), each query word weighted
//! by its BM25 IDF among the agent's own passages, each candidate read partly alone and
//! mostly together with the two passages written before and the two after it, blended with
//! the hybrid score. Measured on the LoCoMo development set (`benches/retrieval.rs`, README
//! Performance): evidence recall@5 0.690 (hybrid) → 0.709 (IDF-weighted MaxSim over the
//! first 20, weight 0.6) → 0.745 with one neighbour on each side → 0.764 with two, over the
//! first 15, and in no question category below words alone.
//! Unweighted MaxSim pulled up the turns of a speaker a question names (a name most passages
//! hold) and lost the adversarial category to words alone; weighting by IDF fixed that.
//!
//! A passage's word-piece vectors are computed once, in the background after it is written
//! (`engram_service`'s embeddings backfill), and stored compressed ([`token_codes`]); a search
//! encodes only its query, plus any candidate whose vectors are not stored yet.
//!
//! Only agents whose embedding model is the built-in one are reranked, and only while that
//! model is in memory (the search has just embedded its query with it): a search never loads
//! or downloads a model for this, and an agent on a remote model is left as the store ranks it.

pub mod maxsim;
pub mod token_codes;

use crate::rerank::{Candidate, RerankError, Reranker};
use crate::tuning::{
    LATE_INTERACTION_CONTEXT_SHARE, LATE_INTERACTION_DEPTH, LATE_INTERACTION_NEIGHBOUR_REACH,
    LATE_INTERACTION_WEIGHT,
};
use async_trait::async_trait;
use engram_core::{AgentId, PassageId};
use engram_embed::LocalEmbeddings;
use engram_store::{Store, TermStats};
use maxsim::{content_words, weighted_max_sim_in_context};
use std::collections::HashMap;
use std::sync::Arc;

/// The built-in embedding model of a name (`all-minilm-l6-v2`), if it is in memory now; `None`
/// otherwise (late interaction never loads one).
pub type LoadedModel = Arc<dyn Fn(&str) -> Option<Arc<LocalEmbeddings>> + Send + Sync>;

/// Late interaction as a [`Reranker`] (see the module docs), reading stored word-piece vectors
/// from `store` and encoding with the model `loaded` finds.
pub struct LateInteraction {
    store: Store,
    loaded: LoadedModel,
}

impl LateInteraction {
    /// A late-interaction reranker over `agent`s' passages in `store`, using the built-in model
    /// `loaded` gives (see [`LoadedModel`]).
    pub fn new(store: Store, loaded: LoadedModel) -> Self {
        Self { store, loaded }
    }
}

#[async_trait]
impl Reranker for LateInteraction {
    async fn relevance(
        &self,
        agent: &AgentId,
        query: &str,
        candidates: &[Candidate],
    ) -> Result<Option<Vec<f64>>, RerankError> {
        let Some((handle, model)) = self
            .store
            .agents()
            .get(agent)
            .ok()
            .and_then(|a| a.embedding)
            .and_then(|e| {
                let (provider, name) = e.model.split_once('/')?;
                let model = provider
                    .eq_ignore_ascii_case(engram_embed::PROVIDER)
                    .then(|| (self.loaded)(name))
                    .flatten()?;
                Some((e.model.clone(), model))
            })
            .filter(|(_, m)| m.is_loaded())
        else {
            return Ok(None);
        };
        let (passages, places) = distinct_passages(candidates);
        // What the background backfill has stored; only the rest (passages written moments
        // ago, or unreadable blobs) and the query go through the model now.
        let ids: Vec<PassageId> = passages.iter().map(|(id, _)| id.clone()).collect();
        let stored = self.store.passages().tokens(agent, &handle, &ids)?;
        let mut vectors: Vec<Option<Vec<Vec<f32>>>> = ids
            .iter()
            .map(|id| stored.get(id).and_then(|b| token_codes::decode(b).ok()))
            .collect();
        let missing: Vec<usize> = (0..vectors.len())
            .filter(|&i| vectors[i].is_none())
            .collect();
        let mut texts = vec![query.to_owned()];
        texts.extend(missing.iter().map(|&i| passages[i].1.clone()));
        let encode = |e: &dyn std::fmt::Display| RerankError::Encode(e.to_string());
        let encoder = model.encoder().await.map_err(|e| encode(&e))?;
        let mut encoded = tokio::task::spawn_blocking(move || encoder.token_vectors(&texts))
            .await
            .map_err(|e| encode(&e))?
            .map_err(|e| encode(&e))?
            .into_iter();
        let query_vectors = encoded
            .next()
            .ok_or_else(|| encode(&"the model gave no query vectors"))?;
        for (&i, tv) in missing.iter().zip(encoded) {
            vectors[i] = Some(tv.vectors);
        }
        let vectors: Vec<Vec<Vec<f32>>> =
            vectors.into_iter().map(Option::unwrap_or_default).collect();
        let q = idf_weighted(&self.store, agent, &query_vectors)?;
        Ok(Some(
            places
                .iter()
                .map(|(own, around)| {
                    let around: Vec<&[Vec<f32>]> =
                        around.iter().map(|&i| vectors[i].as_slice()).collect();
                    let sim = weighted_max_sim_in_context(
                        &q,
                        &vectors[*own],
                        &around,
                        LATE_INTERACTION_CONTEXT_SHARE,
                    );
                    f64::from(sim).clamp(0.0, 1.0)
                })
                .collect(),
        ))
    }

    fn weight(&self) -> f64 {
        LATE_INTERACTION_WEIGHT
    }

    fn depth(&self) -> usize {
        LATE_INTERACTION_DEPTH
    }

    fn neighbour_reach(&self) -> usize {
        LATE_INTERACTION_NEIGHBOUR_REACH
    }
}

/// BM25's inverse document frequency of word `i` of `stats`: `ln(1 + (N − df + 0.5) / (df +
/// 0.5))`, positive, largest for a word no passage holds. 0 for an index out of range.
pub fn idf(stats: &TermStats, i: usize) -> f64 {
    let Some(&df) = stats.frequencies.get(i) else {
        return 0.0;
    };
    let (n, df) = (stats.passages as f64, df as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// Where a candidate and its neighbours sit in the list of distinct passages.
type Place = (usize, Vec<usize>);

/// The passages to read, each once (neighbouring turns are often candidates themselves), as
/// `(id, text)`; and for each candidate the places of it and of its neighbours among them.
fn distinct_passages(candidates: &[Candidate]) -> (Vec<(PassageId, String)>, Vec<Place>) {
    let mut all: Vec<(PassageId, String)> = Vec::new();
    let mut at: HashMap<&PassageId, usize> = HashMap::new();
    let mut places = Vec::with_capacity(candidates.len());
    for c in candidates {
        let mut place = Vec::with_capacity(1 + c.neighbours.len());
        let own = std::iter::once((&c.id, &c.text));
        for (id, text) in own.chain(c.neighbour_ids.iter().zip(&c.neighbours)) {
            place.push(*at.entry(id).or_insert_with(|| {
                all.push((id.clone(), text.clone()));
                all.len() - 1
            }));
        }
        places.push((place[0], place.split_off(1)));
    }
    (all, places)
}

/// The query's content-word pieces, each weighted by its word's BM25 IDF among `agent`'s
/// passages (from the agent's own full-text index): a word most passages hold, like the name
/// of a speaker in a long conversation, counts for little, as it does in BM25.
fn idf_weighted<'q>(
    store: &Store,
    agent: &AgentId,
    query: &'q engram_embed::TokenVectors,
) -> Result<Vec<(&'q [f32], f64)>, RerankError> {
    let words = content_words(query);
    let names: Vec<String> = words.iter().map(|(w, _)| w.clone()).collect();
    let stats = store.passages().term_stats(agent, &names)?;
    Ok(words
        .iter()
        .enumerate()
        .flat_map(|(i, (_, pieces))| {
            let idf = idf(&stats, i);
            pieces.iter().map(move |v| (*v, idf))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rarer_words_weigh_more_and_a_word_nobody_wrote_weighs_most() {
        // Three passages; "melanie" and "garden" in two, "paint" in one, "kiln" in none.
        let stats = TermStats {
            passages: 3,
            frequencies: vec![2, 2, 1, 0, 0, 0],
        };
        assert!(idf(&stats, 3) > idf(&stats, 2) && idf(&stats, 2) > idf(&stats, 0));
        assert!(idf(&stats, 0) > 0.0);
        assert_eq!(idf(&stats, 99), 0.0);
    }
}

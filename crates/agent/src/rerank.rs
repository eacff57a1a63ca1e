//! The last stage of archival search: a reranker (a cross-encoder that reads the query and
//! each candidate together) reorders the first candidates of the store's hybrid ranking.
//!
//! This is the one archival-search pipeline: the agent's `archival_memory_search` tool and the
//! service's `search_archival` (UI, CLI, REST) both call [`search_passages`], so a reranker
//! configured once applies everywhere. The store's filters (tags, dates) apply first, as the
//! candidates are the store's own hits. A reranker that fails never fails the search: the
//! answer is then the store's ranking, exactly as without a reranker (the reranker itself
//! reports the failure, e.g. as an app notice).

use async_trait::async_trait;
use engram_core::{AgentId, PassageHit, Result};
use engram_store::{PassageQuery, Store};

/// How many of the store's best hits the reranker reads (when the search asks for fewer).
/// Each one is a full model pass, so this bounds a search's cost; deeper candidates rarely
/// reach the first five after reranking.
pub const RERANK_CANDIDATES: usize = 30;

/// Scores candidates for a query (a cross-encoder in practice; see `engram_embed::rerank`).
#[async_trait]
pub trait Reranker: Send + Sync {
    /// The relevance of each of `texts` to `query`, in `0..=1` and input order (higher is
    /// more relevant). `agent` is whose memory is searched (for notices). Errors: the model
    /// could not be loaded or run; the message says why, for logs.
    async fn relevance(
        &self,
        agent: &AgentId,
        query: &str,
        texts: &[String],
    ) -> std::result::Result<Vec<f64>, String>;
}

/// Searches `agent`'s archival memory: the store's ranking (BM25, fused with vectors when
/// `q.embedding` is set), then, with a `reranker` and a non-blank query, its first
/// `max(q.top_k, RERANK_CANDIDATES)` hits reordered by the reranker, whose relevance becomes
/// each hit's score. Returns at most `q.top_k` hits, best first. Errors: those of
/// [`Store::search_passages`] (unknown agent, a malformed vector); a reranker failure is not
/// one (see the module docs).
pub async fn search_passages(
    store: &Store,
    agent: &AgentId,
    q: &PassageQuery,
    reranker: Option<&dyn Reranker>,
) -> Result<Vec<PassageHit>> {
    let Some(reranker) = reranker.filter(|_| !q.query.trim().is_empty() && q.top_k > 0) else {
        return store.search_passages(agent, q);
    };
    let pool = PassageQuery {
        top_k: q.top_k.max(RERANK_CANDIDATES),
        ..q.clone()
    };
    let candidates = store.search_passages(agent, &pool)?;
    if candidates.len() <= 1 {
        return Ok(truncated(candidates, q.top_k));
    }
    let texts: Vec<String> = candidates.iter().map(|h| h.passage.text.clone()).collect();
    match reranker.relevance(agent, &q.query, &texts).await {
        Ok(scores) if scores.len() == candidates.len() => {
            let mut hits: Vec<PassageHit> = candidates
                .into_iter()
                .zip(scores)
                .map(|(hit, score)| PassageHit {
                    score: if score.is_finite() {
                        score.clamp(0.0, 1.0)
                    } else {
                        0.0
                    },
                    ..hit
                })
                .collect();
            // Stable: equal relevance keeps the store's order.
            hits.sort_by(|a, b| b.score.total_cmp(&a.score));
            Ok(truncated(hits, q.top_k))
        }
        outcome => {
            let why = match outcome {
                Err(e) => e,
                Ok(s) => format!("{} scores for {} candidates", s.len(), texts.len()),
            };
            tracing::warn!(agent = %agent, why, "reranker unavailable; the store's ranking stands");
            // The store's own answer at the asked depth (its neighbour smoothing depends on
            // the depth, so a cut deeper list could differ from it).
            store.search_passages(agent, q)
        }
    }
}

fn truncated(mut hits: Vec<PassageHit>, n: usize) -> Vec<PassageHit> {
    hits.truncate(n);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_core::{Agent, LlmConfig, LoopStyle, NewPassage, TagMatch};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Prefers texts that hold the word "answer", then shorter texts; or fails.
    struct ByWord {
        fail: bool,
        seen: AtomicUsize,
    }

    #[async_trait]
    impl Reranker for ByWord {
        async fn relevance(
            &self,
            _: &AgentId,
            _: &str,
            texts: &[String],
        ) -> std::result::Result<Vec<f64>, String> {
            self.seen.store(texts.len(), Ordering::SeqCst);
            if self.fail {
                return Err("weights missing".into());
            }
            Ok(texts
                .iter()
                .map(|t| {
                    let bonus = if t.contains("answer") { 0.5 } else { 0.0 };
                    bonus + 0.4 / t.len() as f64
                })
                .collect())
        }
    }

    fn store_with(texts: &[(&str, &[&str])]) -> (Store, AgentId) {
        let store = Store::open_in_memory().unwrap();
        let now = chrono::Utc::now();
        let agent = Agent {
            id: AgentId::new(),
            name: "R".into(),
            description: String::new(),
            system: String::new(),
            llm: LlmConfig::new("openai/gpt-4o-mini"),
            embedding: None,
            loop_style: LoopStyle::ToolLoop,
            max_steps: 50,
            tools: Vec::new(),
            tool_rules: Vec::new(),
            summary: None,
            created_at: now,
            updated_at: now,
        };
        let (agent, _) = store.create_agent(&agent, &[], &[]).unwrap();
        let passages: Vec<NewPassage> = texts
            .iter()
            .map(|(t, tags)| NewPassage {
                text: t.to_string(),
                tags: tags.iter().map(|s| s.to_string()).collect(),
                ..NewPassage::default()
            })
            .collect();
        store.insert_passages(&agent.id, &passages).unwrap();
        (store, agent.id)
    }

    fn query(text: &str, top_k: usize) -> PassageQuery {
        PassageQuery {
            query: text.into(),
            tag_match: TagMatch::Any,
            top_k,
            ..PassageQuery::default()
        }
    }

    fn texts(hits: &[PassageHit]) -> Vec<&str> {
        hits.iter().map(|h| h.passage.text.as_str()).collect()
    }

    #[tokio::test]
    async fn the_reranker_reorders_the_candidates_and_scores_them() {
        let mut rows: Vec<(String, Vec<&str>)> = (0..10)
            .map(|i| (format!("garden note {i} garden garden"), vec![]))
            .collect();
        rows.push(("the garden answer is tulips".into(), vec![]));
        let rows: Vec<(&str, &[&str])> = rows.iter().map(|(t, g)| (t.as_str(), &g[..])).collect();
        let (store, agent) = store_with(&rows);
        let q = query("garden", 3);
        let plain = store.search_passages(&agent, &q).unwrap();
        assert!(!texts(&plain).contains(&"the garden answer is tulips"));
        let r = ByWord {
            fail: false,
            seen: AtomicUsize::new(0),
        };
        let hits = search_passages(&store, &agent, &q, Some(&r)).await.unwrap();
        assert_eq!(hits.len(), 3);
        assert_eq!(hits[0].passage.text, "the garden answer is tulips");
        // The reranker read every candidate up to its pool, not just the three asked for.
        assert_eq!(r.seen.load(Ordering::SeqCst), 11);
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        assert!(hits.iter().all(|h| (0.0..=1.0).contains(&h.score)));
    }

    #[tokio::test]
    async fn filters_apply_before_reranking() {
        let (store, agent) = store_with(&[
            ("garden answer untagged", &[]),
            ("garden note tagged", &["plants"]),
            ("garden other tagged", &["plants"]),
        ]);
        let q = PassageQuery {
            tags: vec!["plants".into()],
            ..query("garden", 5)
        };
        let r = ByWord {
            fail: false,
            seen: AtomicUsize::new(0),
        };
        let hits = search_passages(&store, &agent, &q, Some(&r)).await.unwrap();
        assert_eq!(hits.len(), 2, "{:?}", texts(&hits));
        assert!(hits.iter().all(|h| h.passage.tags == ["plants"]));
    }

    #[tokio::test]
    async fn a_failing_reranker_leaves_the_stores_answer() {
        let rows: Vec<(String, Vec<&str>)> = (0..12)
            .map(|i| (format!("harbour walk {i}"), vec![]))
            .collect();
        let rows: Vec<(&str, &[&str])> = rows.iter().map(|(t, g)| (t.as_str(), &g[..])).collect();
        let (store, agent) = store_with(&rows);
        let q = query("harbour", 4);
        let r = ByWord {
            fail: true,
            seen: AtomicUsize::new(0),
        };
        let hits = search_passages(&store, &agent, &q, Some(&r)).await.unwrap();
        let plain = store.search_passages(&agent, &q).unwrap();
        assert_eq!(texts(&hits), texts(&plain));
        assert_eq!(
            hits.iter().map(|h| h.score).collect::<Vec<_>>(),
            plain.iter().map(|h| h.score).collect::<Vec<_>>()
        );
        // A blank query lists, it does not rank: the reranker is not asked.
        let r = ByWord {
            fail: false,
            seen: AtomicUsize::new(0),
        };
        let listed = search_passages(&store, &agent, &query("  ", 4), Some(&r))
            .await
            .unwrap();
        assert_eq!(listed.len(), 4);
        assert_eq!(r.seen.load(Ordering::SeqCst), 0);
    }
}

//! The entry point of archival search: the hybrid ranking of the store's candidates, then
//! optional pseudo-relevance feedback, then a reranker over the head of the answer.
//!
//! Every archival search goes through [`search`]: the agent's `archival_memory_search` tool and
//! the service's `search_archival` (UI, CLI, REST) both call it, so a reranker configured once
//! applies everywhere. The store's filters (tags, dates) apply first, as the candidates are the
//! store's own rows. A reranker that fails never fails the search: the answer is then the
//! hybrid ranking, exactly as without a reranker (the reranker itself reports the failure,
//! e.g. as an app notice).

use crate::expand::Expansion;
use crate::hybrid;
use crate::rerank::{Candidate, Reranker};
use crate::tuning::{EXPANSION, RERANK_CANDIDATES, RERANK_POOL};
use engram_core::{AgentId, PassageHit, Result};
use engram_store::PassageQuery;

/// Searches `agent`'s archival memory: the store's ranking (BM25, fused with vectors when
/// `q.embedding` is set), then, with a `reranker` and a non-blank query, the first
/// `max(q.top_k, reranker.depth())` hits of its answer [`RERANK_POOL`] deep reordered by the
/// reranker's relevance blended
/// with the store's score by [`Reranker::weight`] (the relevance alone by default). Returns
/// at most `q.top_k` hits, best first. Errors: those of [`hybrid::passages`] (unknown
/// agent, a malformed vector); a reranker failure is not one (see the module docs).
pub async fn search(
    store: &(dyn engram_store_api::PassageStore + '_),
    agent: &AgentId,
    q: &PassageQuery,
    reranker: Option<&dyn Reranker>,
) -> Result<Vec<PassageHit>> {
    search_with(store, agent, q, reranker, &EXPANSION).await
}

/// [`search`] with the given pseudo-relevance feedback (benchmarks sweep it): when
/// `expansion.weight > 0`, the first search's best hits give feedback terms
/// ([`crate::expand::feedback_terms`]) that are searched by words alone and blended in before
/// any reranking. Errors: as [`search`].
pub async fn search_with(
    store: &(dyn engram_store_api::PassageStore + '_),
    agent: &AgentId,
    q: &PassageQuery,
    reranker: Option<&dyn Reranker>,
    expansion: &Expansion,
) -> Result<Vec<PassageHit>> {
    let ranks = !q.query.trim().is_empty() && q.top_k > 0;
    let reranker = reranker.filter(|_| ranks);
    let expand = ranks && expansion.weight > 0.0 && expansion.terms > 0;
    if reranker.is_none() && !expand {
        return hybrid::passages(store, agent, q).await;
    }
    let depth = reranker.map_or(RERANK_CANDIDATES, |r| r.depth().max(1));
    let read_depth = q.top_k.max(depth);
    let pool = PassageQuery {
        top_k: read_depth.max(if reranker.is_some() { RERANK_POOL } else { 0 }),
        ..q.clone()
    };
    let mut candidates = hybrid::passages(store, agent, &pool).await?;
    if expand {
        candidates = expanded(store, agent, &pool, candidates, expansion).await?;
    }
    candidates.truncate(read_depth);
    // What stands when there is no reranker, or it declines or fails: the store's answer at
    // the asked depth (its neighbour smoothing depends on the depth, so a cut deeper list
    // could differ from it), or the expanded ranking.
    let fallback = async |candidates: Vec<PassageHit>| {
        if expand {
            Ok(truncated(candidates, q.top_k))
        } else {
            hybrid::passages(store, agent, q).await
        }
    };
    let Some(reranker) = reranker else {
        return fallback(candidates).await;
    };
    if candidates.len() <= 1 {
        return Ok(truncated(candidates, q.top_k));
    }
    let neighbours = match reranker.neighbour_reach() {
        0 => Vec::new(),
        reach => {
            let ids: Vec<_> = candidates.iter().map(|h| h.passage.id.clone()).collect();
            store.passage_neighbours(agent, &pool, &ids, reach).await?
        }
    };
    let read: Vec<Candidate> = candidates
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let around = neighbours.get(i).into_iter().flatten();
            Candidate {
                id: h.passage.id.clone(),
                text: h.passage.text.clone(),
                neighbours: around.clone().map(|p| p.text.clone()).collect(),
                neighbour_ids: around.map(|p| p.id.clone()).collect(),
            }
        })
        .collect();
    let weight = reranker.weight();
    let weight = if weight.is_finite() {
        weight.clamp(0.0, 1.0)
    } else {
        1.0
    };
    match reranker.relevance(agent, &q.query, &read).await {
        Ok(None) => fallback(candidates).await,
        Ok(Some(scores)) if scores.len() == candidates.len() => {
            let mut hits: Vec<PassageHit> = candidates
                .into_iter()
                .zip(scores)
                .map(|(hit, score)| {
                    let relevance = if score.is_finite() {
                        score.clamp(0.0, 1.0)
                    } else {
                        0.0
                    };
                    PassageHit {
                        score: (1.0 - weight) * hit.score.clamp(0.0, 1.0) + weight * relevance,
                        ..hit
                    }
                })
                .collect();
            // Stable: equal relevance keeps the store's order.
            hits.sort_by(|a, b| b.score.total_cmp(&a.score));
            Ok(truncated(hits, q.top_k))
        }
        outcome => {
            let why = match outcome {
                Err(e) => e.to_string(),
                Ok(s) => format!(
                    "{} scores for {} candidates",
                    s.map_or(0, |s| s.len()),
                    read.len()
                ),
            };
            tracing::warn!(agent = %agent, why, "reranker unavailable; the store's ranking stands");
            fallback(candidates).await
        }
    }
}

/// Blends the lexical search of `first`'s feedback terms into `first` (see [`Expansion`]),
/// best first, at most `pool.top_k` hits; the same filters apply to both searches.
async fn expanded(
    store: &(dyn engram_store_api::PassageStore + '_),
    agent: &AgentId,
    pool: &PassageQuery,
    first: Vec<PassageHit>,
    expansion: &Expansion,
) -> Result<Vec<PassageHit>> {
    let feedback: Vec<(&str, f64)> = first
        .iter()
        .take(expansion.feedback_hits)
        .map(|h| (h.passage.text.as_str(), h.score))
        .collect();
    let terms = crate::expand::feedback_terms(&pool.query, &feedback, expansion.terms);
    if terms.is_empty() {
        return Ok(first);
    }
    let second = hybrid::passages(
        store,
        agent,
        &PassageQuery {
            query: terms.join(" "),
            embedding: None,
            ..pool.clone()
        },
    )
    .await?;
    let w = expansion.weight.clamp(0.0, 1.0);
    let mut hits: Vec<PassageHit> = Vec::with_capacity(first.len() + second.len());
    let mut at: std::collections::HashMap<engram_core::PassageId, usize> =
        std::collections::HashMap::new();
    for (hit, share) in first
        .into_iter()
        .map(|h| (h, 1.0 - w))
        .chain(second.into_iter().map(|h| (h, w)))
    {
        let add = share * hit.score.clamp(0.0, 1.0);
        match at.get(&hit.passage.id) {
            Some(&i) => hits[i].score += add,
            None => {
                at.insert(hit.passage.id.clone(), hits.len());
                hits.push(PassageHit { score: add, ..hit });
            }
        }
    }
    // Stable: ties keep the first search's order.
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    Ok(truncated(hits, pool.top_k))
}

fn truncated(mut hits: Vec<PassageHit>, n: usize) -> Vec<PassageHit> {
    hits.truncate(n);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HybridSearch;
    use crate::rerank::RerankError;
    use async_trait::async_trait;
    use engram_core::{Agent, LlmConfig, NewPassage, TagMatch};
    use engram_store::Store;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Prefers texts that hold the word "answer", then shorter texts; or fails.
    struct ByWord {
        fail: bool,
        seen: AtomicUsize,
    }

    /// Gives every text the relevance 1 with a blend weight, or declines every search.
    struct Flat {
        weight: f64,
        decline: bool,
    }

    #[async_trait]
    impl Reranker for Flat {
        async fn relevance(
            &self,
            _: &AgentId,
            _: &str,
            texts: &[Candidate],
        ) -> std::result::Result<Option<Vec<f64>>, RerankError> {
            Ok((!self.decline).then(|| vec![1.0; texts.len()]))
        }

        fn weight(&self) -> f64 {
            self.weight
        }
    }

    #[async_trait]
    impl Reranker for ByWord {
        async fn relevance(
            &self,
            _: &AgentId,
            _: &str,
            texts: &[Candidate],
        ) -> std::result::Result<Option<Vec<f64>>, RerankError> {
            self.seen.store(texts.len(), Ordering::SeqCst);
            if self.fail {
                return Err(RerankError::Other("weights missing".into()));
            }
            Ok(Some(
                texts
                    .iter()
                    .map(|Candidate { text: t, .. }| {
                        let bonus = if t.contains("answer") { 0.5 } else { 0.0 };
                        bonus + 0.4 / t.len() as f64
                    })
                    .collect(),
            ))
        }
    }

    /// Records the candidates it is given (asking for `reach` neighbours a side, reading the
    /// first `depth` hits, the default when 0) and scores them flat.
    #[derive(Default)]
    struct Neighbourly {
        reach: usize,
        depth: usize,
        seen: std::sync::Mutex<Vec<Candidate>>,
    }

    #[async_trait]
    impl Reranker for Neighbourly {
        async fn relevance(
            &self,
            _: &AgentId,
            _: &str,
            candidates: &[Candidate],
        ) -> std::result::Result<Option<Vec<f64>>, RerankError> {
            *self.seen.lock().unwrap() = candidates.to_vec();
            Ok(Some(vec![1.0; candidates.len()]))
        }

        fn neighbour_reach(&self) -> usize {
            self.reach
        }

        fn depth(&self) -> usize {
            if self.depth == 0 {
                RERANK_CANDIDATES
            } else {
                self.depth
            }
        }
    }

    fn store_with(texts: &[(&str, &[&str])]) -> (Store, AgentId) {
        let store = Store::open_in_memory().unwrap();
        let agent = Agent::new("R", LlmConfig::new("openai/gpt-4o-mini"));
        let (agent, _) = store.agents().create(&agent, &[], &[]).unwrap();
        let passages: Vec<NewPassage> = texts
            .iter()
            .map(|(t, tags)| NewPassage {
                text: t.to_string(),
                tags: tags.iter().map(|s| s.to_string()).collect(),
                ..NewPassage::default()
            })
            .collect();
        store.passages().insert(&agent.id, &passages).unwrap();
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
        let hits = search(&store, &agent, &q, Some(&r)).await.unwrap();
        assert_eq!(hits.len(), 3);
        assert_eq!(hits[0].passage.text, "the garden answer is tulips");
        // The reranker read every candidate up to its pool, not just the three asked for.
        assert_eq!(r.seen.load(Ordering::SeqCst), 11);
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        assert!(hits.iter().all(|h| (0.0..=1.0).contains(&h.score)));
    }

    /// The neighbours the candidate with `text` came with.
    fn neighbours_of(seen: &[Candidate], text: &str) -> Vec<String> {
        let candidate = seen.iter().find(|c| c.text == text);
        candidate
            .unwrap_or_else(|| panic!("{text} not among {seen:?}"))
            .neighbours
            .clone()
    }

    /// The candidates a reranker reading `reach` neighbours a side is given for `q`.
    async fn read_with(
        store: &Store,
        agent: &AgentId,
        q: &PassageQuery,
        reach: usize,
    ) -> Vec<Candidate> {
        let r = Neighbourly {
            reach,
            ..Neighbourly::default()
        };
        search(store, agent, q, Some(&r)).await.unwrap();
        r.seen.into_inner().unwrap()
    }

    #[tokio::test]
    async fn a_reranker_that_reads_neighbours_gets_the_passages_around_each_candidate() {
        let (store, agent) = store_with(&[
            ("where did you go last weekend", &["chat"]),
            ("we drove to the lake", &["chat"]),
            ("a note without the tag", &[]),
            ("the lake was frozen solid", &["chat"]),
        ]);
        let seen = read_with(&store, &agent, &query("lake", 5), 1).await;
        let of = |text: &str| neighbours_of(&seen, text);
        // (Neighbour smoothing admits the turns around a hit as candidates too.)
        assert!(seen.len() >= 2, "{seen:?}");
        assert_eq!(
            of("we drove to the lake"),
            ["where did you go last weekend", "a note without the tag"]
        );
        // The last passage has only one before it.
        assert_eq!(of("the lake was frozen solid"), ["a note without the tag"]);
        // A tag filter applies to neighbours too: the untagged note is skipped.
        let tagged = PassageQuery {
            tags: vec!["chat".into()],
            ..query("lake", 5)
        };
        let seen = read_with(&store, &agent, &tagged, 1).await;
        let of = |text: &str| neighbours_of(&seen, text);
        assert_eq!(
            of("we drove to the lake"),
            ["where did you go last weekend", "the lake was frozen solid"]
        );
        // A reranker that does not ask gets none.
        let seen = read_with(&store, &agent, &query("lake", 5), 0).await;
        assert!(seen.len() >= 2, "{seen:?}");
        assert!(seen.iter().all(|c| c.neighbours.is_empty()), "{seen:?}");
        // Two on each side: the neighbours' neighbours too, oldest first.
        let seen = read_with(&store, &agent, &query("lake", 5), 2).await;
        let of = |text: &str| neighbours_of(&seen, text);
        assert_eq!(
            of("we drove to the lake"),
            [
                "where did you go last weekend",
                "a note without the tag",
                "the lake was frozen solid"
            ]
        );
        assert_eq!(
            of("the lake was frozen solid"),
            ["we drove to the lake", "a note without the tag"]
        );
    }

    #[tokio::test]
    async fn a_reranker_reads_the_head_of_the_stores_deep_answer() {
        let texts: Vec<String> = (0..80)
            .map(|i| format!("note {i} about the lake and {}", "words ".repeat(i % 7)))
            .collect();
        let rows: Vec<(&str, &[&str])> = texts.iter().map(|t| (t.as_str(), &[][..])).collect();
        let (store, agent) = store_with(&rows);
        let r = Neighbourly {
            depth: 4,
            ..Neighbourly::default()
        };
        let hits = search(&store, &agent, &query("lake", 2), Some(&r))
            .await
            .unwrap();
        assert_eq!(hits.len(), 2);
        let deep = store
            .search_passages(&agent, &query("lake", RERANK_POOL))
            .unwrap();
        let seen: Vec<String> = r
            .seen
            .lock()
            .unwrap()
            .iter()
            .map(|c| c.text.clone())
            .collect();
        let head: Vec<String> = deep
            .iter()
            .take(4)
            .map(|h| h.passage.text.clone())
            .collect();
        assert_eq!(seen, head);
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
        let hits = search(&store, &agent, &q, Some(&r)).await.unwrap();
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
        let hits = search(&store, &agent, &q, Some(&r)).await.unwrap();
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
        let listed = search(&store, &agent, &query("  ", 4), Some(&r))
            .await
            .unwrap();
        assert_eq!(listed.len(), 4);
        assert_eq!(r.seen.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_blending_reranker_mixes_its_relevance_with_the_stores_score() {
        let rows: Vec<(String, Vec<&str>)> = (0..6)
            .map(|i| (format!("kiln firing {i} {}", "kiln ".repeat(i)), vec![]))
            .collect();
        let rows: Vec<(&str, &[&str])> = rows.iter().map(|(t, g)| (t.as_str(), &g[..])).collect();
        let (store, agent) = store_with(&rows);
        let q = query("kiln", 6);
        let plain = store.search_passages(&agent, &q).unwrap();
        let r = Flat {
            weight: 0.25,
            decline: false,
        };
        let hits = search(&store, &agent, &q, Some(&r)).await.unwrap();
        // Relevance 1 everywhere: the store's order stands, each score moved a quarter of
        // the way to 1.
        assert_eq!(texts(&hits), texts(&plain));
        for (h, p) in hits.iter().zip(&plain) {
            assert!(
                (h.score - (0.75 * p.score + 0.25)).abs() < 1e-9,
                "{} {}",
                h.score,
                p.score
            );
        }
        let declining = Flat {
            weight: 0.25,
            decline: true,
        };
        let hits = search(&store, &agent, &q, Some(&declining)).await.unwrap();
        assert_eq!(
            hits.iter().map(|h| h.score).collect::<Vec<_>>(),
            plain.iter().map(|h| h.score).collect::<Vec<_>>()
        );
    }

    #[tokio::test]
    async fn feedback_terms_bring_in_a_passage_without_the_querys_words() {
        let mut rows: Vec<(String, Vec<&str>)> = vec![
            (
                "Caroline: my hobby is pottery, pottery every weekend".into(),
                vec![],
            ),
            ("Caroline: a hobby keeps me sane".into(), vec![]),
        ];
        // Far from the hobby turns, so it is not their neighbour in time either.
        rows.extend((0..8).map(|i| (format!("Mel: errand {i} at the shop"), vec![])));
        rows.push((
            "Mel: the kiln glazed the pottery bowls beautifully".into(),
            vec![],
        ));
        let rows: Vec<(&str, &[&str])> = rows.iter().map(|(t, g)| (t.as_str(), &g[..])).collect();
        let (store, agent) = store_with(&rows);
        let q = query("Caroline's hobby", 4);
        let bowls = "Mel: the kiln glazed the pottery bowls beautifully";
        let plain = search(&store, &agent, &q, None).await.unwrap();
        assert!(!texts(&plain).contains(&bowls), "{:?}", texts(&plain));
        let expansion = Expansion {
            weight: 0.3,
            feedback_hits: 2,
            terms: 5,
        };
        let hits = search_with(&store, &agent, &q, None, &expansion)
            .await
            .unwrap();
        assert!(hits.len() <= 4);
        assert!(texts(&hits).contains(&bowls), "{:?}", texts(&hits));
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        // Filters hold for the feedback search too.
        let tagged = PassageQuery {
            tags: vec!["none".into()],
            ..q.clone()
        };
        let none = search_with(&store, &agent, &tagged, None, &expansion)
            .await
            .unwrap();
        assert!(none.is_empty(), "{:?}", texts(&none));
    }
}

//! Search building blocks: safe FTS5 queries, vector similarity and reciprocal-rank fusion.
//!
//! User text never reaches FTS5 as syntax. It is split into words (runs of letters and digits,
//! the characters FTS5's `unicode61` tokenizer keeps), each word becomes a quoted string with `"`
//! doubled, and the words are joined with `OR` so a passage matching some of them ranks lower
//! instead of vanishing. A quoted string is always a valid FTS5 phrase, whatever it contains, so
//! `AND OR "`, `NEAR(`, `*` or `col:x` are searched as the words they contain.
//!
//! Two choices were measured on the LoCoMo development set (`../shared/eval/locomo-dev`, every
//! dialog turn a passage, evidence recall@5; `benches/retrieval.rs` prints the figures):
//! - English stop words (NLTK's list) are left out of the query unless nothing else is left:
//!   OR-ing "the" and "did" only adds noise to BM25 (0.556 → 0.598).
//! - A hit lends part of its score to the passages written just before and after it
//!   ([`smooth_by_neighbours`]): an answer often sits in the turn next to the one that shares
//!   the question's words ("Did you go?" / "Yes, last May") (0.598 → 0.667).

use std::collections::HashMap;
use std::collections::HashSet;
use std::hash::Hash;
use std::sync::LazyLock;

/// The `k` of reciprocal-rank fusion: score = Σ 1 / (k + rank), rank starting at 1.
pub(crate) const RRF_K: f64 = 60.0;

/// At most this many distinct words of a query are searched; longer queries are cut (keeps a
/// pasted page from turning into thousands of OR terms).
const MAX_TERMS: usize = 32;

/// English stop words, lower case (NLTK's list, as the `stop-words` crate ships it).
static STOP_WORDS: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| stop_words::get("en").iter().copied().collect());

/// The share of a hit's score each neighbour receives (see [`smooth_by_neighbours`]); tuned on
/// the development set, where 0.3 to 0.7 all beat no smoothing and 0.5 was best.
pub(crate) const NEIGHBOUR_SHARE: f64 = 0.5;

/// Rows further apart in time than this (microseconds: 30 minutes) are not neighbours: what
/// was written on another day lends no relevance.
pub(crate) const NEIGHBOUR_WINDOW_MICROS: i64 = 30 * 60 * 1_000_000;

/// What a user's query text becomes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FtsQuery {
    /// Empty or whitespace only: callers list the newest rows instead of ranking.
    Blank,
    /// Text with no word characters at all (punctuation, emoji): nothing can match it.
    NoTerms,
    /// A safe FTS5 MATCH expression.
    Match(String),
}

/// Turns user text into a safe FTS5 expression (see the module docs).
pub(crate) fn fts_query(text: &str) -> FtsQuery {
    if text.trim().is_empty() {
        return FtsQuery::Blank;
    }
    let mut seen = HashSet::new();
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty() && seen.insert(t.to_lowercase()))
        .collect();
    let content: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !STOP_WORDS.contains(w.to_lowercase().as_str()))
        .collect();
    // A query of stop words only ("who are you") is still searched, as it was written.
    let chosen = if content.is_empty() { words } else { content };
    let terms: Vec<String> = chosen
        .into_iter()
        .take(MAX_TERMS)
        .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
        .collect();
    if terms.is_empty() {
        FtsQuery::NoTerms
    } else {
        FtsQuery::Match(terms.join(" OR "))
    }
}

/// Which rows neighbour smoothing may rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Neighbours {
    /// A neighbour without the query's words may enter the ranking (archival memory: the
    /// passage next to a hit is often the answer).
    Admit,
    /// Only rows already in the ranking are re-scored (recall search, where a person expects
    /// every hit to contain what they searched for).
    Rerank,
}

/// Re-scores a BM25 ranking (row key, score; higher is better) by letting each hit lend
/// [`NEIGHBOUR_SHARE`] of its score to its neighbours: `s'(i) = s(i) + share · (s(prev) +
/// s(next))`, where rows outside the ranking score 0 and enter it only with
/// [`Neighbours::Admit`]. `neighbours(key)` gives the rows just before and after `key` that
/// pass the search's filters (or `None`). Returns the scored rows, best first; ties keep the
/// older ranking's order.
pub(crate) fn smooth_by_neighbours<E>(
    ranking: &[(i64, f64)],
    mode: Neighbours,
    mut neighbours: impl FnMut(i64) -> Result<[Option<i64>; 2], E>,
) -> Result<Vec<(i64, f64)>, E> {
    let mut order: Vec<i64> = ranking.iter().map(|(k, _)| *k).collect();
    let mut scores: HashMap<i64, f64> = ranking.iter().copied().collect();
    for &(key, score) in ranking {
        for n in neighbours(key)?.into_iter().flatten() {
            if mode == Neighbours::Rerank && !ranking.iter().any(|(k, _)| *k == n) {
                continue;
            }
            let entry = scores.entry(n).or_insert_with(|| {
                order.push(n);
                0.0
            });
            *entry += NEIGHBOUR_SHARE * score;
        }
    }
    let mut out: Vec<(i64, f64)> = order.into_iter().map(|k| (k, scores[&k])).collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    Ok(out)
}

/// Encodes a vector as stored: little-endian `f32`s.
pub(crate) fn encode_vector(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Decodes a stored vector (little-endian `f32`s; a trailing partial value is ignored).
pub(crate) fn decode_vector(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Cosine similarity of `query` (with precomputed norm `query_norm`) and a stored little-endian
/// vector of the same dimension; `None` if the stored vector has zero length.
pub(crate) fn cosine(query: &[f32], query_norm: f32, stored: &[u8]) -> Option<f32> {
    let mut dot = 0.0f32;
    let mut norm = 0.0f32;
    for (q, chunk) in query.iter().zip(stored.chunks_exact(4)) {
        let x = f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        dot += q * x;
        norm += x * x;
    }
    let denom = query_norm * norm.sqrt();
    (denom > 0.0 && denom.is_finite()).then(|| dot / denom)
}

/// The Euclidean norm of `v`.
pub(crate) fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

/// Fuses rankings (each best first) by reciprocal-rank fusion with constant `k`. Returns every
/// key with its fused score, best first; ties keep the order in which keys first appeared.
pub(crate) fn rrf<K: Clone + Eq + Hash>(rankings: &[Vec<K>], k: f64) -> Vec<(K, f64)> {
    let mut order: Vec<K> = Vec::new();
    let mut scores: HashMap<K, f64> = HashMap::new();
    for ranking in rankings {
        for (i, key) in ranking.iter().enumerate() {
            let rank = i as f64 + 1.0;
            let entry = scores.entry(key.clone()).or_insert_with(|| {
                order.push(key.clone());
                0.0
            });
            *entry += 1.0 / (k + rank);
        }
    }
    let mut fused: Vec<(K, f64)> = order
        .into_iter()
        .map(|key| {
            let s = scores[&key];
            (key, s)
        })
        .collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1));
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expr(text: &str) -> String {
        match fts_query(text) {
            FtsQuery::Match(e) => e,
            other => panic!("{text:?} gave {other:?}"),
        }
    }

    #[test]
    fn words_are_quoted_and_ored() {
        assert_eq!(expr("hello world"), r#""hello" OR "world""#);
        assert_eq!(expr("AND OR \""), r#""AND" OR "OR""#);
        assert_eq!(expr("NEAR(x, y1)"), r#""NEAR" OR "x" OR "y1""#);
        assert_eq!(expr("col:x*"), r#""col" OR "x""#);
        assert_eq!(expr("Café café CAFÉ"), r#""Café""#);
    }

    #[test]
    fn stop_words_are_left_out_unless_nothing_else_is_left() {
        assert_eq!(
            expr("When did Caroline go to the museum?"),
            r#""Caroline" OR "go" OR "museum""#
        );
        assert_eq!(expr("Who are YOU"), r#""Who" OR "are" OR "YOU""#);
    }

    #[test]
    fn neighbours_share_a_hit_and_may_enter_the_ranking() {
        // 10 is the hit, 11 its neighbour with no words of its own, 20 a weaker hit.
        let ranking = [(10, 4.0), (20, 2.5)];
        let smoothed = smooth_by_neighbours(&ranking, Neighbours::Admit, |k| {
            Ok::<_, ()>(match k {
                10 => [Some(9), Some(11)],
                20 => [Some(19), None],
                _ => [None, None],
            })
        })
        .unwrap();
        assert_eq!(
            smoothed,
            [(10, 4.0), (20, 2.5), (9, 2.0), (11, 2.0), (19, 1.25)]
        );
        // A neighbour that is itself a hit adds up.
        let both = smooth_by_neighbours(&[(1, 2.0), (2, 2.0)], Neighbours::Admit, |k| {
            Ok::<_, ()>(if k == 1 {
                [None, Some(2)]
            } else {
                [Some(1), None]
            })
        })
        .unwrap();
        assert_eq!(both, [(1, 3.0), (2, 3.0)]);
        // Re-ranking only: 9, 11 and 19 stay out; 20 gains nothing from them.
        let reranked = smooth_by_neighbours(&ranking, Neighbours::Rerank, |k| {
            Ok::<_, ()>(match k {
                10 => [Some(9), Some(20)],
                _ => [None, None],
            })
        })
        .unwrap();
        assert_eq!(reranked, [(20, 4.5), (10, 4.0)]);
    }

    #[test]
    fn blank_and_wordless_queries_are_told_apart() {
        assert_eq!(fts_query(""), FtsQuery::Blank);
        assert_eq!(fts_query("  \t\n"), FtsQuery::Blank);
        assert_eq!(fts_query("*"), FtsQuery::NoTerms);
        assert_eq!(fts_query("🎉🎉 \" ()"), FtsQuery::NoTerms);
    }

    #[test]
    fn long_queries_are_cut() {
        let text: Vec<String> = (0..100).map(|i| format!("w{i}")).collect();
        assert_eq!(expr(&text.join(" ")).matches(" OR ").count(), MAX_TERMS - 1);
    }

    #[test]
    fn rrf_rewards_agreement() {
        let bm25 = vec!["a", "b", "c"];
        let vector = vec!["c", "b", "d"];
        let fused = rrf(&[bm25, vector], RRF_K);
        let keys: Vec<_> = fused.iter().map(|(k, _)| *k).collect();
        // Found by both lists beats found by one; c (3rd and 1st) just edges out b (2nd twice)
        // because 1/(k+r) is convex.
        assert_eq!(keys, ["c", "b", "a", "d"]);
        assert!((fused[1].1 - 2.0 / 62.0).abs() < 1e-12);
        assert!((fused[2].1 - 1.0 / 61.0).abs() < 1e-12);
    }

    #[test]
    fn cosine_of_stored_vectors() {
        let q = [1.0f32, 0.0];
        let same = encode_vector(&[2.0, 0.0]);
        let orth = encode_vector(&[0.0, 3.0]);
        assert!((cosine(&q, norm(&q), &same).unwrap() - 1.0).abs() < 1e-6);
        assert!(cosine(&q, norm(&q), &orth).unwrap().abs() < 1e-6);
        assert_eq!(cosine(&q, norm(&q), &encode_vector(&[0.0, 0.0])), None);
    }
}

//! Search building blocks: safe FTS5 queries, vector similarity and reciprocal-rank fusion.
//!
//! User text never reaches FTS5 as syntax. It is split into words (runs of letters and digits,
//! the characters FTS5's `unicode61` tokenizer keeps), each word becomes a quoted string with `"`
//! doubled, and the words are joined with `OR` so a passage matching some of them ranks lower
//! instead of vanishing. A quoted string is always a valid FTS5 phrase, whatever it contains, so
//! `AND OR "`, `NEAR(`, `*` or `col:x` are searched as the words they contain.

use std::collections::HashMap;
use std::collections::HashSet;
use std::hash::Hash;

/// The `k` of reciprocal-rank fusion: score = Σ 1 / (k + rank), rank starting at 1.
pub(crate) const RRF_K: f64 = 60.0;

/// At most this many distinct words of a query are searched; longer queries are cut (keeps a
/// pasted page from turning into thousands of OR terms).
const MAX_TERMS: usize = 32;

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
    let terms: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty() && seen.insert(t.to_lowercase()))
        .take(MAX_TERMS)
        .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
        .collect();
    if terms.is_empty() {
        FtsQuery::NoTerms
    } else {
        FtsQuery::Match(terms.join(" OR "))
    }
}

/// Encodes a vector as stored: little-endian `f32`s.
pub(crate) fn encode_vector(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
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
        assert_eq!(expr("NEAR(a, b)"), r#""NEAR" OR "a" OR "b""#);
        assert_eq!(expr("col:x*"), r#""col" OR "x""#);
        assert_eq!(expr("Café café CAFÉ"), r#""Café""#);
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

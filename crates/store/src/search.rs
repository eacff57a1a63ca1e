//! Search building blocks: safe FTS5 queries, stored vectors and their cosine, and the time
//! window within which rows are neighbours. How candidates are ranked (neighbour smoothing,
//! fusion) is `engram_retrieval`'s.
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
//!   (`engram_retrieval::neighbours`; the store finds the neighbours): an answer often sits in
//!   the turn next to the one that shares the question's words ("Did you go?" / "Yes, last
//!   May") (0.598 → 0.667).

use engram_store_api::{QueryWords, query_words};

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

/// Turns user text into a safe FTS5 expression (see the module docs): the words every backend
/// searches ([`engram_store_api::query_words`]), each quoted with `"` doubled.
pub(crate) fn fts_query(text: &str) -> FtsQuery {
    match query_words(text) {
        QueryWords::Blank => FtsQuery::Blank,
        QueryWords::NoWords => FtsQuery::NoTerms,
        QueryWords::Words(words) => FtsQuery::Match(
            words
                .iter()
                .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
                .collect::<Vec<_>>()
                .join(" OR "),
        ),
    }
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
    fn blank_and_wordless_queries_are_told_apart() {
        assert_eq!(fts_query(""), FtsQuery::Blank);
        assert_eq!(fts_query("  \t\n"), FtsQuery::Blank);
        assert_eq!(fts_query("*"), FtsQuery::NoTerms);
        assert_eq!(fts_query("🎉🎉 \" ()"), FtsQuery::NoTerms);
    }

    #[test]
    fn long_queries_are_cut() {
        let text: Vec<String> = (0..100).map(|i| format!("w{i}")).collect();
        assert_eq!(
            expr(&text.join(" ")).matches(" OR ").count(),
            engram_store_api::MAX_QUERY_WORDS - 1
        );
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

//! Late interaction: scoring a passage against a query by comparing their word pieces'
//! contextual vectors one by one instead of one pooled vector each (ColBERT's MaxSim,
//! Khattab & Zaharia, "ColBERT: Efficient and Effective Passage Search via Contextualized
//! Late Interaction over BERT", SIGIR 2020). Each query token finds its most similar passage
//! token; the passage's score is the mean of those best similarities. A pooled vector blurs
//! a 30-token turn into one point; token matching keeps "terrier" close to "dog" even when the
//! rest of the turn is about something else.
//!
//! The vectors come from the built-in sentence encoder ([`crate::Encoder::token_vectors`]),
//! which was not trained for this (ColBERT trains its own projection), so the score is one
//! signal to blend with the hybrid ranking, not a ranking of its own (see
//! `engram_agent::rerank`).

use crate::encoder::TokenVectors;
use std::collections::HashSet;
use std::sync::LazyLock;

/// English stop words (NLTK's list, as the store's lexical search uses).
static STOP_WORDS: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| stop_words::get("en").iter().copied().collect());

/// The vectors of a query's content word pieces: word pieces that are punctuation or an
/// English stop word ("what", "did", "the", "?") are left out, since every passage has a
/// near match for them and they only add a constant. A query of stop words alone keeps them
/// all. Continuation pieces (`##…`) are kept.
pub fn content_vectors(query: &TokenVectors) -> Vec<&[f32]> {
    let keep = |t: &str| {
        t.starts_with("##") || (t.chars().any(char::is_alphanumeric) && !STOP_WORDS.contains(t))
    };
    let content: Vec<&[f32]> = query
        .tokens
        .iter()
        .zip(&query.vectors)
        .filter(|(t, _)| keep(t))
        .map(|(_, v)| v.as_slice())
        .collect();
    if content.is_empty() {
        query.vectors.iter().map(Vec::as_slice).collect()
    } else {
        content
    }
}

/// MaxSim: for each query vector the largest dot product with any passage vector (cosine,
/// as both are unit vectors), averaged over the query's vectors; in `-1..=1`, 0 when either
/// side has no vectors.
pub fn max_sim(query: &[&[f32]], passage: &[Vec<f32>]) -> f32 {
    if query.is_empty() || passage.is_empty() {
        return 0.0;
    }
    let total: f32 = query
        .iter()
        .map(|q| {
            passage
                .iter()
                .map(|p| q.iter().zip(p).map(|(a, b)| a * b).sum::<f32>())
                .fold(f32::NEG_INFINITY, f32::max)
        })
        .sum();
    total / query.len() as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tv(tokens: &[&str], vectors: &[[f32; 2]]) -> TokenVectors {
        TokenVectors {
            tokens: tokens.iter().map(|t| t.to_string()).collect(),
            vectors: vectors.iter().map(|v| v.to_vec()).collect(),
        }
    }

    #[test]
    fn each_query_token_takes_its_best_match_and_the_mean_is_the_score() {
        let q = tv(&["dog", "park"], &[[1.0, 0.0], [0.0, 1.0]]);
        let passage = vec![vec![1.0, 0.0], vec![0.6, 0.8]];
        // dog → 1.0 (first), park → 0.8 (second): mean 0.9.
        let s = max_sim(&content_vectors(&q), &passage);
        assert!((s - 0.9).abs() < 1e-6, "{s}");
        assert_eq!(max_sim(&content_vectors(&q), &[]), 0.0);
        assert_eq!(max_sim(&[], &passage), 0.0);
    }

    #[test]
    fn stop_words_and_punctuation_leave_the_query_unless_nothing_else_is_left() {
        let q = tv(
            &["what", "did", "bob", "##by", "eat", "?"],
            &[[1.0, 0.0]; 6],
        );
        assert_eq!(content_vectors(&q).len(), 3);
        let only = tv(&["who", "are", "you", "?"], &[[1.0, 0.0]; 4]);
        assert_eq!(content_vectors(&only).len(), 4);
    }
}

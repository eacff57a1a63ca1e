//! Late interaction: scoring a passage against a query by comparing their word pieces'
//! contextual vectors one by one instead of one pooled vector each (ColBERT's MaxSim,
//! Khattab & Zaharia, "ColBERT: Efficient and Effective Passage Search via Contextualized
//! Late Interaction over BERT", SIGIR 2020). Each query token finds its most similar passage
//! token; the passage's score is the mean of those best similarities. A pooled vector blurs
//! a 30-token turn into one point; token matching keeps "terrier" close to "dog" even when the
//! rest of the turn is about something else.
//!
//! The vectors come from the built-in sentence encoder (`engram_embed::Encoder::token_vectors`),
//! which was not trained for this (ColBERT trains its own projection), so the score is one
//! signal to blend with the hybrid ranking, not a ranking of its own (see [`crate::late`]).

use engram_embed::TokenVectors;
use std::collections::HashSet;
use std::sync::LazyLock;

/// English stop words (NLTK's list, as the store's lexical search uses).
static STOP_WORDS: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| stop_words::get("en").iter().copied().collect());

/// Whether `word` (lower case) is an English stop word (NLTK's list).
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(word)
}

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

/// A query's words, for weighting MaxSim by word ([`weighted_max_sim`]): each word as
/// written (its word pieces joined, `##` dropped) with the vectors of its pieces; pieces of
/// punctuation alone are left out.
pub fn query_words(query: &TokenVectors) -> Vec<(String, Vec<&[f32]>)> {
    let mut words: Vec<(String, Vec<&[f32]>)> = Vec::new();
    for (t, v) in query.tokens.iter().zip(&query.vectors) {
        match (t.strip_prefix("##"), words.last_mut()) {
            (Some(rest), Some((word, pieces))) => {
                word.push_str(rest);
                pieces.push(v.as_slice());
            }
            _ => words.push((t.trim_start_matches("##").to_owned(), vec![v.as_slice()])),
        }
    }
    words.retain(|(w, _)| w.chars().any(char::is_alphanumeric));
    words
}

/// [`query_words`] without English stop words, as in [`content_vectors`]; a query of stop
/// words alone keeps them all.
pub fn content_words(query: &TokenVectors) -> Vec<(String, Vec<&[f32]>)> {
    let mut words = query_words(query);
    if words.iter().any(|(w, _)| !STOP_WORDS.contains(w.as_str())) {
        words.retain(|(w, _)| !STOP_WORDS.contains(w.as_str()));
    }
    words
}

/// MaxSim with a weight per query vector (IDF-weighted late interaction): each query vector's
/// largest dot product with any passage vector, averaged with the given weights (e.g. its
/// word's inverse document frequency, so a name every passage holds counts for little, as in
/// BM25). In `-1..=1`; 0 when either side is empty or the weights sum to nothing (negative
/// or non-finite weights count as 0).
pub fn weighted_max_sim(query: &[(&[f32], f64)], passage: &[Vec<f32>]) -> f32 {
    weighted_over(query, &[passage])
}

/// [`weighted_max_sim`] of a passage read in its place: `(1 − share) ·` its own score `+
/// share ·` the score of it together with `neighbours` (each query vector's best match over
/// the passage's and the neighbours' vectors), e.g. the turns just before and after a turn
/// of a conversation, where a question and its answer are often split. `share` is clamped to
/// `0..=1` (non-finite: 0); without neighbours the score is the passage's own. In `-1..=1`.
pub fn weighted_max_sim_in_context(
    query: &[(&[f32], f64)],
    passage: &[Vec<f32>],
    neighbours: &[&[Vec<f32>]],
    share: f64,
) -> f32 {
    let own = weighted_max_sim(query, passage);
    let share = if share.is_finite() {
        share.clamp(0.0, 1.0)
    } else {
        0.0
    };
    if neighbours.is_empty() || share == 0.0 {
        return own;
    }
    let mut parts = vec![passage];
    parts.extend_from_slice(neighbours);
    let with = weighted_over(query, &parts);
    ((1.0 - share) * f64::from(own) + share * f64::from(with)) as f32
}

/// Weighted MaxSim over the vectors of all of `parts` together.
fn weighted_over(query: &[(&[f32], f64)], parts: &[&[Vec<f32>]]) -> f32 {
    let total: f64 = query
        .iter()
        .map(|(_, w)| if w.is_finite() { w.max(0.0) } else { 0.0 })
        .sum();
    if parts.iter().all(|p| p.is_empty()) || total <= 0.0 {
        return 0.0;
    }
    let sum: f64 = query
        .iter()
        .filter(|(_, w)| w.is_finite() && *w > 0.0)
        .map(|(q, w)| {
            let best = parts
                .iter()
                .map(|p| best_match(q, p))
                .fold(f32::NEG_INFINITY, f32::max);
            w * f64::from(best)
        })
        .sum();
    (sum / total) as f32
}

/// The largest dot product of `q` with any of `passage` (`-inf` for none).
fn best_match(q: &[f32], passage: &[Vec<f32>]) -> f32 {
    passage
        .iter()
        .map(|p| q.iter().zip(p).map(|(a, b)| a * b).sum::<f32>())
        .fold(f32::NEG_INFINITY, f32::max)
}

/// MaxSim: for each query vector the largest dot product with any passage vector (cosine,
/// as both are unit vectors), averaged over the query's vectors; in `-1..=1`, 0 when either
/// side has no vectors.
pub fn max_sim(query: &[&[f32]], passage: &[Vec<f32>]) -> f32 {
    if query.is_empty() || passage.is_empty() {
        return 0.0;
    }
    let total: f32 = query.iter().map(|q| best_match(q, passage)).sum();
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
    #[test]
    fn words_join_their_pieces_and_weights_decide_the_mean() {
        let q = tv(
            &["what", "did", "mel", "##anie", "paint", "?"],
            &[
                [1.0, 0.0],
                [1.0, 0.0],
                [1.0, 0.0],
                [1.0, 0.0],
                [0.0, 1.0],
                [1.0, 0.0],
            ],
        );
        let words = content_words(&q);
        let names: Vec<&str> = words.iter().map(|(w, _)| w.as_str()).collect();
        assert_eq!(names, ["melanie", "paint"]);
        assert_eq!(words[0].1.len(), 2);
        let only = tv(&["who", "are", "you", "?"], &[[1.0, 0.0]; 4]);
        assert_eq!(content_words(&only).len(), 3);
        assert_eq!(query_words(&q).len(), 4);
        // The passage matches "melanie" fully and "paint" not at all.
        let passage = vec![vec![1.0, 0.0]];
        let weighted = |name: f64, paint: f64| {
            let v: Vec<(&[f32], f64)> = words
                .iter()
                .flat_map(|(w, p)| {
                    let weight = if w == "paint" { paint } else { name };
                    p.iter().map(move |v| (*v, weight))
                })
                .collect();
            weighted_max_sim(&v, &passage)
        };
        // Equal weights: plain MaxSim over the three pieces.
        assert!((weighted(1.0, 1.0) - 2.0 / 3.0).abs() < 1e-6);
        // A common name weighs little: the missing rare word decides.
        assert!((weighted(0.1, 1.8) - 0.2 / 2.0).abs() < 1e-6);
        assert_eq!(weighted(0.0, 0.0), 0.0);
        assert_eq!(weighted(f64::NAN, -1.0), 0.0);
        assert_eq!(weighted_max_sim(&[(&[1.0, 0.0], 1.0)], &[]), 0.0);
    }

    #[test]
    fn a_neighbour_lends_its_best_matches_for_the_given_share() {
        let query: [(&[f32], f64); 2] = [(&[1.0, 0.0], 1.0), (&[0.0, 1.0], 3.0)];
        // The passage answers the first word, its neighbour the second (weighed 3).
        let passage = vec![vec![1.0, 0.0]];
        let neighbour = vec![vec![0.0, 1.0]];
        let own = weighted_max_sim(&query, &passage);
        assert!((own - 0.25).abs() < 1e-6, "{own}");
        let half = weighted_max_sim_in_context(&query, &passage, &[&neighbour], 0.5);
        // Own 0.25, together 1.0: half and half.
        assert!((half - 0.625).abs() < 1e-6, "{half}");
        assert_eq!(weighted_max_sim_in_context(&query, &passage, &[], 0.5), own);
        assert_eq!(
            weighted_max_sim_in_context(&query, &passage, &[&neighbour], f64::NAN),
            own
        );
        let whole = weighted_max_sim_in_context(&query, &passage, &[&neighbour], 7.0);
        assert!((whole - 1.0).abs() < 1e-6, "{whole}");
        // An empty passage still reads its neighbours for their share.
        let lone = weighted_max_sim_in_context(&query, &[], &[&neighbour], 0.5);
        assert!((lone - 0.375).abs() < 1e-6, "{lone}");
    }
}

//! Pseudo-relevance feedback for archival search: the words that the first hits share,
//! beyond the query's own, searched again and blended in (RM3, Lavrenko & Croft 2001,
//! "Relevance-Based Language Models", with the interpolation of Abdul-Jaleel et al. 2004).
//! A question about "Caroline's hobbies" whose first hits talk about "painting" and
//! "pottery" then also finds the turns that mention those without the question's words.
//!
//! The expansion is a second lexical search of the feedback terms (the store ORs them
//! equally, so the terms' weights only choose which terms go in); its relevance is blended
//! with the first search's score (see [`crate::search::search_with`]).

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

/// Pseudo-relevance feedback settings of archival search (shipped as
/// [`EXPANSION`](crate::tuning::EXPANSION)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Expansion {
    /// The feedback search's share of a hit's score, in `0..=1`: `(1 − weight) · first +
    /// weight · feedback` (each `0..=1`, a hit that one search missed counting 0 there).
    /// 0 switches expansion off.
    pub weight: f64,
    /// How many of the first search's best hits the feedback terms come from.
    pub feedback_hits: usize,
    /// How many feedback terms are searched.
    pub terms: usize,
}

/// English stop words (NLTK's list, as the store's lexical search uses).
static STOP_WORDS: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| stop_words::get("en").iter().copied().collect());

/// Lower-case words of `text` (runs of letters and digits, as the store's full-text tokenizer
/// splits), stop words and one-letter words left out.
fn content_words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() > 1)
        .map(str::to_lowercase)
        .filter(|w| !STOP_WORDS.contains(w.as_str()))
}

/// The `n` feedback terms of `query` given its first hits (`text`, score > 0; best first):
/// each hit's words weighted by the hit's score times the word's share of the hit's words
/// (RM3's relevance model over the feedback documents), the query's own words left out.
/// Best first; ties in first-seen order. Empty when no hit has a word the query lacks.
pub fn feedback_terms(query: &str, hits: &[(&str, f64)], n: usize) -> Vec<String> {
    let own: HashSet<String> = content_words(query).collect();
    let mut order: Vec<String> = Vec::new();
    let mut weight: HashMap<String, f64> = HashMap::new();
    for (text, score) in hits {
        let words: Vec<String> = content_words(text).collect();
        if words.is_empty() || !score.is_finite() || *score <= 0.0 {
            continue;
        }
        let share = score / words.len() as f64;
        for w in words {
            if own.contains(&w) {
                continue;
            }
            let e = weight.entry(w.clone()).or_insert_with(|| {
                order.push(w);
                0.0
            });
            *e += share;
        }
    }
    // Stable: equal weights keep first-seen order.
    order.sort_by(|a, b| weight[b].total_cmp(&weight[a]));
    order.truncate(n);
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_the_best_hits_share_come_first_and_the_querys_own_stay_out() {
        let hits = [
            ("Caroline: I took up painting and pottery this year", 1.0),
            ("Caroline: pottery class again tonight!", 0.8),
            ("Mel: the weather is awful", 0.1),
        ];
        let terms = feedback_terms("What are Caroline's hobbies?", &hits, 3);
        assert_eq!(terms[0], "pottery", "{terms:?}");
        assert!(terms.contains(&"painting".to_string()), "{terms:?}");
        assert!(!terms.iter().any(|t| t == "caroline" || t == "this"));
        assert_eq!(
            feedback_terms("pottery", &[("pottery", 1.0)], 5),
            Vec::<String>::new()
        );
        assert!(feedback_terms("x", &[("never scored", 0.0)], 5).is_empty());
    }
}

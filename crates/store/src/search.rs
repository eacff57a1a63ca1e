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
use std::sync::LazyLock;

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
    // Rows of the ranking itself (the score map also gains admitted neighbours).
    let ranked: HashSet<i64> = match mode {
        Neighbours::Rerank => order.iter().copied().collect(),
        Neighbours::Admit => HashSet::new(),
    };
    for &(key, score) in ranking {
        for n in neighbours(key)?.into_iter().flatten() {
            if mode == Neighbours::Rerank && !ranked.contains(&n) {
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

/// The weight of the lexical side in hybrid scores; the vector side gets the rest (see
/// [`fuse`]). Tuned on the development set with all-MiniLM-L6-v2 (`benches/retrieval.rs`
/// prints the sweep): recall@5 0.627 at 0.4, 0.651 at 0.5, 0.665 at 0.6, 0.680 at 0.7, 0.677
/// at 0.8, against 0.662 for words alone and 0.582 for equal-weight rank fusion. The small
/// model is much weaker than BM25 on this set (0.417 alone), so it mostly breaks ties and
/// lifts paraphrases that share no word with the query.
pub(crate) const LEXICAL_WEIGHT: f64 = 0.7;

/// Scales a lexical ranking (scores > 0, best first) to relevance in `0..=1`: each score as a
/// share of the best one. BM25 values mean nothing across queries (≈10 for one, ≈3 for
/// another); a share of the best hit is what a person can read.
pub(crate) fn relative(ranking: &[(i64, f64)]) -> Vec<(i64, f64)> {
    let best = ranking.iter().map(|(_, s)| *s).fold(0.0, f64::max);
    ranking
        .iter()
        .map(|&(k, s)| {
            (
                k,
                if best > 0.0 {
                    (s / best).clamp(0.0, 1.0)
                } else {
                    0.0
                },
            )
        })
        .collect()
}

/// Fuses a lexical ranking (relevance in `0..=1`, from [`relative`]) and a vector ranking
/// (cosine similarity) into one score in `0..=1`:
/// `lexical_weight · lexical + (1 − lexical_weight) · max(cosine, 0)`, a side that did not
/// rank a row counting 0. Unlike rank fusion, how far ahead a hit is on one side counts,
/// which is what kept the hybrid from falling below BM25 on the development set. Returns
/// every row, best first; ties keep first appearance (lexical order first).
pub(crate) fn fuse(
    lexical: &[(i64, f64)],
    vector: &[(i64, f64)],
    lexical_weight: f64,
) -> Vec<(i64, f64)> {
    let mut order: Vec<i64> = Vec::new();
    let mut scores: HashMap<i64, f64> = HashMap::new();
    let sides = [(lexical, lexical_weight), (vector, 1.0 - lexical_weight)];
    for (ranking, weight) in sides {
        for &(key, score) in ranking {
            let entry = scores.entry(key).or_insert_with(|| {
                order.push(key);
                0.0
            });
            *entry += weight * score.clamp(0.0, 1.0);
        }
    }
    let mut fused: Vec<(i64, f64)> = order.into_iter().map(|k| (k, scores[&k])).collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1));
    fused
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
    fn scores_are_shares_of_the_best_and_fusion_stays_in_zero_to_one() {
        let lexical = relative(&[(1, 12.0), (2, 6.0), (3, 3.0)]);
        assert_eq!(lexical, vec![(1, 1.0), (2, 0.5), (3, 0.25)]);
        assert!(relative(&[]).is_empty());
        let vector = vec![(3, 0.9), (4, 0.6), (1, -0.2)];
        let fused = fuse(&lexical, &vector, 0.5);
        let keys: Vec<i64> = fused.iter().map(|(k, _)| *k).collect();
        // 3: 0.125 + 0.45; 1: 0.5 + 0 (negative cosine counts 0); 2: 0.25; 4: 0.3.
        assert_eq!(keys, [3, 1, 4, 2]);
        assert!((fused[0].1 - 0.575).abs() < 1e-12);
        assert!(fused.iter().all(|(_, s)| (0.0..=1.0).contains(s)));
        // Far ahead on one side still counts: a lexical 1.0 beats a lukewarm match on both.
        let strong = fuse(&[(1, 1.0), (2, 0.3)], &[(2, 0.45), (1, 0.1)], 0.5);
        assert_eq!(strong[0].0, 1);
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

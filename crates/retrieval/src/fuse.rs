//! Fusion: a lexical and a vector ranking become one score in `0..=1`.
//!
//! BM25 values mean nothing across queries (≈10 for one, ≈3 for another), so the lexical side
//! is first scaled to a share of its best hit ([`relative`]); then [`fuse`] sums the two sides
//! with [`LEXICAL_WEIGHT`]. Unlike reciprocal-rank fusion, how far ahead a hit is on one side
//! counts, which is what kept the hybrid from falling below BM25 on the development set.

use engram_store::Ranking;
use std::collections::HashMap;

pub use crate::tuning::LEXICAL_WEIGHT;

/// Scales a lexical ranking (scores > 0, best first) to relevance in `0..=1`: each score as a
/// share of the best one (0 for all when none is positive). Keeps the order.
pub fn relative(ranking: &[(i64, f64)]) -> Ranking {
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
/// rank a row counting 0. Returns every row, best first; ties keep first appearance (lexical
/// order first).
pub fn fuse(lexical: &[(i64, f64)], vector: &[(i64, f64)], lexical_weight: f64) -> Ranking {
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
    let mut fused: Ranking = order.into_iter().map(|k| (k, scores[&k])).collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1));
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

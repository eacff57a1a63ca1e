//! Synthetic text for the benches: deterministic, Zipf-like sentences over a 20,000-word
//! vocabulary (common words are common, a typical query word matches a small share of
//! passages, as in real text), and the percentile the reports print.

use std::time::Duration;

/// A pseudo-word for rank `n`: distinct, pronounceable-ish, deterministic.
pub fn word(n: u64) -> String {
    const SYLLABLES: &[&str] = &[
        "ka", "lo", "mi", "ren", "tu", "sa", "vi", "do", "pel", "nor", "qui", "ba", "ze", "fo",
        "lun", "gar",
    ];
    let mut n = n + 1;
    let mut w = String::new();
    while n > 0 {
        w.push_str(SYLLABLES[(n % SYLLABLES.len() as u64) as usize]);
        n /= SYLLABLES.len() as u64;
    }
    w
}

/// Deterministic xorshift stream (no RNG dependency, same data every run); `x` must not be 0.
pub fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// The word ranks of sentence `seed`: 12 ranks below 20,000, skewed towards small ones.
pub fn sentence_ranks(seed: u64) -> Vec<u64> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
        | 1;
    (0..12)
        .map(|_| {
            let u = (next(&mut x) % 1_000_000) as f64 / 1_000_000.0;
            (20_000f64.powf(u) - 1.0) as u64
        })
        .collect()
}

/// Sentence `seed`: the words of [`sentence_ranks`] joined by spaces.
pub fn sentence(seed: u64) -> String {
    sentence_ranks(seed)
        .into_iter()
        .map(word)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `p` quantile (0..=1) of `sorted` durations, nearest rank. Panics when empty.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

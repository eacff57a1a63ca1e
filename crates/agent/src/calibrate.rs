//! Token counts calibrated by the provider: for a model whose tokenizer Engram does not know,
//! learn the ratio between the `prompt_tokens` the provider reports and Engram's estimate, per
//! model, and count with it (plus a safety margin) from then on. A context-length refusal
//! proves the ratio too low and raises it at once. Kept in the store, so a restart does not
//! start from scratch.

use crate::tokens::TokenCounter;
use engram_store::{Calibration, Store};

/// Added on top of the learnt ratio, so a prompt that drifts a little above the average ratio
/// still fits.
const MARGIN: f64 = 0.05;
/// How far one lower observation pulls the ratio down (a higher one is taken at once: counting
/// too low costs a refused request, counting too high only an earlier compaction).
const EASE_DOWN: f64 = 0.1;
/// Prompts smaller than this many estimated tokens say little about the ratio.
const MIN_SAMPLE_TOKENS: usize = 64;
/// Bounds of a believable ratio.
const RATIO_RANGE: (f64, f64) = (0.25, 4.0);

/// The counter for `model`: its base counter scaled by the learnt ratio plus [`MARGIN`];
/// unscaled when the counter is exact or nothing was learnt yet. A store error reads as "not
/// learnt" (calibration must never fail a run).
pub fn counter(store: &Store, model: &str) -> TokenCounter {
    let base = TokenCounter::for_model(model);
    if base.is_exact() {
        return base;
    }
    match store.settings().model_calibration(model) {
        Ok(Some(c)) => base.scaled((c.ratio * (1.0 + MARGIN)) as f32),
        _ => base,
    }
}

/// Learns from one answered call: `estimated` is the prompt as `counter` counted it, and
/// `reported` the provider's `prompt_tokens`.
pub fn observe(
    store: &Store,
    model: &str,
    counter: &TokenCounter,
    estimated: usize,
    reported: u64,
) {
    if counter.is_exact() || reported == 0 {
        return;
    }
    let raw = estimated as f64 / f64::from(counter.scale());
    if raw < MIN_SAMPLE_TOKENS as f64 {
        return;
    }
    let observed = (reported as f64 / raw).clamp(RATIO_RANGE.0, RATIO_RANGE.1);
    let previous = store.settings().model_calibration(model).ok().flatten();
    let next = match previous {
        None => Calibration {
            ratio: observed,
            samples: 1,
        },
        Some(c) if observed > c.ratio => Calibration {
            ratio: observed,
            samples: c.samples + 1,
        },
        Some(c) => Calibration {
            ratio: c.ratio + EASE_DOWN * (observed - c.ratio),
            samples: c.samples + 1,
        },
    };
    // Rewriting an unchanged figure every step would cost a write per call for nothing.
    let changed = previous.is_none_or(|c| (next.ratio - c.ratio).abs() > c.ratio * 0.005);
    if changed && let Err(e) = store.settings().set_model_calibration(model, &next) {
        tracing::warn!(model, error = %e, "could not store the token calibration");
    }
}

/// Learns from a context-length refusal of a prompt `counter` counted as `estimated` tokens in
/// a `window`-token window: the provider's count was over the window, so the ratio is at least
/// `window / raw estimate`; raise it past that (by at least a tenth, by at most half: a server
/// whose real context length is far below the configured one is not a tokenizer to learn, and
/// one refusal must not make every later prompt look too large to send).
pub fn refused(
    store: &Store,
    model: &str,
    counter: &TokenCounter,
    estimated: usize,
    window: usize,
) {
    if counter.is_exact() || estimated == 0 {
        return;
    }
    let raw = estimated as f64 / f64::from(counter.scale());
    let previous = store.settings().model_calibration(model).ok().flatten();
    let current = previous.map_or(1.0, |c| c.ratio);
    let ratio = (current * 1.1)
        .max(window as f64 / raw * (1.0 + MARGIN))
        .min(current * 1.5)
        .clamp(RATIO_RANGE.0, RATIO_RANGE.1);
    let next = Calibration {
        ratio,
        samples: previous.map_or(0, |c| c.samples) + 1,
    };
    tracing::info!(
        model,
        ratio,
        "a context-length refusal tightened the token calibration"
    );
    if let Err(e) = store.settings().set_model_calibration(model, &next) {
        tracing::warn!(model, error = %e, "could not store the token calibration");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODEL: &str = "ollama/llama3.2";

    fn ratio(store: &Store) -> f64 {
        store
            .settings()
            .model_calibration(MODEL)
            .unwrap()
            .unwrap()
            .ratio
    }

    #[test]
    fn learns_up_at_once_and_down_slowly() {
        let store = Store::open_in_memory().unwrap();
        let plain = counter(&store, MODEL);
        assert_eq!(plain.scale(), 1.0);
        observe(&store, MODEL, &plain, 1_000, 1_250);
        assert!((ratio(&store) - 1.25).abs() < 1e-9);
        // Counted from now on with the ratio and the margin.
        let c = counter(&store, MODEL);
        assert!((f64::from(c.scale()) - 1.25 * 1.05).abs() < 1e-6);
        // A lower observation (the estimate given is the scaled one) eases the ratio down.
        observe(&store, MODEL, &c, (1_000.0 * 1.3125) as usize, 1_000);
        let eased = ratio(&store);
        assert!(eased < 1.25 && eased > 1.2, "{eased}");
        // Tiny prompts teach nothing; exact counters are never calibrated.
        observe(&store, MODEL, &c, 10, 100);
        assert_eq!(ratio(&store), eased);
        let exact = counter(&store, "openai/gpt-4o-mini");
        observe(&store, "openai/gpt-4o-mini", &exact, 1_000, 2_000);
        assert_eq!(
            store
                .settings()
                .model_calibration("openai/gpt-4o-mini")
                .unwrap(),
            None
        );
    }

    #[test]
    fn a_refusal_raises_the_ratio_past_the_window_but_by_at_most_half() {
        let store = Store::open_in_memory().unwrap();
        let c = counter(&store, MODEL);
        // 3,800 estimated tokens refused by a 4,096-token window: at least 4096/3800.
        refused(&store, MODEL, &c, 3_800, 4_096);
        let r = ratio(&store);
        assert!((r - 4_096.0 / 3_800.0 * 1.05).abs() < 1e-9, "{r}");
        // A refusal of a tiny prompt (a server far smaller than configured) moves it by half.
        let c = counter(&store, MODEL);
        refused(&store, MODEL, &c, 500, 32_000);
        assert!((ratio(&store) - r * 1.5).abs() < 1e-9);
    }
}

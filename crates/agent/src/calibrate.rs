//! Token counts calibrated by the provider: for a model whose tokenizer Engram does not know,
//! learn the ratio between the `prompt_tokens` the provider reports and Engram's estimate, per
//! model, and count with it (plus a safety margin) from then on. A context-length refusal
//! proves the ratio too low and raises it at once. Kept in the app settings (see
//! [`Calibration`]), so a restart does not start from scratch.
//!
//! The rules are pure functions of what was learnt ([`counter_with`], [`after_answer`],
//! [`after_refusal`]); [`counter`], [`observe`] and [`refused`] read and write it through the
//! storage interface, on any backend.

use crate::tokens::TokenCounter;
use engram_store_api::{CALIBRATION_SETTING_PREFIX, Calibration, SettingStore, calibration_key};
use std::collections::HashMap;

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

/// The counter for `model` given what was `learnt`: its base counter scaled by the learnt
/// ratio plus [`MARGIN`]; unscaled when the counter is exact or nothing was learnt yet.
pub fn counter_with(model: &str, learnt: Option<Calibration>) -> TokenCounter {
    let base = TokenCounter::for_model(model);
    match learnt {
        Some(c) if !base.is_exact() => base.scaled((c.ratio * (1.0 + MARGIN)) as f32),
        _ => base,
    }
}

/// What one answered call teaches: `estimated` is the prompt as `counter` counted it, and
/// `reported` the provider's `prompt_tokens`. `None` when there is nothing to store: an exact
/// counter, no count reported, a prompt too small to say anything, or a ratio that moved by
/// less than half a percent (rewriting an unchanged figure every step would cost a write per
/// call for nothing).
pub fn after_answer(
    previous: Option<Calibration>,
    counter: &TokenCounter,
    estimated: usize,
    reported: u64,
) -> Option<Calibration> {
    if counter.is_exact() || reported == 0 {
        return None;
    }
    let raw = estimated as f64 / f64::from(counter.scale());
    if raw < MIN_SAMPLE_TOKENS as f64 {
        return None;
    }
    let observed = (reported as f64 / raw).clamp(RATIO_RANGE.0, RATIO_RANGE.1);
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
    let changed = previous.is_none_or(|c| (next.ratio - c.ratio).abs() > c.ratio * 0.005);
    changed.then_some(next)
}

/// What a context-length refusal teaches, for a prompt `counter` counted as `estimated`
/// tokens in a `window`-token window: the provider's count was over the window, so the ratio
/// is at least `window / raw estimate`; raise it past that (by at least a tenth, by at most
/// half: a server whose real context length is far below the configured one is not a
/// tokenizer to learn, and one refusal must not make every later prompt look too large to
/// send). `None` for an exact counter or an empty prompt.
pub fn after_refusal(
    previous: Option<Calibration>,
    counter: &TokenCounter,
    estimated: usize,
    window: usize,
) -> Option<Calibration> {
    if counter.is_exact() || estimated == 0 {
        return None;
    }
    let raw = estimated as f64 / f64::from(counter.scale());
    let current = previous.map_or(1.0, |c| c.ratio);
    let ratio = (current * 1.1)
        .max(window as f64 / raw * (1.0 + MARGIN))
        .min(current * 1.5)
        .clamp(RATIO_RANGE.0, RATIO_RANGE.1);
    Some(Calibration {
        ratio,
        samples: previous.map_or(0, |c| c.samples) + 1,
    })
}

/// What was learnt about `model`. A store error or a malformed value reads as "not learnt":
/// calibration must never fail a run.
pub async fn learnt(settings: &dyn SettingStore, model: &str) -> Option<Calibration> {
    let stored = settings.get_setting(&calibration_key(model)).await.ok()??;
    serde_json::from_str(&stored).ok()
}

/// What was learnt about every model, by model handle: one read (the settings under
/// [`CALIBRATION_SETTING_PREFIX`], one per model ever calibrated), for a caller that does not
/// know the model yet. A store error reads as "nothing learnt", a malformed value as "not
/// learnt" for its model.
pub async fn every_learnt(settings: &dyn SettingStore) -> HashMap<String, Calibration> {
    let stored = settings
        .settings_with_prefix(CALIBRATION_SETTING_PREFIX)
        .await
        .unwrap_or_default();
    stored
        .into_iter()
        .filter_map(|(key, value)| {
            let model = key.strip_prefix(CALIBRATION_SETTING_PREFIX)?;
            Some((model.to_owned(), serde_json::from_str(&value).ok()?))
        })
        .collect()
}

/// Stores what was learnt about `model`; a failure is logged, never raised.
async fn keep(settings: &dyn SettingStore, model: &str, next: &Calibration) {
    let stored = match serde_json::to_string(next) {
        Ok(json) => settings.set_setting(&calibration_key(model), &json).await,
        Err(e) => Err(engram_core::Error::Internal(format!("calibration: {e}"))),
    };
    if let Err(e) = stored {
        tracing::warn!(model, error = %e, "could not store the token calibration");
    }
}

/// The counter for `model` as learnt so far (see [`counter_with`]).
pub async fn counter(settings: &dyn SettingStore, model: &str) -> TokenCounter {
    let base = TokenCounter::for_model(model);
    if base.is_exact() {
        return base;
    }
    counter_with(model, learnt(settings, model).await)
}

/// Learns from one answered call (see [`after_answer`]) and stores the result.
pub async fn observe(
    settings: &dyn SettingStore,
    model: &str,
    counter: &TokenCounter,
    estimated: usize,
    reported: u64,
) {
    if counter.is_exact() {
        return;
    }
    let previous = learnt(settings, model).await;
    if let Some(next) = after_answer(previous, counter, estimated, reported) {
        keep(settings, model, &next).await;
    }
}

/// Learns from a context-length refusal (see [`after_refusal`]) and stores the result.
pub async fn refused(
    settings: &dyn SettingStore,
    model: &str,
    counter: &TokenCounter,
    estimated: usize,
    window: usize,
) {
    if counter.is_exact() {
        return;
    }
    let previous = learnt(settings, model).await;
    if let Some(next) = after_refusal(previous, counter, estimated, window) {
        tracing::info!(
            model,
            ratio = next.ratio,
            "a context-length refusal tightened the token calibration"
        );
        keep(settings, model, &next).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_store::Store;

    const MODEL: &str = "ollama/llama3.2";

    async fn ratio(store: &Store) -> f64 {
        learnt(store, MODEL).await.unwrap().ratio
    }

    #[tokio::test]
    async fn learns_up_at_once_and_down_slowly() {
        let store = Store::open_in_memory().unwrap();
        let plain = counter(&store, MODEL).await;
        assert_eq!(plain.scale(), 1.0);
        observe(&store, MODEL, &plain, 1_000, 1_250).await;
        assert!((ratio(&store).await - 1.25).abs() < 1e-9);
        // Counted from now on with the ratio and the margin.
        let c = counter(&store, MODEL).await;
        assert!((f64::from(c.scale()) - 1.25 * 1.05).abs() < 1e-6);
        // A lower observation (the estimate given is the scaled one) eases the ratio down.
        observe(&store, MODEL, &c, (1_000.0 * 1.3125) as usize, 1_000).await;
        let eased = ratio(&store).await;
        assert!(eased < 1.25 && eased > 1.2, "{eased}");
        // Tiny prompts teach nothing; exact counters are never calibrated.
        observe(&store, MODEL, &c, 10, 100).await;
        assert_eq!(ratio(&store).await, eased);
        let exact = counter(&store, "openai/gpt-4o-mini").await;
        observe(&store, "openai/gpt-4o-mini", &exact, 1_000, 2_000).await;
        assert_eq!(learnt(&store, "openai/gpt-4o-mini").await, None);
    }

    #[tokio::test]
    async fn a_refusal_raises_the_ratio_past_the_window_but_by_at_most_half() {
        let store = Store::open_in_memory().unwrap();
        let c = counter(&store, MODEL).await;
        // 3,800 estimated tokens refused by a 4,096-token window: at least 4096/3800.
        refused(&store, MODEL, &c, 3_800, 4_096).await;
        let r = ratio(&store).await;
        assert!((r - 4_096.0 / 3_800.0 * 1.05).abs() < 1e-9, "{r}");
        // A refusal of a tiny prompt (a server far smaller than configured) moves it by half.
        let c = counter(&store, MODEL).await;
        refused(&store, MODEL, &c, 500, 32_000).await;
        assert!((ratio(&store).await - r * 1.5).abs() < 1e-9);
    }

    #[tokio::test]
    async fn every_learnt_ratio_is_read_at_once_by_model() {
        let store = Store::open_in_memory().unwrap();
        assert!(every_learnt(&store).await.is_empty());
        let plain = counter(&store, MODEL).await;
        observe(&store, MODEL, &plain, 1_000, 1_250).await;
        let other = "anthropic/claude-sonnet-4";
        observe(&store, other, &counter(&store, other).await, 1_000, 900).await;
        // A value no Engram wrote reads as not learnt, for its model only.
        store
            .set_setting(&calibration_key("broken/model"), "not json")
            .await
            .unwrap();
        let all = every_learnt(&store).await;
        assert_eq!(all.len(), 2, "{all:?}");
        assert_eq!(all.get(MODEL), learnt(&store, MODEL).await.as_ref());
        assert_eq!(all.get(other), learnt(&store, other).await.as_ref());
        // The counter made from it is the one a read for the model makes.
        let from_all = counter_with(MODEL, all.get(MODEL).copied());
        assert_eq!(from_all.scale(), counter(&store, MODEL).await.scale());
    }
}

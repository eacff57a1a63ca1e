//! Model prices and what a run or an agent cost.
//!
//! Prices are US dollars per million tokens, input (prompt) and output (completion) apart, as
//! hosted providers list them. Engram ships a small table for common hosted models
//! ([`BUILTIN_PRICES`]); the user can change any price or add one (stored in the database),
//! and a stored price wins over the built-in one. Models without a price (local servers,
//! unknown models) have no cost: totals then say which models were left out instead of
//! showing a made-up number.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Built-in prices: `(model handle, USD per 1M input tokens, USD per 1M output tokens)`, as
/// the providers listed them in 2025. Edit them in Settings when they change.
pub const BUILTIN_PRICES: &[(&str, f64, f64)] = &[
    ("openai/gpt-4o", 2.50, 10.00),
    ("openai/gpt-4o-mini", 0.15, 0.60),
    ("openai/gpt-4.1", 2.00, 8.00),
    ("openai/gpt-4.1-mini", 0.40, 1.60),
    ("openai/gpt-4.1-nano", 0.10, 0.40),
    ("openai/o3-mini", 1.10, 4.40),
    ("openai/o4-mini", 1.10, 4.40),
    ("anthropic/claude-3-5-haiku-latest", 0.80, 4.00),
    ("anthropic/claude-3-7-sonnet-latest", 3.00, 15.00),
    ("anthropic/claude-sonnet-4-0", 3.00, 15.00),
    ("anthropic/claude-opus-4-0", 15.00, 75.00),
];

/// Where a price comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum PriceSource {
    /// Engram's built-in table.
    Builtin,
    /// Set by the user (stored; wins over a built-in price of the same model).
    User,
}

/// The price of one model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ModelPrice {
    /// Model handle `provider/model`, as agents name it (`openai/gpt-4o-mini`).
    pub model: String,
    /// US dollars per million prompt (input) tokens; finite, ≥ 0.
    pub input_per_mtok: f64,
    /// US dollars per million completion (output) tokens; finite, ≥ 0.
    pub output_per_mtok: f64,
    /// Built-in or set by the user.
    pub source: PriceSource,
}

impl ModelPrice {
    /// Every price of [`BUILTIN_PRICES`], in its order (source `Builtin`).
    pub fn builtin() -> impl Iterator<Item = ModelPrice> {
        BUILTIN_PRICES
            .iter()
            .map(|&(model, input, output)| ModelPrice {
                model: model.to_owned(),
                input_per_mtok: input,
                output_per_mtok: output,
                source: PriceSource::Builtin,
            })
    }

    /// The built-in price of `model`, if the table has one.
    pub fn builtin_for(model: &str) -> Option<ModelPrice> {
        Self::builtin().find(|p| p.model == model)
    }

    /// The price of `model`: the one people set (in `set`, the prices they stored), else the
    /// built-in one, else `None`.
    pub fn of(model: &str, set: impl IntoIterator<Item = ModelPrice>) -> Option<ModelPrice> {
        set.into_iter()
            .find(|p| p.model == model)
            .or_else(|| Self::builtin_for(model))
    }

    /// The cost in US dollars of `prompt` input and `completion` output tokens.
    #[allow(clippy::cast_precision_loss)] // token counts stay far below 2^52
    pub fn cost(&self, prompt: u64, completion: u64) -> f64 {
        (prompt as f64 * self.input_per_mtok + completion as f64 * self.output_per_mtok) / 1e6
    }

    /// Checks a price the user gives. Errors: `Invalid` for an empty model or a price that is
    /// negative, NaN or infinite.
    pub fn check(&self) -> crate::Result<()> {
        if self.model.trim().is_empty() {
            return Err(crate::Error::invalid("a price needs a model handle"));
        }
        for (what, v) in [
            ("input", self.input_per_mtok),
            ("output", self.output_per_mtok),
        ] {
            if !v.is_finite() || v < 0.0 {
                return Err(crate::Error::invalid(format!(
                    "the {what} price must be a number of dollars ≥ 0 (per million tokens), not {v}"
                )));
            }
        }
        Ok(())
    }
}

/// Token usage of an agent (or one of its runs) with its cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct UsageCost {
    /// Prompt tokens, summed over the steps.
    #[ts(type = "number")]
    pub prompt_tokens: u64,
    /// Completion tokens, summed over the steps.
    #[ts(type = "number")]
    pub completion_tokens: u64,
    /// Steps (LLM calls).
    #[ts(type = "number")]
    pub step_count: u64,
    /// US dollars for the steps of priced models; `None` when no step's model has a price.
    pub cost_usd: Option<f64>,
    /// Models used that have no price (their steps are not in `cost_usd`).
    pub unpriced_models: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_price_people_set_comes_before_the_built_in_one() {
        let builtin = ModelPrice::builtin_for("openai/gpt-4o-mini").expect("a built-in price");
        assert_eq!(ModelPrice::of("openai/gpt-4o-mini", []), Some(builtin));
        let mine = ModelPrice {
            model: "openai/gpt-4o-mini".into(),
            input_per_mtok: 1.0,
            output_per_mtok: 2.0,
            source: PriceSource::User,
        };
        assert_eq!(
            ModelPrice::of("openai/gpt-4o-mini", [mine.clone()]),
            Some(mine.clone())
        );
        assert_eq!(ModelPrice::of("local/unpriced", [mine]), None);
    }

    #[test]
    fn cost_is_per_million_tokens_in_and_out() {
        let p = ModelPrice {
            model: "openai/gpt-4o-mini".into(),
            input_per_mtok: 0.15,
            output_per_mtok: 0.60,
            source: PriceSource::Builtin,
        };
        assert!((p.cost(1_000_000, 0) - 0.15).abs() < 1e-12);
        assert!((p.cost(2_000, 500) - (0.0003 + 0.0003)).abs() < 1e-12);
    }

    #[test]
    fn bad_prices_are_refused() {
        let mut p = ModelPrice {
            model: "x/y".into(),
            input_per_mtok: -1.0,
            output_per_mtok: 1.0,
            source: PriceSource::User,
        };
        assert!(p.check().unwrap_err().to_string().contains("input"));
        p.input_per_mtok = f64::NAN;
        assert!(p.check().is_err());
        p.input_per_mtok = 0.0;
        p.check().unwrap();
        p.model = " ".into();
        assert!(p.check().is_err());
    }
}

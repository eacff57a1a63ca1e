//! Model prices (built-in table plus the user's own) and the cost of an agent or a run,
//! computed from the stored steps so a reload or another window shows the same totals.

use crate::rooms::Models;
use engram_core::price::BUILTIN_PRICES;
use engram_core::{AgentId, ModelPrice, PriceSource, Result, RunId, UsageCost};
use std::collections::BTreeMap;

impl Models<'_> {
    /// Every known price, by model: the built-in table with the user's prices over it (a
    /// user price of a built-in model replaces it; source says which). Errors: `Storage`.
    pub fn prices(self) -> Result<Vec<ModelPrice>> {
        let mut by_model: BTreeMap<String, ModelPrice> = BUILTIN_PRICES
            .iter()
            .map(|&(model, input, output)| {
                (
                    model.to_owned(),
                    ModelPrice {
                        model: model.to_owned(),
                        input_per_mtok: input,
                        output_per_mtok: output,
                        source: PriceSource::Builtin,
                    },
                )
            })
            .collect();
        for p in self.engram.store.settings().user_model_prices()? {
            by_model.insert(p.model.clone(), p);
        }
        Ok(by_model.into_values().collect())
    }

    /// Sets the user's price of `price.model` (USD per million tokens; `source` is ignored).
    /// Errors: `Invalid` for an empty model or a negative or non-finite price.
    pub fn set_price(self, price: &ModelPrice) -> Result<()> {
        self.engram.store.settings().set_model_price(price)
    }

    /// Removes the user's price of `model`; a built-in price applies again. Returns whether
    /// there was one. Errors: `Storage`.
    pub fn delete_price(self, model: &str) -> Result<bool> {
        self.engram.store.settings().delete_model_price(model)
    }

    /// Tokens and cost of the agent's whole history, or of run `run`: each step priced by the
    /// model it called. Models without a price are listed in `unpriced_models`, and
    /// `cost_usd` is `None` when none of the steps' models has one.
    /// Errors: `not_found` for an unknown agent.
    pub fn usage_cost(self, agent: &AgentId, run: Option<&RunId>) -> Result<UsageCost> {
        let prices: BTreeMap<String, ModelPrice> = self
            .prices()?
            .into_iter()
            .map(|p| (p.model.clone(), p))
            .collect();
        let mut out = UsageCost::default();
        for (model, prompt, completion, steps) in
            self.engram.store.settings().usage_by_model(agent, run)?
        {
            out.prompt_tokens += prompt;
            out.completion_tokens += completion;
            out.step_count += steps;
            match prices.get(&model) {
                Some(p) => *out.cost_usd.get_or_insert(0.0) += p.cost(prompt, completion),
                None => out.unpriced_models.push(model),
            }
        }
        Ok(out)
    }
}

//! Model prices (built-in table plus the user's own) and the cost of an agent or a run,
//! computed from the stored steps so a reload or another window shows the same totals.
//! On a shared server the prices people set are in the database, one list for every replica.

use crate::rooms::Models;
use engram_core::{AgentId, ModelPrice, Result, RunId, UsageCost};
use std::collections::BTreeMap;

impl Models<'_> {
    /// Every known price, by model: the built-in table with the user's prices over it (a
    /// user price of a built-in model replaces it; source says which). Errors: `Storage`.
    pub async fn prices(self) -> Result<Vec<ModelPrice>> {
        let mut by_model: BTreeMap<String, ModelPrice> = ModelPrice::builtin()
            .map(|p| (p.model.clone(), p))
            .collect();
        for p in self.engram.backend.model_prices().await? {
            by_model.insert(p.model.clone(), p);
        }
        Ok(by_model.into_values().collect())
    }

    /// Sets the user's price of `price.model` (USD per million tokens; `source` is ignored).
    /// Errors: `Invalid` for an empty model or a negative or non-finite price.
    pub async fn set_price(self, price: &ModelPrice) -> Result<()> {
        self.engram.backend.set_model_price(price).await
    }

    /// Removes the user's price of `model`; a built-in price applies again. Returns whether
    /// there was one. Errors: `Storage`.
    pub async fn delete_price(self, model: &str) -> Result<bool> {
        self.engram.backend.delete_model_price(model).await
    }

    /// Tokens and cost of the agent's whole history, or of run `run`: each step priced by the
    /// model it called. Models without a price are listed in `unpriced_models`, and
    /// `cost_usd` is `None` when none of the steps' models has one.
    /// Errors: `not_found` for an unknown agent.
    pub async fn usage_cost(self, agent: &AgentId, run: Option<&RunId>) -> Result<UsageCost> {
        let prices: BTreeMap<String, ModelPrice> = self
            .prices()
            .await?
            .into_iter()
            .map(|p| (p.model.clone(), p))
            .collect();
        let mut out = UsageCost::default();
        for u in self.engram.backend.usage_by_model(agent, run).await? {
            out.prompt_tokens += u.prompt_tokens;
            out.completion_tokens += u.completion_tokens;
            out.step_count += u.steps;
            match prices.get(&u.model) {
                Some(p) => {
                    *out.cost_usd.get_or_insert(0.0) +=
                        p.cost(u.prompt_tokens, u.completion_tokens);
                }
                None => out.unpriced_models.push(u.model),
            }
        }
        Ok(out)
    }
}

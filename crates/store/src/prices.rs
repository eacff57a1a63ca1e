//! Model prices the user set, and token usage grouped by model for cost totals.

use crate::rooms::SettingRows;
use crate::sql::{self, DbResult, uint};
use engram_core::{AgentId, ModelPrice, PriceSource, Result, RunId};
use rusqlite::params;

use engram_store_api::ModelUsage;

/// The price of `model`: the user's, else the built-in one, else `None`.
pub(crate) fn price_of(conn: &rusqlite::Connection, model: &str) -> Result<Option<ModelPrice>> {
    use rusqlite::OptionalExtension;
    let user = conn
        .prepare_cached("SELECT input_per_mtok, output_per_mtok FROM model_prices WHERE model = ?1")
        .db()?
        .query_row([model], |r| {
            Ok(ModelPrice {
                model: model.to_owned(),
                input_per_mtok: r.get(0)?,
                output_per_mtok: r.get(1)?,
                source: PriceSource::User,
            })
        })
        .optional()
        .db()?;
    Ok(user.or_else(|| ModelPrice::builtin_for(model)))
}

impl SettingRows<'_> {
    /// The price of `model` (`provider/model`): the user's, else the built-in table's, else
    /// `None`. Errors: `Storage`.
    pub fn model_price(self, model: &str) -> Result<Option<ModelPrice>> {
        self.store.read(|c| price_of(c, model))
    }

    /// The prices the user stored, by model (source [`PriceSource::User`]).
    /// Errors: `Storage`.
    pub fn user_model_prices(self) -> Result<Vec<ModelPrice>> {
        self.store.read(|c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT model, input_per_mtok, output_per_mtok FROM model_prices ORDER BY model",
                )
                .db()?;
            let rows = stmt
                .query_map([], |r| {
                    Ok(ModelPrice {
                        model: r.get(0)?,
                        input_per_mtok: r.get(1)?,
                        output_per_mtok: r.get(2)?,
                        source: PriceSource::User,
                    })
                })
                .db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// Stores (or replaces) the user's price of `p.model`.
    /// Errors: `Invalid` for an empty model or a negative or non-finite price.
    pub fn set_model_price(self, p: &ModelPrice) -> Result<()> {
        p.check()?;
        self.store.write(|tx| {
            tx.prepare_cached(
                "INSERT INTO model_prices (model, input_per_mtok, output_per_mtok, updated_at)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (model) DO UPDATE SET input_per_mtok = excluded.input_per_mtok,
                     output_per_mtok = excluded.output_per_mtok, updated_at = excluded.updated_at",
            )
            .db()?
            .execute(params![
                p.model.trim(),
                p.input_per_mtok,
                p.output_per_mtok,
                sql::micros(sql::now())
            ])
            .db()?;
            Ok(())
        })
    }

    /// Removes the user's price of `model` (a built-in price, if any, applies again). Returns
    /// whether there was one. Errors: `Storage`.
    pub fn delete_model_price(self, model: &str) -> Result<bool> {
        self.store.write(|tx| {
            let n = tx
                .prepare_cached("DELETE FROM model_prices WHERE model = ?1")
                .db()?
                .execute([model])
                .db()?;
            Ok(n > 0)
        })
    }

    /// The agent's recorded usage per model (only `run`'s steps when given), by model name.
    /// One indexed pass over the steps table. Errors: `NotFound("agent")`.
    pub fn usage_by_model(self, agent: &AgentId, run: Option<&RunId>) -> Result<Vec<ModelUsage>> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let mut stmt = c
                .prepare_cached(
                    "SELECT model, sum(prompt_tokens), sum(completion_tokens), count(*) FROM steps
                     WHERE agent_id = ?1 AND (?2 IS NULL OR run_id = ?2)
                     GROUP BY model ORDER BY model",
                )
                .db()?;
            let rows = stmt
                .query_map(params![agent.as_str(), run.map(RunId::as_str)], |r| {
                    Ok(ModelUsage {
                        model: r.get(0)?,
                        prompt_tokens: uint(r, 1)?,
                        completion_tokens: uint(r, 2)?,
                        steps: uint(r, 3)?,
                    })
                })
                .db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;

    fn price(model: &str, i: f64, o: f64) -> ModelPrice {
        ModelPrice {
            model: model.into(),
            input_per_mtok: i,
            output_per_mtok: o,
            source: PriceSource::User,
        }
    }

    #[test]
    fn prices_are_stored_replaced_and_removed() {
        let s = Store::open_in_memory().unwrap();
        s.settings()
            .set_model_price(&price("openai/gpt-4o-mini", 0.15, 0.6))
            .unwrap();
        s.settings()
            .set_model_price(&price("openai/gpt-4o-mini", 0.2, 0.8))
            .unwrap();
        s.settings()
            .set_model_price(&price("local/x", 0.0, 0.0))
            .unwrap();
        let got = s.settings().user_model_prices().unwrap();
        assert_eq!(
            got,
            [
                price("local/x", 0.0, 0.0),
                price("openai/gpt-4o-mini", 0.2, 0.8)
            ]
        );
        assert!(
            s.settings()
                .set_model_price(&price("a/b", -1.0, 0.0))
                .is_err()
        );
        assert!(s.settings().delete_model_price("local/x").unwrap());
        assert!(!s.settings().delete_model_price("local/x").unwrap());
        assert_eq!(s.settings().user_model_prices().unwrap().len(), 1);
    }
}

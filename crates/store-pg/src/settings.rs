//! Providers (without keys) and app settings on PostgreSQL, in the same shape as the SQLite
//! store's (`engram_store::SettingRows`). Lists sort with `COLLATE "C"`: byte order, as SQLite
//! compares text, whatever collation the database was made with.

use crate::PgStore;
use crate::rows::AGENT_COLS;
use crate::rows::{self, Cached};
use crate::tx::{TxError, transaction};
use async_trait::async_trait;
use engram_core::{
    Agent, AgentId, EndpointKind, Error, ModelPrice, PendingEndpoint, PriceSource, Result,
};
use engram_store_api::{
    ProviderRow, SettingStore, no_embedding_model_for_endpoint, no_pending_endpoint,
};
use tokio_postgres::Row;

const PROVIDER_COLS: &str = "name, kind, base_url, default_model";

fn provider_of(r: &Row) -> ProviderRow {
    ProviderRow {
        name: r.get(0),
        kind: r.get(1),
        base_url: r.get(2),
        default_model: r.get(3),
    }
}

#[async_trait]
impl SettingStore for PgStore {
    async fn upsert_provider(&self, p: &ProviderRow) -> Result<()> {
        if p.name.trim().is_empty() || p.kind.trim().is_empty() {
            return Err(Error::invalid("a provider needs a name and a kind"));
        }
        let now = rows::now();
        let c = self.client().await?;
        c.exec(
            "INSERT INTO providers (name, kind, base_url, default_model, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $5)
             ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, base_url = excluded.base_url,
                 default_model = excluded.default_model, updated_at = excluded.updated_at",
            &[&p.name, &p.kind, &p.base_url, &p.default_model, &now],
        )
        .await
        .map_err(TxError::from)?;
        Ok(())
    }

    async fn get_provider(&self, name: &str) -> Result<ProviderRow> {
        let c = self.client().await?;
        c.one_opt(
            &format!("SELECT {PROVIDER_COLS} FROM providers WHERE name = $1"),
            &[&name],
        )
        .await
        .map_err(TxError::from)?
        .map(|r| provider_of(&r))
        .ok_or_else(|| Error::not_found("provider", name))
    }

    async fn list_providers(&self) -> Result<Vec<ProviderRow>> {
        let c = self.client().await?;
        let rows = c
            .rows(
                &format!("SELECT {PROVIDER_COLS} FROM providers ORDER BY name COLLATE \"C\""),
                &[],
            )
            .await
            .map_err(TxError::from)?;
        Ok(rows.iter().map(provider_of).collect())
    }

    async fn delete_provider(&self, name: &str) -> Result<()> {
        let c = self.client().await?;
        let n = c
            .exec("DELETE FROM providers WHERE name = $1", &[&name])
            .await
            .map_err(TxError::from)?;
        if n == 0 {
            return Err(Error::not_found("provider", name));
        }
        Ok(())
    }

    async fn get_setting(&self, key: &str) -> Result<Option<String>> {
        let c = self.client().await?;
        Ok(
            c.one_opt("SELECT value FROM settings WHERE key = $1", &[&key])
                .await
                .map_err(TxError::from)?
                .map(|r| r.get(0)),
        )
    }

    async fn set_setting(&self, key: &str, value: &str) -> Result<()> {
        let c = self.client().await?;
        c.exec(
            "INSERT INTO settings (key, value) VALUES ($1, $2)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&key, &value],
        )
        .await
        .map_err(TxError::from)?;
        Ok(())
    }

    async fn settings_with_prefix(&self, prefix: &str) -> Result<Vec<(String, String)>> {
        let c = self.client().await?;
        // `starts_with`, not LIKE: `%` and `_` in a prefix are plain characters.
        let rows = c
            .rows(
                "SELECT key, value FROM settings WHERE starts_with(key, $1)
                 ORDER BY key COLLATE \"C\"",
                &[&prefix],
            )
            .await
            .map_err(TxError::from)?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    async fn model_prices(&self) -> Result<Vec<ModelPrice>> {
        let c = self.client().await?;
        let found = c
            .rows(
                "SELECT model, input_per_mtok, output_per_mtok FROM model_prices
                 ORDER BY model COLLATE \"C\"",
                &[],
            )
            .await
            .map_err(TxError::from)?;
        Ok(rows::all(&found, |r| {
            Ok(ModelPrice {
                model: r.try_get(0)?,
                input_per_mtok: r.try_get(1)?,
                output_per_mtok: r.try_get(2)?,
                source: PriceSource::User,
            })
        })?)
    }

    async fn set_model_price(&self, p: &ModelPrice) -> Result<()> {
        p.check()?;
        let c = self.client().await?;
        c.exec(
            "INSERT INTO model_prices (model, input_per_mtok, output_per_mtok, updated_at)
             VALUES ($1, $2, $3, $4)
             ON CONFLICT (model) DO UPDATE SET input_per_mtok = excluded.input_per_mtok,
                 output_per_mtok = excluded.output_per_mtok, updated_at = excluded.updated_at",
            &[
                &p.model.trim(),
                &p.input_per_mtok,
                &p.output_per_mtok,
                &rows::now(),
            ],
        )
        .await
        .map_err(TxError::from)?;
        Ok(())
    }

    async fn delete_model_price(&self, model: &str) -> Result<bool> {
        let c = self.client().await?;
        let n = c
            .exec("DELETE FROM model_prices WHERE model = $1", &[&model])
            .await
            .map_err(TxError::from)?;
        Ok(n > 0)
    }

    async fn pending_endpoints(&self, agent: &AgentId) -> Result<Vec<PendingEndpoint>> {
        let c = self.client().await?;
        let found = c
            .rows(
                "SELECT kind, base_url, source, created_at FROM pending_endpoints
                 WHERE agent_id = $1 ORDER BY kind DESC",
                &[&agent.as_str()],
            )
            .await
            .map_err(TxError::from)?;
        Ok(found
            .iter()
            .map(|r| PendingEndpoint {
                agent_id: agent.clone(),
                kind: if r.get::<_, &str>(0) == "embedding" {
                    EndpointKind::Embedding
                } else {
                    EndpointKind::Llm
                },
                base_url: r.get(1),
                source: r.get(2),
                created_at: r.get(3),
            })
            .collect())
    }

    async fn accept_endpoint(&self, agent: &AgentId, kind: EndpointKind) -> Result<Agent> {
        transaction!(self, |tx| {
            let row = tx
                .one_opt(
                    &format!("SELECT {AGENT_COLS} FROM agents WHERE id = $1 FOR UPDATE"),
                    &[&agent.as_str()],
                )
                .await?;
            let Some(row) = row else {
                return Err(no_pending_endpoint(agent, kind).into());
            };
            let mut a = rows::agent(&row)?;
            let Some(pending) = tx
                .one_opt(
                    "DELETE FROM pending_endpoints WHERE agent_id = $1 AND kind = $2
                     RETURNING base_url",
                    &[&agent.as_str(), &kind.as_str()],
                )
                .await?
            else {
                return Err(no_pending_endpoint(agent, kind).into());
            };
            let url: String = pending.try_get(0)?;
            match kind {
                EndpointKind::Llm => a.llm.base_url = Some(url),
                EndpointKind::Embedding => match a.embedding.as_mut() {
                    Some(e) => e.base_url = Some(url),
                    None => return Err(no_embedding_model_for_endpoint().into()),
                },
            }
            // `updated_at` is kept: accepting completes the import.
            tx.exec(
                "UPDATE agents SET llm = $2, embedding = $3 WHERE id = $1",
                &[
                    &agent.as_str(),
                    &rows::to_json(&a.llm)?,
                    &a.embedding.as_ref().map(rows::to_json).transpose()?,
                ],
            )
            .await?;
            a
        })
    }

    async fn dismiss_endpoint(&self, agent: &AgentId, kind: EndpointKind) -> Result<()> {
        let c = self.client().await?;
        let n = c
            .exec(
                "DELETE FROM pending_endpoints WHERE agent_id = $1 AND kind = $2",
                &[&agent.as_str(), &kind.as_str()],
            )
            .await
            .map_err(TxError::from)?;
        if n == 0 {
            return Err(no_pending_endpoint(agent, kind));
        }
        Ok(())
    }
}

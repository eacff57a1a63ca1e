//! Provider settings and app settings. Never API keys: those live in the OS keychain only.

use crate::rooms::SettingRows;
use crate::sql::{self, DbResult};
use engram_core::{Error, Result};
use rusqlite::{OptionalExtension, Row, params};

pub use engram_store_api::ProviderRow;

fn provider_from_row(r: &Row<'_>) -> rusqlite::Result<ProviderRow> {
    Ok(ProviderRow {
        name: r.get(0)?,
        kind: r.get(1)?,
        base_url: r.get(2)?,
        default_model: r.get(3)?,
    })
}

impl SettingRows<'_> {
    /// Creates or replaces a provider's settings (its creation time is kept on replace).
    /// Errors: `Invalid` for an empty name or kind.
    pub fn upsert_provider(self, p: &ProviderRow) -> Result<()> {
        if p.name.trim().is_empty() || p.kind.trim().is_empty() {
            return Err(Error::invalid("a provider needs a name and a kind"));
        }
        let now = sql::micros(sql::now());
        self.store.write(|tx| {
            tx.prepare_cached(
                "INSERT INTO providers (name, kind, base_url, default_model, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5)
                 ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, base_url = excluded.base_url,
                     default_model = excluded.default_model, updated_at = excluded.updated_at",
            )
            .db()?
            .execute(params![p.name, p.kind, p.base_url, p.default_model, now])
            .db()?;
            Ok(())
        })
    }

    /// One provider's settings. Errors: `NotFound("provider", name)`.
    pub fn get_provider(self, name: &str) -> Result<ProviderRow> {
        self.store.read(|c| {
            c.prepare_cached(
                "SELECT name, kind, base_url, default_model FROM providers WHERE name = ?1",
            )
            .db()?
            .query_row([name], provider_from_row)
            .optional()
            .db()?
            .ok_or_else(|| Error::not_found("provider", name))
        })
    }

    /// Every configured provider, by name.
    pub fn list_providers(self) -> Result<Vec<ProviderRow>> {
        self.store.read(|c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT name, kind, base_url, default_model FROM providers ORDER BY name",
                )
                .db()?;
            let rows = stmt.query_map([], provider_from_row).db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// Removes a provider's settings (its key, in the keychain, is the caller's business).
    /// Errors: `NotFound("provider", name)`.
    pub fn delete_provider(self, name: &str) -> Result<()> {
        self.store.write(|tx| {
            let n = tx
                .execute("DELETE FROM providers WHERE name = ?1", [name])
                .db()?;
            if n == 0 {
                Err(Error::not_found("provider", name))
            } else {
                Ok(())
            }
        })
    }

    /// An app setting's value, `None` if it was never set.
    pub fn get(self, key: &str) -> Result<Option<String>> {
        self.store.read(|c| {
            c.prepare_cached("SELECT value FROM settings WHERE key = ?1")
                .db()?
                .query_row([key], |r| r.get(0))
                .optional()
                .db()
        })
    }

    /// Sets an app setting, replacing any previous value.
    pub fn set(self, key: &str, value: &str) -> Result<()> {
        self.store.write(|tx| {
            tx.prepare_cached(
                "INSERT INTO settings (key, value) VALUES (?1, ?2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            )
            .db()?
            .execute([key, value])
            .db()?;
            Ok(())
        })
    }

    /// Every app setting whose key starts with `prefix`, by key.
    pub fn with_prefix(self, prefix: &str) -> Result<Vec<(String, String)>> {
        self.store.read(|c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT key, value FROM settings WHERE substr(key, 1, length(?1)) = ?1
                     ORDER BY key",
                )
                .db()?;
            let rows = stmt
                .query_map([prefix], |r| Ok((r.get(0)?, r.get(1)?)))
                .db()?;
            rows.collect::<rusqlite::Result<Vec<_>>>().db()
        })
    }
}

//! Context windows people set per model (`provider/model` handle), kept in the engine so the
//! model picker shows them in every window and after a reload. Stored in the settings table
//! under `model_window.<handle>` as a decimal number of **tokens**, like calibrations.

use crate::rooms::SettingRows;
use crate::sql::DbResult;
use engram_core::{Error, Result};

/// Settings-key prefix of per-model context windows; the model handle follows.
pub const MODEL_WINDOW_SETTING_PREFIX: &str = "model_window.";

impl SettingRows<'_> {
    /// The context window (tokens) stored for the model `handle`, if one was set.
    /// A malformed stored value reads as `None`. Errors: [`Error::Storage`].
    pub fn model_window(self, handle: &str) -> Result<Option<u32>> {
        let key = format!("{MODEL_WINDOW_SETTING_PREFIX}{handle}");
        Ok(self.get(&key)?.and_then(|v| v.parse().ok()))
    }

    /// Stores the context window of the model `handle`, in tokens.
    /// Errors: `Invalid` for an empty handle or zero tokens; [`Error::Storage`].
    pub fn set_model_window(self, handle: &str, tokens: u32) -> Result<()> {
        if handle.trim().is_empty() || tokens == 0 {
            return Err(Error::invalid(
                "a model context window needs a model handle and a positive number of tokens",
            ));
        }
        let key = format!("{MODEL_WINDOW_SETTING_PREFIX}{handle}");
        self.set(&key, &tokens.to_string())
    }

    /// Every stored per-model context window, `(handle, tokens)` by handle.
    /// Errors: [`Error::Storage`].
    pub fn model_windows(self) -> Result<Vec<(String, u32)>> {
        let rows: Vec<(String, String)> = self.store.read(|c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT key, value FROM settings WHERE substr(key, 1, ?2) = ?1 ORDER BY key",
                )
                .db()?;
            let prefix_len = i64::try_from(MODEL_WINDOW_SETTING_PREFIX.len()).unwrap_or(0);
            let rows = stmt
                .query_map(
                    rusqlite::params![MODEL_WINDOW_SETTING_PREFIX, prefix_len],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|(k, v)| {
                let handle = k.strip_prefix(MODEL_WINDOW_SETTING_PREFIX)?.to_owned();
                Some((handle, v.parse().ok()?))
            })
            .collect())
    }
}

//! Per-model token calibration: how the provider's count of a prompt (`prompt_tokens`) relates
//! to Engram's estimate, for models whose tokenizer Engram does not know. Kept in the settings
//! table under `calibration.<model handle>` as JSON, so it survives restarts without a table of
//! its own.

use crate::rooms::SettingRows;
use engram_core::Result;
use engram_store_api::{Calibration, calibration_key};

impl SettingRows<'_> {
    /// The calibration of `model` (a `provider/model` handle), if one was learnt.
    ///
    /// Errors: [`engram_core::Error::Storage`]. A malformed stored value reads as `None`.
    pub fn model_calibration(self, model: &str) -> Result<Option<Calibration>> {
        let key = calibration_key(model);
        Ok(self.get(&key)?.and_then(|v| serde_json::from_str(&v).ok()))
    }

    /// Stores the calibration of `model`, replacing the previous one.
    ///
    /// Errors: [`engram_core::Error::Storage`].
    pub fn set_model_calibration(self, model: &str, calibration: &Calibration) -> Result<()> {
        let key = calibration_key(model);
        let value = serde_json::to_string(calibration)
            .map_err(|e| engram_core::Error::Internal(format!("calibration: {e}")))?;
        self.set(&key, &value)
    }
}

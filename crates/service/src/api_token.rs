//! The local REST API's settings: its bearer token (in the secret store) and whether the
//! desktop app serves it.

use crate::rooms::Trust;
use engram_core::Result;
use rand::RngCore;
use secrecy::{ExposeSecret, SecretString};

/// The secret-store name of the REST API token.
pub const REST_TOKEN_SECRET: &str = engram_secrets::REST_TOKEN_NAME;

/// The settings key remembering whether the desktop app serves the REST API.
const REST_ENABLED_SETTING: &str = "rest_api_enabled";

/// Random bytes in a token (256 bits).
const TOKEN_BYTES: usize = 32;

impl Trust<'_> {
    /// The REST API's bearer token: read from the secret store, or, on first use, 32 bytes from
    /// `rand`'s thread-local CSPRNG (ChaCha, seeded by the OS) as hex prefixed `engram-`,
    /// stored there and returned. On a machine without a keychain the token is kept for the
    /// life of this `Engram` only, so a new one is made at each start.
    /// Errors: `secrets` when the store cannot be read or written.
    pub fn rest_api_token(self) -> Result<SecretString> {
        if let Some(token) = self
            .engram
            .secrets
            .get(REST_TOKEN_SECRET)?
            .filter(|t| !t.expose_secret().is_empty())
        {
            return Ok(token);
        }
        let mut bytes = [0u8; TOKEN_BYTES];
        rand::rng().fill_bytes(&mut bytes);
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let token = SecretString::from(format!("engram-{hex}"));
        match self.engram.secrets.set(REST_TOKEN_SECRET, &token) {
            Ok(()) => Ok(token),
            // No keychain on this machine: the token lives as long as this process (printed by
            // `engram serve --show-token` at each start) rather than in a file or the database.
            Err(e) if engram_secrets::no_keychain(&e) => {
                let kept = self.engram.run_token.get_or_init(|| {
                    tracing::info!("no keychain: the REST API token is new at each start");
                    token
                });
                Ok(kept.clone())
            }
            Err(e) => Err(e),
        }
    }

    /// Whether the desktop app should serve the REST API when it starts (off until the user
    /// turns it on).
    pub fn rest_api_enabled(self) -> Result<bool> {
        Ok(self
            .engram
            .store
            .settings()
            .get(REST_ENABLED_SETTING)?
            .as_deref()
            == Some("true"))
    }

    /// Remembers whether the desktop app should serve the REST API.
    pub fn set_rest_api_enabled(self, enabled: bool) -> Result<()> {
        self.engram
            .store
            .settings()
            .set(REST_ENABLED_SETTING, if enabled { "true" } else { "false" })
    }
}

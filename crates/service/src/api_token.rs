//! The bearer token of the local REST API, kept in the secret store.

use crate::Engram;
use engram_core::Result;
use rand::RngCore;
use secrecy::{ExposeSecret, SecretString};

/// The secret-store name of the REST API token.
pub const REST_TOKEN_SECRET: &str = "rest-api-token";

/// Random bytes in a token (256 bits).
const TOKEN_BYTES: usize = 32;

impl Engram {
    /// The REST API's bearer token: read from the secret store, or, on first use, 32 bytes from
    /// `rand`'s thread-local CSPRNG (ChaCha, seeded by the OS) as hex prefixed `engram-`,
    /// stored there and returned.
    /// Errors: `secrets` when the store cannot be read or written.
    pub fn rest_api_token(&self) -> Result<SecretString> {
        if let Some(token) = self
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
        self.secrets.set(REST_TOKEN_SECRET, &token)?;
        Ok(token)
    }
}

//! API keys in the OS keychain, never anywhere else.
//!
//! Everything that needs a secret (provider API keys, the REST API token) goes through
//! [`SecretStore`], a small synchronous get/set/delete interface keyed by a name such as
//! `"provider:openai"` (see [`provider_key_name`]). Values travel as [`SecretString`], whose
//! `Debug` is redacted, and no error message of this crate ever contains a secret.
//!
//! Stores:
//! - [`KeyringStore`]: the OS keychain through the `keyring` crate: macOS Keychain, Windows Credential
//!   Manager, the Linux Secret Service (GNOME Keyring, KWallet, KeePassXC), or the Linux kernel
//!   keyutils store when no Secret Service is reachable (headless machines).
//! - [`MemoryStore`]: a map in memory, for tests and throwaway sessions.
//! - [`EnvOverride`]: a wrapper that answers `"provider:openai"` / `"provider:anthropic"` from
//!   `OPENAI_API_KEY` / `ANTHROPIC_API_KEY` when those are set, the way the official SDKs do. Values
//!   read from the environment are never written anywhere.
//! - [`FileOverride`]: a wrapper that answers from a secrets file of the server's (TOML, the
//!   owner's alone), for machines without a keychain.
//!
//! [`default_store`] wires these together for the app. The trait is synchronous because the keychain
//! APIs are (the Secret Service store is the sync D-Bus one: keyring's async store panics inside a
//! tokio runtime); async callers wrap calls in `tokio::task::spawn_blocking`.

mod env_override;
mod file;
mod keychain;
mod memory;

use std::sync::Arc;

pub use engram_core::{Error, Result};
pub use env_override::EnvOverride;
pub use file::FileOverride;
pub use keychain::KeyringStore;
pub use memory::MemoryStore;

/// Whether `e` says the machine has no keychain at all (no Secret Service, no kernel keyring,
/// or `ENGRAM_SECRETS=none`), as opposed to a keychain that failed: what a caller with
/// something other than a provider key to keep (a token for this run) may work around.
pub fn no_keychain(e: &Error) -> bool {
    matches!(e, Error::Secrets(m) if m.starts_with(keychain::NO_KEYCHAIN))
}
pub use secrecy::{ExposeSecret, SecretString};

/// The secret name of the REST API's bearer token (the administrator's on a shared server).
pub const REST_TOKEN_NAME: &str = "rest-api-token";

/// The keychain service name the app stores its entries under.
pub const DEFAULT_SERVICE: &str = "engram";

/// Environment variable that picks the store of [`default_store`]: `memory` selects an in-memory
/// store (headless tests, CI without a keychain); `none` behaves as a machine without any
/// keychain (the OS keychain store with no keychain to choose, for tests of that set-up); unset or
/// `keychain` selects the OS keychain.
pub const STORE_SELECTOR_VAR: &str = "ENGRAM_SECRETS";

/// A place that keeps named secrets.
///
/// Names are short ASCII labels such as `"provider:openai"` or `"rest-api-token"`. The methods block
/// (a keychain call may talk to a daemon over D-Bus or wait for an unlock prompt), so async code calls
/// them inside `tokio::task::spawn_blocking`.
///
/// Errors: [`Error::Invalid`] for an empty name or an empty secret, [`Error::Secrets`] when the
/// backing store fails, with a message that says what to do and never contains the secret.
pub trait SecretStore: Send + Sync {
    /// The secret stored under `name`, or `None` when there is none.
    fn get(&self, name: &str) -> Result<Option<SecretString>>;

    /// Stores `secret` under `name`, replacing any previous value.
    fn set(&self, name: &str, secret: &SecretString) -> Result<()>;

    /// Removes the secret stored under `name`; removing a missing entry succeeds.
    fn delete(&self, name: &str) -> Result<()>;
}

/// A shared or boxed store is the store it points to.
macro_rules! forward_secret_store {
    ($($pointer:ident),*) => {$(
        impl<S: SecretStore + ?Sized> SecretStore for $pointer<S> {
            fn get(&self, name: &str) -> Result<Option<SecretString>> {
                (**self).get(name)
            }

            fn set(&self, name: &str, secret: &SecretString) -> Result<()> {
                (**self).set(name, secret)
            }

            fn delete(&self, name: &str) -> Result<()> {
                (**self).delete(name)
            }
        }
    )*};
}

forward_secret_store!(Arc, Box);

/// The store the app uses: the OS keychain (service [`DEFAULT_SERVICE`]) behind [`EnvOverride`].
///
/// Setting [`STORE_SELECTOR_VAR`]`=memory` swaps the keychain for a [`MemoryStore`], for headless tests
/// and CI machines without a keychain. The keychain is not contacted until the first call.
pub fn default_store() -> Arc<dyn SecretStore> {
    let selector = std::env::var(STORE_SELECTOR_VAR).ok();
    store_for(selector.as_deref())
}

/// [`default_store`] for a given value of [`STORE_SELECTOR_VAR`].
fn store_for(selector: Option<&str>) -> Arc<dyn SecretStore> {
    match selector.map(str::trim) {
        Some(s) if s.eq_ignore_ascii_case("memory") => {
            tracing::info!("{STORE_SELECTOR_VAR}=memory: secrets are kept in memory only");
            Arc::new(EnvOverride::new(MemoryStore::default()))
        }
        Some(s) if s.eq_ignore_ascii_case("none") => {
            tracing::info!("{STORE_SELECTOR_VAR}=none: acting as a machine without a keychain");
            Arc::new(EnvOverride::new(KeyringStore::without_keychain(
                DEFAULT_SERVICE,
                &format!("{STORE_SELECTOR_VAR}=none"),
            )))
        }
        Some(s) if !s.is_empty() && !s.eq_ignore_ascii_case("keychain") => {
            tracing::warn!(
                "unknown {STORE_SELECTOR_VAR}={s:?} (expected `memory`, `none` or `keychain`); using the OS keychain"
            );
            Arc::new(EnvOverride::new(KeyringStore::new(DEFAULT_SERVICE)))
        }
        _ => Arc::new(EnvOverride::new(KeyringStore::new(DEFAULT_SERVICE))),
    }
}

/// The secret name of a model provider's API key: `"provider:<name>"`, e.g. `"provider:openai"`.
pub fn provider_key_name(provider: &str) -> String {
    format!("provider:{provider}")
}

/// Rejects names no store can key on.
fn check_name(name: &str) -> Result<()> {
    if name.trim().is_empty() {
        return Err(Error::invalid(
            "a secret needs a name, e.g. \"provider:openai\"",
        ));
    }
    Ok(())
}

/// Rejects values that cannot be stored (the kernel keyring refuses empty keys, so every store does).
fn check_secret(name: &str, secret: &SecretString) -> Result<()> {
    if secret.expose_secret().is_empty() {
        return Err(Error::invalid(format!(
            "the value for \"{name}\" is empty; to remove a key, delete it instead"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_key_names_are_prefixed() {
        assert_eq!(provider_key_name("openai"), "provider:openai");
        assert_eq!(provider_key_name("anthropic"), "provider:anthropic");
    }

    #[test]
    fn memory_selector_gives_a_working_store() {
        let store = store_for(Some(" Memory "));
        let name = provider_key_name("local");
        store.set(&name, &SecretString::from("sk-local")).unwrap();
        assert_eq!(
            store.get(&name).unwrap().unwrap().expose_secret(),
            "sk-local"
        );
        store.delete(&name).unwrap();
        assert!(store.get(&name).unwrap().is_none());
    }

    #[test]
    fn arc_and_box_forward_to_the_store() {
        let shared: Arc<dyn SecretStore> = Arc::new(MemoryStore::default());
        let boxed: Box<dyn SecretStore> = Box::new(Arc::clone(&shared));
        boxed
            .set("rest-api-token", &SecretString::from("tok"))
            .unwrap();
        assert_eq!(
            shared
                .get("rest-api-token")
                .unwrap()
                .unwrap()
                .expose_secret(),
            "tok"
        );
        boxed.delete("rest-api-token").unwrap();
        assert!(shared.get("rest-api-token").unwrap().is_none());
    }

    #[test]
    fn empty_names_and_values_are_invalid_input() {
        assert!(matches!(check_name(""), Err(Error::Invalid(_))));
        assert!(matches!(check_name("  "), Err(Error::Invalid(_))));
        assert!(check_name("provider:openai").is_ok());
        assert!(matches!(
            check_secret("x", &SecretString::from("")),
            Err(Error::Invalid(_))
        ));
    }
}

//! [`MemoryStore`]: secrets in a map, gone when the process exits.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use secrecy::SecretString;

use crate::{Result, SecretStore, check_name, check_secret};

/// An in-memory [`SecretStore`] for tests and throwaway sessions (`ENGRAM_SECRETS=memory`).
///
/// Validates names and values like [`KeyringStore`](crate::KeyringStore), so code tested against it
/// behaves the same on a real keychain. `Debug` shows the names, never the values.
#[derive(Debug, Default)]
pub struct MemoryStore {
    entries: Mutex<HashMap<String, SecretString>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<String, SecretString>> {
        // A panic while holding the lock cannot leave the map half-updated; keep going.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SecretStore for MemoryStore {
    fn get(&self, name: &str) -> Result<Option<SecretString>> {
        check_name(name)?;
        Ok(self.entries().get(name).cloned())
    }

    fn set(&self, name: &str, secret: &SecretString) -> Result<()> {
        check_name(name)?;
        check_secret(name, secret)?;
        self.entries().insert(name.to_owned(), secret.clone());
        Ok(())
    }

    fn delete(&self, name: &str) -> Result<()> {
        check_name(name)?;
        self.entries().remove(name);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use secrecy::ExposeSecret;

    use super::*;
    use crate::Error;

    const KEY: &str = "sk-proj-0123456789abcdef";

    fn value(store: &MemoryStore, name: &str) -> Option<String> {
        store
            .get(name)
            .unwrap()
            .map(|s| s.expose_secret().to_owned())
    }

    #[test]
    fn set_get_delete_round_trip() {
        let store = MemoryStore::new();
        assert_eq!(value(&store, "provider:openai"), None);
        store
            .set("provider:openai", &SecretString::from(KEY))
            .unwrap();
        assert_eq!(value(&store, "provider:openai").as_deref(), Some(KEY));
        store.delete("provider:openai").unwrap();
        assert_eq!(value(&store, "provider:openai"), None);
    }

    #[test]
    fn set_overwrites() {
        let store = MemoryStore::new();
        store
            .set("provider:openai", &SecretString::from("old"))
            .unwrap();
        store
            .set("provider:openai", &SecretString::from("new"))
            .unwrap();
        assert_eq!(value(&store, "provider:openai").as_deref(), Some("new"));
    }

    #[test]
    fn names_are_independent() {
        let store = MemoryStore::new();
        store
            .set("provider:openai", &SecretString::from("a"))
            .unwrap();
        store
            .set("provider:anthropic", &SecretString::from("b"))
            .unwrap();
        store.delete("provider:openai").unwrap();
        assert_eq!(value(&store, "provider:openai"), None);
        assert_eq!(value(&store, "provider:anthropic").as_deref(), Some("b"));
    }

    #[test]
    fn deleting_a_missing_entry_is_ok() {
        let store = MemoryStore::new();
        store.delete("provider:nobody").unwrap();
        store.delete("provider:nobody").unwrap();
    }

    #[test]
    fn rejects_empty_names_and_values() {
        let store = MemoryStore::new();
        assert!(matches!(store.get(""), Err(Error::Invalid(_))));
        assert!(matches!(store.delete(" "), Err(Error::Invalid(_))));
        let err = store
            .set("provider:openai", &SecretString::from(""))
            .unwrap_err();
        assert!(matches!(err, Error::Invalid(_)));
        assert_eq!(value(&store, "provider:openai"), None);
    }

    #[test]
    fn debug_never_shows_a_stored_secret() {
        let store = MemoryStore::new();
        store
            .set("provider:openai", &SecretString::from(KEY))
            .unwrap();
        let got = store.get("provider:openai").unwrap();
        for shown in [
            format!("{store:?}"),
            format!("{store:#?}"),
            format!("{got:?}"),
        ] {
            assert!(!shown.contains(KEY), "secret leaked through Debug: {shown}");
            assert!(
                !shown.contains("0123456789"),
                "part of the secret leaked: {shown}"
            );
        }
        // The names stay visible so the store is still debuggable.
        assert!(format!("{store:?}").contains("provider:openai"));
    }
}

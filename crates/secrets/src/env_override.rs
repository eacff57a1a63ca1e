//! [`EnvOverride`]: the SDK-style `OPENAI_API_KEY` / `ANTHROPIC_API_KEY` variables win over the store.

use std::fmt;

use secrecy::SecretString;

use crate::{Result, SecretStore};

/// Which environment variable overrides which secret name.
const OVERRIDES: &[(&str, &str)] = &[
    ("provider:openai", "OPENAI_API_KEY"),
    ("provider:anthropic", "ANTHROPIC_API_KEY"),
];

/// The environment variable that overrides the secret `name`, if any.
pub(crate) fn override_variable(name: &str) -> Option<&'static str> {
    OVERRIDES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, var)| *var)
}

/// How an [`EnvOverride`] reads a variable: `Some(value)` when set.
type Lookup = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// A [`SecretStore`] wrapper that answers from the environment first, the way the official SDKs do.
///
/// `get("provider:openai")` returns `OPENAI_API_KEY` and `get("provider:anthropic")` returns
/// `ANTHROPIC_API_KEY` when the variable is set and not blank; otherwise, and for every other name,
/// it asks the inner store. `set` and `delete` always go to the inner store, so a value from the
/// environment is never written anywhere (and deleting a stored key does not hide the variable).
pub struct EnvOverride<S> {
    inner: S,
    lookup: Lookup,
}

impl<S> EnvOverride<S> {
    /// Wraps `inner`, reading the process environment at each `get`.
    pub fn new(inner: S) -> Self {
        Self::with_lookup(inner, |var| std::env::var(var).ok())
    }

    /// Wraps `inner`, reading variables through `lookup` instead of the process environment.
    ///
    /// For tests and embedders: changing the real environment is `unsafe` (and racy) in Rust 2024.
    pub fn with_lookup(
        inner: S,
        lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            inner,
            lookup: Box::new(lookup),
        }
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The environment variable that can override the secret `name`, e.g. `OPENAI_API_KEY` for
    /// `"provider:openai"`; `None` for names the environment never overrides.
    pub fn variable_for(name: &str) -> Option<&'static str> {
        override_variable(name)
    }

    /// The variable currently overriding `name`, if it is set and not blank, so a UI can say
    /// "set by OPENAI_API_KEY" instead of offering to edit a stored key that is not in use.
    pub fn overridden_by(&self, name: &str) -> Option<&'static str> {
        let var = Self::variable_for(name)?;
        self.read(var).map(|_| var)
    }

    fn read(&self, var: &str) -> Option<SecretString> {
        let value = (self.lookup)(var)?;
        if value.trim().is_empty() {
            return None;
        }
        Some(SecretString::from(value))
    }
}

impl<S: SecretStore> SecretStore for EnvOverride<S> {
    fn get(&self, name: &str) -> Result<Option<SecretString>> {
        if let Some(var) = Self::variable_for(name)
            && let Some(value) = self.read(var)
        {
            tracing::debug!(name, var, "secret taken from the environment");
            return Ok(Some(value));
        }
        self.inner.get(name)
    }

    fn set(&self, name: &str, secret: &SecretString) -> Result<()> {
        self.inner.set(name, secret)
    }

    fn delete(&self, name: &str) -> Result<()> {
        self.inner.delete(name)
    }
}

impl<S: fmt::Debug> fmt::Debug for EnvOverride<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnvOverride")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use secrecy::ExposeSecret;

    use super::*;
    use crate::MemoryStore;

    fn with_env(vars: &[(&str, &str)]) -> EnvOverride<MemoryStore> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        EnvOverride::with_lookup(MemoryStore::new(), move |var| vars.get(var).cloned())
    }

    fn value(store: &impl SecretStore, name: &str) -> Option<String> {
        store
            .get(name)
            .unwrap()
            .map(|s| s.expose_secret().to_owned())
    }

    #[test]
    fn environment_wins_over_the_store() {
        let store = with_env(&[
            ("OPENAI_API_KEY", "sk-env"),
            ("ANTHROPIC_API_KEY", "ant-env"),
        ]);
        store
            .set("provider:openai", &SecretString::from("sk-stored"))
            .unwrap();
        store
            .set("provider:anthropic", &SecretString::from("ant-stored"))
            .unwrap();
        assert_eq!(value(&store, "provider:openai").as_deref(), Some("sk-env"));
        assert_eq!(
            value(&store, "provider:anthropic").as_deref(),
            Some("ant-env")
        );
        assert_eq!(
            store.overridden_by("provider:openai"),
            Some("OPENAI_API_KEY")
        );
    }

    #[test]
    fn store_answers_when_the_variable_is_unset_or_blank() {
        let store = with_env(&[("OPENAI_API_KEY", ""), ("ANTHROPIC_API_KEY", "  \n")]);
        assert_eq!(value(&store, "provider:openai"), None);
        store
            .set("provider:openai", &SecretString::from("sk-stored"))
            .unwrap();
        store
            .set("provider:anthropic", &SecretString::from("ant-stored"))
            .unwrap();
        assert_eq!(
            value(&store, "provider:openai").as_deref(),
            Some("sk-stored")
        );
        assert_eq!(
            value(&store, "provider:anthropic").as_deref(),
            Some("ant-stored")
        );
        assert_eq!(store.overridden_by("provider:openai"), None);

        let unset = with_env(&[]);
        unset
            .set("provider:openai", &SecretString::from("sk-stored"))
            .unwrap();
        assert_eq!(
            value(&unset, "provider:openai").as_deref(),
            Some("sk-stored")
        );
    }

    #[test]
    fn only_the_mapped_names_are_overridden() {
        let store = with_env(&[
            ("OPENAI_API_KEY", "sk-env"),
            ("ANTHROPIC_API_KEY", "ant-env"),
            ("REST_API_TOKEN", "tok-env"),
        ]);
        assert_eq!(value(&store, "provider:openrouter"), None);
        assert_eq!(value(&store, "rest-api-token"), None);
        assert_eq!(value(&store, "OPENAI_API_KEY"), None);
        assert_eq!(
            EnvOverride::<MemoryStore>::variable_for("provider:ollama"),
            None
        );
    }

    #[test]
    fn environment_values_are_never_written_to_the_inner_store() {
        let store = with_env(&[("OPENAI_API_KEY", "sk-env")]);
        assert_eq!(value(&store, "provider:openai").as_deref(), Some("sk-env"));
        assert_eq!(value(store.inner(), "provider:openai"), None);
    }

    #[test]
    fn set_and_delete_go_to_the_inner_store() {
        let store = with_env(&[("OPENAI_API_KEY", "sk-env")]);
        store
            .set("provider:openai", &SecretString::from("sk-stored"))
            .unwrap();
        assert_eq!(
            value(store.inner(), "provider:openai").as_deref(),
            Some("sk-stored")
        );
        store.delete("provider:openai").unwrap();
        assert_eq!(value(store.inner(), "provider:openai"), None);
        // The variable still answers: deleting the stored key does not unset the environment.
        assert_eq!(value(&store, "provider:openai").as_deref(), Some("sk-env"));
        store.delete("provider:openai").unwrap();
    }

    #[test]
    fn process_environment_lookup_falls_through_for_unmapped_names() {
        // `new` reads the real environment; only mapped names consult it, so this is deterministic.
        let store = EnvOverride::new(MemoryStore::new());
        store
            .set("rest-api-token", &SecretString::from("tok"))
            .unwrap();
        assert_eq!(value(&store, "rest-api-token").as_deref(), Some("tok"));
    }

    #[test]
    fn debug_never_shows_secrets() {
        let store = with_env(&[("OPENAI_API_KEY", "sk-env-secret")]);
        store
            .set(
                "provider:anthropic",
                &SecretString::from("ant-stored-secret"),
            )
            .unwrap();
        let got = store.get("provider:openai").unwrap();
        let shown = format!("{store:?} {got:?}");
        assert!(!shown.contains("sk-env-secret"), "{shown}");
        assert!(!shown.contains("ant-stored-secret"), "{shown}");
    }
}

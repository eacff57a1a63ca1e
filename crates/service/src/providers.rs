//! Model providers as the user configures them: settings in the database, keys in the keychain.

use crate::Engram;
use crate::resolve::{retries_key, timeout_key};
use crate::rooms::Providers;
use engram_core::{Error, Result};
use engram_providers::{ModelInfo, ProviderKind};
use engram_secrets::provider_key_name;
use engram_store::ProviderRow;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

/// What the user sets for a provider. `None` keeps the stored value.
#[derive(Clone, Debug, Default, Deserialize, ts_rs::TS)]
#[ts(export, optional_fields)]
pub struct ProviderSetup {
    /// The handle prefix the provider serves (`openai`, `anthropic`, `ollama`, `my-vllm`…).
    pub name: String,
    /// Wire protocol; default: Anthropic for `anthropic`, OpenAI-compatible otherwise.
    pub kind: Option<ProviderKind>,
    /// Base URL including the version path (`http://127.0.0.1:11434/v1`).
    pub base_url: Option<String>,
    /// The API key; goes to the keychain only.
    #[serde(skip)]
    pub api_key: Option<SecretString>,
    /// The model handle new agents should get, e.g. `ollama/llama3.1`.
    pub default_model: Option<String>,
    /// Seconds to wait for a response to start or a stream to continue.
    #[ts(as = "Option<u32>", optional)]
    pub timeout_secs: Option<u64>,
    /// Retries on 429/5xx.
    pub max_retries: Option<u32>,
}

/// A provider as shown to people: never the key, only whether one is set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct ProviderInfo {
    /// Handle prefix.
    pub name: String,
    /// Wire protocol.
    pub kind: ProviderKind,
    /// Base URL in effect (stored, or the provider's default).
    pub base_url: Option<String>,
    /// Whether an API key is available (keychain or environment).
    pub key_set: bool,
    /// The model handle new agents get from this provider, if set.
    pub default_model: Option<String>,
}

/// A model server found on this machine.
#[derive(Clone, Debug, PartialEq, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct LocalServer {
    /// The provider handle to set it up under (`ollama`, `lmstudio`).
    pub name: String,
    /// Its OpenAI-compatible base URL.
    pub base_url: String,
    /// The models it serves.
    pub models: Vec<ModelInfo>,
}

/// The local servers looked for, by provider handle (their default URLs are the providers
/// crate's).
const LOCAL_SERVERS: &[&str] = &["ollama", "lmstudio"];

/// Asks each `(name, base_url)` for its models at once; keeps those that answer.
pub(crate) async fn detect_at<'a>(
    candidates: impl Iterator<Item = (&'a str, &'a str)>,
) -> Vec<LocalServer> {
    let probes = candidates.map(|(name, base_url)| async move {
        let mut config =
            engram_providers::ProviderConfig::new(ProviderKind::OpenAi, base_url, None);
        config.retry.max_retries = 0;
        config.timeouts.connect = std::time::Duration::from_millis(500);
        config.timeouts.read = std::time::Duration::from_secs(1);
        let models = engram_providers::list_models(&config).await.ok()?;
        Some(LocalServer {
            name: name.to_owned(),
            base_url: base_url.to_owned(),
            models,
        })
    });
    futures::future::join_all(probes)
        .await
        .into_iter()
        .flatten()
        .collect()
}

fn kind_name(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::OpenAi => "openai",
        ProviderKind::Anthropic => "anthropic",
    }
}

fn valid_base_url(url: &str) -> bool {
    (url.starts_with("http://") || url.starts_with("https://"))
        && url.len() > "https://".len()
        && !url.contains(char::is_whitespace)
}

/// Provider names are the `provider/` part of model handles: 1-64 letters, digits, `_`, `-`, `.`
/// (no `/`, which separates provider and model). Block labels follow their own, wider grammar.
fn valid_provider_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

impl Engram {
    fn provider_info(&self, row: &ProviderRow) -> Result<ProviderInfo> {
        Ok(ProviderInfo {
            name: row.name.clone(),
            kind: if row.kind == "anthropic" {
                ProviderKind::Anthropic
            } else {
                ProviderKind::OpenAi
            },
            base_url: row
                .base_url
                .clone()
                .or_else(|| engram_providers::default_base_url(&row.name).map(str::to_owned)),
            key_set: self.secrets.get(&provider_key_name(&row.name))?.is_some(),
            default_model: row.default_model.clone(),
        })
    }
}

impl Providers<'_> {
    /// Stores a provider's settings and (if given) its key in the keychain. The key is written
    /// first, so a keychain failure leaves the stored settings as they were.
    ///
    /// Errors: `invalid_input` for a bad name or URL (also one that carries a credential:
    /// `user:pass@` or `?api_key=…`; keys go in `api_key`), or for a base URL on another host than
    /// the stored key was given for without the key (a key goes only to its own host: give it
    /// again with the new URL); `secrets` when the keychain fails.
    pub fn set(self, setup: ProviderSetup) -> Result<ProviderInfo> {
        let name = setup.name.trim().to_ascii_lowercase();
        if !valid_provider_name(&name) {
            return Err(Error::invalid(format!(
                "'{}' is not a usable provider name (letters, digits, - and _)",
                setup.name
            )));
        }
        if let Some(url) = &setup.base_url
            && !valid_base_url(url)
        {
            return Err(Error::invalid(format!("'{url}' is not an http(s) URL")));
        }
        if let Some(url) = &setup.base_url {
            crate::url_check::refuse_credentials(
                &format!("the base URL of provider '{name}'"),
                url,
            )?;
        }
        let existing = match self.engram.store.settings().get_provider(&name) {
            Ok(row) => Some(row),
            Err(Error::NotFound { .. }) => None,
            Err(e) => return Err(e),
        };
        // A stored key goes only to the host it was given for: moving the provider to another
        // host takes the key again.
        if setup.api_key.is_none()
            && let Some(new_base) = &setup.base_url
        {
            let old_base = existing.as_ref().and_then(|r| r.base_url.as_deref());
            self.engram
                .resolver
                .check_key_stays(&name, old_base, new_base)?;
        }
        if let Some(key) = &setup.api_key {
            self.engram.secrets.set(&provider_key_name(&name), key)?;
        }
        let kind = setup
            .kind
            .map(kind_name)
            .map(str::to_owned)
            .or_else(|| existing.as_ref().map(|r| r.kind.clone()))
            .unwrap_or_else(|| kind_name(engram_providers::kind_for(&name)).to_owned());
        let row = ProviderRow {
            name: name.clone(),
            kind,
            base_url: setup
                .base_url
                .or_else(|| existing.as_ref().and_then(|r| r.base_url.clone())),
            default_model: setup
                .default_model
                .or_else(|| existing.as_ref().and_then(|r| r.default_model.clone())),
        };
        self.engram.store.settings().upsert_provider(&row)?;
        if let Some(secs) = setup.timeout_secs {
            self.engram
                .store
                .settings()
                .set(&timeout_key(&name), &secs.to_string())?;
        }
        if let Some(n) = setup.max_retries {
            self.engram
                .store
                .settings()
                .set(&retries_key(&name), &n.to_string())?;
        }
        if let Some(model) = &row.default_model {
            self.engram.models().set_default_chat(model)?;
        }
        self.engram.provider_info(&row)
    }

    /// Every configured provider.
    pub fn list(self) -> Result<Vec<ProviderInfo>> {
        self.engram
            .store
            .settings()
            .list_providers()?
            .iter()
            .map(|r| self.engram.provider_info(r))
            .collect()
    }

    /// Removes a provider and its key.
    pub fn delete(self, name: &str) -> Result<()> {
        self.engram.store.settings().get_provider(name)?;
        self.engram.secrets.delete(&provider_key_name(name))?;
        self.engram.store.settings().delete_provider(name)
    }

    /// Checks that the provider answers with these settings and key, returning its models.
    pub async fn test(self, name: &str) -> Result<Vec<ModelInfo>> {
        let config = self.engram.resolver.config(name, None)?;
        Ok(engram_providers::list_models(&config).await?)
    }

    /// The model servers running on this machine at their default ports (Ollama on 11434,
    /// LM Studio on 1234), with their models; servers that do not answer within a second are
    /// left out. Nothing is stored: the user picks one and [`set`](Self::set)s it.
    pub async fn detect_local(self) -> Vec<LocalServer> {
        let candidates = LOCAL_SERVERS
            .iter()
            .filter_map(|name| engram_providers::default_base_url(name).map(|url| (*name, url)));
        detect_at(candidates).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_mock_llm::{MockLlm, Script};

    #[tokio::test]
    async fn detection_keeps_the_servers_that_answer_with_their_models() {
        let running = MockLlm::start(Script::Brain).await;
        let url = running.base_url();
        // A port that was free a moment ago: nothing listens there now.
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}/v1", l.local_addr().unwrap())
        };
        let found =
            detect_at([("ollama", url.as_str()), ("lmstudio", closed.as_str())].into_iter()).await;
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].name, "ollama");
        assert_eq!(found[0].base_url, url);
        assert!(!found[0].models.is_empty());
    }
}

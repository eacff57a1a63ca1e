//! Turning an agent's `provider/model` handle into a provider client: stored provider settings,
//! the keychain, and the environment overrides of the official SDKs (`OPENAI_BASE_URL`; keys via
//! the secret store's own `OPENAI_API_KEY` / `ANTHROPIC_API_KEY` override).

use crate::EnvLookup;
use engram_agent::{Embedder, ModelResolver};
use engram_core::agent::split_handle;
use engram_core::error::ProviderFault;
use engram_core::{EmbeddingConfig, Error, LlmConfig, Result};
use engram_providers::{ChatModel, ProviderConfig, ProviderKind, RetryPolicy, Timeouts};
use engram_secrets::{SecretStore, provider_key_name};
use engram_store::Store;
use std::sync::Arc;
use std::time::Duration;

/// Settings key of a provider's read timeout, in seconds.
pub(crate) fn timeout_key(provider: &str) -> String {
    format!("provider.{provider}.timeout_secs")
}

/// Settings key of a provider's retry count.
pub(crate) fn retries_key(provider: &str) -> String {
    format!("provider.{provider}.max_retries")
}

pub(crate) struct Resolver {
    store: Store,
    secrets: Arc<dyn SecretStore>,
    env: EnvLookup,
}

impl Resolver {
    pub(crate) fn new(store: Store, secrets: Arc<dyn SecretStore>, env: EnvLookup) -> Self {
        Self {
            store,
            secrets,
            env,
        }
    }

    /// The connection settings for `provider`, with `base_override` (an agent's own base URL)
    /// taking precedence. Errors name what to configure.
    pub(crate) fn config(
        &self,
        provider: &str,
        base_override: Option<&str>,
    ) -> Result<ProviderConfig> {
        let row = match self.store.get_provider(provider) {
            Ok(row) => Some(row),
            Err(Error::NotFound { .. }) => None,
            Err(e) => return Err(e),
        };
        let kind = match row.as_ref().map(|r| r.kind.as_str()) {
            Some("anthropic") => ProviderKind::Anthropic,
            Some(_) => ProviderKind::OpenAi,
            None => engram_providers::kind_for(provider),
        };
        let env_base = if provider == "openai" {
            (self.env)("OPENAI_BASE_URL")
        } else {
            None
        };
        let base_url = base_override
            .map(str::to_owned)
            .or(env_base)
            .or_else(|| row.as_ref().and_then(|r| r.base_url.clone()))
            .or_else(|| engram_providers::default_base_url(provider).map(str::to_owned))
            .ok_or_else(|| {
                Error::provider(
                    ProviderFault::NotConfigured,
                    format!(
                        "no provider named '{provider}': add it with `engram provider set {provider} --base-url URL` \
                         (or in Settings → Providers)"
                    ),
                )
            })?;
        let api_key = self.secrets.get(&provider_key_name(provider))?;
        let local = base_url.contains("://127.0.0.1")
            || base_url.contains("://localhost")
            || base_url.contains("://[::1]");
        if api_key.is_none()
            && !local
            && (row.is_none() || kind == ProviderKind::Anthropic || provider == "openai")
        {
            let var = if kind == ProviderKind::Anthropic {
                "ANTHROPIC_API_KEY"
            } else {
                "OPENAI_API_KEY"
            };
            return Err(Error::provider(
                ProviderFault::NotConfigured,
                format!(
                    "no API key for '{provider}': run `engram provider set {provider} --api-key-stdin` or set {var}"
                ),
            ));
        }
        let setting = |key: String| -> Result<Option<u64>> {
            Ok(self.store.get_setting(&key)?.and_then(|v| v.parse().ok()))
        };
        let mut timeouts = Timeouts::default();
        if let Some(secs) = setting(timeout_key(provider))? {
            timeouts.read = Duration::from_secs(secs.max(1));
        }
        let mut retry = RetryPolicy::default();
        if let Some(n) = setting(retries_key(provider))? {
            retry.max_retries = n as u32;
        }
        Ok(ProviderConfig {
            kind,
            base_url,
            api_key,
            retry,
            timeouts,
        })
    }
}

fn provider_error(e: engram_providers::ProviderError) -> Error {
    e.into()
}

impl ModelResolver for Resolver {
    fn chat_model(&self, llm: &LlmConfig) -> Result<Arc<dyn ChatModel>> {
        let config = self.config(llm.provider(), llm.base_url.as_deref())?;
        engram_providers::chat_model(config).map_err(provider_error)
    }

    fn embedder(&self, cfg: &EmbeddingConfig) -> Result<Embedder> {
        let (provider, name) = split_handle(&cfg.model);
        let config = self.config(provider, cfg.base_url.as_deref())?;
        let model = engram_providers::embedding_model(config).map_err(provider_error)?;
        Ok(Embedder {
            model,
            name: name.to_owned(),
        })
    }
}

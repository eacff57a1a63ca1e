//! Turning an agent's `provider/model` handle into a provider client: stored provider settings,
//! the keychain, and the environment overrides of the official SDKs (`OPENAI_BASE_URL`; keys via
//! the secret store's own `OPENAI_API_KEY` / `ANTHROPIC_API_KEY` override).

use crate::EnvLookup;
use crate::local_llm::{LOCAL_CHAT_PROVIDER, LocalLlms};
use crate::local_model::LocalModels;
use crate::origins::{is_loopback, same_origin};
use engram_agent::{Embedder, ModelResolver};
use engram_core::agent::split_handle;
use engram_core::error::ProviderFault;
use engram_core::{EmbeddingConfig, Error, LlmConfig, Result};
use engram_providers::{ChatModel, ProviderConfig, ProviderKind, RetryPolicy, Timeouts};
use engram_secrets::{EnvOverride, SecretStore, provider_key_name};
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
    pub(crate) local: Arc<LocalModels>,
    /// The built-in chat models' workers (`local/<name>` chat handles).
    pub(crate) llms: Arc<LocalLlms>,
    pub(crate) rerankers: crate::rerank::Rerankers,
}

impl Resolver {
    pub(crate) fn new(
        store: Store,
        secrets: Arc<dyn SecretStore>,
        env: EnvLookup,
        local: Arc<LocalModels>,
        llms: Arc<LocalLlms>,
        rerankers: crate::rerank::Rerankers,
    ) -> Self {
        Self {
            store,
            secrets,
            env,
            local,
            llms,
            rerankers,
        }
    }

    fn embedder_with(&self, cfg: &EmbeddingConfig) -> Result<Embedder> {
        let (provider, name) = split_handle(&cfg.model);
        if provider.eq_ignore_ascii_case(engram_embed::PROVIDER) {
            if cfg.base_url.is_some() {
                return Err(Error::invalid(format!(
                    "{} runs inside Engram and takes no base URL",
                    cfg.model
                )));
            }
            let model: Arc<dyn engram_providers::EmbeddingModel> = self.local.get(name)?;
            return Ok(Embedder {
                query_model: model.clone(),
                model,
                name: name.to_owned(),
            });
        }
        let config = self.config(provider, cfg.base_url.as_deref())?;
        let mut once = config.clone();
        once.retry.max_retries = 0;
        let model = engram_providers::embedding_model(config).map_err(provider_error)?;
        let query_model = engram_providers::embedding_model(once).map_err(provider_error)?;
        Ok(Embedder {
            model,
            query_model,
            name: name.to_owned(),
        })
    }

    /// `cfg` with its endpoint written down: a remote model's base URL as it resolves now
    /// (the agent's own, else `OPENAI_BASE_URL` or the stored provider's), so the agent keeps
    /// sending its text to that host whatever changes later. Built-in models have none.
    /// Errors: what to configure when the provider is unknown.
    pub(crate) fn pin_embedding(&self, mut cfg: EmbeddingConfig) -> Result<EmbeddingConfig> {
        let (provider, _) = split_handle(&cfg.model);
        if provider.eq_ignore_ascii_case(engram_embed::PROVIDER) {
            self.embedder_with(&cfg)?;
            return Ok(cfg);
        }
        if cfg.base_url.is_none() {
            let row = match self.store.settings().get_provider(provider) {
                Ok(row) => row.base_url,
                Err(Error::NotFound { .. }) => None,
                Err(e) => return Err(e),
            };
            let env_base = (provider == "openai")
                .then(|| (self.env)("OPENAI_BASE_URL"))
                .flatten();
            cfg.base_url = Some(
                env_base
                    .or(row)
                    .or_else(|| engram_providers::default_base_url(provider).map(str::to_owned))
                    .ok_or_else(|| {
                        Error::provider(
                            ProviderFault::NotConfigured,
                            format!(
                                "no provider named '{provider}' for the embedding model: add it with \
                                 `engram provider set {provider} --base-url URL` or give the agent an embedding base URL"
                            ),
                        )
                    })?,
            );
        }
        Ok(cfg)
    }

    /// Refuses to send a stored key to a new host: `invalid_input` when `provider` has a key in
    /// the keychain (not one from the environment) and `new_base` is not the origin it was
    /// stored for (`old_base`, else the provider's default, or the user's `OPENAI_BASE_URL`).
    /// The user gives the key again with the new base URL instead.
    pub(crate) fn check_key_stays(
        &self,
        provider: &str,
        old_base: Option<&str>,
        new_base: &str,
    ) -> Result<()> {
        let key_name = provider_key_name(provider);
        let from_env = EnvOverride::<()>::variable_for(&key_name)
            .and_then(|var| (self.env)(var))
            .is_some_and(|v| !v.trim().is_empty());
        if from_env || self.secrets.get(&key_name)?.is_none() {
            return Ok(());
        }
        let home = old_base
            .map(str::to_owned)
            .or_else(|| engram_providers::default_base_url(provider).map(str::to_owned));
        let env_base = (provider == "openai")
            .then(|| (self.env)("OPENAI_BASE_URL"))
            .flatten();
        if home
            .iter()
            .chain(&env_base)
            .any(|h| same_origin(h, new_base))
        {
            return Ok(());
        }
        Err(Error::invalid(format!(
            "the key of '{provider}' was given for {}; it is sent only there. To use {new_base}, give the key again with the new base URL",
            home.as_deref().unwrap_or("another server")
        )))
    }

    /// The connection settings for `provider`, with `base_override` (an agent's own base URL)
    /// taking precedence. Errors name what to configure.
    pub(crate) fn config(
        &self,
        provider: &str,
        base_override: Option<&str>,
    ) -> Result<ProviderConfig> {
        let row = match self.store.settings().get_provider(provider) {
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
        let default_base = engram_providers::default_base_url(provider).map(str::to_owned);
        let stored_base = row
            .as_ref()
            .and_then(|r| r.base_url.clone())
            .or_else(|| default_base.clone());
        let base_url = base_override
            .map(str::to_owned)
            .or_else(|| env_base.clone())
            .or_else(|| stored_base.clone())
            .ok_or_else(|| {
                Error::provider(
                    ProviderFault::NotConfigured,
                    format!(
                        "no provider named '{provider}': add it with `engram provider set {provider} --base-url URL` \
                         (or in Settings → Providers)"
                    ),
                )
            })?;
        let key_name = provider_key_name(provider);
        let mut api_key = self.secrets.get(&key_name)?;
        // A key goes only to the host it was stored for (DESIGN.md §8b): a stored key to the
        // provider's configured base URL (or the user's own OPENAI_BASE_URL), a key from the
        // environment to OPENAI_BASE_URL or the provider's default. Never to a URL an agent
        // (or the file it came from) names.
        let from_env = EnvOverride::<()>::variable_for(&key_name)
            .and_then(|var| (self.env)(var))
            .is_some_and(|v| !v.trim().is_empty());
        let key_homes: Vec<&String> = if from_env {
            env_base.iter().chain(&default_base).take(1).collect()
        } else {
            stored_base.iter().chain(&env_base).collect()
        };
        let withheld = api_key.is_some() && !key_homes.iter().any(|h| same_origin(h, &base_url));
        if withheld {
            tracing::warn!(provider, "not sending the provider's key to another host");
            api_key = None;
        }
        let local = is_loopback(&base_url);
        if withheld && !local {
            return Err(Error::provider(
                ProviderFault::NotConfigured,
                format!(
                    "the key of '{provider}' is sent only to {}; this agent's base URL {base_url} is another host. \
                     Add a provider for that server (`engram provider set NAME --base-url URL`) or clear the agent's base URL",
                    key_homes.first().map_or("its own server", |h| h.as_str())
                ),
            ));
        }
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
            Ok(self
                .store
                .settings()
                .get(&key)?
                .and_then(|v| v.parse().ok()))
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

impl Resolver {
    /// Whether the user configured a provider named `name`. Errors: `Storage`.
    fn has_provider(&self, name: &str) -> Result<bool> {
        match self.store.settings().get_provider(name) {
            Ok(_) => Ok(true),
            Err(Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl ModelResolver for Resolver {
    fn chat_model(&self, llm: &LlmConfig) -> Result<Arc<dyn ChatModel>> {
        // `local/<name>`: a registered GGUF run by Engram's own worker on loopback, never a
        // URL from the agent.
        // `local/<name>` is a built-in model when one is registered under that name; otherwise
        // (an agent with its own base URL, or a server the user named `local`) it is an
        // OpenAI-compatible handle like any other, as it was before built-in models existed.
        if llm.provider().eq_ignore_ascii_case(LOCAL_CHAT_PROVIDER) && llm.base_url.is_none() {
            match self.llms.chat_model(split_handle(&llm.model).1) {
                Ok(model) => return Ok(model),
                Err(e) if !self.has_provider(LOCAL_CHAT_PROVIDER)? => return Err(e),
                Err(_) => {}
            }
        }
        let config = self.config(llm.provider(), llm.base_url.as_deref())?;
        engram_providers::chat_model(config).map_err(provider_error)
    }

    fn embedder(&self, cfg: &EmbeddingConfig) -> Result<Embedder> {
        self.embedder_with(cfg)
    }

    fn reranker(&self) -> Option<Arc<dyn engram_retrieval::Reranker>> {
        self.rerankers.get()
    }
}

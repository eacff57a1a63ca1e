//! The model picker: a provider's chat models with their context windows, and the context
//! window people set per model, kept in the engine (not in one browser's storage).

use crate::Engram;
use crate::agents::{DEFAULT_EMBEDDING_SETTING, DEFAULT_MODEL_SETTING, FALLBACK_MODEL};
use crate::rooms::Models;
use engram_core::{EmbeddingConfig, Error, Result};
use engram_store::MODEL_WINDOW_SETTING_PREFIX;
use serde::Serialize;

/// A chat model a provider offers, as the model picker lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct ChatModel {
    /// The handle agents use: `provider/model`.
    pub handle: String,
    /// The context window in **tokens**: the one stored for this model if someone set it,
    /// else the one the server states; `None` when neither is known.
    pub context_window: Option<u32>,
    /// Whether `context_window` is the stored one (set by a person) rather than the server's.
    pub stored: bool,
}

/// A context window stored for one model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct ModelWindow {
    /// `provider/model`.
    pub handle: String,
    /// The context window in **tokens**.
    pub context_window: u32,
}

/// A model Engram knows without asking any server: a built-in one, or one an agent uses
/// (Letta's `GET /v1/models` lists these).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnownModel {
    /// `provider/model`.
    pub handle: String,
    /// Where it is served, when an agent named a server of its own; `None` for built-in models
    /// and the provider's usual endpoint.
    pub base_url: Option<String>,
    /// Chat models: the context window in **tokens** (the worker's for a built-in model, else
    /// the first agent's on it). Embedding models: the vector's dimension when known.
    pub size: Option<u32>,
    /// Whether Engram runs it itself (a registered GGUF, or the built-in encoder).
    pub built_in: bool,
}

/// Whether a model id names an embedding model, which cannot chat (OpenAI's
/// `text-embedding-3-small`, Ollama's `nomic-embed-text`, `mxbai-embed-large`, BGE, E5,
/// MiniLM sentence encoders). Servers' model lists mix both kinds without saying which is which.
pub fn is_embedding_model(id: &str) -> bool {
    let id = id.to_ascii_lowercase();
    let name = id.rsplit('/').next().unwrap_or(&id);
    name.contains("embed")
        || name.starts_with("bge-")
        || name.starts_with("e5-")
        || name.starts_with("gte-")
        || name.contains("minilm")
}

impl Models<'_> {
    /// The chat models provider `name` serves (embedding models left out), in the server's
    /// order, each with its context window (a stored one wins over the server's).
    ///
    /// Errors: `not_found` for an unknown provider; provider errors (`provider_auth`,
    /// `provider_unreachable`, …) when the server does not answer.
    pub async fn chat(self, name: &str) -> Result<Vec<ChatModel>> {
        let listed = self.engram.providers().test(name).await?;
        let stored: std::collections::HashMap<String, u32> = self
            .windows()
            .await?
            .into_iter()
            .map(|w| (w.handle, w.context_window))
            .collect();
        Ok(listed
            .into_iter()
            .filter(|m| !is_embedding_model(&m.id))
            .map(|m| {
                let handle = format!("{name}/{}", m.id);
                let kept = stored.get(&handle).copied();
                ChatModel {
                    context_window: kept.or(m.context_window),
                    stored: kept.is_some(),
                    handle,
                }
            })
            .collect())
    }

    /// The chat models Engram knows without a network call: the built-in ones (registered
    /// GGUFs), then each model an agent uses, once, in the order agents were created.
    /// Errors: storage.
    pub async fn known_chat(self) -> Result<Vec<KnownModel>> {
        let mut out: Vec<KnownModel> = self
            .list_local()?
            .into_iter()
            .map(|m| KnownModel {
                handle: m.handle,
                base_url: None,
                size: Some(m.context_window),
                built_in: true,
            })
            .collect();
        for a in self.engram.agents().list().await? {
            if !out.iter().any(|k| k.handle == a.llm.model) {
                out.push(KnownModel {
                    handle: a.llm.model.clone(),
                    base_url: a.llm.base_url.clone(),
                    size: Some(a.llm.context_window),
                    built_in: false,
                });
            }
        }
        Ok(out)
    }

    /// The embedding models Engram knows without a network call: the built-in encoder, then
    /// each one an agent uses, once. Errors: storage.
    pub async fn known_embedding(self) -> Result<Vec<KnownModel>> {
        let built_in = engram_embed::DEFAULT_MODEL;
        let mut out = vec![KnownModel {
            handle: built_in.to_owned(),
            base_url: None,
            size: Some(engram_embed::ALL_MINILM_L6_V2.dimension as u32),
            built_in: true,
        }];
        for a in self.engram.agents().list().await? {
            if let Some(e) = a.embedding
                && !out.iter().any(|k| k.handle == e.model)
            {
                out.push(KnownModel {
                    handle: e.model,
                    base_url: e.base_url,
                    size: None,
                    built_in: false,
                });
            }
        }
        Ok(out)
    }

    /// Every context window stored per model, by handle (a malformed stored value is left
    /// out).
    pub async fn windows(self) -> Result<Vec<ModelWindow>> {
        let stored = self
            .engram
            .backend
            .settings_with_prefix(MODEL_WINDOW_SETTING_PREFIX)
            .await?;
        Ok(stored
            .into_iter()
            .filter_map(|(key, value)| {
                Some(ModelWindow {
                    handle: key.strip_prefix(MODEL_WINDOW_SETTING_PREFIX)?.to_owned(),
                    context_window: value.parse().ok()?,
                })
            })
            .collect())
    }

    /// Stores the context window (tokens) of model `handle`; new agents on that model get it.
    /// Agents already on the model keep their own setting. Errors: `invalid_input` for a
    /// handle without `provider/` or zero tokens.
    pub async fn set_window(self, handle: &str, tokens: u32) -> Result<()> {
        if !handle.contains('/') {
            return Err(Error::invalid(format!(
                "model handle {handle:?} needs the provider/model form"
            )));
        }
        if tokens == 0 {
            return Err(Error::invalid(
                "a model context window needs a positive number of tokens",
            ));
        }
        let key = format!("{MODEL_WINDOW_SETTING_PREFIX}{handle}");
        self.engram
            .backend
            .set_setting(&key, &tokens.to_string())
            .await
    }
}

impl Engram {
    /// The context window (tokens) stored for the model `handle` (the model picker's), if
    /// someone set one; a malformed stored value reads as `None`. Errors: `Storage`.
    pub(crate) async fn stored_window(&self, handle: &str) -> Result<Option<u32>> {
        let key = format!("{MODEL_WINDOW_SETTING_PREFIX}{handle}");
        Ok(self
            .backend
            .get_setting(&key)
            .await?
            .and_then(|v| v.parse().ok()))
    }
}

impl Models<'_> {
    /// The model handle new agents get: the `default_model` setting, else the default model
    /// of the only configured provider (a person with one provider means that one), else
    /// [`FALLBACK_MODEL`].
    pub fn default_chat(self) -> Result<String> {
        if let Some(handle) = self.engram.store.settings().get(DEFAULT_MODEL_SETTING)? {
            return Ok(handle);
        }
        let providers = self.engram.store.settings().list_providers()?;
        Ok(match providers.as_slice() {
            [only] => only.default_model.clone(),
            _ => None,
        }
        .unwrap_or_else(|| FALLBACK_MODEL.to_owned()))
    }

    /// The embedding model new agents get: the `default_embedding` setting (`none` for
    /// none), else the built-in [`engram_embed::DEFAULT_MODEL`].
    pub fn default_embedding(self) -> Result<Option<EmbeddingConfig>> {
        let handle = self
            .engram
            .store
            .settings()
            .get(DEFAULT_EMBEDDING_SETTING)?
            .unwrap_or_else(|| engram_embed::DEFAULT_MODEL.to_owned());
        if handle.trim().is_empty() || handle.trim().eq_ignore_ascii_case("none") {
            return Ok(None);
        }
        self.engram
            .resolver
            .pin_embedding(EmbeddingConfig {
                model: handle.trim().to_owned(),
                base_url: None,
            })
            .map(Some)
    }

    /// Sets the embedding model new agents get (`none` for none). Errors: `invalid_input` for
    /// an unknown built-in model or a provider that is not configured.
    pub fn set_default_embedding(self, handle: &str) -> Result<()> {
        let handle = handle.trim();
        if !handle.eq_ignore_ascii_case("none") {
            self.engram.resolver.pin_embedding(EmbeddingConfig {
                model: handle.to_owned(),
                base_url: None,
            })?;
        }
        self.engram
            .store
            .settings()
            .set(DEFAULT_EMBEDDING_SETTING, handle)
    }

    /// Sets the model handle new agents get.
    pub fn set_default_chat(self, handle: &str) -> Result<()> {
        self.engram
            .store
            .settings()
            .set(DEFAULT_MODEL_SETTING, handle)
    }
}

#[cfg(test)]
mod tests {
    use super::is_embedding_model;

    #[test]
    fn embedding_models_are_told_apart_from_chat_models() {
        for id in [
            "text-embedding-3-small",
            "nomic-embed-text:latest",
            "mxbai-embed-large",
            "BAAI/bge-m3",
            "all-MiniLM-L6-v2",
            "mock-embed",
        ] {
            assert!(is_embedding_model(id), "{id}");
        }
        for id in [
            "gpt-4o-mini",
            "llama3.1:8b",
            "qwen2.5-7b-instruct",
            "mock-small",
        ] {
            assert!(!is_embedding_model(id), "{id}");
        }
    }
}

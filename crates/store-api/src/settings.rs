//! Settings: the model providers Engram talks to (never their keys: those stay in the OS
//! keychain, or a server's environment or secrets file) and the app's own key-value settings
//! (default models, context windows and prices set per model, sleep-time budgets, …).

use async_trait::async_trait;
use engram_core::{Agent, AgentId, EndpointKind, ModelPrice, PendingEndpoint, Result};
use serde::{Deserialize, Serialize};

/// A configured model provider, without its key (the key is kept by `name`, elsewhere).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderRow {
    /// The handle prefix models use, e.g. `openai`, `anthropic`, `ollama`.
    pub name: String,
    /// The API dialect, e.g. `openai` (also for OpenAI-compatible servers) or `anthropic`.
    pub kind: String,
    /// The server's base URL; `None` uses the provider's default.
    pub base_url: Option<String>,
    /// The model picked when an agent names none.
    pub default_model: Option<String>,
}

/// Settings-key prefix of token calibrations; the model handle follows.
pub const CALIBRATION_SETTING_PREFIX: &str = "calibration.";

/// What Engram has learnt about one model's tokenizer, kept as JSON in the app setting
/// [`calibration_key`] (a restart does not start from scratch, and no table is needed).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Provider-reported prompt tokens per token of Engram's estimate (1.25 = the provider
    /// counts a quarter more), smoothed over calls and raised by context-length refusals.
    pub ratio: f64,
    /// How many calls it was learnt from.
    pub samples: u64,
}

/// The app setting that holds the calibration of `model` (a `provider/model` handle).
pub fn calibration_key(model: &str) -> String {
    format!("{CALIBRATION_SETTING_PREFIX}{model}")
}

/// Providers and app settings. Lists come in byte order of their names or keys (as SQLite
/// compares text), whatever the database's collation.
#[async_trait]
pub trait SettingStore: Send + Sync {
    /// Creates or replaces a provider's settings (its creation time is kept on replace).
    ///
    /// Errors: `Invalid` for an empty name or kind; `Storage`.
    async fn upsert_provider(&self, p: &ProviderRow) -> Result<()>;

    /// One provider's settings. Errors: `NotFound("provider", name)`; `Storage`.
    async fn get_provider(&self, name: &str) -> Result<ProviderRow>;

    /// Every configured provider, by name. Errors: `Storage`.
    async fn list_providers(&self) -> Result<Vec<ProviderRow>>;

    /// Removes a provider's settings. Errors: `NotFound("provider", name)`; `Storage`.
    async fn delete_provider(&self, name: &str) -> Result<()>;

    /// An app setting's value, `None` if it was never set. Errors: `Storage`.
    async fn get_setting(&self, key: &str) -> Result<Option<String>>;

    /// Sets an app setting, replacing any previous value. Errors: `Storage`.
    async fn set_setting(&self, key: &str, value: &str) -> Result<()>;

    /// Every app setting whose key starts with `prefix` (plain characters: `%` and `_` are
    /// themselves), by key. Errors: `Storage`.
    async fn settings_with_prefix(&self, prefix: &str) -> Result<Vec<(String, String)>>;

    /// The prices people set per model (US dollars per million tokens; source
    /// [`PriceSource::User`](engram_core::PriceSource)), by model. The built-in table is not
    /// stored: a price here replaces a built-in one. Errors: `Storage`.
    async fn model_prices(&self) -> Result<Vec<ModelPrice>>;

    /// Stores (or replaces) the price of `p.model` (trimmed; `p.source` is not read).
    /// Errors: `Invalid` for an empty model or a negative or non-finite price.
    async fn set_model_price(&self, p: &ModelPrice) -> Result<()>;

    /// Removes the price set for `model`; returns whether there was one. Errors: `Storage`.
    async fn delete_model_price(&self, model: &str) -> Result<bool>;

    /// The base URLs an imported agent file asked for on `agent`'s behalf, kept inactive until
    /// the person accepts them: at most one per kind, the chat model's first. Errors: `Storage`.
    async fn pending_endpoints(&self, agent: &AgentId) -> Result<Vec<PendingEndpoint>>;

    /// Accepts `agent`'s pending endpoint of `kind`, in one transaction: its base URL becomes
    /// the agent's (`llm.base_url` or `embedding.base_url`) and the pending row goes. The
    /// agent's `updated_at` is kept (accepting completes the import, so an accepted round trip
    /// gives back the agent as exported). Returns the agent.
    ///
    /// Errors (nothing changes): `NotFound("pending endpoint")`; `Invalid` when an embedding
    /// endpoint waits but the agent has no embedding model.
    async fn accept_endpoint(&self, agent: &AgentId, kind: EndpointKind) -> Result<Agent>;

    /// Drops `agent`'s pending endpoint of `kind` unused. Errors: `NotFound("pending
    /// endpoint")`.
    async fn dismiss_endpoint(&self, agent: &AgentId, kind: EndpointKind) -> Result<()>;
}

/// The refusal for an embedding endpoint of an agent without an embedding model.
pub fn no_embedding_model_for_endpoint() -> engram_core::Error {
    engram_core::Error::invalid(
        "the agent has no embedding model to give this endpoint; set one first",
    )
}

/// The error for a pending endpoint that does not wait.
pub fn no_pending_endpoint(agent: &AgentId, kind: EndpointKind) -> engram_core::Error {
    engram_core::Error::not_found("pending endpoint", format!("{agent} {}", kind.as_str()))
}

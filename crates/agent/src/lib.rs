//! The agent: context compilation, the built-in memory tools, the agent loop and compaction.
//!
//! Tauri-free and transport-free: the service layer drives a [`Runtime`], and whatever transport
//! is in front (desktop IPC, REST, CLI) forwards the [`RunEvent`](engram_core::RunEvent)s it
//! emits. The loop follows MemGPT (Packer et al., 2023, "MemGPT: Towards LLMs as Operating
//! Systems") and Letta's current agents; see DESIGN.md §5–§6.

mod announce;
mod answer;
mod approval;
pub mod calibrate;
mod compact;
pub mod compile;
mod context;
pub mod mcp;
mod outcome;
pub mod prompts;
pub mod python;
mod reply;
mod rules;
mod run;
pub mod sleeptime;
mod summary;
pub mod tokens;
pub mod tool_api;
pub mod tools;
pub mod window;

pub use context::Context;
pub use engram_retrieval::Reranker;
pub use mcp::{McpCall, McpCallError, McpCaller};
pub use outcome::{LoopSettings, RunOutcome};
pub use python::PythonHost;
pub use run::{Claim, LeaseHold, Runtime, Turn};
pub use sleeptime::PassRequest;
pub use tokens::{ContextBreakdown, TokenCounter};
pub use tool_api::{TOOL_API_PORT, ToolApi, ToolApiError, ToolApiGrant, ToolScope};

use engram_core::{EmbeddingConfig, LlmConfig, Result, RunEvent};
use engram_providers::{ChatModel, EmbeddingModel, ProviderError};
use std::sync::Arc;

/// Where a run's events go. Unbounded so the model's stream never waits on a slow consumer;
/// events are small and a run is bounded by its step limit.
pub type EventSink = tokio::sync::mpsc::UnboundedSender<RunEvent>;

/// An embedding model bound to a model name.
pub struct Embedder {
    /// The provider client for stored text (retries 429/5xx as configured).
    pub model: Arc<dyn EmbeddingModel>,
    /// The client for search queries: no retries, so an outage turns a search into a
    /// lexical one at once instead of after seconds of backoff.
    pub query_model: Arc<dyn EmbeddingModel>,
    /// The provider's model name (without the `provider/` prefix).
    pub name: String,
}

impl Embedder {
    /// Embeds one text to be stored.
    pub async fn embed_one(&self, text: &str) -> std::result::Result<Vec<f32>, ProviderError> {
        first(self.model.embed(&self.name, &[text.to_owned()]).await?)
    }

    /// Embeds a search query (no retries; see [`Embedder::query_model`]).
    pub async fn embed_query(&self, text: &str) -> std::result::Result<Vec<f32>, ProviderError> {
        first(
            self.query_model
                .embed(&self.name, &[text.to_owned()])
                .await?,
        )
    }
}

fn first(mut vectors: Vec<Vec<f32>>) -> std::result::Result<Vec<f32>, ProviderError> {
    vectors.pop().ok_or_else(|| {
        ProviderError::new(
            engram_core::error::ProviderFault::BadResponse,
            "the embedding server returned no vector",
        )
    })
}

/// Turns an agent's model settings into clients (the service implements this with the
/// configured providers and the keychain). Called once per run.
pub trait ModelResolver: Send + Sync {
    /// The chat model for `llm`. Errors say what to configure (`provider_not_configured`…).
    fn chat_model(&self, llm: &LlmConfig) -> Result<Arc<dyn ChatModel>>;
    /// The embedding model for `config`.
    fn embedder(&self, config: &EmbeddingConfig) -> Result<Embedder>;
    /// The reranker archival search uses, when one is configured and switched on (see
    /// [`engram_retrieval::rerank`]). None by default.
    fn reranker(&self) -> Option<Arc<dyn Reranker>> {
        None
    }
}

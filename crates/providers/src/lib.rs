//! Model providers behind one small interface.
//!
//! The agent loop sees only [`ChatModel`] and [`EmbeddingModel`]; [`chat_model`] and
//! [`embedding_model`] build them from a [`ProviderConfig`]: OpenAI Chat Completions for OpenAI
//! and any OpenAI-compatible server by base URL (Ollama, LM Studio, vLLM, llama.cpp server,
//! OpenRouter), Anthropic's Messages API, OpenAI-style embeddings. Each streams text, reasoning
//! and parallel tool calls, retries 429/5xx/connect failures with backoff honouring
//! `Retry-After`, applies the connect and read (idle) timeouts, and reports failures as a
//! [`ProviderError`] whose `fault` the loop acts on and whose message says what to do. The API
//! key goes only into the auth header; it never appears in messages or logs.
//!
//! **Why reqwest and not `genai`.** The brief preferred a client crate; `genai` 0.7.2 (the latest,
//! read from its source and probed against a local server) meets most needs — base URL per client
//! via `ServiceTarget`, status + body + headers on HTTP errors (`webc::Error::ResponseFailedStatus`,
//! `Error::HttpError`), `reasoning_content`, streaming header/read timeouts — but fails three we
//! need: a non-streamed answer with malformed tool arguments fails the whole call (`serde_json`
//! error, `adapters/openai/adapter_impl.rs:277-279`) instead of passing the text on; a tool call
//! without an `id` fails the call (`missing field id`, `adapter_impl.rs:258`) and in streams gets
//! `call_{index}` (`openai/streamer.rs:185`), which repeats every step; and Anthropic tool results
//! become one user message each (`anthropic/adapter_shared.rs:386-404`) with no merging of
//! consecutive roles. Hence a thin client on `reqwest` with `eventsource-stream` for SSE.
//!
//! Modules: `openai` and `anthropic` (wire mapping and stream assembly), `chat` (what both do
//! alike: the call, stream retries, the non-streamed fallback), `embeddings`, `models`
//! (`GET /models`), `transport` (HTTP client, timeouts, SSE), `retry` (backoff), `errors`
//! (classification and advice), `recover` (making a real model's reply well-formed: `<think>`
//! sections to reasoning, tool calls written into the text recovered, arguments and ids fixed).

mod anthropic;
mod chat;
mod embeddings;
mod errors;
mod live_tags;
mod models;
mod openai;
mod recover;
mod retry;
mod transport;
mod types;

use engram_core::error::ProviderFault;
use std::sync::Arc;

pub use anthropic::DEFAULT_MAX_TOKENS;
pub use embeddings::MAX_BATCH as MAX_EMBEDDING_BATCH;
pub use live_tags::LiveTags;
pub use models::list_models;
pub use transport::is_loopback_url;
pub use types::*;

/// The known provider handles (the `openai` of `openai/gpt-4o-mini`) and their default base URLs.
const KNOWN: &[(&str, &str)] = &[
    ("openai", "https://api.openai.com/v1"),
    ("anthropic", "https://api.anthropic.com/v1"),
    ("ollama", "http://127.0.0.1:11434/v1"),
    ("lmstudio", "http://127.0.0.1:1234/v1"),
    ("openrouter", "https://openrouter.ai/api/v1"),
    ("vllm", "http://127.0.0.1:8000/v1"),
    ("llamacpp", "http://127.0.0.1:8080/v1"),
];

/// The default base URL of a known provider handle (`openai`, `anthropic`, `ollama`,
/// `lmstudio`, `openrouter`, `vllm`, `llamacpp`; case-insensitive), `None` for others.
pub fn default_base_url(provider: &str) -> Option<&'static str> {
    KNOWN
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(provider))
        .map(|(_, url)| *url)
}

/// The wire protocol of a provider handle: `anthropic` speaks Anthropic's Messages API, every
/// other handle OpenAI's Chat Completions.
pub fn kind_for(provider: &str) -> ProviderKind {
    if provider.eq_ignore_ascii_case("anthropic") {
        ProviderKind::Anthropic
    } else {
        ProviderKind::OpenAi
    }
}

/// A chat model for `config`. Fails with `NotConfigured` when the base URL is not http(s).
pub fn chat_model(config: ProviderConfig) -> Result<Arc<dyn ChatModel>, ProviderError> {
    check_base_url(&config)?;
    Ok(match config.kind {
        ProviderKind::OpenAi => Arc::new(openai::OpenAiChat::new(&config)?),
        ProviderKind::Anthropic => Arc::new(anthropic::AnthropicChat::new(&config)?),
    })
}

/// An embedding model for `config` (OpenAI-compatible `embeddings` endpoint). Fails with
/// `NotConfigured` for Anthropic, which has no embeddings API, or a base URL that is not http(s).
pub fn embedding_model(config: ProviderConfig) -> Result<Arc<dyn EmbeddingModel>, ProviderError> {
    check_base_url(&config)?;
    match config.kind {
        ProviderKind::OpenAi => Ok(Arc::new(embeddings::OpenAiEmbeddings::new(&config)?)),
        ProviderKind::Anthropic => Err(ProviderError::new(
            ProviderFault::NotConfigured,
            "Anthropic has no embeddings API; choose an OpenAI-compatible provider for embeddings",
        )),
    }
}

fn check_base_url(config: &ProviderConfig) -> Result<(), ProviderError> {
    let url = config.base_url.trim();
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err(ProviderError::new(
            ProviderFault::NotConfigured,
            format!(
                "the base URL {url:?} must start with http:// or https://; check the provider settings"
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_map_to_urls_and_kinds() {
        assert_eq!(
            default_base_url("openai"),
            Some("https://api.openai.com/v1")
        );
        assert_eq!(
            default_base_url("Ollama"),
            Some("http://127.0.0.1:11434/v1")
        );
        assert_eq!(
            default_base_url("llamacpp"),
            Some("http://127.0.0.1:8080/v1")
        );
        assert_eq!(default_base_url("nope"), None);
        assert_eq!(kind_for("anthropic"), ProviderKind::Anthropic);
        assert_eq!(kind_for("openrouter"), ProviderKind::OpenAi);
    }

    #[test]
    fn bad_base_urls_and_anthropic_embeddings_are_refused() {
        let bad = ProviderConfig::new(ProviderKind::OpenAi, "127.0.0.1:1234/v1", None);
        assert_eq!(
            chat_model(bad).err().map(|e| e.fault),
            Some(ProviderFault::NotConfigured)
        );
        let ant = ProviderConfig::new(
            ProviderKind::Anthropic,
            "https://api.anthropic.com/v1",
            None,
        );
        assert_eq!(
            embedding_model(ant).err().map(|e| e.fault),
            Some(ProviderFault::NotConfigured)
        );
    }
}

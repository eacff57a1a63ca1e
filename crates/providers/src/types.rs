//! The provider-neutral request/response shapes and the traits the agent loop calls.

use async_trait::async_trait;
use engram_core::ToolCall;
use engram_core::error::ProviderFault;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One message of a chat request, in provider-neutral form.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    /// Instructions. Anthropic gets these as its top-level `system` field.
    System {
        /// Text.
        content: String,
    },
    /// A user-role message (also heartbeats and alerts).
    User {
        /// Text.
        content: String,
    },
    /// A model turn: optional text and any tool calls.
    Assistant {
        /// Text (may be empty when there are tool calls).
        content: String,
        /// Tool calls, answered by the `Tool` messages that follow.
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        /// The call answered.
        tool_call_id: String,
        /// The tool's name (Anthropic and some servers want it).
        name: String,
        /// The result text.
        content: String,
    },
}

/// A tool the model may call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// Whether the model must call a tool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// The model must call some tool (classic MemGPT loop).
    Required,
}

/// A chat completion request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The provider's model name (`gpt-4o-mini`, not the `openai/` handle).
    pub model: String,
    /// The conversation, system message first.
    pub messages: Vec<ChatMessage>,
    /// Tools offered; empty for none.
    pub tools: Vec<ToolSpec>,
    /// Tool choice (ignored when `tools` is empty).
    pub tool_choice: ToolChoice,
    /// Cap on completion tokens.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Stream the answer (deltas go to the `on_delta` callback).
    pub stream: bool,
}

/// A piece of the answer as it streams in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delta {
    /// Reply text.
    Text(String),
    /// Reasoning text (`reasoning_content` / Anthropic thinking).
    Reasoning(String),
}

/// Provider-reported token usage of one call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
}

/// The complete answer of one call (also when streamed: the accumulated result).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// Reply text (may be empty). From OpenAI-compatible servers, without the `<think>`
    /// sections and tool calls a local model may write into it.
    pub content: String,
    /// Reasoning text, when the provider separates it or (OpenAI-compatible servers) the model
    /// wrote it in `<think>` tags.
    pub reasoning: Option<String>,
    /// Tool calls in the order the model gave them (or recovered from the text, when a local
    /// model wrote them there). Arguments are JSON text, `{}` when none were given, otherwise as
    /// the model wrote them, possibly malformed; ids are the provider's, or minted when a server
    /// omits or repeats them, so each is unique within the reply.
    pub tool_calls: Vec<ToolCall>,
    /// `stop`, `tool_calls`, `length`… as the provider said; `tool_calls` when calls were
    /// recovered from the text (unless it was `length`).
    pub finish_reason: Option<String>,
    /// Usage, when the provider reports it.
    pub usage: Option<TokenUsage>,
}

impl ChatResponse {
    /// True when the reply says nothing: no content (or only whitespace), no reasoning (or
    /// only whitespace) and no tool calls. Small models sometimes stop at once; the loop can
    /// tell such a reply from a real one and retry or report it. Finish reason and usage do
    /// not count.
    pub fn is_empty(&self) -> bool {
        self.content.trim().is_empty()
            && self
                .reasoning
                .as_deref()
                .is_none_or(|r| r.trim().is_empty())
            && self.tool_calls.is_empty()
    }
}

/// A provider failure, classified so the loop can decide what to do (compact on
/// `ContextLength`, end the run with advice otherwise). Retries have already happened.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ProviderError {
    /// The kind of failure.
    pub fault: ProviderFault,
    /// One line for people: what happened and what to do.
    pub message: String,
    /// The HTTP status, when there was one.
    pub status: Option<u16>,
}

impl ProviderError {
    /// A new error without an HTTP status.
    pub fn new(fault: ProviderFault, message: impl Into<String>) -> Self {
        Self {
            fault,
            message: message.into(),
            status: None,
        }
    }

    /// The same error with the HTTP status that caused it.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }
}

impl From<ProviderError> for engram_core::Error {
    fn from(e: ProviderError) -> Self {
        engram_core::Error::provider(e.fault, e.message)
    }
}

/// A chat model. Implementations retry 429/5xx themselves (before any delta was emitted) and
/// honour cancellation by being dropped: callers race the future against their cancel token.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// Runs one completion. Streamed pieces go to `on_delta` as they arrive (only when
    /// `req.stream`); the accumulated answer is returned either way. Pieces are the server's
    /// text as sent; the answer is made well-formed (see [`ChatResponse`]), so a local model's
    /// `<think>` or `<tool_call>` text may show in the pieces but not in the answer.
    async fn complete(
        &self,
        req: &ChatRequest,
        on_delta: &(dyn Fn(Delta) + Send + Sync),
    ) -> Result<ChatResponse, ProviderError>;
}

/// An embedding model.
#[async_trait]
pub trait EmbeddingModel: Send + Sync {
    /// Embeds each text; returns one vector per text at the model's native dimension.
    async fn embed(&self, model: &str, texts: &[String]) -> Result<Vec<Vec<f32>>, ProviderError>;
}

/// Which wire protocol a provider speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum ProviderKind {
    /// OpenAI's Chat Completions API, or any server that speaks it (Ollama, LM Studio, vLLM,
    /// llama.cpp, OpenRouter).
    OpenAi,
    /// Anthropic's Messages API.
    Anthropic,
}

/// Retry policy for 429 and 5xx answers.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 = none). Also applied to connect failures.
    pub max_retries: u32,
    /// First backoff; doubles each retry, with jitter.
    pub base_delay: Duration,
    /// Upper bound of one wait, also for a server's `Retry-After`.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

/// Timeouts of one provider.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeouts {
    /// Establishing the TCP (and TLS) connection.
    pub connect: Duration,
    /// Waiting for the response to start, and then between two streamed chunks (local models
    /// can be slow to start; a stalled stream still ends).
    pub read: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            read: Duration::from_secs(120),
        }
    }
}

/// Everything needed to talk to one provider. `Debug` shows the key as redacted.
#[derive(Clone, Debug)]
pub struct ProviderConfig {
    /// Wire protocol.
    pub kind: ProviderKind,
    /// Base URL including the version path, e.g. `https://api.openai.com/v1`,
    /// `http://127.0.0.1:11434/v1`, `https://api.anthropic.com/v1`.
    pub base_url: String,
    /// The key, if the server needs one (local servers usually don't).
    pub api_key: Option<secrecy::SecretString>,
    /// Retries.
    pub retry: RetryPolicy,
    /// Timeouts.
    pub timeouts: Timeouts,
}

impl ProviderConfig {
    /// A config with the default retry policy and timeouts.
    pub fn new(
        kind: ProviderKind,
        base_url: impl Into<String>,
        api_key: Option<secrecy::SecretString>,
    ) -> Self {
        Self {
            kind,
            base_url: base_url.into(),
            api_key,
            retry: RetryPolicy::default(),
            timeouts: Timeouts::default(),
        }
    }
}

/// A model a provider offers (`GET /models`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct ModelInfo {
    /// The provider's model name.
    pub id: String,
    /// Context window in tokens, when the server says.
    pub context_window: Option<u32>,
}

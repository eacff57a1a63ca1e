//! Token counting for the context window (units: **tokens**), and the breakdown the UI shows.
//!
//! OpenAI-family models are counted exactly with tiktoken (`o200k_base` for the 4o/4.1/o-series/5
//! generation, `cl100k_base` for older ones). Other models are estimated at one token per four
//! characters, scaled by a per-model calibration learnt from the `prompt_tokens` the provider
//! reports (see `calibrate.rs`), so the estimate tracks a tokenizer Engram does not know.

use engram_providers::{ChatMessage, ToolSpec};
use serde::{Deserialize, Serialize};
use tiktoken_rs::CoreBPE;

/// Tokens the chat format adds per message (role, separators), as OpenAI documents for its
/// chat models.
const PER_MESSAGE_OVERHEAD: usize = 4;

/// Counts tokens for one model.
#[derive(Clone, Copy)]
pub struct TokenCounter {
    bpe: Option<&'static CoreBPE>,
    /// Multiplies estimated counts (1.0 = plain estimate); never applied to exact counts.
    scale: f32,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCounter")
            .field("exact", &self.bpe.is_some())
            .field("scale", &self.scale)
            .finish()
    }
}

impl TokenCounter {
    /// The counter for a model handle (`openai/gpt-4o-mini`, `ollama/llama3.1`, …).
    pub fn for_model(handle: &str) -> Self {
        let (provider, name) = engram_core::agent::split_handle(handle);
        let name = name.to_ascii_lowercase();
        let openai_family = matches!(provider, "openai" | "azure" | "openrouter")
            && (name.starts_with("gpt") || name.starts_with('o') || name.contains("openai/"));
        let bpe = if !openai_family {
            None
        } else if name.starts_with("gpt-4o")
            || name.starts_with("gpt-4.1")
            || name.starts_with("gpt-5")
            || name.starts_with('o')
        {
            Some(tiktoken_rs::o200k_base_singleton())
        } else if name.starts_with("gpt-4") || name.starts_with("gpt-3.5") {
            Some(tiktoken_rs::cl100k_base_singleton())
        } else {
            None
        };
        Self { bpe, scale: 1.0 }
    }

    /// The same counter with estimates multiplied by `scale` (the calibration of a model whose
    /// tokenizer Engram does not know); exact counters are left as they are. Non-finite or
    /// non-positive scales are ignored.
    pub fn scaled(mut self, scale: f32) -> Self {
        if self.bpe.is_none() && scale.is_finite() && scale > 0.0 {
            self.scale = scale;
        }
        self
    }

    /// The factor estimates are multiplied by (1.0 for exact counters).
    pub fn scale(&self) -> f32 {
        self.scale
    }

    /// Whether counts are exact (tiktoken) rather than estimated.
    pub fn is_exact(&self) -> bool {
        self.bpe.is_some()
    }

    /// Tokens in `text`.
    pub fn count(&self, text: &str) -> usize {
        match self.bpe {
            Some(bpe) => bpe.encode_ordinary(text).len(),
            None => self.scaled_count(text.chars().count().div_ceil(4)),
        }
    }

    fn scaled_count(&self, n: usize) -> usize {
        if self.scale == 1.0 {
            n
        } else {
            (n as f32 * self.scale).ceil() as usize
        }
    }

    /// Tokens of one chat message, format overhead included.
    pub fn count_message(&self, m: &ChatMessage) -> usize {
        self.overhead(PER_MESSAGE_OVERHEAD)
            + match m {
                ChatMessage::System { content } | ChatMessage::User { content } => {
                    self.count(content)
                }
                ChatMessage::Assistant {
                    content,
                    tool_calls,
                } => {
                    self.count(content)
                        + tool_calls
                            .iter()
                            .map(|c| {
                                self.count(&c.name) + self.count(&c.arguments) + self.overhead(3)
                            })
                            .sum::<usize>()
                }
                ChatMessage::Tool { content, .. } => self.count(content) + self.overhead(2),
            }
    }

    /// A fixed format overhead, scaled like estimates.
    fn overhead(&self, n: usize) -> usize {
        if self.bpe.is_some() {
            n
        } else {
            self.scaled_count(n)
        }
    }

    /// Tokens of the tool schemas as sent (their JSON).
    pub fn count_tools(&self, tools: &[ToolSpec]) -> usize {
        tools
            .iter()
            .map(|t| {
                self.count(&t.name)
                    + self.count(&t.description)
                    + self.count(&t.parameters.to_string())
                    + self.overhead(8)
            })
            .sum()
    }
}

/// Where the tokens of one LLM call go (all in **tokens**), for the context-window meter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct ContextBreakdown {
    /// The agent's instructions (system message minus compiled memory).
    pub system: usize,
    /// Compiled core memory and its metadata.
    pub core_memory: usize,
    /// The open files' windows and the list of files of attached folders (part of the
    /// system message, apart from `core_memory`).
    #[serde(default)]
    pub files: usize,
    /// The recursive summary message.
    pub summary: usize,
    /// Messages in the context window.
    pub messages: usize,
    /// Tool schemas.
    pub tools: usize,
    /// Sum of the above.
    pub total: usize,
    /// The model's context window.
    pub context_window: usize,
    /// Whether the counts are exact (tiktoken) or estimated.
    pub exact: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_models_use_tiktoken_others_estimate() {
        let exact = TokenCounter::for_model("openai/gpt-4o-mini");
        assert!(exact.is_exact());
        assert_eq!(exact.count("hello world"), 2);
        let estimate = TokenCounter::for_model("ollama/llama3.1");
        assert!(!estimate.is_exact());
        assert_eq!(estimate.count("12345678"), 2);
        assert_eq!(estimate.scaled(1.25).count(&"x".repeat(400)), 125);
        assert_eq!(exact.scaled(2.0).count("hello world"), 2);
    }
}

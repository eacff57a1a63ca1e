//! The recursive summary, kept within its budget (tokens, see [`crate::window::summary_budget`]).
//!
//! The summariser is asked for at most a number of words and capped with `max_tokens`, but
//! some OpenAI-compatible servers ignore `max_tokens` and small models ramble. A summary that
//! comes back over budget is asked for again, more strictly; if that is still over, it is cut
//! at the last sentence that fits and marked as cut. Stored as it came, a long summary would be
//! folded into the next one ("Previous summary: … Previous summary: …") until the fixed part of
//! the prompt no longer fits: an agent broke that way after about 89 messages.

use crate::prompts::{SUMMARIZER_SYSTEM, SUMMARY_CUT_MARKER, summary_length_rule};
use crate::tokens::TokenCounter;
use engram_core::error::ProviderFault;
use engram_core::{Error, Result};
use engram_providers::{ChatMessage, ChatModel, ChatRequest, ToolChoice};

/// One summarisation job: the model, the previous summary and the budget.
pub struct Summarizer<'a> {
    /// The agent's model.
    pub model: &'a dyn ChatModel,
    /// The provider's model name.
    pub model_name: &'a str,
    /// Counts for the agent's model (calibrated).
    pub counter: TokenCounter,
    /// The most tokens the summary may have.
    pub budget: usize,
}

impl Summarizer<'_> {
    /// Folds `transcript` into `previous`, returning a summary of at most `budget` tokens.
    ///
    /// Errors: the provider's, or `provider_bad_response` for an empty summary.
    pub async fn fold(&self, previous: Option<&str>, transcript: &str) -> Result<String> {
        let words = words_for(self.budget);
        let first = self.ask(previous, transcript, words, None).await?;
        let first_tokens = self.counter.count(&first);
        if first_tokens <= self.budget {
            return Ok(first);
        }
        tracing::info!(
            tokens = first_tokens,
            budget = self.budget,
            "the summary came back over budget; asking again more strictly"
        );
        let strict = self
            .ask(previous, transcript, words / 2, Some(first_tokens))
            .await?;
        if self.counter.count(&strict) <= self.budget {
            return Ok(strict);
        }
        tracing::warn!(
            budget = self.budget,
            "the summary is still over budget; cutting it at a sentence boundary"
        );
        let shorter = if strict.len() < first.len() {
            strict
        } else {
            first
        };
        Ok(cut_to_budget(&shorter, self.budget, &self.counter))
    }

    async fn ask(
        &self,
        previous: Option<&str>,
        transcript: &str,
        words: usize,
        over: Option<usize>,
    ) -> Result<String> {
        let mut prompt = String::new();
        if let Some(p) = previous {
            prompt.push_str(&format!("Previous summary:\n{p}\n\n"));
        }
        prompt.push_str(&format!(
            "Messages leaving the context window:\n{transcript}\n\n"
        ));
        prompt.push_str(&summary_length_rule(words, over));
        let request = ChatRequest {
            model: self.model_name.to_owned(),
            messages: vec![
                ChatMessage::System {
                    content: SUMMARIZER_SYSTEM.into(),
                },
                ChatMessage::User { content: prompt },
            ],
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            max_tokens: Some(self.budget as u32),
            temperature: None,
            stream: false,
        };
        let response = self.model.complete(&request, &|_| {}).await?;
        let text = response.content.trim();
        if text.is_empty() {
            return Err(Error::provider(
                ProviderFault::BadResponse,
                "the model returned an empty summary",
            ));
        }
        Ok(text.to_owned())
    }
}

/// Words to ask for within `budget` tokens (about three words per four tokens of English).
fn words_for(budget: usize) -> usize {
    (budget * 3 / 4).max(20)
}

/// Cuts `text` to at most `budget` tokens (with the cut marker) at the last sentence end that
/// fits, or at a word boundary when not even the first sentence fits.
pub fn cut_to_budget(text: &str, budget: usize, counter: &TokenCounter) -> String {
    let fits =
        |end: usize| counter.count(&text[..end]) + counter.count(SUMMARY_CUT_MARKER) <= budget;
    if counter.count(text) <= budget {
        return text.to_owned();
    }
    // Sentence ends: after `.`, `!`, `?` or a line break, at a character boundary.
    let sentence_ends: Vec<usize> = text
        .char_indices()
        .filter(|(_, c)| matches!(c, '.' | '!' | '?' | '\n'))
        .map(|(i, c)| i + c.len_utf8())
        .collect();
    if let Some(end) = last_fitting(&sentence_ends, fits) {
        return format!("{}{SUMMARY_CUT_MARKER}", text[..end].trim_end());
    }
    let word_ends: Vec<usize> = text
        .char_indices()
        .filter(|(_, c)| c.is_whitespace())
        .map(|(i, _)| i)
        .collect();
    let end = last_fitting(&word_ends, fits).unwrap_or(0);
    format!("{}{SUMMARY_CUT_MARKER}", text[..end].trim_end())
}

/// The largest of the ascending `ends` for which `fits` holds (monotone: a longer prefix never
/// fits when a shorter one does not).
fn last_fitting(ends: &[usize], fits: impl Fn(usize) -> bool) -> Option<usize> {
    let n = ends.partition_point(|&e| fits(e));
    n.checked_sub(1).map(|i| ends[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_summary_is_cut_at_a_sentence_with_a_marker() {
        let counter = TokenCounter::for_model("ollama/llama3.2");
        let text = "Bob likes tulips. ".repeat(100);
        let cut = cut_to_budget(&text, 60, &counter);
        assert!(counter.count(&cut) <= 60, "{}", counter.count(&cut));
        assert!(cut.ends_with(SUMMARY_CUT_MARKER), "{cut}");
        let body = cut.strip_suffix(SUMMARY_CUT_MARKER).unwrap();
        assert!(body.ends_with("tulips."), "{body}");
        assert!(body.len() > 100, "keeps what fits: {body}");
    }

    #[test]
    fn a_summary_within_budget_is_kept_and_one_endless_sentence_is_cut_at_a_word() {
        let counter = TokenCounter::for_model("ollama/llama3.2");
        assert_eq!(cut_to_budget("Short. Fine.", 60, &counter), "Short. Fine.");
        let text = "and then ".repeat(200);
        let cut = cut_to_budget(&text, 40, &counter);
        assert!(counter.count(&cut) <= 40);
        assert!(cut.starts_with("and then and"));
        assert!(cut.ends_with(SUMMARY_CUT_MARKER));
    }
}

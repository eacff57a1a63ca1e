//! What fits in a context window (all figures in **tokens**): the summary's budget, the smallest
//! window an agent can work in, and the check that turns "too small" into an error the user can
//! act on instead of a run that compacts without end.
//!
//! The fixed part of every call is the system message (instructions and compiled memory) and
//! the tool schemas; the recursive summary comes on top, bounded by [`summary_budget`]. An agent
//! needs that, plus room for a user message and a reply, under the compaction target — else
//! every step would compact again (DESIGN.md §6), and the agent would never answer.

use crate::compile;
use crate::outcome::LoopSettings;
use crate::tokens::TokenCounter;
use crate::tools;
use engram_core::{Agent, Block, Error, Result, Tool};
use engram_providers::ChatMessage;

/// Share of the context window the recursive summary may take.
const SUMMARY_SHARE: f32 = 0.1;
/// Bounds of the summary budget, in tokens: enough for a few facts at the smallest windows,
/// and no more than a page at the largest (a summary is read on every call).
const SUMMARY_MIN: usize = 100;
const SUMMARY_MAX: usize = 1_000;
/// Room an agent needs for one exchange (a user message, a tool call and its result, a reply)
/// between the fixed part and the compaction threshold, in tokens.
pub const MIN_MESSAGE_ROOM: usize = 256;

/// The most tokens the recursive summary may have in a `window`-token context window: a tenth
/// of the window, at least 100 and at most 1,000.
pub fn summary_budget(window: usize) -> usize {
    ((window as f32 * SUMMARY_SHARE) as usize).clamp(SUMMARY_MIN, SUMMARY_MAX)
}

/// Whether a `window`-token context window holds an agent whose fixed part (system message
/// and tool schemas) takes `fixed` tokens: compaction can reach its target with a full-size
/// summary, and there is [`MIN_MESSAGE_ROOM`] left below the compaction threshold.
pub fn fits(fixed: usize, window: usize, settings: &LoopSettings) -> bool {
    let base = fixed + summary_budget(window);
    let w = window as f32;
    base as f32 <= w * settings.compact_to
        && (base + MIN_MESSAGE_ROOM) as f32 <= w * settings.compact_at
}

/// The smallest context window, in tokens, in which an agent with `fixed` tokens of fixed part
/// [`fits`].
pub fn minimum_window(fixed: usize, settings: &LoopSettings) -> usize {
    // `fits` is monotone in the window (the summary budget grows slower than the thresholds),
    // so a binary search finds the edge.
    let (mut lo, mut hi) = (1usize, 1usize << 24);
    if !fits(fixed, hi, settings) {
        return hi;
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fits(fixed, mid, settings) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// Checks that `window` holds an agent whose fixed part takes `fixed` tokens.
///
/// Errors: [`Error::ContextWindowTooSmall`] naming `model`, the minimum and `window`.
pub fn check(fixed: usize, window: usize, model: &str, settings: &LoopSettings) -> Result<()> {
    if fits(fixed, window, settings) {
        return Ok(());
    }
    Err(Error::ContextWindowTooSmall {
        model: model.to_owned(),
        needed: u32::try_from(minimum_window(fixed, settings)).unwrap_or(u32::MAX),
        offered: u32::try_from(window).unwrap_or(u32::MAX),
    })
}

/// The fixed part of an agent's calls, in tokens, from its settings alone (for an agent that is
/// not stored yet, or settings about to change): the system message compiled from `blocks`
/// with empty metadata, and the schemas of its tools (`custom` are its user tools).
pub fn fixed_tokens(
    agent: &Agent,
    blocks: &[Block],
    custom: &[Tool],
    counter: &TokenCounter,
) -> usize {
    let memory = compile::memory_section(blocks);
    let metadata = compile::metadata_section(agent.created_at, 0, 0);
    let system = compile::system_message(&agent.system, &memory, &metadata);
    let specs = tools::specs_with(&agent.tools, custom, agent.loop_style);
    counter.count_message(&ChatMessage::System { content: system }) + counter.count_tools(&specs)
}

/// Checks an agent's settings against its model's context window (see [`check`]), counting
/// with the model's calibrated counter.
///
/// Errors: [`Error::ContextWindowTooSmall`].
pub fn check_agent(
    agent: &Agent,
    blocks: &[Block],
    custom: &[Tool],
    counter: &TokenCounter,
    settings: &LoopSettings,
) -> Result<()> {
    let fixed = fixed_tokens(agent, blocks, custom, counter);
    check(
        fixed,
        agent.llm.context_window as usize,
        &agent.llm.model,
        settings,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_budget_is_a_share_of_the_window() {
        assert_eq!(summary_budget(2_048), 204);
        assert_eq!(summary_budget(8_192), 819);
        assert_eq!(summary_budget(128_000), 1_000);
        assert_eq!(summary_budget(512), 100);
    }

    #[test]
    fn the_minimum_window_is_the_edge_of_fits() {
        let s = LoopSettings::default();
        let min = minimum_window(1_100, &s);
        assert!(fits(1_100, min, &s));
        assert!(!fits(1_100, min - 1, &s));
        // 1,100 + a tenth of the window under 70% of it: about 1,834 tokens.
        assert!((1_800..1_900).contains(&min), "{min}");
        let e = check(1_100, 1_024, "ollama/tiny", &s).unwrap_err();
        assert_eq!(e.code(), "context_window_too_small");
        assert!(
            e.to_string().contains(&format!("at least {min} tokens")),
            "{e}"
        );
        assert!(check(1_100, 2_048, "ollama/tiny", &s).is_ok());
    }
}

//! Context-window management (DESIGN.md §6): warn the model as the window fills, then evict the
//! oldest messages into a recursive summary — cutting only where no tool call is separated from
//! its result. Evicted messages stay in recall memory, searchable.

use crate::context::Context;
use crate::outcome::LoopSettings;
use crate::prompts::SUMMARY_PREFIX;
use crate::summary::{Summarizer, cut_to_budget};
use crate::tokens::TokenCounter;
use crate::window;
use engram_core::{Message, MessageKind, Result, Role};
use engram_providers::{ChatMessage, ChatModel};
use engram_store_api::ContextStore;
/// Longest rendering of one message in the summariser's transcript, in characters.
const MAX_LINE_CHARS: usize = 2_000;

/// How full the context window is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pressure {
    /// Nothing to do.
    Low,
    /// Past the warning threshold for the first time in this fill: the percentage used.
    Warn(u32),
    /// Past the warning threshold, already warned in this fill.
    Warned,
    /// Past the compaction threshold.
    Compact,
}

/// Judges the pressure on `ctx`'s window. `warned` says whether the model was already warned
/// since the context was last below the warning threshold: the warning fires once per fill,
/// not again after a compaction that could not get below the threshold.
pub fn pressure(ctx: &Context, settings: &LoopSettings, warned: bool) -> Pressure {
    let window = ctx.breakdown.context_window.max(1) as f32;
    let used = ctx.breakdown.total as f32 / window;
    if used > settings.compact_at {
        Pressure::Compact
    } else if used > settings.warn_at {
        if warned || ctx.messages.iter().any(|m| m.kind == MessageKind::Alert) {
            Pressure::Warned
        } else {
            Pressure::Warn((used * 100.0).round() as u32)
        }
    } else {
        Pressure::Low
    }
}

/// The first message index to keep so that the context fits `target` tokens with a summary of
/// `budget` tokens: the smallest index whose suffix fits and that is not a tool result (so
/// calls and results stay together). `messages.len()` means everything goes into the summary.
fn choose_cut(ctx: &Context, target: usize, budget: usize) -> usize {
    let fixed = ctx.fixed_tokens() + budget;
    let mut cut = ctx.messages.len();
    let mut kept = 0;
    for i in (0..ctx.messages.len()).rev() {
        kept += ctx.message_tokens[i];
        if fixed + kept > target {
            break;
        }
        if ctx.messages[i].role != Role::Tool {
            cut = i;
        }
    }
    cut
}

/// Evicts the oldest messages until the context fits `target` tokens, folding them (and the
/// previous summary) into a new summary written by the agent's own model and bounded by
/// [`window::summary_budget`]. Never leaves the context larger than it was.
///
/// Errors: [`engram_core::Error::ContextWindowTooSmall`] when the fixed part and a full-size
/// summary do not fit the window (a block grew, or the window was lowered); the provider's.
pub async fn compact(
    store: &dyn ContextStore,
    model: &dyn ChatModel,
    ctx: &Context,
    target: usize,
    settings: &LoopSettings,
) -> Result<()> {
    let window = ctx.breakdown.context_window;
    let fixed = ctx.fixed_tokens();
    window::check(fixed, window, &ctx.agent.llm.model, settings)?;
    let budget = window::summary_budget(window);
    let cut = choose_cut(ctx, target, budget);
    let counter = ctx.counter;
    // A summary stored before summaries were bounded (one that could leave an agent unable
    // to answer) is folded down even when no message can leave.
    let oversized = ctx
        .agent
        .summary
        .as_deref()
        .is_some_and(|s| counter.count(s) > budget);
    if cut == 0 && !oversized {
        return Ok(());
    }
    let evicted = &ctx.messages[..cut];
    // Such a summary can also be larger than a request may carry.
    let mut summary = ctx.agent.summary.as_deref().map(|s| {
        if counter.count(s) > window / 4 {
            cut_to_budget(s, window / 4, &counter)
        } else {
            s.to_owned()
        }
    });
    let summarizer = Summarizer {
        model,
        model_name: &ctx.request.model,
        counter,
        budget,
    };
    // Transcripts larger than half the window are summarised chunk by chunk, each fold
    // carrying the summary so far (a recursive summary, as in MemGPT).
    for chunk in chunks(evicted, &counter, window / 2) {
        summary = Some(summarizer.fold(summary.as_deref(), &chunk).await?);
    }
    if let Some(s) = summary.as_deref()
        && counter.count(s) > budget
    {
        summary = Some(summarizer.fold(None, s).await?);
    }
    let summary = summary.unwrap_or_default();
    let after = fixed
        + counter.count_message(&ChatMessage::User {
            content: format!("{SUMMARY_PREFIX}{summary}"),
        })
        + ctx.message_tokens[cut..].iter().sum::<usize>();
    if after >= ctx.breakdown.total {
        // Only reachable with almost nothing to evict; keeping things as they are is better
        // than a larger prompt.
        tracing::warn!(agent_id = %ctx.agent.id, before = ctx.breakdown.total, after, "compaction would not shrink the context; skipped");
        return Ok(());
    }
    let ids: Vec<_> = evicted.iter().map(|m| m.id.clone()).collect();
    store.evict_messages(&ctx.agent.id, &ids, &summary).await?;
    tracing::info!(agent_id = %ctx.agent.id, evicted = ids.len(), before = ctx.breakdown.total, after, "compacted the context window");
    Ok(())
}

fn render(m: &Message) -> String {
    let time = m.created_at.format("%Y-%m-%d %H:%M");
    let mut line = match m.role {
        Role::Tool => format!(
            "[{time}] result of {}: {}",
            m.tool_name.as_deref().unwrap_or("tool"),
            m.content
        ),
        role => format!("[{time}] {}: {}", role.as_str(), m.content),
    };
    for call in &m.tool_calls {
        line.push_str(&format!(" (called {}({}))", call.name, call.arguments));
    }
    if line.chars().count() > MAX_LINE_CHARS {
        line = line.chars().take(MAX_LINE_CHARS).collect::<String>() + " …";
    }
    line
}

fn chunks(messages: &[Message], counter: &TokenCounter, budget: usize) -> Vec<String> {
    let mut out = Vec::new();
    let (mut current, mut tokens) = (String::new(), 0);
    for m in messages {
        let line = render(m);
        let t = counter.count(&line) + 1;
        if tokens + t > budget && !current.is_empty() {
            out.push(std::mem::take(&mut current));
            tokens = 0;
        }
        current.push_str(&line);
        current.push('\n');
        tokens += t;
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

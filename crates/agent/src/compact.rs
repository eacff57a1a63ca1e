//! Context-window management (DESIGN.md §6): warn the model as the window fills, then evict the
//! oldest messages into a recursive summary — cutting only where no tool call is separated from
//! its result. Evicted messages stay in recall memory, searchable.

use crate::context::Context;
use crate::prompts::SUMMARIZER_SYSTEM;
use crate::run::LoopSettings;
use crate::tokens::TokenCounter;
use engram_core::error::ProviderFault;
use engram_core::{Error, Message, MessageKind, Result, Role};
use engram_providers::{ChatMessage, ChatModel, ChatRequest, ToolChoice};
use engram_store::Store;

/// Room kept for the summary message itself when choosing the cut, in tokens.
const SUMMARY_BUDGET: usize = 500;
/// Longest rendering of one message in the summariser's transcript, in characters.
const MAX_LINE_CHARS: usize = 2_000;

/// How full the context window is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pressure {
    /// Nothing to do.
    Low,
    /// Past the warning threshold and not yet warned: the percentage used.
    Warn(u32),
    /// Past the compaction threshold.
    Compact,
}

/// Judges the pressure on `ctx`'s window.
pub fn pressure(ctx: &Context, settings: &LoopSettings) -> Pressure {
    let window = ctx.breakdown.context_window.max(1) as f32;
    let used = ctx.breakdown.total as f32 / window;
    if used > settings.compact_at {
        Pressure::Compact
    } else if used > settings.warn_at && !ctx.messages.iter().any(|m| m.kind == MessageKind::Alert)
    {
        Pressure::Warn((used * 100.0).round() as u32)
    } else {
        Pressure::Low
    }
}

/// The first message index to keep so that the context fits `target` tokens: the smallest index
/// whose suffix fits and that is not a tool result (so calls and results stay together).
/// `messages.len()` means everything goes into the summary.
fn choose_cut(ctx: &Context, target: usize) -> usize {
    let b = &ctx.breakdown;
    let fixed = b.system + b.core_memory + b.tools + SUMMARY_BUDGET;
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
/// previous summary) into a new summary written by the agent's own model.
pub async fn compact(
    store: &Store,
    model: &dyn ChatModel,
    ctx: &Context,
    target: usize,
) -> Result<()> {
    let window = ctx.breakdown.context_window;
    let cut = choose_cut(ctx, target);
    if cut == 0 {
        return Ok(());
    }
    let evicted = &ctx.messages[..cut];
    let counter = TokenCounter::for_model(&ctx.agent.llm.model);
    let mut summary = ctx.agent.summary.clone();
    // Transcripts larger than half the window are summarised chunk by chunk, each fold
    // carrying the summary so far (a recursive summary, as in MemGPT).
    for chunk in chunks(evicted, &counter, window / 2) {
        summary = Some(summarize(model, &ctx.request.model, summary.as_deref(), &chunk).await?);
    }
    let summary = summary.unwrap_or_default();
    let ids: Vec<_> = evicted.iter().map(|m| m.id.clone()).collect();
    store.evict_messages(&ctx.agent.id, &ids, &summary)?;
    tracing::info!(agent_id = %ctx.agent.id, evicted = ids.len(), "compacted the context window");
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

async fn summarize(
    model: &dyn ChatModel,
    model_name: &str,
    previous: Option<&str>,
    transcript: &str,
) -> Result<String> {
    let mut prompt = String::new();
    if let Some(p) = previous {
        prompt.push_str(&format!("Previous summary:\n{p}\n\n"));
    }
    prompt.push_str(&format!(
        "Messages leaving the context window:\n{transcript}"
    ));
    let request = ChatRequest {
        model: model_name.to_owned(),
        messages: vec![
            ChatMessage::System {
                content: SUMMARIZER_SYSTEM.into(),
            },
            ChatMessage::User { content: prompt },
        ],
        tools: Vec::new(),
        tool_choice: ToolChoice::Auto,
        max_tokens: Some(1024),
        temperature: None,
        stream: false,
    };
    let response = model.complete(&request, &|_| {}).await?;
    let text = response.content.trim();
    if text.is_empty() {
        return Err(Error::provider(
            ProviderFault::BadResponse,
            "the model returned an empty summary",
        ));
    }
    Ok(text.to_owned())
}

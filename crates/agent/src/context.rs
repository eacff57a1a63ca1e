//! Assembling one LLM call: system message (cached while memory is unchanged), summary,
//! in-context messages and tool schemas — plus the token breakdown.

use crate::calibrate;
use crate::compile;
use crate::prompts::SUMMARY_PREFIX;
use crate::tokens::{ContextBreakdown, TokenCounter};
use crate::tools;
use engram_core::{Agent, AgentId, Block, Message, Result, Role, Timestamp, Tool};
use engram_providers::{ChatMessage, ChatRequest, ToolChoice};
use engram_store::Store;
use std::collections::HashSet;

/// Everything one LLM call is made of.
#[derive(Clone, Debug)]
pub struct Context {
    /// The agent as loaded for this call.
    pub agent: Agent,
    /// Its blocks, in order.
    pub blocks: Vec<Block>,
    /// The in-context messages, in order.
    pub messages: Vec<Message>,
    /// The request to send.
    pub request: ChatRequest,
    /// Token counts per part.
    pub breakdown: ContextBreakdown,
    /// Tokens of each entry of `messages`, same order.
    pub message_tokens: Vec<usize>,
    /// The user tools attached to the agent (built-ins are not rows).
    pub custom_tools: Vec<Tool>,
    /// The counter the breakdown was made with (calibrated for the model).
    pub counter: TokenCounter,
}

/// Loads the agent's context as of now.
///
/// The system message is rebuilt only when the instructions or the blocks changed since it was
/// last built (Letta does the same): a stable prefix keeps provider prompt caches warm, at the
/// price of the time and counts in `<memory_metadata>` being as of the last rebuild.
pub fn load(store: &Store, agent_id: &AgentId, now: Timestamp, stream: bool) -> Result<Context> {
    let agent = store.get_agent(agent_id)?;
    let blocks = store.agent_blocks(agent_id)?;
    let messages = store.in_context_messages(agent_id)?;
    let memory = compile::memory_section(&blocks);
    let key = format!("{}\u{0}{memory}", agent.system);
    let system = match store.system_cache(agent_id)? {
        Some((cached_key, prompt)) if cached_key == key => prompt,
        _ => {
            let (total, archival) = store.memory_counts(agent_id)?;
            let recall = total.saturating_sub(messages.len() as u64);
            let metadata = compile::metadata_section(now, recall, archival);
            let prompt = compile::system_message(&agent.system, &memory, &metadata);
            store.set_system_cache(agent_id, &key, &prompt)?;
            prompt
        }
    };

    let counter = calibrate::counter(store, &agent.llm.model);
    let custom_tools = store.tools_named(&agent.tools)?;
    let tools = tools::specs_with(&agent.tools, &custom_tools, agent.loop_style);
    let mut chat = Vec::with_capacity(messages.len() + 2);
    chat.push(ChatMessage::System { content: system });
    let summary = agent.summary.as_ref().map(|s| ChatMessage::User {
        content: format!("{SUMMARY_PREFIX}{s}"),
    });
    if let Some(s) = &summary {
        chat.push(s.clone());
    }
    let mut message_tokens = Vec::with_capacity(messages.len());
    let mut open_calls = HashSet::new();
    for m in &messages {
        let cm = to_chat(m, &mut open_calls);
        message_tokens.push(cm.as_ref().map_or(0, |c| counter.count_message(c)));
        chat.extend(cm);
    }

    let system_tokens = counter.count_message(&chat[0]);
    let instructions = counter.count(&agent.system.replace(compile::CORE_MEMORY_PLACEHOLDER, ""));
    let mut breakdown = ContextBreakdown {
        system: instructions.min(system_tokens),
        core_memory: system_tokens.saturating_sub(instructions),
        summary: summary.as_ref().map_or(0, |s| counter.count_message(s)),
        messages: message_tokens.iter().sum(),
        tools: counter.count_tools(&tools),
        total: 0,
        context_window: agent.llm.context_window as usize,
        exact: counter.is_exact(),
    };
    breakdown.total = breakdown.system
        + breakdown.core_memory
        + breakdown.summary
        + breakdown.messages
        + breakdown.tools;

    let request = ChatRequest {
        model: agent.llm.model_name().to_owned(),
        messages: chat,
        tool_choice: match agent.loop_style {
            engram_core::LoopStyle::Classic if !tools.is_empty() => ToolChoice::Required,
            _ => ToolChoice::Auto,
        },
        tools,
        max_tokens: agent.llm.max_tokens,
        temperature: agent.llm.temperature,
        stream,
    };
    Ok(Context {
        agent,
        blocks,
        messages,
        request,
        breakdown,
        message_tokens,
        custom_tools,
        counter,
    })
}

/// Converts a stored message for the provider. Tool results whose call is not in view are left
/// out: providers reject them, and the store's repair keeps this from happening in practice.
fn to_chat(m: &Message, open_calls: &mut HashSet<String>) -> Option<ChatMessage> {
    Some(match m.role {
        // Mid-conversation system messages (imported events) go in the user role, which every
        // provider accepts after the first message.
        Role::System | Role::User => ChatMessage::User {
            content: m.content.clone(),
        },
        Role::Assistant => {
            open_calls.extend(m.tool_calls.iter().map(|c| c.id.clone()));
            ChatMessage::Assistant {
                content: m.content.clone(),
                tool_calls: m.tool_calls.clone(),
            }
        }
        Role::Tool => {
            let id = m.tool_call_id.clone()?;
            if !open_calls.remove(&id) {
                return None;
            }
            ChatMessage::Tool {
                tool_call_id: id,
                name: m.tool_name.clone().unwrap_or_default(),
                content: m.content.clone(),
            }
        }
    })
}

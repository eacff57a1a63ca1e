//! Assembling one LLM call: system message (cached while memory is unchanged), summary,
//! in-context messages and tool schemas — plus the token breakdown.

use crate::calibrate;
use crate::compile;
use crate::prompts::SUMMARY_PREFIX;
use crate::tokens::{ContextBreakdown, TokenCounter};
use crate::tools;
use engram_core::{Agent, AgentId, Block, Message, Result, Role, Timestamp, Tool};
use engram_providers::{ChatMessage, ChatRequest, ToolChoice};
use engram_store_api::{Backend, FolderStore};
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

impl Context {
    /// Tokens of the part of every call compaction cannot shrink: system message
    /// (instructions and memory) and tool schemas.
    pub fn fixed_tokens(&self) -> usize {
        let b = &self.breakdown;
        b.system + b.core_memory + b.files + b.tools
    }
}

/// Loads the agent's context as of now.
///
/// The system message is rebuilt only when the instructions or the blocks changed since it was
/// last built (Letta does the same): a stable prefix keeps provider prompt caches warm, at the
/// price of the time and counts in `<memory_metadata>` being as of the last rebuild.
pub async fn load(
    backend: &dyn Backend,
    folders: Option<&dyn FolderStore>,
    agent_id: &AgentId,
    now: Timestamp,
    stream: bool,
) -> Result<Context> {
    load_with(backend, folders, agent_id, now, stream, None).await
}

/// [`load`] for a caller that knows the agent as it was a moment ago (a run's steps): what
/// depends on its model and tools (the token calibration, the user tools' rows) is read
/// beside the rest from `expected` (one round trip less on a database server), and read again
/// when the agent changed since in either.
pub async fn load_expecting(
    backend: &dyn Backend,
    folders: Option<&dyn FolderStore>,
    expected: &Agent,
    now: Timestamp,
    stream: bool,
) -> Result<Context> {
    load_with(backend, folders, &expected.id, now, stream, Some(expected)).await
}

async fn load_with(
    backend: &dyn Backend,
    folders: Option<&dyn FolderStore>,
    agent_id: &AgentId,
    now: Timestamp,
    stream: bool,
    expected: Option<&Agent>,
) -> Result<Context> {
    // Independent reads: on a database server they go out together.
    let early = async {
        match expected {
            Some(agent) => Some(model_reads(backend, agent).await),
            None => None,
        }
    };
    let (read, early) = tokio::join!(
        async {
            tokio::try_join!(
                backend.agent_with_system_cache(agent_id),
                backend.agent_blocks(agent_id),
                backend.in_context_messages(agent_id),
                files_of(folders, agent_id),
            )
        },
        early
    );
    let ((agent, cached), blocks, messages, files) = read?;
    let memory = compile::memory_section(&blocks);
    let key = system_key(&agent, &memory, &files);
    let system = match cached {
        Some((cached_key, prompt)) if cached_key == key => prompt,
        _ => {
            let (total, archival) = backend.memory_counts(agent_id).await?;
            let recall = total.saturating_sub(messages.len() as u64);
            let metadata = compile::metadata_section(now, recall, archival);
            let with_files = if files.is_empty() {
                memory.clone()
            } else {
                format!("{memory}\n\n{files}")
            };
            let prompt = compile::system_message(&agent.system, &with_files, &metadata);
            backend.set_system_cache(agent_id, &key, &prompt).await?;
            prompt
        }
    };

    let (counter, custom_tools) = match early {
        Some(Ok(read)) if expected.is_some_and(|e| same_model_and_tools(e, &agent)) => read,
        _ => model_reads(backend, &agent).await?,
    };
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
    let file_tokens = if files.is_empty() {
        0
    } else {
        counter.count(&files)
    };
    let memory_tokens = system_tokens.saturating_sub(instructions);
    let mut breakdown = ContextBreakdown {
        system: instructions.min(system_tokens),
        core_memory: memory_tokens.saturating_sub(file_tokens),
        files: file_tokens.min(memory_tokens),
        summary: summary.as_ref().map_or(0, |s| counter.count_message(s)),
        messages: message_tokens.iter().sum(),
        tools: counter.count_tools(&tools),
        total: 0,
        context_window: agent.llm.context_window as usize,
        exact: counter.is_exact(),
    };
    breakdown.total = breakdown.system
        + breakdown.core_memory
        + breakdown.files
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
        max_tokens: Some(output_limit(&agent.llm, breakdown.total)),
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

/// The agent as stored now, and the tokens of the part of its next call that compaction
/// cannot shrink (system message and tool schemas, as [`Context::fixed_tokens`] counts them
/// on a [`load`]ed context), read without the messages: asked before every run. While the
/// stored system message is current this is one round trip on a database server (a second
/// for an agent with user tools, whose rows are read once its tool list is known): the token
/// calibrations of every model are read beside the agent, whose model is not known yet. When
/// memory changed since, it is the full [`load`] (which rebuilds and stores it). Errors:
/// `NotFound("agent")`; the store's.
pub async fn fixed_part(
    backend: &dyn Backend,
    folders: Option<&dyn FolderStore>,
    agent_id: &AgentId,
    now: Timestamp,
) -> Result<(Agent, usize)> {
    let (read, mut learnt) = tokio::join!(
        async {
            tokio::try_join!(
                backend.agent_with_system_cache(agent_id),
                backend.agent_blocks(agent_id),
                files_of(folders, agent_id),
            )
        },
        calibrate::every_learnt(backend)
    );
    let ((agent, cached), blocks, files) = read?;
    let key = system_key(&agent, &compile::memory_section(&blocks), &files);
    let Some((_, system)) = cached.filter(|(cached_key, _)| *cached_key == key) else {
        let ctx = load(backend, folders, agent_id, now, false).await?;
        let tokens = ctx.fixed_tokens();
        return Ok((ctx.agent, tokens));
    };
    let counter = calibrate::counter_with(&agent.llm.model, learnt.remove(&agent.llm.model));
    let custom_tools = backend
        .tools_named(&tools::user_tool_names(&agent.tools))
        .await?;
    let tools = tools::specs_with(&agent.tools, &custom_tools, agent.loop_style);
    let tokens = counter.count_message(&ChatMessage::System { content: system })
        + counter.count_tools(&tools);
    Ok((agent, tokens))
}

/// What a context reads once it knows the agent: the token counter for its model (as
/// calibrated so far) and the rows of its user tools, together.
async fn model_reads(backend: &dyn Backend, agent: &Agent) -> Result<(TokenCounter, Vec<Tool>)> {
    let user_tools = tools::user_tool_names(&agent.tools);
    let (counter, custom_tools) = tokio::join!(
        calibrate::counter(backend, &agent.llm.model),
        backend.tools_named(&user_tools)
    );
    Ok((counter, custom_tools?))
}

/// Whether [`model_reads`] of `a` hold for `b`.
fn same_model_and_tools(a: &Agent, b: &Agent) -> bool {
    a.llm.model == b.llm.model && a.tools == b.tools
}

/// What the stored system message was built from: the instructions, the memory section and
/// the files section (open files are part of what the model reads: a moved window rebuilds
/// the message too). Each part is prefixed by its length (bytes), so no two different
/// triples make one key; no separator character is needed (PostgreSQL text holds no NUL).
fn system_key(agent: &Agent, memory: &str, files: &str) -> String {
    format!(
        "{}:{}{}:{memory}{}:{files}",
        agent.system.len(),
        agent.system,
        memory.len(),
        files.len()
    )
}

/// The agent's `<files>` section where folders are kept (empty without them).
async fn files_of(folders: Option<&dyn FolderStore>, agent_id: &AgentId) -> Result<String> {
    match folders {
        Some(folders) => files_section(folders, agent_id).await,
        None => Ok(String::new()),
    }
}

/// The agent's `<files>` section (empty without attached folders).
async fn files_section(folders: &dyn FolderStore, agent_id: &AgentId) -> Result<String> {
    let attached = folders.agent_folders(agent_id).await?;
    if attached.is_empty() {
        return Ok(String::new());
    }
    let named: Vec<(String, String)> = attached
        .into_iter()
        .map(|f| (f.name, f.instructions))
        .collect();
    let files = folders.agent_files(agent_id).await?;
    let windows = folders.open_file_windows(agent_id).await?;
    Ok(compile::files_section(&named, &files, &windows))
}

/// Completion tokens a step may use when the agent sets no `max_tokens`: a quarter of the
/// context window, at most this. Without a cap a small local model may write until its context
/// is full (minutes of hidden rambling on a CPU), and servers such as llama.cpp's apply none.
pub const DEFAULT_OUTPUT_LIMIT: u32 = 4096;

/// The least a default output limit leaves a model, in tokens, even when the prompt nearly
/// fills the window: enough for a reply or a tool call.
pub const MIN_OUTPUT_LIMIT: u32 = 256;

/// The cap on completion tokens sent with a call of `llm` whose prompt is `prompt_tokens`
/// tokens: the agent's own `max_tokens` when set, else [`DEFAULT_OUTPUT_LIMIT`] or a quarter of
/// the context window, whichever is smaller, and no more than the room the prompt leaves in the
/// window (some providers refuse a prompt plus cap over the window), but at least
/// [`MIN_OUTPUT_LIMIT`]. All figures are **tokens**.
pub fn output_limit(llm: &engram_core::LlmConfig, prompt_tokens: usize) -> u32 {
    if let Some(max) = llm.max_tokens {
        return max;
    }
    let room = (llm.context_window as usize).saturating_sub(prompt_tokens);
    let room = u32::try_from(room).unwrap_or(u32::MAX);
    DEFAULT_OUTPUT_LIMIT
        .min(llm.context_window / 4)
        .min(room)
        .max(MIN_OUTPUT_LIMIT)
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

#[cfg(test)]
mod tests {
    use super::*;
    use engram_core::LlmConfig;

    fn llm(window: u32, max_tokens: Option<u32>) -> LlmConfig {
        LlmConfig {
            context_window: window,
            max_tokens,
            ..LlmConfig::new("openai/some-model")
        }
    }

    #[test]
    fn the_agents_own_cap_wins() {
        assert_eq!(output_limit(&llm(4096, Some(50)), 4000), 50);
    }

    #[test]
    fn a_default_cap_is_a_quarter_of_the_window_at_most_4096() {
        assert_eq!(output_limit(&llm(4096, None), 100), 1024);
        assert_eq!(output_limit(&llm(128_000, None), 100), DEFAULT_OUTPUT_LIMIT);
    }

    #[test]
    fn a_default_cap_fits_the_room_the_prompt_leaves_but_never_below_the_floor() {
        assert_eq!(output_limit(&llm(8192, None), 7692), 500);
        assert_eq!(output_limit(&llm(8192, None), 8190), MIN_OUTPUT_LIMIT);
    }
}

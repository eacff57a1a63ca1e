//! Agents and their model settings.

use crate::{AgentId, BlockId, NewBlock, Timestamp, ToolRule};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// How the agent loop drives the model (chosen per agent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
pub enum LoopStyle {
    /// The original MemGPT loop: the agent speaks only through `send_message`, every tool takes
    /// `request_heartbeat`, and plain assistant text is inner monologue. Letta's `memgpt_agent`
    /// and `memgpt_v2_agent`.
    Classic,
    /// The tool loop of current Letta (`letta_v1_agent`): plain assistant text is the reply, and
    /// the run goes on while the model calls tools.
    #[default]
    ToolLoop,
}

/// Which model an agent talks to and how much of it fits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct LlmConfig {
    /// Model handle in Letta's `provider/model` form, e.g. `openai/gpt-4o-mini`, `ollama/llama3.1`.
    pub model: String,
    /// Overrides the provider's base URL for this agent (an OpenAI-compatible server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The model's context window, in **tokens**.
    pub context_window: u32,
    /// Cap on completion tokens per call; `None` leaves it to the provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature; `None` leaves it to the provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
}

impl LlmConfig {
    /// A config for `model` with the context window [`default_context_window`] guesses.
    pub fn new(model: impl Into<String>) -> Self {
        let model = model.into();
        Self {
            context_window: default_context_window(&model),
            model,
            base_url: None,
            max_tokens: None,
            temperature: None,
        }
    }

    /// The provider part of the handle (`openai` in `openai/gpt-4o`); `openai` when there is none.
    pub fn provider(&self) -> &str {
        split_handle(&self.model).0
    }

    /// The model name the provider knows (`gpt-4o` in `openai/gpt-4o`).
    pub fn model_name(&self) -> &str {
        split_handle(&self.model).1
    }
}

/// Splits a `provider/model` handle; a bare name counts as `openai/<name>`.
/// Only the first `/` splits, so `openrouter/meta-llama/llama-3` keeps its model path.
pub fn split_handle(handle: &str) -> (&str, &str) {
    handle.split_once('/').unwrap_or(("openai", handle))
}

/// A conservative context window (tokens) for well-known model families; 8,192 otherwise, which
/// suits small local models. Users can always set the real figure per agent.
pub fn default_context_window(handle: &str) -> u32 {
    let (provider, name) = split_handle(handle);
    let name = name.to_ascii_lowercase();
    if provider == "anthropic" || name.starts_with("claude") {
        200_000
    } else if name.starts_with("gpt-4.1") {
        1_047_576
    } else if name.starts_with("gpt-4o")
        || name.starts_with("gpt-4-turbo")
        || name.starts_with("gpt-5")
    {
        128_000
    } else if name.starts_with("o1") || name.starts_with("o3") || name.starts_with("o4") {
        200_000
    } else if name.starts_with("gpt-3.5") {
        16_385
    } else {
        // Also the original gpt-4.
        8_192
    }
}

/// The embedding model used for archival memory search, when the agent has one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct EmbeddingConfig {
    /// Model handle, e.g. `openai/text-embedding-3-small`.
    pub model: String,
    /// Overrides the provider's base URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
}

/// A stored agent. Its blocks, messages and passages are fetched separately from the store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct Agent {
    /// `agent-<uuid>`.
    pub id: AgentId,
    /// Display name; not unique.
    pub name: String,
    /// Free text for people.
    pub description: String,
    /// The agent's instructions. If they contain `{CORE_MEMORY}`, compiled memory replaces the
    /// placeholder; otherwise it is appended.
    pub system: String,
    /// Model settings.
    pub llm: LlmConfig,
    /// Embedding settings; `None` means archival search is BM25 only.
    pub embedding: Option<EmbeddingConfig>,
    /// Which loop drives this agent.
    pub loop_style: LoopStyle,
    /// Step limit per run (default 50).
    pub max_steps: u32,
    /// Names of the tools attached to this agent, in the order shown to the model.
    pub tools: Vec<String>,
    /// Rules on when the loop may call which tool (Letta's `tool_rules`), keyed by tool name.
    #[serde(default)]
    pub tool_rules: Vec<ToolRule>,
    /// The recursive summary of messages evicted from the context window, if any.
    pub summary: Option<String>,
    /// When the agent was created.
    pub created_at: Timestamp,
    /// When the agent's settings last changed.
    pub updated_at: Timestamp,
}

/// The default step limit of a run.
pub const DEFAULT_MAX_STEPS: u32 = 50;

impl Agent {
    /// A new agent named `name` on `llm`, with a fresh id, created now, and nothing else:
    /// empty instructions and description, no tools, rules, embedding model or summary, the
    /// tool loop and [`DEFAULT_MAX_STEPS`]. Callers set what they need on the result (the
    /// service fills it from a [`NewAgent`]; tests build agents with it).
    pub fn new(name: impl Into<String>, llm: LlmConfig) -> Self {
        let now = chrono::Utc::now();
        Self {
            id: AgentId::new(),
            name: name.into(),
            description: String::new(),
            system: String::new(),
            llm,
            embedding: None,
            loop_style: LoopStyle::ToolLoop,
            max_steps: DEFAULT_MAX_STEPS,
            tools: Vec::new(),
            tool_rules: Vec::new(),
            summary: None,
            created_at: now,
            updated_at: now,
        }
    }
}

/// What it takes to create an agent. `None` fields get the defaults for the loop style.
#[derive(Clone, Debug, Default, Serialize, Deserialize, TS)]
#[ts(export, optional_fields)]
pub struct NewAgent {
    /// Display name (must not be empty).
    pub name: String,
    /// Free text for people.
    #[serde(default)]
    #[ts(as = "Option<String>", optional)]
    pub description: String,
    /// Instructions; `None` uses Engram's default prompt for the loop style.
    #[serde(default)]
    pub system: Option<String>,
    /// Model settings; `None` uses the service's default model.
    #[serde(default)]
    pub llm: Option<LlmConfig>,
    /// Embedding settings.
    #[serde(default)]
    pub embedding: Option<EmbeddingConfig>,
    /// Loop style (default: tool loop).
    #[serde(default)]
    #[ts(as = "Option<LoopStyle>", optional)]
    pub loop_style: LoopStyle,
    /// Step limit per run (default [`DEFAULT_MAX_STEPS`]).
    #[serde(default)]
    pub max_steps: Option<u32>,
    /// Tool names; `None` attaches the built-in memory tools of the loop style.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Tool rules (Letta's `tool_rules`).
    #[serde(default)]
    #[ts(as = "Option<Vec<ToolRule>>", optional)]
    pub tool_rules: Vec<ToolRule>,
    /// New blocks to create and attach.
    #[serde(default)]
    #[ts(as = "Option<Vec<NewBlock>>", optional)]
    pub blocks: Vec<NewBlock>,
    /// Existing blocks to attach (shared memory).
    #[serde(default)]
    #[ts(as = "Option<Vec<BlockId>>", optional)]
    pub block_ids: Vec<BlockId>,
}

/// A partial update of an agent's settings; `None` leaves a field as it is.
#[derive(Clone, Debug, Default, Serialize, Deserialize, TS)]
#[ts(export, optional_fields)]
pub struct AgentPatch {
    /// New display name.
    pub name: Option<String>,
    /// New description.
    pub description: Option<String>,
    /// New instructions.
    pub system: Option<String>,
    /// New model settings.
    pub llm: Option<LlmConfig>,
    /// New embedding settings (`Some(None)` removes them).
    pub embedding: Option<Option<EmbeddingConfig>>,
    /// New loop style.
    pub loop_style: Option<LoopStyle>,
    /// New step limit.
    pub max_steps: Option<u32>,
    /// New tool list.
    pub tools: Option<Vec<String>>,
    /// New tool rules.
    pub tool_rules: Option<Vec<ToolRule>>,
}

impl AgentPatch {
    /// Writes what the patch sets into `agent` (times are the store's to set). Returns
    /// whether the instructions changed, which makes a cached compiled system prompt stale.
    pub fn apply_to(&self, agent: &mut Agent) -> bool {
        let system_changed = self.system.as_ref().is_some_and(|s| *s != agent.system);
        if let Some(v) = &self.name {
            agent.name.clone_from(v);
        }
        if let Some(v) = &self.description {
            agent.description.clone_from(v);
        }
        if let Some(v) = &self.system {
            agent.system.clone_from(v);
        }
        if let Some(v) = &self.llm {
            agent.llm = v.clone();
        }
        if let Some(v) = &self.embedding {
            agent.embedding.clone_from(v);
        }
        if let Some(v) = self.loop_style {
            agent.loop_style = v;
        }
        if let Some(v) = self.max_steps {
            agent.max_steps = v;
        }
        if let Some(v) = &self.tools {
            agent.tools.clone_from(v);
        }
        if let Some(v) = &self.tool_rules {
            agent.tool_rules.clone_from(v);
        }
        system_changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_split_on_the_first_slash() {
        assert_eq!(
            split_handle("openai/gpt-4o-mini"),
            ("openai", "gpt-4o-mini")
        );
        assert_eq!(
            split_handle("openrouter/meta-llama/llama-3"),
            ("openrouter", "meta-llama/llama-3")
        );
        assert_eq!(split_handle("gpt-4o"), ("openai", "gpt-4o"));
    }

    #[test]
    fn known_families_get_their_windows() {
        assert_eq!(default_context_window("openai/gpt-4o-mini"), 128_000);
        assert_eq!(
            default_context_window("anthropic/claude-3-5-sonnet"),
            200_000
        );
        assert_eq!(default_context_window("ollama/llama3.1"), 8_192);
    }
}

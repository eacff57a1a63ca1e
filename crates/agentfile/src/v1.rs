//! Agent File v1: one agent, flat (`{version, core_memory, messages,
//! in_context_message_indices, tools, llm_config, …}`), as Letta 0.6 to 0.10 exported it.

use crate::model::{BlockAf, EmbeddingConfigAf, LlmConfigAf, MessageAf, ToolAf, nullable};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A v1 agent file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentFileV1 {
    /// The Letta version that wrote it, e.g. `0.6.47`.
    #[serde(default)]
    pub version: Option<String>,
    /// Letta's agent type (`memgpt_agent`, `memgpt_v2_agent`, …).
    #[serde(default)]
    pub agent_type: Option<String>,
    /// Display name.
    #[serde(default)]
    pub name: Option<String>,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// Instructions.
    #[serde(default)]
    pub system: Option<String>,
    /// Blocks (no ids in v1).
    #[serde(default, deserialize_with = "nullable")]
    pub core_memory: Vec<BlockAf>,
    /// Every message, oldest first.
    #[serde(default, deserialize_with = "nullable")]
    pub messages: Vec<MessageAf>,
    /// Indices into `messages` of the context window, in context order.
    #[serde(default, deserialize_with = "nullable")]
    pub in_context_message_indices: Vec<usize>,
    /// Tools attached to the agent.
    #[serde(default, deserialize_with = "nullable")]
    pub tools: Vec<ToolAf>,
    /// Tool rules (`{tool_name, type}`), kept as read.
    #[serde(default, deserialize_with = "nullable")]
    pub tool_rules: Vec<Value>,
    /// Model settings.
    #[serde(default)]
    pub llm_config: Option<LlmConfigAf>,
    /// Embedding settings.
    #[serde(default)]
    pub embedding_config: Option<EmbeddingConfigAf>,
    /// Tags.
    #[serde(default, deserialize_with = "nullable")]
    pub tags: Vec<String>,
    /// When the agent was created.
    #[serde(default)]
    pub created_at: Option<String>,
    /// When it last changed.
    #[serde(default)]
    pub updated_at: Option<String>,
    /// Other fields (metadata_, multi_agent_group, …), kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

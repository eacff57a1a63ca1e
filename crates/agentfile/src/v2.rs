//! Agent File v2: `{agents, groups, blocks, files, sources, tools, mcp_servers, skills, metadata}` with
//! file-local ids (`agent-0`, `block-0`, `tool-0`, `message-0`), as Letta exports it since 0.11.
//! Engram writes the same shape, plus its own `engram` extension (see [`crate::extension`]).

use crate::extension::Extension;
use crate::model::{BlockAf, EmbeddingConfigAf, LlmConfigAf, MessageAf, ToolAf, nullable};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A v2 agent file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentFileV2 {
    /// The agents.
    #[serde(default, deserialize_with = "nullable")]
    pub agents: Vec<AgentV2>,
    /// Multi-agent groups, kept as read (Engram does not run groups).
    #[serde(default, deserialize_with = "nullable")]
    pub groups: Vec<Value>,
    /// Every block of every agent, each once (shared blocks are listed once).
    #[serde(default, deserialize_with = "nullable")]
    pub blocks: Vec<BlockAf>,
    /// Attached files, kept as read.
    #[serde(default, deserialize_with = "nullable")]
    pub files: Vec<Value>,
    /// Data sources, kept as read.
    #[serde(default, deserialize_with = "nullable")]
    pub sources: Vec<Value>,
    /// Every tool of every agent, each once.
    #[serde(default, deserialize_with = "nullable")]
    pub tools: Vec<ToolAf>,
    /// MCP servers, kept as read.
    #[serde(default, deserialize_with = "nullable")]
    pub mcp_servers: Vec<Value>,
    /// Skills (`{name, files: {path: text}, source_url}`, Letta 0.16+), kept as read: Engram
    /// does not load skills.
    #[serde(default, deserialize_with = "nullable")]
    pub skills: Vec<Value>,
    /// `{revision_id}` of the writer's schema.
    #[serde(default)]
    pub metadata: Option<Value>,
    /// When the file was written.
    #[serde(default)]
    pub created_at: Option<String>,
    /// What Engram keeps beyond Letta's format; absent in Letta's files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engram: Option<Extension>,
    /// Other fields, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One agent of a v2 file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentV2 {
    /// File-local id (`agent-0`).
    pub id: String,
    /// Display name.
    #[serde(default)]
    pub name: Option<String>,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// Instructions.
    #[serde(default)]
    pub system: Option<String>,
    /// Letta's agent type (`memgpt_agent`, `memgpt_v2_agent`, `letta_v1_agent`, …).
    #[serde(default)]
    pub agent_type: Option<String>,
    /// Model settings.
    #[serde(default)]
    pub llm_config: Option<LlmConfigAf>,
    /// Embedding settings.
    #[serde(default)]
    pub embedding_config: Option<EmbeddingConfigAf>,
    /// Ids of the agent's blocks in `blocks`, in context order.
    #[serde(default, deserialize_with = "nullable")]
    pub block_ids: Vec<String>,
    /// Blocks defined inline (rare; most files use `block_ids`).
    #[serde(default, deserialize_with = "nullable")]
    pub memory_blocks: Vec<BlockAf>,
    /// Ids of the agent's tools in `tools`.
    #[serde(default, deserialize_with = "nullable")]
    pub tool_ids: Vec<String>,
    /// Tool rules (`{tool_name, type, …}`), kept as read.
    #[serde(default, deserialize_with = "nullable")]
    pub tool_rules: Vec<Value>,
    /// Tags.
    #[serde(default, deserialize_with = "nullable")]
    pub tags: Vec<String>,
    /// The agent's messages (Letta exports only the context window).
    #[serde(default, deserialize_with = "nullable")]
    pub messages: Vec<MessageAf>,
    /// Ids of the messages in the context window, in order (also read as `message_ids`).
    #[serde(default, deserialize_with = "nullable", alias = "message_ids")]
    pub in_context_message_ids: Vec<String>,
    /// Other fields, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

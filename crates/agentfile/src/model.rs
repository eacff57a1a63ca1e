//! Serde models of the pieces v1 and v2 agent files share: blocks, tools, model settings and
//! messages. Fields vary between Letta versions, so almost everything is optional, `null` reads
//! as the default, and fields this reader does not use are kept in `extra` maps.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// Reads `null` (or a missing field, with `#[serde(default)]`) as `T::default()`.
pub(crate) fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A core-memory block (`blocks[]` in v2, `core_memory[]` in v1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BlockAf {
    /// File-local id (`block-0`); absent in v1.
    #[serde(default)]
    pub id: Option<String>,
    /// Label, unique per agent.
    pub label: String,
    /// The text.
    #[serde(default, deserialize_with = "nullable")]
    pub value: String,
    /// Limit in characters.
    #[serde(default)]
    pub limit: Option<u64>,
    /// What the block is for.
    #[serde(default)]
    pub description: Option<String>,
    /// Whether the agent may edit it.
    #[serde(default, deserialize_with = "nullable")]
    pub read_only: bool,
    /// Letta's block metadata (kept, unused).
    #[serde(default)]
    pub metadata: Option<Value>,
    /// Other fields, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A tool: built-in (Letta's `letta_core`, `letta_memory_core`, …) or custom (Python source and
/// a JSON schema).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolAf {
    /// File-local id (`tool-0`); absent in v1.
    #[serde(default)]
    pub id: Option<String>,
    /// The name the model calls it by.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: Option<String>,
    /// Letta's category, e.g. `letta_core`, `custom`.
    #[serde(default)]
    pub tool_type: Option<String>,
    /// Language of `source_code`, e.g. `python`.
    #[serde(default)]
    pub source_type: Option<String>,
    /// The implementation of a custom tool.
    #[serde(default)]
    pub source_code: Option<String>,
    /// The OpenAI-style function schema `{name, description, parameters}`.
    #[serde(default)]
    pub json_schema: Option<Value>,
    /// Tags.
    #[serde(default, deserialize_with = "nullable")]
    pub tags: Vec<String>,
    /// Other fields, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Letta's `llm_config`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmConfigAf {
    /// The provider's model name, e.g. `gpt-4o-mini`.
    #[serde(default)]
    pub model: Option<String>,
    /// The provider family, e.g. `openai`, `anthropic`, `ollama`.
    #[serde(default)]
    pub model_endpoint_type: Option<String>,
    /// The server's base URL.
    #[serde(default)]
    pub model_endpoint: Option<String>,
    /// Context window, in tokens.
    #[serde(default)]
    pub context_window: Option<u64>,
    /// Letta's `provider/model` handle (not always in step with `model`).
    #[serde(default)]
    pub handle: Option<String>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Completion token cap.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// Other fields, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Letta's `embedding_config`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EmbeddingConfigAf {
    /// Provider family, e.g. `openai`.
    #[serde(default)]
    pub embedding_endpoint_type: Option<String>,
    /// Model name, e.g. `text-embedding-3-small`.
    #[serde(default)]
    pub embedding_model: Option<String>,
    /// The server's base URL.
    #[serde(default)]
    pub embedding_endpoint: Option<String>,
    /// Vector dimension.
    #[serde(default)]
    pub embedding_dim: Option<u64>,
    /// Letta's `provider/model` handle.
    #[serde(default)]
    pub handle: Option<String>,
    /// Other fields, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Who wrote a message, in Letta's terms. `approval` messages carry tool calls waiting for a
/// person's approval, or that person's answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoleAf {
    /// The system prompt (or a system note).
    System,
    /// The user, or hidden loop messages (heartbeats, alerts, login events).
    User,
    /// The model.
    Assistant,
    /// Tool results.
    Tool,
    /// Tool calls needing approval, or the approval answers.
    Approval,
}

/// A message's content: a plain string (older files, system prompts) or a list of parts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ContentAf {
    /// Plain text.
    Text(String),
    /// Typed parts.
    Parts(Vec<PartAf>),
}

/// One content part: `{type: "text", text}`, `{type: "reasoning", reasoning, signature?}`,
/// `{type: "tool_call", id, name, input}`, or others (images, redacted reasoning) kept as read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PartAf {
    /// The part's kind.
    #[serde(rename = "type")]
    pub kind: String,
    /// Text of a `text` part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Text of a `reasoning` part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Other fields (signature, id, name, input…), kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// An OpenAI-style tool call `{id, type: "function", function: {name, arguments}}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCallAf {
    /// The provider's call id.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// What was called.
    pub function: FunctionAf,
}

/// The called function.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FunctionAf {
    /// Tool name.
    pub name: String,
    /// Arguments: JSON text (sometimes an object in older files).
    #[serde(default)]
    pub arguments: Value,
}

/// One tool result of a `tool` message (several when the model called tools in parallel).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolReturnAf {
    /// The call answered.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// `success` or `error`.
    #[serde(default)]
    pub status: Option<String>,
    /// The result as the model saw it (usually the `{status, message, time}` JSON text).
    #[serde(default)]
    pub func_response: Option<Value>,
    /// Other fields (stdout, stderr…), kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A message as Letta exports it (v1 and v2 alike; v2 adds `id`, `type` and approvals).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MessageAf {
    /// Always `message` in v2.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// File-local id (`message-3`); absent in v1.
    #[serde(default)]
    pub id: Option<String>,
    /// Who wrote it.
    pub role: RoleAf,
    /// The content.
    #[serde(default)]
    pub content: Option<ContentAf>,
    /// A name: the tool's for tool messages in newer files, the agent's in some older ones.
    #[serde(default)]
    pub name: Option<String>,
    /// The model that wrote it.
    #[serde(default)]
    pub model: Option<String>,
    /// Tool calls (assistant and approval messages).
    #[serde(default, deserialize_with = "nullable")]
    pub tool_calls: Vec<ToolCallAf>,
    /// The call answered (tool messages).
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// Tool results (tool messages).
    #[serde(default, deserialize_with = "nullable")]
    pub tool_returns: Vec<ToolReturnAf>,
    /// When it was written (RFC 3339, or naive ISO time meaning UTC).
    #[serde(default)]
    pub created_at: Option<String>,
    /// Approval answers (approval messages).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub approvals: Vec<Value>,
    /// Other fields, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

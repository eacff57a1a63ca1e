//! Messages: recall memory and the context window are made of these.

use crate::{AgentId, MessageId, RunId, StepId, Timestamp};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Who a message is from, in OpenAI chat terms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions (the compiled system message) or system notes.
    System,
    /// The user, or hidden loop messages sent in the user role (heartbeats, alerts).
    #[default]
    User,
    /// The model: text, reasoning and tool calls.
    Assistant,
    /// The result of one tool call.
    Tool,
}

impl Role {
    /// The lowercase name used in storage and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
        }
    }
}

/// What a message is for, beyond its role. Hidden kinds are sent to the model but shown to
/// people only on request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// An ordinary message.
    #[default]
    Chat,
    /// A hidden user-role `{"type":"heartbeat",…}` asking the model to go on (classic loop).
    Heartbeat,
    /// A hidden system alert, e.g. the memory-pressure warning.
    Alert,
    /// A system-role message imported from another tool (login events, old system prompts).
    Event,
}

/// A tool call as the model sent it. `arguments` is the raw JSON text: it may be malformed,
/// and the loop answers malformed arguments with a `Failed` result instead of dropping the call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ToolCall {
    /// The provider's `tool_call_id`; every one gets exactly one tool result.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as JSON text.
    pub arguments: String,
}

/// A stored message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct Message {
    /// `message-<uuid>`.
    pub id: MessageId,
    /// The agent whose history holds it.
    pub agent_id: AgentId,
    /// Position in the agent's history (strictly increasing).
    #[ts(type = "number")]
    pub seq: i64,
    /// Who it is from.
    pub role: Role,
    /// What it is for.
    pub kind: MessageKind,
    /// The text as the model sees it (for tool messages: the JSON result envelope).
    pub content: String,
    /// The model's reasoning / inner monologue, when separate from `content`.
    pub reasoning: Option<String>,
    /// Tool calls of an assistant message.
    pub tool_calls: Vec<ToolCall>,
    /// For tool messages: the call this answers.
    pub tool_call_id: Option<String>,
    /// For tool messages: the tool's name.
    pub tool_name: Option<String>,
    /// The run that wrote it.
    pub run_id: Option<RunId>,
    /// The step that wrote it.
    pub step_id: Option<StepId>,
    /// Whether it is in the context window now (evicted messages stay in recall memory).
    pub in_context: bool,
    /// When it was written.
    pub created_at: Timestamp,
}

/// A message to be stored; the store assigns id, sequence number and (if absent) the time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct NewMessage {
    /// Who it is from.
    pub role: Role,
    /// What it is for.
    pub kind: MessageKind,
    /// Text as the model sees it.
    pub content: String,
    /// Reasoning, if any.
    pub reasoning: Option<String>,
    /// Tool calls (assistant only).
    pub tool_calls: Vec<ToolCall>,
    /// The call answered (tool only).
    pub tool_call_id: Option<String>,
    /// The tool's name (tool only).
    pub tool_name: Option<String>,
    /// The run writing it.
    pub run_id: Option<RunId>,
    /// The step writing it.
    pub step_id: Option<StepId>,
    /// Keep an existing time (imports); `None` means now.
    pub created_at: Option<Timestamp>,
    /// Keep an existing id (imports, or ids announced while streaming); `None` mints one.
    pub id: Option<MessageId>,
}

impl NewMessage {
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
            ..Self::default()
        }
    }

    /// An assistant message with optional reasoning and tool calls.
    pub fn assistant(
        content: impl Into<String>,
        reasoning: Option<String>,
        tool_calls: Vec<ToolCall>,
    ) -> Self {
        Self {
            role: Role::Assistant,
            content: content.into(),
            reasoning,
            tool_calls,
            ..Self::default()
        }
    }

    /// The result of tool call `call_id`; `content` is the JSON envelope.
    pub fn tool(
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Self {
            role: Role::Tool,
            content: content.into(),
            tool_call_id: Some(call_id.into()),
            tool_name: Some(name.into()),
            ..Self::default()
        }
    }

    /// A hidden user-role message of `kind` (heartbeat or alert).
    pub fn hidden(kind: MessageKind, content: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            kind,
            content: content.into(),
            ..Self::default()
        }
    }

    /// Tags the message with the run and step writing it.
    pub fn in_step(mut self, run_id: &RunId, step_id: &StepId) -> Self {
        self.run_id = Some(run_id.clone());
        self.step_id = Some(step_id.clone());
        self
    }
}

/// A conversation search result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct MessageHit {
    /// The matching message.
    pub message: Message,
    /// Relevance in `0..=1`, higher is better, with the meaning passage scores have: the BM25
    /// score smoothed over neighbouring messages as a share of the best hit's, blended with
    /// cosine similarity when the search had a query vector (see
    /// `engram_retrieval::hybrid::messages`); 0 for an empty query.
    pub score: f64,
}

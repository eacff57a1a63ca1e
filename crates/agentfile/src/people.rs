//! The JSON export for people and scripts: one documented, stable shape that is not tied to
//! Letta's format. Fields are only ever added, never renamed or removed, within `version` 1.
//!
//! ```json
//! { "format": "engram-export", "version": 1, "exported_at": "2025-04-01T03:47:27.492924Z",
//!   "note": "A read-only report …",
//!   "agents": [ {
//!     "id": "agent-…", "name": "…", "description": "…", "model": "openai/gpt-4o-mini",
//!     "context_window": 128000, "loop_style": "classic" | "tool_loop", "system": "…",
//!     "tools": ["send_message", …], "summary": "…" | null,
//!     "created_at": "…", "updated_at": "…",
//!     "blocks": [ {"id", "label", "value", "limit", "description", "read_only", "updated_at"} ],
//!     "passages": [ {"id", "text", "tags": […], "created_at"} ],
//!     "messages": [ {"id", "role": "system"|"user"|"assistant"|"tool",
//!                    "kind": "chat"|"heartbeat"|"alert"|"event", "content", "reasoning",
//!                    "tool_calls": [ {"id", "name", "arguments"} ], "tool_call_id",
//!                    "tool_name", "in_context", "created_at"} ]
//!   } ] }
//! ```
//! Times are RFC 3339 UTC with microseconds; `limit` is in characters; messages are in
//! conversation order (the whole history, not only the context window).
//!
//! This is a **read-only report**: it leaves out what an agent needs to run again (model
//! settings, block history, tools' code, vectors, usage), and `note` says so in the file
//! itself. Importing one is refused with [`REPORT_NOT_IMPORTABLE`]; the Agent File (`.af`)
//! export is the one that imports back.

use crate::snapshot::AgentSnapshot;
use engram_core::{LoopStyle, MessageKind, Role, Timestamp, ToolCall};
use serde::Serialize;

/// The `note` every report carries, and why an import of one is refused.
pub const REPORT_NOT_IMPORTABLE: &str = "A read-only report of Engram agents for people and scripts; it cannot be imported. To move or back up agents, export them as an Agent File (.af) and import that.";

/// The version of the shape below.
pub const PEOPLE_JSON_VERSION: u32 = 1;

/// The top-level object.
#[derive(Clone, Debug, Serialize)]
pub struct Export {
    /// Always `engram-export`.
    pub format: &'static str,
    /// [`PEOPLE_JSON_VERSION`].
    pub version: u32,
    /// When the export was made.
    pub exported_at: Timestamp,
    /// [`REPORT_NOT_IMPORTABLE`]: what this file is for.
    pub note: &'static str,
    /// The agents.
    pub agents: Vec<AgentOut>,
}

/// One agent.
#[derive(Clone, Debug, Serialize)]
pub struct AgentOut {
    /// `agent-<uuid>`.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Model handle `provider/model`.
    pub model: String,
    /// Context window, in tokens.
    pub context_window: u32,
    /// Loop style.
    pub loop_style: LoopStyle,
    /// Instructions.
    pub system: String,
    /// Attached tools.
    pub tools: Vec<String>,
    /// Recursive summary.
    pub summary: Option<String>,
    /// Created.
    pub created_at: Timestamp,
    /// Settings last changed.
    pub updated_at: Timestamp,
    /// Core memory, in context order.
    pub blocks: Vec<BlockOut>,
    /// Archival memory, oldest first.
    pub passages: Vec<PassageOut>,
    /// The whole conversation, oldest first.
    pub messages: Vec<MessageOut>,
}

/// One block.
#[derive(Clone, Debug, Serialize)]
pub struct BlockOut {
    /// `block-<uuid>`.
    pub id: String,
    /// Label.
    pub label: String,
    /// Value.
    pub value: String,
    /// Limit, in characters.
    pub limit: usize,
    /// What it is for.
    pub description: String,
    /// Refused to the agent's tools.
    pub read_only: bool,
    /// Last change.
    pub updated_at: Timestamp,
}

/// One passage.
#[derive(Clone, Debug, Serialize)]
pub struct PassageOut {
    /// `passage-<uuid>`.
    pub id: String,
    /// Text.
    pub text: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Stored at.
    pub created_at: Timestamp,
}

/// One message.
#[derive(Clone, Debug, Serialize)]
pub struct MessageOut {
    /// `message-<uuid>`.
    pub id: String,
    /// Role.
    pub role: Role,
    /// Kind (hidden kinds are heartbeats, alerts, imported events).
    pub kind: MessageKind,
    /// Text as the model saw it.
    pub content: String,
    /// Reasoning.
    pub reasoning: Option<String>,
    /// Tool calls.
    pub tool_calls: Vec<ToolCall>,
    /// The call a tool message answers.
    pub tool_call_id: Option<String>,
    /// The tool's name (tool messages).
    pub tool_name: Option<String>,
    /// In the context window now.
    pub in_context: bool,
    /// Written at.
    pub created_at: Timestamp,
}

/// Builds the export of `agents`.
pub fn export(agents: &[AgentSnapshot], now: Timestamp) -> Export {
    Export {
        format: "engram-export",
        note: REPORT_NOT_IMPORTABLE,
        version: PEOPLE_JSON_VERSION,
        exported_at: now,
        agents: agents.iter().map(agent).collect(),
    }
}

fn agent(s: &AgentSnapshot) -> AgentOut {
    let a = &s.agent;
    AgentOut {
        id: a.id.to_string(),
        name: a.name.clone(),
        description: a.description.clone(),
        model: a.llm.model.clone(),
        context_window: a.llm.context_window,
        loop_style: a.loop_style,
        system: a.system.clone(),
        tools: a.tools.clone(),
        summary: a.summary.clone(),
        created_at: a.created_at,
        updated_at: a.updated_at,
        blocks: s
            .blocks
            .iter()
            .map(|b| BlockOut {
                id: b.id.to_string(),
                label: b.label.clone(),
                value: b.value.clone(),
                limit: b.limit,
                description: b.description.clone(),
                read_only: b.read_only,
                updated_at: b.updated_at,
            })
            .collect(),
        passages: s
            .passages
            .iter()
            .map(|p| PassageOut {
                id: p.id.to_string(),
                text: p.text.clone(),
                tags: p.tags.clone(),
                created_at: p.created_at,
            })
            .collect(),
        messages: s
            .messages
            .iter()
            .map(|m| MessageOut {
                id: m.id.to_string(),
                role: m.role,
                kind: m.kind,
                content: m.content.clone(),
                reasoning: m.reasoning.clone(),
                tool_calls: m.tool_calls.clone(),
                tool_call_id: m.tool_call_id.clone(),
                tool_name: m.tool_name.clone(),
                in_context: m.in_context,
                created_at: m.created_at,
            })
            .collect(),
    }
}

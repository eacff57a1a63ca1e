//! How a stored message reads: the columns every message query selects, the row mapping, and
//! the filters every conversation search shares.

use crate::sql::{json_opt, ts};
use engram_core::{AgentId, Message, MessageId, MessageKind, Role, RunId, StepId, ToolCall};
use rusqlite::Row;

/// The columns of a message row, in the order [`message_from_row`] reads them.
pub(crate) const MSG_COLS: &str = "m.id, m.agent_id, m.seq, m.role, m.kind, m.content, m.reasoning, \
                        m.tool_calls, m.tool_call_id, m.tool_name, m.run_id, m.step_id, \
                        m.in_context, m.created_at";

/// Reads a stored role name (unknown names read as `User`).
pub(crate) fn role_from(s: &str) -> Role {
    match s {
        "system" => Role::System,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        _ => Role::User,
    }
}

pub(crate) fn kind_str(k: MessageKind) -> &'static str {
    match k {
        MessageKind::Chat => "chat",
        MessageKind::Heartbeat => "heartbeat",
        MessageKind::Alert => "alert",
        MessageKind::Event => "event",
    }
}

fn kind_from(s: &str) -> MessageKind {
    match s {
        "heartbeat" => MessageKind::Heartbeat,
        "alert" => MessageKind::Alert,
        "event" => MessageKind::Event,
        _ => MessageKind::Chat,
    }
}

/// Maps a row selected with `MSG_COLS` (optionally followed by more columns).
pub(crate) fn message_from_row(r: &Row<'_>) -> rusqlite::Result<Message> {
    Ok(Message {
        id: MessageId::from(r.get::<_, String>(0)?),
        agent_id: AgentId::from(r.get::<_, String>(1)?),
        seq: r.get(2)?,
        role: role_from(&r.get::<_, String>(3)?),
        kind: kind_from(&r.get::<_, String>(4)?),
        content: r.get(5)?,
        reasoning: r.get(6)?,
        tool_calls: json_opt::<Vec<ToolCall>>(r, 7)?.unwrap_or_default(),
        tool_call_id: r.get(8)?,
        tool_name: r.get(9)?,
        run_id: r.get::<_, Option<String>>(10)?.map(RunId::from),
        step_id: r.get::<_, Option<String>>(11)?.map(StepId::from),
        in_context: r.get(12)?,
        created_at: ts(r, 13)?,
    })
}

/// The filters of a conversation search: `?1` agent, `?2` roles (JSON array), `?3`..`?4` time
/// range. Hidden loop messages (heartbeats, alerts) never match.
pub(crate) const SEARCH_FILTERS: &str =
    "m.agent_id = ?1 AND m.role IN (SELECT value FROM json_each(?2))
                   AND m.kind NOT IN ('heartbeat', 'alert')
                   AND m.created_at BETWEEN ?3 AND ?4";

//! Letta's wire shapes for messages and run results, so `engram chat --json` and the REST API
//! speak what `letta-client` parses.
//!
//! One stored message can become several Letta messages sharing its id: an assistant turn with
//! reasoning and a tool call is a `reasoning_message` then a `tool_call_message`. In the classic
//! loop a `send_message` call is the `assistant_message` and its tool result is not shown;
//! hidden messages (heartbeats, alerts) are left out.

use engram_agent::RunOutcome;
use engram_core::{
    LoopStyle, Message, MessageKind, PendingApproval, Role, StopReason, ToolReturn, ToolStatus,
    Usage,
};
use serde_json::{Value, json};

fn base(m: &Message, message_type: &str) -> serde_json::Map<String, Value> {
    let mut map = serde_json::Map::new();
    map.insert("id".into(), json!(m.id));
    map.insert(
        "date".into(),
        json!(
            m.created_at
                .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
        ),
    );
    map.insert("message_type".into(), json!(message_type));
    map.insert("run_id".into(), json!(m.run_id));
    map.insert("step_id".into(), json!(m.step_id));
    map
}

fn with(mut map: serde_json::Map<String, Value>, fields: Value) -> Value {
    if let Value::Object(f) = fields {
        map.extend(f);
    }
    Value::Object(map)
}

/// The Letta messages one stored message shows as (possibly none).
pub fn letta_messages(m: &Message, style: LoopStyle) -> Vec<Value> {
    if matches!(m.kind, MessageKind::Heartbeat | MessageKind::Alert) {
        return Vec::new();
    }
    match m.role {
        Role::System => vec![with(
            base(m, "system_message"),
            json!({"content": m.content}),
        )],
        Role::User => vec![with(base(m, "user_message"), json!({"content": m.content}))],
        Role::Assistant => {
            let mut out = Vec::new();
            // In the classic loop plain text is inner monologue: Letta shows it as reasoning.
            let (reasoning, reply) = match style {
                LoopStyle::Classic => (
                    m.reasoning
                        .iter()
                        .chain(Some(&m.content).filter(|c| !c.is_empty()))
                        .cloned()
                        .collect::<Vec<_>>()
                        .join("\n"),
                    None,
                ),
                LoopStyle::ToolLoop => (
                    m.reasoning.clone().unwrap_or_default(),
                    Some(&m.content).filter(|c| !c.is_empty()),
                ),
            };
            if !reasoning.is_empty() {
                out.push(with(
                    base(m, "reasoning_message"),
                    json!({"reasoning": reasoning, "source": "non_reasoner_model"}),
                ));
            }
            if let Some(text) = reply {
                out.push(with(base(m, "assistant_message"), json!({"content": text})));
            }
            for call in &m.tool_calls {
                if call.name == "send_message" {
                    let text = serde_json::from_str::<Value>(&call.arguments)
                        .ok()
                        .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_owned))
                        .unwrap_or_else(|| call.arguments.clone());
                    out.push(with(base(m, "assistant_message"), json!({"content": text})));
                } else {
                    out.push(with(
                        base(m, "tool_call_message"),
                        json!({"tool_call": {"name": call.name, "arguments": call.arguments, "tool_call_id": call.id}}),
                    ));
                }
            }
            out
        }
        Role::Tool => {
            if m.tool_name.as_deref() == Some("send_message") {
                return Vec::new();
            }
            let envelope = ToolReturn::parse(&m.content);
            let status = match envelope.as_ref().map(|e| e.status) {
                Some(ToolStatus::Failed) => "error",
                _ => "success",
            };
            vec![with(
                base(m, "tool_return_message"),
                json!({
                    "tool_return": envelope.map_or_else(|| m.content.clone(), |e| e.message),
                    "status": status,
                    "tool_call_id": m.tool_call_id,
                    "name": m.tool_name,
                    "stdout": null,
                    "stderr": null
                }),
            )]
        }
    }
}

/// Letta's `approval_request_message` for a call waiting for a person: its id is the
/// assistant message that made the call (what Letta's `approval_request_id` names).
pub fn approval_request(p: &PendingApproval) -> Value {
    let call = json!({"name": p.tool_call.name, "arguments": p.tool_call.arguments, "tool_call_id": p.tool_call.id});
    json!({
        "id": p.message_id,
        "date": p.requested_at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "message_type": "approval_request_message",
        "run_id": p.run_id,
        "step_id": p.step_id,
        "tool_call": call,
        "tool_calls": [call],
    })
}

/// Shows `pending` in a list of Letta messages as Letta does: its `tool_call_message` becomes
/// the `approval_request_message`; when the list does not hold the call, the request is
/// appended if `append` (a run's response), else the list is left as it is (a page of history).
pub fn mark_pending(messages: &mut Vec<Value>, pending: &PendingApproval, append: bool) {
    let request = approval_request(pending);
    match messages.iter_mut().find(|m| {
        m["message_type"] == "tool_call_message"
            && m["tool_call"]["tool_call_id"] == pending.tool_call.id.as_str()
    }) {
        Some(m) => *m = request,
        None if append => messages.push(request),
        None => {}
    }
}

/// `{"message_type":"stop_reason","stop_reason":…}`.
pub fn stop_reason(reason: StopReason) -> Value {
    json!({"message_type": "stop_reason", "stop_reason": reason.as_str()})
}

/// `{"message_type":"usage_statistics",…}`.
pub fn usage_statistics(usage: &Usage) -> Value {
    json!({
        "message_type": "usage_statistics",
        "completion_tokens": usage.completion_tokens,
        "prompt_tokens": usage.prompt_tokens,
        "total_tokens": usage.total_tokens,
        "step_count": usage.step_count
    })
}

/// A run as Letta's `LettaResponse`: `{messages, stop_reason, usage}`. The user's own message is
/// not repeated, as in Letta.
pub fn response(outcome: &RunOutcome, style: LoopStyle) -> Value {
    let messages: Vec<Value> = outcome
        .messages
        .iter()
        .filter(|m| m.role != Role::User)
        .flat_map(|m| letta_messages(m, style))
        .collect();
    json!({
        "messages": messages,
        "stop_reason": stop_reason(outcome.stop_reason),
        "usage": usage_statistics(&outcome.usage)
    })
}

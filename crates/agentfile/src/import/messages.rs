//! Letta's messages as Engram messages: content parts flattened, parallel results split, the
//! context window kept to what providers accept.

use crate::errors::AgentFileError;
use crate::model::{ContentAf, RoleAf, ToolCallAf};
use crate::time::time_or;
use engram_core::{MessageKind, NewMessage, Role, Timestamp, ToolCall};
use engram_store_api::ImportMessage;
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};

use super::parts::AgentIn;

/// Takes out of the context window every assistant message that calls a tool the agent cannot
/// run here, and the results of those calls: providers reject a history whose tool calls name
/// tools that are not offered. The messages stay in recall memory. Returns how many moved.
pub(super) fn keep_runnable_window(messages: &mut [ImportMessage], tools: &[String]) -> usize {
    let mut dropped_calls = HashSet::new();
    let mut moved = 0;
    for im in messages.iter_mut().filter(|m| m.in_context) {
        let m = &im.message;
        let drop = match m.role {
            Role::Assistant => m.tool_calls.iter().any(|c| !tools.contains(&c.name)),
            Role::Tool => m
                .tool_call_id
                .as_ref()
                .is_some_and(|id| dropped_calls.contains(id)),
            _ => false,
        };
        if drop {
            if m.role == Role::Assistant {
                dropped_calls.extend(m.tool_calls.iter().map(|c| c.id.clone()));
            }
            im.in_context = false;
            moved += 1;
        }
    }
    moved
}

/// Text, reasoning and content-part tool calls of a message's content.
pub(super) fn flatten(content: Option<&ContentAf>) -> (String, Option<String>, Vec<ToolCall>) {
    let parts = match content {
        None => return (String::new(), None, Vec::new()),
        Some(ContentAf::Text(s)) => return (s.clone(), None, Vec::new()),
        Some(ContentAf::Parts(p)) => p,
    };
    let mut text = Vec::new();
    let mut reasoning = Vec::new();
    let mut calls = Vec::new();
    for p in parts {
        match p.kind.as_str() {
            "reasoning" => reasoning.extend(p.reasoning.clone().or_else(|| p.text.clone())),
            "tool_call" => calls.push(ToolCall {
                id: str_field(&p.extra, "id"),
                name: str_field(&p.extra, "name"),
                arguments: arguments(p.extra.get("input").unwrap_or(&Value::Null)),
            }),
            // Redacted or omitted reasoning has no readable text.
            "redacted_reasoning" | "omitted_reasoning" => {}
            "image" => text.push("[image]".to_owned()),
            _ => text.extend(p.text.clone()),
        }
    }
    let reasoning = (!reasoning.is_empty()).then(|| reasoning.join("\n"));
    (text.join("\n"), reasoning, calls)
}

pub(super) fn str_field(map: &Map<String, Value>, key: &str) -> String {
    map.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Tool-call arguments as JSON text (older files sometimes hold an object).
pub(super) fn arguments(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "{}".to_owned(),
        other => other.to_string(),
    }
}

pub(super) fn tool_calls(calls: &[ToolCallAf]) -> Vec<ToolCall> {
    calls
        .iter()
        .map(|c| ToolCall {
            id: c.id.clone(),
            name: c.function.name.clone(),
            arguments: arguments(&c.function.arguments),
        })
        .collect()
}

/// The kind of a user-role message from the JSON it wraps, if any.
pub(super) fn user_kind(text: &str) -> MessageKind {
    let Ok(Value::Object(v)) = serde_json::from_str::<Value>(text) else {
        return MessageKind::Chat;
    };
    match v.get("type").and_then(Value::as_str) {
        Some("heartbeat") => MessageKind::Heartbeat,
        Some("system_alert") => MessageKind::Alert,
        Some("login") => MessageKind::Event,
        _ => MessageKind::Chat,
    }
}

pub(super) fn response_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Letta messages → Engram messages in Engram order (see the module docs).
pub(super) fn letta_messages(
    a: &AgentIn<'_>,
    fallback_time: Timestamp,
) -> Result<Vec<ImportMessage>, AgentFileError> {
    let msgs = a.messages;
    let in_context: HashSet<usize> = a.in_context.iter().copied().collect();
    let order: Vec<usize> = (0..msgs.len())
        .filter(|i| !in_context.contains(i))
        .chain(a.in_context.iter().copied())
        .collect();
    let mut names: HashMap<String, String> = HashMap::new();
    for m in msgs {
        for c in &m.tool_calls {
            names.insert(c.id.clone(), c.function.name.clone());
        }
    }
    let leading_system = a
        .in_context
        .first()
        .copied()
        .filter(|&i| msgs[i].role == RoleAf::System);

    let mut out = Vec::with_capacity(msgs.len());
    for i in order {
        let m = &msgs[i];
        let path = format!("{}messages[{i}]", a.path);
        let created_at = time_or(
            m.created_at.as_deref(),
            &format!("{path}.created_at"),
            fallback_time,
        )?;
        let live = in_context.contains(&i) && leading_system != Some(i);
        let (text, reasoning, part_calls) = flatten(m.content.as_ref());
        let base = NewMessage {
            created_at: Some(created_at),
            ..NewMessage::default()
        };
        let mut push = |message: NewMessage, in_context: bool| {
            out.push(ImportMessage {
                message,
                in_context,
            });
        };
        let is_call =
            m.role == RoleAf::Assistant || !m.tool_calls.is_empty() || !part_calls.is_empty();
        match (m.role, is_call) {
            (RoleAf::System, _) => push(
                NewMessage {
                    role: Role::System,
                    kind: MessageKind::Event,
                    content: text,
                    ..base
                },
                live,
            ),
            (RoleAf::User, _) => push(
                NewMessage {
                    role: Role::User,
                    kind: user_kind(&text),
                    content: text,
                    ..base
                },
                live,
            ),
            (RoleAf::Tool, _) => {
                let results: Vec<(Option<String>, String)> = if m.tool_returns.len() > 1 {
                    m.tool_returns
                        .iter()
                        .map(|r| {
                            (
                                r.tool_call_id.clone().or_else(|| m.tool_call_id.clone()),
                                r.func_response
                                    .as_ref()
                                    .map(response_text)
                                    .unwrap_or_default(),
                            )
                        })
                        .collect()
                } else {
                    let r = m.tool_returns.first();
                    let id = r
                        .and_then(|r| r.tool_call_id.clone())
                        .or_else(|| m.tool_call_id.clone());
                    let content = if text.is_empty() {
                        r.and_then(|r| r.func_response.as_ref())
                            .map(response_text)
                            .unwrap_or_default()
                    } else {
                        text
                    };
                    vec![(id, content)]
                };
                for (call_id, content) in results {
                    let tool_name = call_id
                        .as_ref()
                        .and_then(|id| names.get(id).cloned())
                        .or_else(|| m.name.clone());
                    push(
                        NewMessage {
                            role: Role::Tool,
                            content,
                            tool_call_id: call_id,
                            tool_name,
                            ..base.clone()
                        },
                        live,
                    );
                }
            }
            (_, true) => {
                let mut calls = tool_calls(&m.tool_calls);
                calls.extend(part_calls);
                for c in &calls {
                    names.entry(c.id.clone()).or_insert_with(|| c.name.clone());
                }
                push(
                    NewMessage {
                        role: Role::Assistant,
                        content: text,
                        reasoning,
                        tool_calls: calls,
                        ..base
                    },
                    live,
                );
            }
            (_, false) => {
                // A person's answers to approval requests: history, not model input.
                let content = if text.is_empty() {
                    json!({"type": "approval", "approvals": m.approvals}).to_string()
                } else {
                    text
                };
                push(
                    NewMessage {
                        role: Role::User,
                        kind: MessageKind::Event,
                        content,
                        ..base
                    },
                    false,
                );
            }
        }
    }
    Ok(out)
}

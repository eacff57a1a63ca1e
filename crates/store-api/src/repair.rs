//! The rules of context repair after a crash or cancel, shared by every backend: every
//! in-context tool call gets exactly one result, and no result answers nothing.
//!
//! Providers reject a conversation in which an assistant tool call has no tool result, or a
//! tool result answers no call; in naive loops one interrupted step breaks an agent for good.
//! A backend reads the agent's in-context calls and results ([`CallRow`]), asks [`diagnose`]
//! what is wrong, and in one transaction answers the orphans with a `Failed` result slotted in
//! right after the call's answers (in the `seq` gap) and takes the strays out of the context
//! ([`StepStore::repair_tool_calls`](crate::StepStore::repair_tool_calls)).

use engram_core::{
    AgentId, Message, MessageId, MessageKind, Role, RunId, StepId, Timestamp, ToolCall, ToolReturn,
};
use std::collections::{HashMap, HashSet};

/// What the model reads in place of the result of a call that never finished.
pub const INTERRUPTED: &str = "The tool call was interrupted before it finished (the app \
                               stopped). It did not run to completion; try again if it is \
                               still needed.";

/// What repair needs of an in-context message that makes or answers tool calls (the text is
/// left out: repair runs at the start of every run, on contexts of thousands of messages).
#[derive(Clone, Debug)]
pub struct CallRow {
    /// The message.
    pub id: MessageId,
    /// Its place in the agent's history.
    pub seq: i64,
    /// `Assistant` (makes calls) or `Tool` (answers one).
    pub role: Role,
    /// The calls an assistant message makes.
    pub tool_calls: Vec<ToolCall>,
    /// The call a tool message answers.
    pub tool_call_id: Option<String>,
    /// The run that wrote it.
    pub run_id: Option<RunId>,
    /// The step that wrote it.
    pub step_id: Option<StepId>,
}

/// The unanswered calls of one assistant message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Orphans {
    /// The assistant message's index in the rows given to [`diagnose`].
    pub caller: usize,
    /// The `seq` to insert the first result after: the message's last answer, else the
    /// message itself.
    pub anchor: i64,
    /// `(call id, tool name)` of each unanswered call, in call order.
    pub calls: Vec<(String, String)>,
}

/// What is wrong with an agent's context: calls without results, results without calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnosis {
    /// Assistant messages with unanswered calls, in context order.
    pub orphans: Vec<Orphans>,
    /// Tool messages that answer no call of an earlier in-context assistant message, or answer
    /// one that already has a result.
    pub strays: Vec<MessageId>,
}

/// Diagnoses the in-context calls and results `context` (by `seq`). A tool message answers the
/// latest earlier assistant message that made a call with its id (some servers reuse ids like
/// `call_0` across turns, so ids are not global).
pub fn diagnose(context: &[CallRow]) -> Diagnosis {
    let mut caller: HashMap<&str, usize> = HashMap::new();
    let mut answered: HashSet<(usize, &str)> = HashSet::new();
    let mut last_answer: HashMap<usize, i64> = HashMap::new();
    let mut strays = Vec::new();
    for (i, m) in context.iter().enumerate() {
        match m.role {
            Role::Assistant => {
                for call in &m.tool_calls {
                    caller.insert(&call.id, i);
                }
            }
            Role::Tool => {
                let id = m.tool_call_id.as_deref().unwrap_or_default();
                match caller.get(id) {
                    Some(&a) if answered.insert((a, id)) => {
                        last_answer.insert(a, m.seq);
                    }
                    _ => strays.push(m.id.clone()),
                }
            }
            Role::System | Role::User => {}
        }
    }
    let mut orphans = Vec::new();
    for (i, m) in context
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Assistant)
    {
        let mut seen = HashSet::new();
        let missing: Vec<(String, String)> = m
            .tool_calls
            .iter()
            .filter(|c| seen.insert(c.id.as_str()) && !answered.contains(&(i, c.id.as_str())))
            .map(|c| (c.id.clone(), c.name.clone()))
            .collect();
        if !missing.is_empty() {
            let anchor = last_answer.get(&i).copied().unwrap_or(m.seq);
            orphans.push(Orphans {
                caller: i,
                anchor,
                calls: missing,
            });
        }
    }
    Diagnosis { orphans, strays }
}

/// Where a result goes between `anchor` and `next` (the agent's next message's `seq`, if any):
/// half way, or [`SEQ_GAP`](crate::SEQ_GAP) past the anchor at the end. `None` when the two are
/// adjacent and the messages after the anchor must be renumbered first (shifted by a gap).
pub fn slot_between(anchor: i64, next: Option<i64>) -> Option<i64> {
    match next {
        None => anchor.checked_add(crate::SEQ_GAP),
        Some(next) if next - anchor >= 2 => Some(anchor + (next - anchor) / 2),
        Some(_) => None,
    }
}

/// The `Failed` result repair stores for the unanswered call `call_id` (tool `name`) of the
/// assistant message `caller`, at `seq`, stamped `now` (already truncated by the store): in
/// context, with the caller's run and step.
pub fn interrupted_result(
    agent: &AgentId,
    caller: &CallRow,
    call_id: String,
    name: String,
    seq: i64,
    now: Timestamp,
) -> Message {
    Message {
        id: MessageId::new(),
        agent_id: agent.clone(),
        seq,
        role: Role::Tool,
        kind: MessageKind::Chat,
        content: ToolReturn::failed(INTERRUPTED, now).to_json(),
        reasoning: None,
        tool_calls: Vec::new(),
        tool_call_id: Some(call_id),
        tool_name: Some(name),
        run_id: caller.run_id.clone(),
        step_id: caller.step_id.clone(),
        in_context: true,
        created_at: now,
    }
}

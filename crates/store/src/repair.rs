//! Repair of the context after a crash or cancel: every tool call gets exactly one result.
//!
//! Providers reject a conversation in which an assistant tool call has no tool result, or a tool
//! result answers no call; in naive loops one interrupted step breaks an agent for good. On load
//! the loop calls [`MessageRows::repair_orphaned_tool_calls`], which answers the orphans with `Failed`
//! results slotted in right after the call's answers (using the `seq` gap), and takes stray tool
//! results out of the context.

use crate::approvals;
use crate::message_rows;
use crate::messages::{self, SEQ_GAP};
use crate::rooms::MessageRows;
use crate::sql::{self, DbResult, json_opt};
use engram_core::{
    AgentId, Error, Message, MessageId, MessageKind, Result, Role, RunId, StepId, Timestamp,
    ToolCall, ToolReturn,
};
use rusqlite::{Connection, params};
use std::collections::{HashMap, HashSet};

/// What the model reads in place of the result of a call that never finished.
const INTERRUPTED: &str = "The tool call was interrupted before it finished (the app stopped). \
                           It did not run to completion; try again if it is still needed.";

/// A free `seq` right after `anchor` for the agent, renumbering later messages when the gap is
/// used up.
fn slot_after(conn: &Connection, agent: &AgentId, anchor: i64) -> Result<i64> {
    let next_seq = |conn: &Connection| -> Result<Option<i64>> {
        conn.prepare_cached("SELECT min(seq) FROM messages WHERE agent_id = ?1 AND seq > ?2")
            .db()?
            .query_row(params![agent.as_str(), anchor], |r| r.get(0))
            .db()
    };
    let Some(mut next) = next_seq(conn)? else {
        return anchor
            .checked_add(SEQ_GAP)
            .ok_or_else(|| Error::Internal("seq overflow".into()));
    };
    if next - anchor < 2 {
        // Shift everything after the anchor by a gap. Through negative numbers, because SQLite
        // checks UNIQUE(agent_id, seq) row by row and an in-place shift would collide.
        // Stored seqs are always positive, so the negative range is free.
        conn.prepare_cached(
            "UPDATE messages SET seq = -(seq + ?3) WHERE agent_id = ?1 AND seq > ?2",
        )
        .db()?
        .execute(params![agent.as_str(), anchor, SEQ_GAP])
        .db()?;
        conn.prepare_cached("UPDATE messages SET seq = -seq WHERE agent_id = ?1 AND seq < 0")
            .db()?
            .execute([agent.as_str()])
            .db()?;
        next = next_seq(conn)?.unwrap_or(anchor + SEQ_GAP);
    }
    Ok(anchor + (next - anchor) / 2)
}

/// The unanswered calls of one assistant message.
struct Orphans {
    /// The assistant message's index in the context.
    caller: usize,
    /// The `seq` to insert the first result after.
    anchor: i64,
    /// `(call id, tool name)` of each unanswered call, in call order.
    calls: Vec<(String, String)>,
}

/// What repair needs of an in-context message that makes or answers tool calls.
struct CallRow {
    id: MessageId,
    seq: i64,
    role: Role,
    tool_calls: Vec<ToolCall>,
    tool_call_id: Option<String>,
    run_id: Option<RunId>,
    step_id: Option<StepId>,
}

/// The agent's in-context tool calls and tool results, by `seq`. Other messages and all the
/// text are left out: repair runs at the start of every run, on contexts of thousands of
/// messages.
fn call_rows(conn: &Connection, agent: &AgentId) -> Result<Vec<CallRow>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, seq, role, tool_calls, tool_call_id, run_id, step_id FROM messages
             WHERE agent_id = ?1 AND in_context = 1 AND (role = 'tool' OR tool_calls IS NOT NULL)
             ORDER BY seq",
        )
        .db()?;
    let rows = stmt
        .query_map([agent.as_str()], |r| {
            Ok(CallRow {
                id: MessageId::from(r.get::<_, String>(0)?),
                seq: r.get(1)?,
                role: message_rows::role_from(&r.get::<_, String>(2)?),
                tool_calls: json_opt::<Vec<ToolCall>>(r, 3)?.unwrap_or_default(),
                tool_call_id: r.get(4)?,
                run_id: r.get::<_, Option<String>>(5)?.map(RunId::from),
                step_id: r.get::<_, Option<String>>(6)?.map(StepId::from),
            })
        })
        .db()?;
    rows.collect::<rusqlite::Result<_>>().db()
}

/// What is wrong with an agent's context: calls without results, results without calls.
struct Diagnosis {
    /// Assistant messages with unanswered calls, in context order.
    orphans: Vec<Orphans>,
    /// Tool messages that answer no call of an earlier in-context assistant message, or answer
    /// one that already has a result.
    strays: Vec<MessageId>,
}

fn diagnose(context: &[CallRow]) -> Diagnosis {
    // A tool message answers the latest earlier assistant message that made a call with its id
    // (some servers reuse ids like `call_0` across turns, so ids are not global).
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

impl MessageRows<'_> {
    /// Makes the agent's context valid for providers again, in one transaction (the calls of
    /// the message a pending approval names are left for the person to decide):
    /// - every in-context assistant tool call without a tool result gets a `Failed` result
    ///   (role `Tool`, the call's id and tool name, the assistant message's run and step), placed
    ///   right after the last existing result of that assistant message (or right after the
    ///   message itself), stamped `now`;
    /// - tool messages that answer no call of an earlier in-context assistant message, or repeat
    ///   a result already given, leave the context (they stay in recall memory).
    ///
    /// Returns how many results were inserted. Errors: `NotFound("agent")`.
    pub fn repair_orphaned_tool_calls(self, agent: &AgentId, now: Timestamp) -> Result<usize> {
        let now = sql::truncate(now);
        self.store.write(|tx| {
            sql::ensure_agent(tx, agent)?;
            let context = call_rows(tx, agent)?;
            let Diagnosis {
                mut orphans,
                strays,
            } = diagnose(&context);
            // A call waiting for a person is not an orphan: it and the calls after it in its
            // message are answered when the person decides.
            if let Some(p) = approvals::get(tx, agent)? {
                orphans.retain(|o| context[o.caller].id != p.message_id);
            }
            let mut stmt = tx
                .prepare_cached("UPDATE messages SET in_context = 0 WHERE id = ?1")
                .db()?;
            for id in &strays {
                stmt.execute([id.as_str()]).db()?;
            }
            let content = ToolReturn::failed(INTERRUPTED, now).to_json();
            let mut inserted = 0;
            // Latest first: renumbering only moves messages after the anchor, so anchors of
            // earlier assistant messages stay valid.
            for Orphans { caller, anchor, calls } in orphans.into_iter().rev() {
                let call_msg = &context[caller];
                let mut after = anchor;
                for (call_id, name) in calls {
                    let seq = slot_after(tx, agent, after)?;
                    let m = Message {
                        id: MessageId::new(),
                        agent_id: agent.clone(),
                        seq,
                        role: Role::Tool,
                        kind: MessageKind::Chat,
                        content: content.clone(),
                        reasoning: None,
                        tool_calls: Vec::new(),
                        tool_call_id: Some(call_id),
                        tool_name: Some(name),
                        run_id: call_msg.run_id.clone(),
                        step_id: call_msg.step_id.clone(),
                        in_context: true,
                        created_at: now,
                    };
                    messages::insert_row(tx, &m)?;
                    after = seq;
                    inserted += 1;
                }
            }
            if inserted > 0 || !strays.is_empty() {
                tracing::warn!(agent = %agent, inserted, dropped = strays.len(), "repaired tool calls");
            }
            Ok(inserted)
        })
    }
}

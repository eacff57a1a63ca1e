//! Repair of the context after a crash or cancel on SQLite: every tool call gets exactly one
//! result (the rules are the interface's, [`engram_store_api::diagnose`]). On load the loop
//! calls [`MessageRows::repair_orphaned_tool_calls`], which answers the orphans with `Failed`
//! results slotted in right after the call's answers (using the `seq` gap), and takes stray
//! tool results out of the context.

use crate::approvals;
use crate::message_rows;
use crate::messages::{self, SEQ_GAP};
use crate::rooms::MessageRows;
use crate::sql::{self, DbResult, json_opt};
use engram_core::{AgentId, Error, MessageId, Result, RunId, StepId, Timestamp, ToolCall};
use engram_store_api::{CallRow, Diagnosis, Orphans, diagnose, interrupted_result, slot_between};
use rusqlite::{Connection, params};

/// A free `seq` right after `anchor` for the agent, renumbering later messages when the gap is
/// used up.
fn slot_after(conn: &Connection, agent: &AgentId, anchor: i64) -> Result<i64> {
    let next_seq = |conn: &Connection| -> Result<Option<i64>> {
        conn.prepare_cached("SELECT min(seq) FROM messages WHERE agent_id = ?1 AND seq > ?2")
            .db()?
            .query_row(params![agent.as_str(), anchor], |r| r.get(0))
            .db()
    };
    let next = next_seq(conn)?;
    if let Some(seq) = slot_between(anchor, next) {
        return Ok(seq);
    }
    if next.is_some() {
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
    }
    slot_between(anchor, next_seq(conn)?).ok_or_else(|| Error::Internal("seq overflow".into()))
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
            let mut inserted = 0;
            // Latest first: renumbering only moves messages after the anchor, so anchors of
            // earlier assistant messages stay valid.
            for Orphans { caller, anchor, calls } in orphans.into_iter().rev() {
                let call_msg = &context[caller];
                let mut after = anchor;
                for (call_id, name) in calls {
                    let seq = slot_after(tx, agent, after)?;
                    let m = interrupted_result(agent, call_msg, call_id, name, seq, now);
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

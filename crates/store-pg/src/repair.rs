//! Context repair on PostgreSQL: every in-context tool call gets exactly one result (the rules
//! are the interface's, [`engram_store_api::diagnose`]), in one transaction that holds the
//! agent's row as an append does, so no message is appended between the diagnosis and the
//! fix.

use crate::blocks::{self, Lock};
use crate::messages;
use crate::rows::{self, Cached};
use crate::tx::TxResult;
use deadpool_postgres::GenericClient;
use engram_core::{AgentId, Error, MessageId, RunId, StepId, Timestamp, ToolCall};
use engram_store_api::{
    CallRow, Diagnosis, Orphans, SEQ_GAP, diagnose, interrupted_result, slot_between,
};
use serde_json::Value;

/// The columns of a [`CallRow`], in order (table alias `m`).
const CALL_COLS: &str = "m.id, m.seq, m.role, m.tool_calls, m.tool_call_id, m.run_id, m.step_id";

/// Which messages are call rows: in the window, and tool results or messages that call.
const CALL_ROWS: &str = "m.in_context AND (m.role = 'tool' OR m.tool_calls IS NOT NULL)";

/// The [`CallRow`] in `r`'s columns from `at` on ([`CALL_COLS`]).
fn call_row(r: &tokio_postgres::Row, at: usize) -> TxResult<CallRow> {
    let calls: Option<Value> = r.try_get(at + 3)?;
    Ok(CallRow {
        id: MessageId::from(r.try_get::<_, String>(at)?),
        seq: r.try_get(at + 1)?,
        role: rows::role_from(r.try_get(at + 2)?)?,
        tool_calls: match calls {
            None => Vec::new(),
            Some(_) => rows::from_json::<Vec<ToolCall>>(r, at + 3, "tool call list")?,
        },
        tool_call_id: r.try_get(at + 4)?,
        run_id: r.try_get::<_, Option<String>>(at + 5)?.map(RunId::from),
        step_id: r.try_get::<_, Option<String>>(at + 6)?.map(StepId::from),
    })
}

/// The agent's in-context tool calls and tool results, by `seq` (no text: see [`CallRow`]).
async fn call_rows(c: &impl GenericClient, agent: &AgentId) -> TxResult<Vec<CallRow>> {
    let found = c
        .rows(
            &format!("SELECT {CALL_COLS} FROM messages m WHERE m.agent_id = $1 AND {CALL_ROWS} ORDER BY m.seq"),
            &[&agent.as_str()],
        )
        .await?;
    rows::all(&found, |r| call_row(r, 0))
}

/// A free `seq` right after `anchor` for the agent, renumbering later messages by a gap when
/// none is left. The shift goes through negative numbers: `UNIQUE (agent_id, seq)` is checked
/// row by row, so an in-place shift could collide, and stored seqs are always positive.
async fn slot_after(c: &impl GenericClient, agent: &AgentId, anchor: i64) -> TxResult<i64> {
    let next_seq = async || -> TxResult<Option<i64>> {
        Ok(c.one(
            "SELECT min(seq) FROM messages WHERE agent_id = $1 AND seq > $2",
            &[&agent.as_str(), &anchor],
        )
        .await?
        .try_get(0)?)
    };
    let next = next_seq().await?;
    if let Some(seq) = slot_between(anchor, next) {
        return Ok(seq);
    }
    if next.is_some() {
        c.exec(
            "UPDATE messages SET seq = -(seq + $3) WHERE agent_id = $1 AND seq > $2",
            &[&agent.as_str(), &anchor, &SEQ_GAP],
        )
        .await?;
        c.exec(
            "UPDATE messages SET seq = -seq WHERE agent_id = $1 AND seq < 0",
            &[&agent.as_str()],
        )
        .await?;
    }
    slot_between(anchor, next_seq().await?)
        .ok_or_else(|| Error::Internal("message sequence overflow".into()).into())
}

/// The assistant message whose call waits for a person, if one does.
async fn waiting_call(c: &impl GenericClient, agent: &AgentId) -> TxResult<Option<String>> {
    let row = c
        .one_opt(
            "SELECT message_id FROM pending_approvals WHERE agent_id = $1",
            &[&agent.as_str()],
        )
        .await?;
    Ok(row.map(|r| r.try_get(0)).transpose()?)
}

/// What is wrong with the agent's call rows `context`, the call waiting for a person (the
/// message that made it) aside: it and the calls after it in its message are answered when
/// the person decides.
fn diagnosis_of(context: &[CallRow], waiting: Option<String>) -> Diagnosis {
    let mut found = diagnose(context);
    if let Some(message) = waiting {
        found
            .orphans
            .retain(|o| context[o.caller].id.as_str() != message);
    }
    found
}

/// Whether the agent's context needs a repair, read outside a transaction. Asked before every
/// run, where the answer is nearly always no: one statement (the agent, its call rows and the
/// call waiting for a person), and a repair that is needed diagnoses again under the agent's
/// lock ([`repair`]). Errors: `NotFound("agent")`.
pub(crate) async fn needed(c: &impl GenericClient, agent: &AgentId) -> TxResult<bool> {
    // One row per call row, or one row of NULLs after the first column when there is none;
    // none at all when the agent is not there.
    let found = c
        .rows(
            &format!(
                "SELECT (SELECT message_id FROM pending_approvals WHERE agent_id = $1), {CALL_COLS}
                 FROM agents a LEFT JOIN messages m ON m.agent_id = a.id AND {CALL_ROWS}
                 WHERE a.id = $1 ORDER BY m.seq"
            ),
            &[&agent.as_str()],
        )
        .await?;
    let Some(first) = found.first() else {
        return Err(Error::not_found("agent", agent.as_str()).into());
    };
    let waiting: Option<String> = first.try_get(0)?;
    let context = match first.try_get::<_, Option<String>>(1)? {
        None => Vec::new(),
        Some(_) => rows::all(&found, |r| call_row(r, 1))?,
    };
    let found = diagnosis_of(&context, waiting);
    Ok(!found.orphans.is_empty() || !found.strays.is_empty())
}

/// Repairs the agent's context inside the caller's transaction (see
/// [`engram_store_api::StepStore::repair_tool_calls`]); returns how many results were
/// inserted.
pub(crate) async fn repair(
    c: &impl GenericClient,
    agent: &AgentId,
    now: Timestamp,
) -> TxResult<usize> {
    // The lock first, then the reads, each a statement of its own so that it sees what was
    // committed before the lock was granted.
    let (context, waiting) = blocks::with_agent(c, agent, Lock::NoKeyUpdate, async {
        tokio::try_join!(call_rows(c, agent), waiting_call(c, agent))
    })
    .await?;
    let Diagnosis { orphans, strays } = diagnosis_of(&context, waiting);
    for id in &strays {
        c.exec(
            "UPDATE messages SET in_context = false WHERE id = $1",
            &[&id.as_str()],
        )
        .await?;
    }
    let now = rows::truncate(now);
    let mut inserted = 0;
    // Latest first: renumbering only moves messages after the anchor, so anchors of earlier
    // assistant messages stay valid.
    for Orphans {
        caller,
        anchor,
        calls,
    } in orphans.into_iter().rev()
    {
        let call_msg = &context[caller];
        let mut after = anchor;
        for (call_id, name) in calls {
            let seq = slot_after(c, agent, after).await?;
            let m = interrupted_result(agent, call_msg, call_id, name, seq, now);
            messages::insert_row(c, &m).await?;
            after = seq;
            inserted += 1;
        }
    }
    if inserted > 0 || !strays.is_empty() {
        tracing::warn!(agent = %agent, inserted, dropped = strays.len(), "repaired tool calls");
    }
    Ok(inserted)
}

//! Rolling the conversation back to just before one message (regenerate, edit & resend): the
//! messages from that message on, the runs they belong to with their steps and usage, the
//! passages those steps inserted, and the block edits those steps made — all in one
//! transaction, or nothing.
//!
//! The rules (what a block goes back to, when the rollback is refused) are the interface's:
//! see `engram_store_api::RewriteStore`.

use crate::blocks::{self, Author};
use crate::rooms::MessageRows;
use crate::sql::{self, DbResult};
use crate::{message_rows, passage_rows};
use engram_core::{
    AgentId, Block, BlockId, Editor, Error, MessageId, Result, Role, RunId, StepId, Usage,
};
pub use engram_store_api::{BlockRevert, TurnRollback};
use engram_store_api::{Lease, tool_result_alone};
use rusqlite::{Connection, OptionalExtension, params};

/// Works out what rolling back from `from` would undo, reading inside `conn` (the caller's
/// transaction when it is about to apply it).
fn plan(conn: &Connection, agent: &AgentId, from: &MessageId) -> Result<TurnRollback> {
    sql::ensure_agent(conn, agent)?;
    let seq: i64 = conn
        .prepare_cached("SELECT seq FROM messages WHERE id = ?1 AND agent_id = ?2")
        .db()?
        .query_row(params![from.as_str(), agent.as_str()], |r| r.get(0))
        .optional()
        .db()?
        .ok_or_else(|| Error::not_found("message", from.as_str()))?;
    let rows: Vec<(String, Option<String>)> = conn
        .prepare_cached(
            "SELECT id, run_id FROM messages WHERE agent_id = ?1 AND seq >= ?2 ORDER BY seq",
        )
        .db()?
        .query_map(params![agent.as_str(), seq], |r| Ok((r.get(0)?, r.get(1)?)))
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?;
    let mut runs: Vec<RunId> = Vec::new();
    for run in rows.iter().filter_map(|(_, r)| r.as_deref()) {
        if !runs.iter().any(|r| r.as_str() == run) {
            runs.push(RunId::from(run.to_owned()));
        }
    }
    let runs_json = sql::to_json(&runs.iter().map(RunId::as_str).collect::<Vec<_>>())?;
    let (steps, usage) = steps_of(conn, agent, &runs_json)?;
    let steps_json = sql::to_json(&steps.iter().map(StepId::as_str).collect::<Vec<_>>())?;
    let passages = conn
        .prepare_cached(&format!(
            "SELECT {} FROM passages p
             WHERE p.agent_id = ?1 AND p.step_id IN (SELECT value FROM json_each(?2))
             ORDER BY p.created_at, p.pk",
            passage_rows::PASSAGE_COLS
        ))
        .db()?
        .query_map(
            params![agent.as_str(), steps_json],
            passage_rows::passage_from_row,
        )
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?;
    Ok(TurnRollback {
        agent_id: agent.clone(),
        from_message: from.clone(),
        messages: rows
            .into_iter()
            .map(|(id, _)| MessageId::from(id))
            .collect(),
        runs,
        usage,
        blocks: reverts(conn, agent, &steps_json)?,
        passages,
    })
}

/// The ids of the agent's steps of `runs` (JSON array of run ids), and their usage.
fn steps_of(conn: &Connection, agent: &AgentId, runs: &str) -> Result<(Vec<StepId>, Usage)> {
    let mut usage = Usage::default();
    let mut ids = Vec::new();
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, prompt_tokens, completion_tokens FROM steps
             WHERE agent_id = ?1 AND run_id IN (SELECT value FROM json_each(?2))
             ORDER BY started_at, step_index",
        )
        .db()?;
    let rows = stmt
        .query_map(params![agent.as_str(), runs], |r| {
            Ok((r.get::<_, String>(0)?, sql::uint(r, 1)?, sql::uint(r, 2)?))
        })
        .db()?;
    for row in rows {
        let (id, prompt, completion) = row.db()?;
        usage.add_step(prompt, completion);
        ids.push(StepId::from(id));
    }
    Ok((ids, usage))
}

/// For each block the steps (JSON array of step ids) edited: the value before their first edit,
/// and whether any history row after it came from someone else. Not someone else: the steps
/// themselves, a rollback (it only ever undid turns of its own agent, or it would have been
/// refused), and `agent`'s steps that an earlier rollback removed (their edits were undone by
/// that rollback's row).
fn reverts(conn: &Connection, agent: &AgentId, steps: &str) -> Result<Vec<BlockRevert>> {
    // The first edit of each block by one of the steps.
    let firsts: Vec<(String, i64)> = conn
        .prepare_cached(
            "SELECT block_id, min(pk) FROM block_history
             WHERE step_id IN (SELECT value FROM json_each(?1)) GROUP BY block_id ORDER BY 2",
        )
        .db()?
        .query_map([steps], |r| Ok((r.get(0)?, r.get(1)?)))
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?;
    let mut out = Vec::with_capacity(firsts.len());
    for (block_id, first_pk) in firsts {
        let restored: String = conn
            .prepare_cached("SELECT old_value FROM block_history WHERE pk = ?1")
            .db()?
            .query_row([first_pk], |r| r.get(0))
            .db()?;
        let (edits, foreign): (u32, u32) = conn
            .prepare_cached(
                "SELECT count(*) FILTER (WHERE ours),
                        count(*) FILTER (WHERE NOT ours AND NOT by_rollback AND NOT undone)
                 FROM (SELECT
                         coalesce(h.step_id IN (SELECT value FROM json_each(?3)), 0) AS ours,
                         coalesce(json_extract(h.editor, '$.kind') = 'rollback', 0)
                           AS by_rollback,
                         coalesce(h.step_id IS NOT NULL
                                  AND json_extract(h.editor, '$.agent_id') = ?4
                                  AND NOT EXISTS (SELECT 1 FROM steps s WHERE s.id = h.step_id),
                                  0) AS undone
                       FROM block_history h WHERE h.block_id = ?1 AND h.pk >= ?2)",
            )
            .db()?
            .query_row(params![block_id, first_pk, steps, agent.as_str()], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .db()?;
        let block = match blocks::load(conn, &BlockId::from(block_id)) {
            Ok(b) => b,
            // A deleted block has nothing left to restore.
            Err(Error::NotFound { .. }) => continue,
            Err(e) => return Err(e),
        };
        out.push(BlockRevert {
            block_id: block.id.clone(),
            label: block.label.clone(),
            current_value: block.value.clone(),
            restored_value: restored,
            version: block.version,
            edits,
            changed_later: foreign > 0,
        });
    }
    Ok(out)
}

impl MessageRows<'_> {
    /// What [`rollback_from`](MessageRows::rollback_from) would undo, without changing anything:
    /// blocks with `changed_later` set would make it refuse.
    ///
    /// Errors: `NotFound("agent")`; `NotFound("message", id)` when `from` is not one of the
    /// agent's messages.
    pub fn rollback_preview(self, agent: &AgentId, from: &MessageId) -> Result<TurnRollback> {
        self.store.read(|c| plan(c, agent, from))
    }

    /// Removes the conversation from message `from` on, in one transaction: those messages
    /// (recall search follows through the FTS triggers), the runs they belong to with their
    /// steps and usage, the passages those steps inserted, and their block edits — each block
    /// goes back to its value before the first of them, as a new version recorded by
    /// [`Editor::Rollback`]. The old history rows stay (they are what happened). Returns what
    /// was undone. With `lease`, the write is fenced by it (`RewriteStore::rollback_from`).
    ///
    /// Errors (nothing changes): `LeaseLost`; `NotFound("agent")`, `NotFound("message", id)`; `Conflict`
    /// naming the blocks another writer changed after the turn's edits.
    pub fn rollback_from(
        self,
        lease: Option<&Lease>,
        agent: &AgentId,
        from: &MessageId,
    ) -> Result<TurnRollback> {
        let _held = lease.map(|l| self.store.hold_lease(l)).transpose()?;
        self.store.write(|tx| {
            let plan = plan(tx, agent, from)?;
            if plan.conflicts().next().is_some() {
                return Err(plan.conflict_error());
            }
            let now = sql::now();
            for b in &plan.blocks {
                let current: Block = blocks::load(tx, &b.block_id)?;
                if current.value != b.restored_value {
                    blocks::commit_value(
                        tx,
                        &current,
                        b.restored_value.clone(),
                        &Author::by(&Editor::Rollback),
                        now,
                    )?;
                }
            }
            for p in &plan.passages {
                tx.prepare_cached("DELETE FROM passages WHERE id = ?1")
                    .db()?
                    .execute([p.id.as_str()])
                    .db()?;
            }
            let runs = sql::to_json(&plan.runs.iter().map(RunId::as_str).collect::<Vec<_>>())?;
            for table in ["steps", "runs"] {
                let column = if table == "steps" { "run_id" } else { "id" };
                tx.prepare_cached(&format!(
                    "DELETE FROM {table} WHERE agent_id = ?1
                     AND {column} IN (SELECT value FROM json_each(?2))"
                ))
                .db()?
                .execute(params![agent.as_str(), runs])
                .db()?;
            }
            let seq: i64 = tx
                .prepare_cached("SELECT seq FROM messages WHERE id = ?1")
                .db()?
                .query_row([from.as_str()], |r| r.get(0))
                .db()?;
            tx.prepare_cached("DELETE FROM messages WHERE agent_id = ?1 AND seq >= ?2")
                .db()?
                .execute(params![agent.as_str(), seq])
                .db()?;
            Ok(plan)
        })
    }

    /// Deletes one of the agent's messages from recall memory (and the context window), with
    /// everything that only makes sense with it, in one transaction: an assistant message's
    /// tool calls take their tool results along, so no call is left unanswered and no result
    /// answers nothing. Memory edits and passages stay (use [`rollback_from`](MessageRows::rollback_from)
    /// to undo a turn). Returns the ids removed. With `lease`, the write is fenced by it.
    ///
    /// Errors: `LeaseLost`; `NotFound("message", id)` when it is not one of the agent's messages;
    /// `Invalid` for a tool result (delete the assistant message that made the call).
    pub fn delete(
        self,
        lease: Option<&Lease>,
        agent: &AgentId,
        id: &MessageId,
    ) -> Result<Vec<MessageId>> {
        let _held = lease.map(|l| self.store.hold_lease(l)).transpose()?;
        self.store.write(|tx| {
            let m = tx
                .prepare_cached(&format!(
                    "SELECT {} FROM messages m WHERE m.id = ?1 AND m.agent_id = ?2",
                    message_rows::MSG_COLS
                ))
                .db()?
                .query_row(
                    params![id.as_str(), agent.as_str()],
                    message_rows::message_from_row,
                )
                .optional()
                .db()?
                .ok_or_else(|| Error::not_found("message", id.as_str()))?;
            if m.role == Role::Tool {
                return Err(tool_result_alone());
            }
            let mut removed = vec![m.id.clone()];
            for call in &m.tool_calls {
                let answers: Vec<String> = tx
                    .prepare_cached(
                        "SELECT id FROM messages WHERE agent_id = ?1 AND role = 'tool'
                         AND tool_call_id = ?2",
                    )
                    .db()?
                    .query_map(params![agent.as_str(), call.id], |r| r.get(0))
                    .db()?
                    .collect::<rusqlite::Result<_>>()
                    .db()?;
                removed.extend(answers.into_iter().map(MessageId::from));
            }
            let mut delete = tx
                .prepare_cached("DELETE FROM messages WHERE id = ?1")
                .db()?;
            for r in &removed {
                delete.execute([r.as_str()]).db()?;
            }
            Ok(removed)
        })
    }

    /// The agent's last user message a person wrote (not a heartbeat or system alert): the
    /// one "regenerate" re-sends. `None` when there is none.
    ///
    /// Errors: `NotFound("agent")`.
    pub fn last_user_message(self, agent: &AgentId) -> Result<Option<engram_core::Message>> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            c.prepare_cached(&format!(
                "SELECT {} FROM messages m WHERE m.agent_id = ?1 AND m.role = ?2
                 AND m.kind = 'chat' ORDER BY m.seq DESC LIMIT 1",
                message_rows::MSG_COLS
            ))
            .db()?
            .query_row(
                params![agent.as_str(), Role::User.as_str()],
                message_rows::message_from_row,
            )
            .optional()
            .db()
        })
    }
}

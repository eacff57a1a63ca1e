//! Finished runs: how each turn ended (stop reason, error) and what it used, so the chat can
//! show its usage line and a "stopped" label after a reload from stored data, not from what one
//! window happened to see live.

use crate::blocks;
use crate::rooms::RunRows;
use crate::sql::{self, DbResult, json_opt, ts, uint};
use engram_core::{AgentId, Result, RunId, RunRecord, StopReason, Usage};
use rusqlite::params;

pub use engram_store_api::ToolEdit;

fn stop_from(s: &str) -> StopReason {
    serde_json::from_value(serde_json::Value::String(s.to_owned())).unwrap_or(StopReason::Error)
}

impl RunRows<'_> {
    /// The block edits made by the agent's steps in `runs`, in the order they were made (two
    /// edits in one step are two rows, each with its own old and new value).
    /// Errors: `NotFound("agent")`.
    pub fn edits(self, agent: &AgentId, runs: &[RunId]) -> Result<Vec<ToolEdit>> {
        let runs = sql::to_json(&runs.iter().map(RunId::as_str).collect::<Vec<_>>())?;
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let cols = blocks::EDIT_COLS
                .split(',')
                .map(|col| format!("h.{}", col.trim()))
                .collect::<Vec<_>>()
                .join(", ");
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {cols}, b.label FROM block_history h
                     JOIN steps s ON s.id = h.step_id
                     JOIN blocks b ON b.id = h.block_id
                     WHERE s.agent_id = ?1 AND s.run_id IN (SELECT value FROM json_each(?2))
                     ORDER BY h.pk"
                ))
                .db()?;
            let rows = stmt
                .query_map(params![agent.as_str(), runs], |r| {
                    Ok(ToolEdit {
                        edit: blocks::edit_from_row(r)?,
                        label: r.get(9)?,
                    })
                })
                .db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// Records how a run ended (replacing an earlier record of the same run).
    /// Errors: `NotFound("agent")`.
    pub fn record(self, r: &RunRecord) -> Result<()> {
        self.store.write(|tx| {
            sql::ensure_agent(tx, &r.agent_id)?;
            tx.prepare_cached(
                "INSERT OR REPLACE INTO runs (id, agent_id, stop_reason, error, prompt_tokens,
                                              completion_tokens, step_count, ended_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .db()?
            .execute(params![
                r.id.as_str(),
                r.agent_id.as_str(),
                r.stop_reason.as_str(),
                r.error.as_ref().map(sql::to_json).transpose()?,
                sql::int(r.usage.prompt_tokens, "prompt_tokens")?,
                sql::int(r.usage.completion_tokens, "completion_tokens")?,
                r.usage.step_count,
                sql::micros(r.ended_at),
            ])
            .db()?;
            Ok(())
        })
    }

    /// The agent's finished runs whose id is in `ids` (all of them when `ids` is `None`),
    /// oldest first. Errors: `NotFound("agent")`.
    pub fn list(self, agent: &AgentId, ids: Option<&[RunId]>) -> Result<Vec<RunRecord>> {
        let ids = ids
            .map(|ids| sql::to_json(&ids.iter().map(RunId::as_str).collect::<Vec<_>>()))
            .transpose()?;
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let mut stmt = c
                .prepare_cached(
                    "SELECT id, agent_id, stop_reason, error, prompt_tokens, completion_tokens,
                            step_count, ended_at
                     FROM runs WHERE agent_id = ?1
                       AND (?2 IS NULL OR id IN (SELECT value FROM json_each(?2)))
                     ORDER BY ended_at, id",
                )
                .db()?;
            let rows = stmt
                .query_map(params![agent.as_str(), ids], |r| {
                    let (prompt, completion) = (uint(r, 4)?, uint(r, 5)?);
                    Ok(RunRecord {
                        id: RunId::from(r.get::<_, String>(0)?),
                        agent_id: AgentId::from(r.get::<_, String>(1)?),
                        stop_reason: stop_from(&r.get::<_, String>(2)?),
                        error: json_opt(r, 3)?,
                        usage: Usage {
                            prompt_tokens: prompt,
                            completion_tokens: completion,
                            total_tokens: prompt + completion,
                            step_count: r.get(6)?,
                        },
                        ended_at: ts(r, 7)?,
                    })
                })
                .db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }
}

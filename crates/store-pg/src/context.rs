//! The context window's bookkeeping on PostgreSQL: messages in the window, compactions, the
//! cached system prompt and run records.
//!
//! A compaction updates the agent's row first (its summary): that takes the row lock an
//! append takes, so a compaction and an append of the same agent queue instead of interleaving.

use crate::PgStore;
use crate::blocks::{self, Lock};
use crate::rows::{self, AGENT_COLS, AGENT_WIDTH, Cached, MESSAGE_COLS};
use crate::tx::{TxError, transaction};
use async_trait::async_trait;
use engram_core::{
    Agent, AgentId, Error, ErrorBody, Message, MessageId, Result, RunId, RunRecord, StopReason,
    Usage,
};
use engram_store_api::ContextStore;
use tokio_postgres::Row;

fn run_from_row(r: &Row) -> crate::tx::TxResult<RunRecord> {
    let stop: String = r.try_get(2)?;
    let error: Option<serde_json::Value> = r.try_get(3)?;
    let (prompt, completion) = (rows::uint(r, 4)?, rows::uint(r, 5)?);
    Ok(RunRecord {
        id: RunId::from(r.try_get::<_, String>(0)?),
        agent_id: AgentId::from(r.try_get::<_, String>(1)?),
        stop_reason: serde_json::from_value(serde_json::Value::String(stop))
            .unwrap_or(StopReason::Error),
        error: error
            .map(serde_json::from_value::<ErrorBody>)
            .transpose()
            .map_err(|e| Error::Storage(format!("a stored run error cannot be read: {e}")))?,
        usage: Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt + completion,
            step_count: u32::try_from(rows::uint(r, 6)?).unwrap_or(u32::MAX),
        },
        ended_at: r.try_get(7)?,
    })
}

#[async_trait]
impl ContextStore for PgStore {
    async fn in_context_messages(&self, agent: &AgentId) -> Result<Vec<Message>> {
        let c = self.client().await?;
        let found = c
            .rows(
                &format!(
                    "SELECT {MESSAGE_COLS} FROM messages m
                     WHERE m.agent_id = $1 AND m.in_context ORDER BY m.seq"
                ),
                &[&agent.as_str()],
            )
            .await
            .map_err(TxError::from)?;
        // Read before every step: the agent is looked up only when there is nothing to show.
        if found.is_empty() {
            blocks::ensure_agent(&c, agent, Lock::None).await?;
        }
        Ok(rows::all(&found, rows::message)?)
    }

    async fn evict_messages(
        &self,
        agent: &AgentId,
        ids: &[MessageId],
        summary: &str,
    ) -> Result<()> {
        transaction!(self, |tx| {
            let n = tx
                .exec(
                    "UPDATE agents SET summary = $2 WHERE id = $1",
                    &[&agent.as_str(), &summary],
                )
                .await?;
            if n == 0 {
                return Err(Error::not_found("agent", agent.as_str()).into());
            }
            let mut newest: Option<i64> = None;
            for id in ids {
                let seq: i64 = tx
                    .one_opt(
                        "UPDATE messages SET in_context = false WHERE id = $1 AND agent_id = $2
                         RETURNING seq",
                        &[&id.as_str(), &agent.as_str()],
                    )
                    .await?
                    .ok_or_else(|| Error::not_found("message", id.as_str()))?
                    .try_get(0)?;
                newest = newest.max(Some(seq));
            }
            if let Some(seq) = newest {
                tx.exec(
                    "INSERT INTO compactions (agent_id, seq, summary, evicted, created_at)
                     VALUES ($1, $2, $3, $4, $5)",
                    &[
                        &agent.as_str(),
                        &seq,
                        &summary,
                        &rows::limit(ids.len()),
                        &rows::now(),
                    ],
                )
                .await?;
            }
        })
    }

    async fn agent_with_system_cache(
        &self,
        agent: &AgentId,
    ) -> Result<(Agent, Option<(String, String)>)> {
        let c = self.client().await?;
        let row = c
            .one_opt(
                &format!(
                    "SELECT {AGENT_COLS}, system_cache_memory, system_cache_prompt
                     FROM agents WHERE id = $1"
                ),
                &[&agent.as_str()],
            )
            .await
            .map_err(TxError::from)?
            .ok_or_else(|| Error::not_found("agent", agent.as_str()))?;
        let read = || -> crate::tx::TxResult<_> {
            let memory: Option<String> = row.try_get(AGENT_WIDTH)?;
            let prompt: Option<String> = row.try_get(AGENT_WIDTH + 1)?;
            Ok((rows::agent(&row)?, memory.zip(prompt)))
        };
        Ok(read()?)
    }

    async fn set_system_cache(
        &self,
        agent: &AgentId,
        memory_section: &str,
        prompt: &str,
    ) -> Result<()> {
        let c = self.client().await?;
        let n = c
            .exec(
                "UPDATE agents SET system_cache_memory = $2, system_cache_prompt = $3
                 WHERE id = $1",
                &[&agent.as_str(), &memory_section, &prompt],
            )
            .await
            .map_err(TxError::from)?;
        if n == 0 {
            return Err(Error::not_found("agent", agent.as_str()));
        }
        Ok(())
    }

    async fn memory_counts(&self, agent: &AgentId) -> Result<(u64, u64)> {
        let c = self.client().await?;
        let counts = c
            .one_opt(
                "SELECT (SELECT count(*) FROM messages WHERE agent_id = a.id),
                        (SELECT count(*) FROM passages WHERE agent_id = a.id)
                 FROM agents a WHERE a.id = $1",
                &[&agent.as_str()],
            )
            .await
            .map_err(TxError::from)?
            .ok_or_else(|| Error::not_found("agent", agent.as_str()))?;
        let (messages, passages): (i64, i64) = (counts.get(0), counts.get(1));
        Ok((
            u64::try_from(messages).unwrap_or(0),
            u64::try_from(passages).unwrap_or(0),
        ))
    }

    async fn record_run(&self, run: &RunRecord) -> Result<()> {
        let error = run.error.as_ref().map(rows::to_json).transpose()?;
        let c = self.client().await?;
        // One statement, one round trip (written at the end of every run): the foreign key's
        // check holds the agent's row while it runs, and refuses a missing agent.
        let written = c
            .exec(
                "INSERT INTO runs (id, agent_id, stop_reason, error, prompt_tokens,
                                   completion_tokens, step_count, ended_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                 ON CONFLICT (id) DO UPDATE SET
                    agent_id = excluded.agent_id, stop_reason = excluded.stop_reason,
                    error = excluded.error, prompt_tokens = excluded.prompt_tokens,
                    completion_tokens = excluded.completion_tokens,
                    step_count = excluded.step_count, ended_at = excluded.ended_at",
                &[
                    &run.id.as_str(),
                    &run.agent_id.as_str(),
                    &run.stop_reason.as_str(),
                    &error,
                    &rows::int(run.usage.prompt_tokens, "prompt_tokens")?,
                    &rows::int(run.usage.completion_tokens, "completion_tokens")?,
                    &i64::from(run.usage.step_count),
                    &rows::truncate(run.ended_at),
                ],
            )
            .await;
        written.map_err(|e| blocks::missing_agent(e, &run.agent_id))?;
        Ok(())
    }

    async fn list_runs(&self, agent: &AgentId, ids: Option<&[RunId]>) -> Result<Vec<RunRecord>> {
        let c = self.client().await?;
        blocks::ensure_agent(&c, agent, Lock::None).await?;
        let ids: Option<Vec<&str>> = ids.map(|ids| ids.iter().map(RunId::as_str).collect());
        let found = c
            .rows(
                "SELECT id, agent_id, stop_reason, error, prompt_tokens, completion_tokens,
                        step_count, ended_at
                 FROM runs WHERE agent_id = $1 AND ($2::text[] IS NULL OR id = ANY($2))
                 ORDER BY ended_at, id COLLATE \"C\"",
                &[&agent.as_str(), &ids],
            )
            .await
            .map_err(TxError::from)?;
        Ok(rows::all(&found, run_from_row)?)
    }
}

//! Changing a conversation that already happened, on PostgreSQL: rolling it back from one
//! message, deleting a message, changing a message's text, emptying the context window (the
//! rules are the interface's, `engram_store_api::RewriteStore`).
//!
//! Each write locks the agent's row as an append does (`FOR NO KEY UPDATE`), so no message is
//! appended in the middle of it, and a rollback locks each block it puts back (`FOR UPDATE`)
//! before it reads the block's history: an edit that commits first is seen and refuses the
//! rollback, one that comes later waits and applies to the restored value.

use crate::PgStore;
use crate::blocks::{self, Lock};
use crate::leases::hold;
use crate::rows::{self, Cached, MESSAGE_COLS, PASSAGE_COLS};
use crate::tx::{TxError, TxResult, transaction};
use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_core::{
    AgentId, BlockId, Editor, Error, Message, MessageId, Result, Role, RunId, ToolCall, Usage,
};
use engram_store_api::{BlockRevert, Lease, RewriteStore, TurnRollback, tool_result_alone};

/// The `seq` of one of the agent's messages. Errors: `NotFound("message", id)`.
pub(crate) async fn seq_of(
    c: &impl GenericClient,
    agent: &AgentId,
    id: &MessageId,
) -> TxResult<i64> {
    match c
        .one_opt(
            "SELECT seq FROM messages WHERE id = $1 AND agent_id = $2",
            &[&id.as_str(), &agent.as_str()],
        )
        .await?
    {
        Some(r) => Ok(r.try_get(0)?),
        None => Err(Error::not_found("message", id.as_str()).into()),
    }
}

/// What rolling back from `from` undoes, read inside `c`; each block to put back is loaded
/// with `lock` first (`Update` when the rollback is about to be applied).
async fn plan(
    c: &impl GenericClient,
    agent: &AgentId,
    from: &MessageId,
    lock: Lock,
) -> TxResult<TurnRollback> {
    let seq = seq_of(c, agent, from).await?;
    let found = c
        .rows(
            "SELECT id, run_id FROM messages WHERE agent_id = $1 AND seq >= $2 ORDER BY seq",
            &[&agent.as_str(), &seq],
        )
        .await?;
    let mut messages = Vec::with_capacity(found.len());
    let mut runs: Vec<String> = Vec::new();
    for r in &found {
        messages.push(MessageId::from(r.try_get::<_, String>(0)?));
        if let Some(run) = r.try_get::<_, Option<String>>(1)?
            && !runs.contains(&run)
        {
            runs.push(run);
        }
    }
    let mut usage = Usage::default();
    let mut steps: Vec<String> = Vec::new();
    for r in c
        .rows(
            "SELECT id, prompt_tokens, completion_tokens FROM steps
             WHERE agent_id = $1 AND run_id = ANY($2) ORDER BY started_at, step_index",
            &[&agent.as_str(), &runs],
        )
        .await?
    {
        usage.add_step(rows::uint(&r, 1)?, rows::uint(&r, 2)?);
        steps.push(r.try_get(0)?);
    }
    let passages = c
        .rows(
            &format!(
                "SELECT {PASSAGE_COLS} FROM passages p
                 WHERE p.agent_id = $1 AND p.step_id = ANY($2) ORDER BY p.created_at, p.pk"
            ),
            &[&agent.as_str(), &steps],
        )
        .await?;
    Ok(TurnRollback {
        agent_id: agent.clone(),
        from_message: from.clone(),
        messages,
        runs: runs.into_iter().map(RunId::from).collect(),
        usage,
        blocks: reverts(c, agent, &steps, lock).await?,
        passages: rows::all(&passages, rows::passage)?,
    })
}

/// For each block `steps` edited: the value before their first edit, and whether a history row
/// after it came from someone else (not the steps themselves, a rollback, or `agent`'s steps an
/// earlier rollback removed: see `engram_store::rollback`).
async fn reverts(
    c: &impl GenericClient,
    agent: &AgentId,
    steps: &[String],
    lock: Lock,
) -> TxResult<Vec<BlockRevert>> {
    let edited = c
        .rows(
            "SELECT block_id FROM block_history WHERE step_id = ANY($1)
             GROUP BY block_id ORDER BY min(pk)",
            &[&steps],
        )
        .await?;
    let mut out = Vec::with_capacity(edited.len());
    for r in &edited {
        let id = BlockId::from(r.try_get::<_, String>(0)?);
        // Locked before its history is read, so no edit lands between the check and the
        // restore.
        let block = match blocks::load(c, &id, lock).await {
            Ok(b) => b,
            // A deleted block has nothing left to restore.
            Err(TxError::Engine(Error::NotFound { .. })) => continue,
            Err(e) => return Err(e),
        };
        let row = c
            .one(
                "WITH first AS (SELECT min(pk) AS pk FROM block_history
                                WHERE block_id = $1 AND step_id = ANY($2))
                 SELECT (SELECT old_value FROM block_history WHERE pk = first.pk),
                        count(*) FILTER (WHERE h.step_id = ANY($2)),
                        count(*) FILTER (WHERE NOT coalesce(h.step_id = ANY($2), false)
                            AND coalesce(h.editor->>'kind', '') <> 'rollback'
                            AND NOT (h.step_id IS NOT NULL
                                     AND coalesce(h.editor->>'agent_id' = $3, false)
                                     AND NOT EXISTS (SELECT 1 FROM steps s
                                                     WHERE s.id = h.step_id)))
                 FROM first JOIN block_history h ON h.block_id = $1 AND h.pk >= first.pk
                 GROUP BY first.pk",
                &[&id.as_str(), &steps, &agent.as_str()],
            )
            .await?;
        let edits: i64 = row.try_get(1)?;
        let foreign: i64 = row.try_get(2)?;
        out.push(BlockRevert {
            block_id: block.id.clone(),
            label: block.label.clone(),
            current_value: block.value.clone(),
            restored_value: row.try_get(0)?,
            version: block.version,
            edits: u32::try_from(edits).unwrap_or(u32::MAX),
            changed_later: foreign > 0,
        });
    }
    Ok(out)
}

/// Checks `lease` is the agent's and holds it for the transaction.
async fn fence(c: &impl GenericClient, lease: Option<&Lease>, agent: &AgentId) -> TxResult<()> {
    Lease::check_for(lease, agent)?;
    if let Some(lease) = lease {
        hold(c, lease).await?;
    }
    Ok(())
}

#[async_trait]
impl RewriteStore for PgStore {
    async fn rollback_preview(&self, agent: &AgentId, from: &MessageId) -> Result<TurnRollback> {
        let c = self.client().await?;
        blocks::ensure_agent(&c, agent, Lock::None).await?;
        Ok(plan(&c, agent, from, Lock::None).await?)
    }

    async fn rollback_from(
        &self,
        lease: Option<&Lease>,
        agent: &AgentId,
        from: &MessageId,
    ) -> Result<TurnRollback> {
        transaction!(self, |tx| {
            fence(&tx, lease, agent).await?;
            blocks::ensure_agent(&tx, agent, Lock::NoKeyUpdate).await?;
            let plan = plan(&tx, agent, from, Lock::Update).await?;
            if plan.conflicts().next().is_some() {
                return Err(plan.conflict_error().into());
            }
            let now = rows::now();
            for b in &plan.blocks {
                let current = blocks::load(&tx, &b.block_id, Lock::Update).await?;
                if current.value != b.restored_value {
                    blocks::commit_value(
                        &tx,
                        &current,
                        b.restored_value.clone(),
                        &Editor::Rollback,
                        None,
                        now,
                    )
                    .await?;
                }
            }
            let passages: Vec<&str> = plan.passages.iter().map(|p| p.id.as_str()).collect();
            tx.exec("DELETE FROM passages WHERE id = ANY($1)", &[&passages])
                .await?;
            let runs: Vec<&str> = plan.runs.iter().map(RunId::as_str).collect();
            tx.exec(
                "DELETE FROM steps WHERE agent_id = $1 AND run_id = ANY($2)",
                &[&agent.as_str(), &runs],
            )
            .await?;
            tx.exec(
                "DELETE FROM runs WHERE agent_id = $1 AND id = ANY($2)",
                &[&agent.as_str(), &runs],
            )
            .await?;
            let seq = seq_of(&tx, agent, from).await?;
            tx.exec(
                "DELETE FROM messages WHERE agent_id = $1 AND seq >= $2",
                &[&agent.as_str(), &seq],
            )
            .await?;
            plan
        })
    }

    async fn delete_message(
        &self,
        lease: Option<&Lease>,
        agent: &AgentId,
        id: &MessageId,
    ) -> Result<Vec<MessageId>> {
        transaction!(self, |tx| {
            fence(&tx, lease, agent).await?;
            blocks::ensure_agent(&tx, agent, Lock::NoKeyUpdate).await?;
            let m = match tx
                .one_opt(
                    &format!(
                        "SELECT {MESSAGE_COLS} FROM messages m WHERE m.id = $1 AND m.agent_id = $2"
                    ),
                    &[&id.as_str(), &agent.as_str()],
                )
                .await?
            {
                Some(r) => rows::message(&r)?,
                None => return Err(Error::not_found("message", id.as_str()).into()),
            };
            if m.role == Role::Tool {
                return Err(tool_result_alone().into());
            }
            let calls: Vec<&str> = m.tool_calls.iter().map(|c| c.id.as_str()).collect();
            let mut removed = vec![m.id.clone()];
            for r in tx
                .rows(
                    "SELECT id FROM messages WHERE agent_id = $1 AND role = 'tool'
                     AND tool_call_id = ANY($2) ORDER BY seq",
                    &[&agent.as_str(), &calls],
                )
                .await?
            {
                removed.push(MessageId::from(r.try_get::<_, String>(0)?));
            }
            let ids: Vec<&str> = removed.iter().map(MessageId::as_str).collect();
            tx.exec("DELETE FROM messages WHERE id = ANY($1)", &[&ids])
                .await?;
            removed
        })
    }

    async fn reset_context(&self, lease: Option<&Lease>, agent: &AgentId) -> Result<usize> {
        transaction!(self, |tx| {
            fence(&tx, lease, agent).await?;
            blocks::ensure_agent(&tx, agent, Lock::NoKeyUpdate).await?;
            let n = tx
                .exec(
                    "UPDATE messages SET in_context = false WHERE agent_id = $1 AND in_context",
                    &[&agent.as_str()],
                )
                .await?;
            tx.exec(
                "UPDATE agents SET summary = NULL WHERE id = $1",
                &[&agent.as_str()],
            )
            .await?;
            // A call waiting for approval left the window with its message: nothing waits now.
            tx.exec(
                "DELETE FROM pending_approvals WHERE agent_id = $1",
                &[&agent.as_str()],
            )
            .await?;
            usize::try_from(n).unwrap_or(usize::MAX)
        })
    }

    async fn update_message_text(
        &self,
        lease: Option<&Lease>,
        agent: &AgentId,
        id: &MessageId,
        content: &str,
        reasoning: Option<&str>,
        tool_calls: Option<&[ToolCall]>,
    ) -> Result<Message> {
        let calls = tool_calls.map(rows::tool_calls_json).transpose()?.flatten();
        transaction!(self, |tx| {
            fence(&tx, lease, agent).await?;
            let updated = tx
                .one_opt(
                    &format!(
                        "UPDATE messages m SET content = $3,
                             reasoning = coalesce($4, m.reasoning),
                             tool_calls = coalesce($5, m.tool_calls)
                         WHERE m.id = $1 AND m.agent_id = $2
                         RETURNING {MESSAGE_COLS}"
                    ),
                    &[&id.as_str(), &agent.as_str(), &content, &reasoning, &calls],
                )
                .await?;
            match updated {
                Some(r) => rows::message(&r)?,
                None => return Err(Error::not_found("message", id.as_str()).into()),
            }
        })
    }

    async fn last_user_message(&self, agent: &AgentId) -> Result<Option<Message>> {
        let c = self.client().await?;
        blocks::ensure_agent(&c, agent, Lock::None).await?;
        let row = c
            .one_opt(
                &format!(
                    "SELECT {MESSAGE_COLS} FROM messages m
                     WHERE m.agent_id = $1 AND m.role = $2 AND m.kind = 'chat'
                     ORDER BY m.seq DESC LIMIT 1"
                ),
                &[&agent.as_str(), &Role::User.as_str()],
            )
            .await
            .map_err(TxError::from)?;
        Ok(row.as_ref().map(rows::message).transpose()?)
    }
}

//! Agents on PostgreSQL: the row with its settings, created with its blocks in one
//! transaction.

use crate::PgStore;
use crate::agent_list;
use crate::blocks::{self, Lock, label_conflict};
use crate::rows::{self, AGENT_COLS, Cached};
use crate::tx::{TxError, TxResult, transaction};
use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_core::{Agent, AgentId, AgentPatch, Block, BlockId, Error, NewBlock, Result};
use engram_store_api::{AgentList, AgentStore};
use std::collections::HashSet;

#[async_trait]
impl AgentStore for PgStore {
    async fn create_agent(
        &self,
        agent: &Agent,
        new_blocks: &[NewBlock],
        attach: &[BlockId],
    ) -> Result<(Agent, Vec<Block>)> {
        let mut agent = agent.clone();
        agent.created_at = rows::truncate(agent.created_at);
        agent.updated_at = rows::truncate(agent.updated_at);
        let agent = &agent;
        transaction!(self, |tx| {
            insert_row(&tx, agent).await?;
            let now = rows::now();
            let mut attached: Vec<Block> = Vec::with_capacity(new_blocks.len() + attach.len());
            let mut labels = HashSet::new();
            let mut claim = |b: &Block| {
                if labels.insert(b.label.clone()) {
                    Ok(())
                } else {
                    Err(TxError::from(label_conflict(&b.label)))
                }
            };
            for nb in new_blocks {
                let b = nb.to_block(now)?;
                claim(&b)?;
                blocks::insert(&tx, &b).await?;
                attached.push(b);
            }
            for id in attach {
                if attached.iter().any(|b| &b.id == id) {
                    continue;
                }
                // Shared: its label cannot change until this agent's link is committed.
                let b = blocks::load(&tx, id, Lock::Share).await?;
                claim(&b)?;
                attached.push(b);
            }
            for (position, b) in (0_i64..).zip(&attached) {
                blocks::link(&tx, &agent.id, &b.id, position).await?;
            }
            (agent.clone(), attached)
        })
    }

    async fn get_agent(&self, id: &AgentId) -> Result<Agent> {
        let c = self.client().await?;
        let row = c
            .one_opt(
                &format!("SELECT {AGENT_COLS} FROM agents WHERE id = $1"),
                &[&id.as_str()],
            )
            .await
            .map_err(TxError::from)?;
        match row {
            Some(r) => Ok(rows::agent(&r)?),
            None => Err(Error::not_found("agent", id.as_str())),
        }
    }

    async fn list_agents(&self) -> Result<Vec<Agent>> {
        let c = self.client().await?;
        let found = c
            .rows(
                &format!("SELECT {AGENT_COLS} FROM agents ORDER BY created_at, id"),
                &[],
            )
            .await
            .map_err(TxError::from)?;
        Ok(rows::all(&found, rows::agent)?)
    }

    async fn page_agents(&self, q: &AgentList) -> Result<Vec<Agent>> {
        let c = self.client().await?;
        Ok(agent_list::page(&c, q).await?)
    }

    async fn count_agents(&self, q: &AgentList) -> Result<u64> {
        let c = self.client().await?;
        Ok(agent_list::count(&c, q).await?)
    }

    async fn update_agent(&self, id: &AgentId, patch: &AgentPatch) -> Result<Agent> {
        transaction!(self, |tx| {
            let row = tx
                .one_opt(
                    &format!("SELECT {AGENT_COLS} FROM agents WHERE id = $1 FOR UPDATE"),
                    &[&id.as_str()],
                )
                .await?;
            let Some(row) = row else {
                return Err(Error::not_found("agent", id.as_str()).into());
            };
            let mut a = rows::agent(&row)?;
            let system_changed = patch.apply_to(&mut a);
            a.updated_at = rows::now().max(a.updated_at);
            tx.exec(
                "UPDATE agents SET name = $2, description = $3, system = $4, llm = $5,
                        embedding = $6, loop_style = $7, max_steps = $8, tools = $9,
                        tool_rules = $10, updated_at = $11,
                        system_cache_memory = CASE WHEN $12 THEN NULL ELSE system_cache_memory END,
                        system_cache_prompt = CASE WHEN $12 THEN NULL ELSE system_cache_prompt END
                 WHERE id = $1",
                &[
                    &id.as_str(),
                    &a.name,
                    &a.description,
                    &a.system,
                    &rows::to_json(&a.llm)?,
                    &a.embedding.as_ref().map(rows::to_json).transpose()?,
                    &rows::loop_style_str(a.loop_style),
                    &i64::from(a.max_steps),
                    &rows::to_json(&a.tools)?,
                    &rows::to_json(&a.tool_rules)?,
                    &a.updated_at,
                    &system_changed,
                ],
            )
            .await?;
            a
        })
    }

    async fn agent_tags(&self, id: &AgentId) -> Result<Vec<String>> {
        let c = self.client().await?;
        let row = c
            .one_opt("SELECT tags FROM agents WHERE id = $1", &[&id.as_str()])
            .await
            .map_err(TxError::from)?;
        match row {
            Some(r) => Ok(r.get(0)),
            None => Err(Error::not_found("agent", id.as_str())),
        }
    }

    async fn set_agent_tags(&self, id: &AgentId, tags: &[String]) -> Result<()> {
        let tags = engram_store_api::clean_tags(tags);
        let c = self.client().await?;
        let n = c
            .exec(
                "UPDATE agents SET tags = $2 WHERE id = $1",
                &[&id.as_str(), &tags],
            )
            .await
            .map_err(TxError::from)?;
        if n == 0 {
            return Err(Error::not_found("agent", id.as_str()));
        }
        Ok(())
    }

    async fn delete_agent(&self, id: &AgentId) -> Result<()> {
        transaction!(self, |tx| {
            blocks::ensure_agent(&tx, id, Lock::Update).await?;
            let linked: Vec<String> = tx
                .rows(
                    "SELECT block_id FROM agent_blocks WHERE agent_id = $1",
                    &[&id.as_str()],
                )
                .await?
                .iter()
                .map(|r| r.get(0))
                .collect();
            // The links go with the agent (ON DELETE CASCADE); then its blocks no one else
            // uses.
            tx.exec("DELETE FROM agents WHERE id = $1", &[&id.as_str()])
                .await?;
            tx.exec(
                "DELETE FROM blocks b WHERE b.id = ANY($1)
                   AND NOT EXISTS (SELECT 1 FROM agent_blocks ab WHERE ab.block_id = b.id)",
                &[&linked],
            )
            .await?;
            tracing::debug!(agent = %id, "deleted agent");
        })
    }
}

/// Inserts an agent's row as given (times already truncated), inside the caller's
/// transaction. Errors: `Conflict` when the id exists (concurrent creations of one id: the
/// second waits for the first, then inserts nothing).
pub(crate) async fn insert_row(c: &impl GenericClient, agent: &Agent) -> TxResult<()> {
    let inserted = c
        .exec(
            &format!(
                "INSERT INTO agents ({AGENT_COLS})
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
                 ON CONFLICT (id) DO NOTHING"
            ),
            &[
                &agent.id.as_str(),
                &agent.name,
                &agent.description,
                &agent.system,
                &rows::to_json(&agent.llm)?,
                &agent.embedding.as_ref().map(rows::to_json).transpose()?,
                &rows::loop_style_str(agent.loop_style),
                &i64::from(agent.max_steps),
                &rows::to_json(&agent.tools)?,
                &rows::to_json(&agent.tool_rules)?,
                &agent.summary,
                &agent.created_at,
                &agent.updated_at,
            ],
        )
        .await?;
    if inserted == 0 {
        return Err(Error::Conflict(format!("agent {} already exists", agent.id)).into());
    }
    Ok(())
}

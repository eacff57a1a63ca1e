//! Bulk import on PostgreSQL: a whole [`ImportBundle`] (agents with their blocks, history,
//! messages, passages and tools) in one transaction, as the SQLite store writes it.

use crate::PgStore;
use crate::agents::insert_row as insert_agent;
use crate::blocks;
use crate::passages;
use crate::rows::{self, Cached};
use crate::steps::insert_step;
use crate::tools::{load_by as tool_by, upsert as upsert_tool};
use crate::tx::{TxResult, transaction};
use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_core::trust::ImportedToolStatus;
use engram_core::{AgentId, BlockEdit, BlockId, Error, PassageId, Result, Timestamp, Tool, ToolId};
use engram_store_api::{
    EXTRAS_SETTING_PREFIX, ImportBundle, ImportMessage, ImportStore, ImportedIds, ImportedTool,
    SEQ_GAP, added_status, check_bundle, is_same_tool, tool_candidate,
};
use std::collections::{HashMap, HashSet};

#[async_trait]
impl ImportStore for PgStore {
    async fn import_bundle(&self, bundle: &ImportBundle) -> Result<ImportedIds> {
        check_bundle(bundle)?;
        passages::check_new(
            &bundle
                .agents
                .iter()
                .flat_map(|a| a.passages.iter().cloned())
                .collect::<Vec<_>>(),
        )?;
        transaction!(self, |tx| {
            refuse_taken(&tx, bundle).await?;
            let mut out = ImportedIds::default();
            let bundle_names: HashSet<&str> =
                bundle.tools.iter().map(|t| t.name.as_str()).collect();
            let mut renames = HashMap::new();
            for t in &bundle.tools {
                let placed = place_tool(&tx, t, &bundle_names).await?;
                if placed.tool.name != t.name {
                    renames.insert(t.name.clone(), placed.tool.name.clone());
                }
                out.tools.push(placed);
            }
            for ib in &bundle.blocks {
                let mut b = ib.block.clone();
                b.created_at = rows::truncate(b.created_at);
                b.updated_at = rows::truncate(b.updated_at);
                blocks::insert(&tx, &b).await?;
                for e in &ib.history {
                    insert_edit(&tx, &b.id, e).await?;
                }
                out.blocks.push(b.id);
            }
            let now = rows::now();
            for ia in &bundle.agents {
                let mut a = ia.agent.clone();
                a.created_at = rows::truncate(a.created_at);
                a.updated_at = rows::truncate(a.updated_at);
                for n in &mut a.tools {
                    if let Some(new) = renames.get(n.as_str()) {
                        n.clone_from(new);
                    }
                }
                for r in &mut a.tool_rules {
                    r.rename_tools(|n| renames.get(n).cloned());
                }
                insert_agent(&tx, &a).await?;
                for e in &ia.pending_endpoints {
                    tx.exec(
                        "INSERT INTO pending_endpoints (agent_id, kind, base_url, source,
                                                        created_at)
                         VALUES ($1, $2, $3, $4, $5)
                         ON CONFLICT (agent_id, kind) DO UPDATE SET base_url = excluded.base_url,
                             source = excluded.source, created_at = excluded.created_at",
                        &[
                            &a.id.as_str(),
                            &e.kind.as_str(),
                            &e.base_url,
                            &e.source,
                            &rows::truncate(e.created_at),
                        ],
                    )
                    .await?;
                }
                for (position, id) in (0_i64..).zip(&ia.block_ids) {
                    blocks::link(&tx, &a.id, id, position).await?;
                }
                insert_messages(&tx, &a.id, &ia.messages, now).await?;
                if let Some(summary) = a.summary.as_deref().filter(|s| !s.is_empty()) {
                    // Where the kept summary took over: after the last message out of context.
                    tx.exec(
                        "INSERT INTO compactions (agent_id, seq, summary, evicted, created_at)
                         SELECT agent_id, max(seq), $2, count(*), max(created_at) FROM messages
                         WHERE agent_id = $1 AND NOT in_context
                         GROUP BY agent_id",
                        &[&a.id.as_str(), &summary],
                    )
                    .await?;
                }
                let stored = if ia.passage_ids.is_empty() {
                    passages::insert(&tx, &a.id, &ia.passages, None, now).await?
                } else {
                    let mut stored = Vec::with_capacity(ia.passages.len());
                    for (np, id) in ia.passages.iter().zip(&ia.passage_ids) {
                        stored.push(
                            passages::insert_as(&tx, &a.id, id.clone(), np, None, now).await?,
                        );
                    }
                    stored
                };
                let id_at = |i: usize| -> TxResult<PassageId> {
                    stored.get(i).map(|p| p.id.clone()).ok_or_else(|| {
                        Error::invalid(format!("superseded passage {i} is not in the import"))
                            .into()
                    })
                };
                for h in &ia.superseded {
                    let by = h.by.map(id_at).transpose()?;
                    tx.exec(
                        "UPDATE passages SET superseded_at = $1, superseded_kind = $2,
                                superseded_by = $3
                         WHERE id = $4",
                        &[
                            &rows::truncate(h.at),
                            &h.kind.as_str(),
                            &by.as_ref().map(PassageId::as_str),
                            &id_at(h.passage)?.as_str(),
                        ],
                    )
                    .await?;
                }
                if let Some(s) = &ia.sleeptime {
                    tx.exec(
                        "INSERT INTO sleeptime_settings (agent_id, settings) VALUES ($1, $2)",
                        &[&a.id.as_str(), &rows::to_json(s)?],
                    )
                    .await?;
                }
                for s in &ia.steps {
                    let mut s = s.clone();
                    s.agent_id = a.id.clone();
                    insert_step(&tx, &s).await?;
                }
                tx.exec(
                    "UPDATE agents SET tags = $2 WHERE id = $1",
                    &[&a.id.as_str(), &engram_store_api::clean_tags(&ia.tags)],
                )
                .await?;
                if let Some(extras) = &ia.extras {
                    tx.exec(
                        "INSERT INTO settings (key, value) VALUES ($1, $2)
                         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        &[
                            &format!("{EXTRAS_SETTING_PREFIX}{}", a.id),
                            &rows::to_json(extras)?.to_string(),
                        ],
                    )
                    .await?;
                }
                out.agents.push(a.id);
            }
            out
        })
    }
}

/// Refuses a bundle whose agent or block ids are taken: `Conflict` naming the first.
async fn refuse_taken(c: &impl GenericClient, bundle: &ImportBundle) -> TxResult<()> {
    let agents: Vec<&str> = bundle.agents.iter().map(|a| a.agent.id.as_str()).collect();
    let blocks: Vec<&str> = bundle.blocks.iter().map(|b| b.block.id.as_str()).collect();
    let taken = c
        .one_opt(
            "SELECT 'agent', id FROM agents WHERE id = ANY($1)
             UNION ALL SELECT 'block', id FROM blocks WHERE id = ANY($2)
             LIMIT 1",
            &[&agents, &blocks],
        )
        .await?;
    match taken {
        Some(r) => {
            let (what, id): (String, String) = (r.try_get(0)?, r.try_get(1)?);
            Err(Error::Conflict(format!("{what} {id} already exists")).into())
        }
        None => Ok(()),
    }
}

/// Stores one tool of a bundle without touching a stored tool (see [`ImportBundle::tools`]):
/// the SQLite store's rule.
async fn place_tool(
    c: &impl GenericClient,
    t: &Tool,
    bundle_names: &HashSet<&str>,
) -> TxResult<ImportedTool> {
    let mut n = 1;
    let (tool, status) = loop {
        let candidate = tool_candidate(t, n);
        let taken_in_bundle = n > 1 && bundle_names.contains(candidate.name.as_str());
        match tool_by(c, "name", &candidate.name).await? {
            Some(old) if is_same_tool(&old, &candidate) => {
                break (old, ImportedToolStatus::Existing);
            }
            None if !taken_in_bundle => {
                let mut fresh = candidate;
                fresh.id = ToolId::new();
                break (upsert_tool(c, &fresh).await?, added_status(n));
            }
            _ => n += 1,
        }
    };
    Ok(ImportedTool {
        requested_name: t.name.clone(),
        tool,
        status,
    })
}

/// Writes one edit of a block's history as recorded.
async fn insert_edit(c: &impl GenericClient, block: &BlockId, e: &BlockEdit) -> TxResult<()> {
    c.exec(
        "INSERT INTO block_history (id, block_id, editor, old_value, new_value, old_version,
                                    new_version, step_id, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        &[
            &e.id.as_str(),
            &block.as_str(),
            &rows::to_json(&e.editor)?,
            &e.old_value,
            &e.new_value,
            &e.old_version
                .map(|v| rows::int(v, "old_version"))
                .transpose()?,
            &e.new_version
                .map(|v| rows::int(v, "new_version"))
                .transpose()?,
            &e.step_id.as_ref().map(|s| s.as_str()),
            &rows::truncate(e.created_at),
        ],
    )
    .await?;
    Ok(())
}

/// Writes a history `SEQ_GAP` apart in the given order, ids, times and `in_context` kept
/// (fresh ids and the time of the import where the bundle has none).
async fn insert_messages(
    c: &impl GenericClient,
    agent: &AgentId,
    msgs: &[ImportMessage],
    now: Timestamp,
) -> TxResult<()> {
    let mut seq = 0i64;
    for im in msgs {
        seq = seq
            .checked_add(SEQ_GAP)
            .ok_or_else(|| Error::invalid("too many messages"))?;
        let m = crate::messages::row_of(&im.message, agent, seq, im.in_context, now);
        crate::messages::insert_row(c, &m).await?;
    }
    Ok(())
}

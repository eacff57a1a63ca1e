//! Sleep-time passes on PostgreSQL: settings and reading positions, pass records with their
//! changes, and a pass's commit in one transaction (the rules are the interface's:
//! `engram_store_api::SleeptimeStore`).
//!
//! A commit holds the agent's row (`FOR NO KEY UPDATE`, as an append does) so the reading
//! position and the pass's changes land together, and each block it edits (`FOR UPDATE`, as
//! any edit does). A pass's `cost_usd` is read at its model's price as the SQLite store reads
//! it: the one people set (`model_prices`), else the built-in one.

use crate::PgStore;
use crate::blocks::{self, Lock};
use crate::passages;
use crate::rows::{self, Cached};
use crate::tx::{TxError, TxResult, transaction};
use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_core::block_op::revert_value;
use engram_core::memory::check_limit;
use engram_core::{
    AgentId, Applied, Block, BlockId, BlockOp, EditId, Editor, Error, MessageId, PassChange,
    PassChangeKind, PassId, PassStatus, PassTrigger, PassUsage, PassageId, Result, SleeptimePass,
    SleeptimeSettings, Timestamp,
};
use engram_store_api::{
    BlockWrite, PassBacklog, PassCommit, PassageOp, SleeptimeStore, block_diff, cannot_undo_alone,
    left_out_reason,
};
use std::collections::HashMap;
use std::time::Duration;
use tokio_postgres::Row;

const PASS_COLS: &str = "id, agent_id, trigger, status, reason, model, started_at, ended_at, \
    messages_read, last_seq, model_calls, prompt_tokens, completion_tokens";

fn pass_from_row(r: &Row) -> TxResult<SleeptimePass> {
    let count =
        |i: usize| -> TxResult<u32> { Ok(u32::try_from(rows::uint(r, i)?).unwrap_or(u32::MAX)) };
    Ok(SleeptimePass {
        id: PassId::from(r.try_get::<_, String>(0)?),
        agent_id: AgentId::from(r.try_get::<_, String>(1)?),
        trigger: PassTrigger::parse(r.try_get(2)?),
        status: PassStatus::parse(r.try_get(3)?),
        reason: r.try_get(4)?,
        model: r.try_get(5)?,
        started_at: r.try_get(6)?,
        ended_at: r.try_get(7)?,
        messages_read: count(8)?,
        last_seq: r.try_get(9)?,
        model_calls: count(10)?,
        prompt_tokens: rows::uint(r, 11)?,
        completion_tokens: rows::uint(r, 12)?,
        cost_usd: None,
        changes: Vec::new(),
    })
}

async fn changes(c: &impl GenericClient, id: &PassId) -> TxResult<Vec<PassChange>> {
    let found = c
        .rows(
            "SELECT idx, change, undone_at FROM sleeptime_changes WHERE pass_id = $1
             ORDER BY idx",
            &[&id.as_str()],
        )
        .await?;
    let mut out = Vec::with_capacity(found.len());
    for r in &found {
        out.push(PassChange {
            index: u32::try_from(rows::uint(r, 0)?).unwrap_or(u32::MAX),
            kind: rows::from_json(r, 1, "pass change")?,
            undone_at: r.try_get(2)?,
        });
    }
    Ok(out)
}

/// The price of `model`: the one people set, else the built-in one, else none.
async fn price_of(
    c: &impl GenericClient,
    model: &str,
) -> TxResult<Option<engram_core::ModelPrice>> {
    let set = c
        .one_opt(
            "SELECT input_per_mtok, output_per_mtok FROM model_prices WHERE model = $1",
            &[&model],
        )
        .await?;
    Ok(match set {
        Some(r) => Some(engram_core::ModelPrice {
            model: model.to_owned(),
            input_per_mtok: r.try_get(0)?,
            output_per_mtok: r.try_get(1)?,
            source: engram_core::PriceSource::User,
        }),
        None => engram_core::ModelPrice::builtin_for(model),
    })
}

/// Sets the pass's cost at its model's price (none without one).
async fn price(c: &impl GenericClient, pass: &mut SleeptimePass) -> TxResult<()> {
    pass.cost_usd = price_of(c, &pass.model)
        .await?
        .map(|p| p.cost(pass.prompt_tokens, pass.completion_tokens));
    Ok(())
}

async fn load(c: &impl GenericClient, id: &PassId) -> TxResult<SleeptimePass> {
    let row = c
        .one_opt(
            &format!("SELECT {PASS_COLS} FROM sleeptime_passes WHERE id = $1"),
            &[&id.as_str()],
        )
        .await?
        .ok_or_else(|| Error::not_found("sleep-time pass", id.as_str()))?;
    let mut pass = pass_from_row(&row)?;
    pass.changes = changes(c, id).await?;
    price(c, &mut pass).await?;
    Ok(pass)
}

/// Stores the record of `pass` (timestamps truncated to microseconds) and, when it ran to its
/// end, moves the agent's reading position forward to its `last_seq`. Errors: `Conflict` for
/// an id already recorded.
async fn insert_pass(c: &impl GenericClient, pass: &SleeptimePass) -> TxResult<()> {
    let inserted = c
        .exec(
            &format!(
                "INSERT INTO sleeptime_passes ({PASS_COLS})
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
                 ON CONFLICT (id) DO NOTHING"
            ),
            &[
                &pass.id.as_str(),
                &pass.agent_id.as_str(),
                &pass.trigger.as_str(),
                &pass.status.as_str(),
                &pass.reason,
                &pass.model,
                &rows::truncate(pass.started_at),
                &rows::truncate(pass.ended_at),
                &i64::from(pass.messages_read),
                &pass.last_seq,
                &i64::from(pass.model_calls),
                &rows::int(pass.prompt_tokens, "tokens")?,
                &rows::int(pass.completion_tokens, "tokens")?,
            ],
        )
        .await?;
    if inserted == 0 {
        return Err(Error::Conflict(format!("sleep-time pass {} already exists", pass.id)).into());
    }
    if pass.status == PassStatus::Done {
        c.exec(
            "INSERT INTO sleeptime_settings (agent_id, settings, last_seq) VALUES ($1, '{}', $2)
             ON CONFLICT (agent_id) DO UPDATE
             SET last_seq = greatest(sleeptime_settings.last_seq, excluded.last_seq)",
            &[&pass.agent_id.as_str(), &pass.last_seq],
        )
        .await?;
    }
    Ok(())
}

/// The value of `block` at version `version`, from its history (`None` when not recorded).
async fn value_at(
    c: &impl GenericClient,
    block: &BlockId,
    version: u64,
) -> TxResult<Option<String>> {
    Ok(c.one_opt(
        "SELECT new_value FROM block_history WHERE block_id = $1 AND new_version = $2
             ORDER BY pk DESC LIMIT 1",
        &[&block.as_str(), &rows::int(version, "version")?],
    )
    .await?
    .map(|r| r.try_get(0))
    .transpose()?)
}

/// The id of the newest history row of `block` (the edit just recorded).
async fn last_edit(c: &impl GenericClient, block: &BlockId) -> TxResult<EditId> {
    let id: String = c
        .one(
            "SELECT id FROM block_history WHERE block_id = $1 ORDER BY pk DESC LIMIT 1",
            &[&block.as_str()],
        )
        .await?
        .try_get(0)?;
    Ok(EditId::from(id))
}

/// `op` as it applies to `current`: a rewrite based on the version this commit first saw is
/// the pass's own; one based on an older version is rebased onto the current value when the
/// text it changed is still there once; `None` when it cannot apply.
async fn rebase(
    c: &impl GenericClient,
    op: &BlockOp,
    current: &Block,
    first_seen: u64,
) -> TxResult<Option<BlockOp>> {
    let BlockOp::Rewrite {
        value,
        based_on_version,
    } = op
    else {
        return Ok(Some(op.clone()));
    };
    if *based_on_version == first_seen || *based_on_version == current.version {
        return Ok(Some(BlockOp::Rewrite {
            value: value.clone(),
            based_on_version: current.version,
        }));
    }
    let Some(base) = value_at(c, &current.id, *based_on_version).await? else {
        return Ok(None);
    };
    // Applying base → value to `current` is undoing value → base there.
    Ok(
        revert_value(value, &base, &current.value).map(|merged| BlockOp::Rewrite {
            value: merged,
            based_on_version: current.version,
        }),
    )
}

/// Applies the block writes; returns the changes and the number left out.
async fn apply_blocks(
    c: &impl GenericClient,
    pass: &PassId,
    writes: &[BlockWrite],
    now: Timestamp,
) -> TxResult<(Vec<PassChangeKind>, u32)> {
    let editor = Editor::Sleeptime {
        pass_id: pass.clone(),
    };
    let mut first_seen: HashMap<BlockId, u64> = HashMap::new();
    let mut out = Vec::new();
    let mut left_out = 0;
    for w in writes {
        let current = match blocks::load(c, &w.block_id, Lock::Update).await {
            Ok(b) => b,
            Err(TxError::Engine(Error::NotFound { .. })) => {
                left_out += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        let seen = *first_seen
            .entry(w.block_id.clone())
            .or_insert(current.version);
        let Some(op) = rebase(c, &w.op, &current, seen).await? else {
            left_out += 1;
            continue;
        };
        match op.apply(&current, true) {
            Ok(Applied::Changed(value)) => {
                let after = blocks::commit_value(c, &current, value, &editor, None, now).await?;
                out.push(PassChangeKind::BlockEdit {
                    edit_id: last_edit(c, &w.block_id).await?,
                    block_id: w.block_id.clone(),
                    label: after.label.clone(),
                    diff: block_diff(&current.value, &after.value),
                });
            }
            Ok(Applied::Unchanged) => {}
            Err(_) => left_out += 1,
        }
    }
    Ok((out, left_out))
}

/// Applies the archival changes; returns the changes and the number left out.
async fn apply_passages(
    c: &impl GenericClient,
    pass: &SleeptimePass,
    ops: &[PassageOp],
    now: Timestamp,
) -> TxResult<(Vec<PassChangeKind>, u32)> {
    let mut out = Vec::new();
    let mut left_out = 0;
    for op in ops {
        match op {
            PassageOp::Add { id, passage } => {
                let p =
                    passages::insert_as(c, &pass.agent_id, id.clone(), passage, None, now).await?;
                out.push(PassChangeKind::PassageAdded {
                    passage_id: p.id,
                    text: p.text,
                });
            }
            PassageOp::Supersede {
                passage_id,
                by,
                how,
            } => {
                let by_id = by.as_ref().map(PassageId::as_str);
                let text: Option<String> = c
                    .one_opt(
                        "UPDATE passages SET superseded_at = $1, superseded_kind = $2,
                                superseded_by = $3, superseded_pass = $4
                         WHERE id = $5 AND agent_id = $6 AND superseded_at IS NULL
                           AND ($3::text IS NULL OR $3::text != $5)
                         RETURNING text",
                        &[
                            &now,
                            &how.as_str(),
                            &by_id,
                            &pass.id.as_str(),
                            &passage_id.as_str(),
                            &pass.agent_id.as_str(),
                        ],
                    )
                    .await?
                    .map(|r| r.try_get(0))
                    .transpose()?;
                match text {
                    Some(text) => out.push(PassChangeKind::PassageSuperseded {
                        passage_id: passage_id.clone(),
                        text,
                        how: *how,
                        by: by.clone(),
                    }),
                    None => left_out += 1,
                }
            }
        }
    }
    Ok((out, left_out))
}

async fn insert_changes(
    c: &impl GenericClient,
    pass: &PassId,
    kinds: &[PassChangeKind],
) -> TxResult<()> {
    for (i, k) in kinds.iter().enumerate() {
        c.exec(
            "INSERT INTO sleeptime_changes (pass_id, idx, change) VALUES ($1, $2, $3)",
            &[&pass.as_str(), &(i as i64), &rows::to_json(k)?],
        )
        .await?;
    }
    Ok(())
}

/// Undoes change `change` of `pass` inside the caller's transaction (the rules are
/// [`SleeptimeStore::undo_pass_changes`]'s).
async fn undo_change(c: &impl GenericClient, pass: &PassId, change: &PassChange) -> TxResult<()> {
    match &change.kind {
        PassChangeKind::BlockEdit { edit_id, .. } => undo_block_edit(c, edit_id).await?,
        PassChangeKind::PassageSuperseded { passage_id, .. } => {
            c.exec(
                "UPDATE passages SET superseded_at = NULL, superseded_kind = NULL,
                        superseded_by = NULL, superseded_pass = NULL
                 WHERE id = $1 AND superseded_pass = $2",
                &[&passage_id.as_str(), &pass.as_str()],
            )
            .await?;
        }
        PassChangeKind::PassageAdded { passage_id, .. } => {
            let replaced = c
                .one_opt(
                    "SELECT id FROM passages WHERE superseded_by = $1 AND superseded_at IS NOT NULL
                     LIMIT 1",
                    &[&passage_id.as_str()],
                )
                .await?;
            if let Some(r) = replaced {
                let older: String = r.try_get(0)?;
                return Err(Error::Conflict(format!(
                    "passage {passage_id} replaced {older}; undo that replacement first"
                ))
                .into());
            }
            // The pass added it: taking it away restores archival memory as it was.
            c.exec(
                "DELETE FROM passages WHERE id = $1",
                &[&passage_id.as_str()],
            )
            .await?;
        }
    }
    c.exec(
        "UPDATE sleeptime_changes SET undone_at = $1 WHERE pass_id = $2 AND idx = $3",
        &[&rows::now(), &pass.as_str(), &i64::from(change.index)],
    )
    .await?;
    Ok(())
}

/// Undoes the block edit `edit` by its reverse operation on the block's current value,
/// recorded as an undo; `Conflict` when later edits rewrote the text it changed.
async fn undo_block_edit(c: &impl GenericClient, edit: &EditId) -> TxResult<()> {
    let row = c
        .one_opt(
            "SELECT block_id, old_value, new_value,
                    (SELECT count(*) FROM block_history later
                     WHERE later.block_id = h.block_id AND later.pk > h.pk)
             FROM block_history h WHERE id = $1",
            &[&edit.as_str()],
        )
        .await?
        .ok_or_else(|| Error::not_found("edit", edit.as_str()))?;
    let block = BlockId::from(row.try_get::<_, String>(0)?);
    let (old, new): (String, String) = (row.try_get(1)?, row.try_get(2)?);
    let current = blocks::load(c, &block, Lock::Update).await?;
    let Some(value) = revert_value(&old, &new, &current.value) else {
        let later = u32::try_from(rows::uint(&row, 3)?).unwrap_or(u32::MAX);
        return Err(cannot_undo_alone(&current.label, later).into());
    };
    check_limit(&current.value, &value, current.limit)
        .map_err(|e| Error::Invalid(e.to_string()))?;
    if value != current.value {
        let editor = Editor::Undo {
            edit_id: edit.clone(),
        };
        blocks::commit_value(c, &current, value, &editor, None, rows::now()).await?;
    }
    Ok(())
}

/// Marks the pass undone when none of its changes stands.
async fn settle(c: &impl GenericClient, pass: &PassId) -> TxResult<()> {
    c.exec(
        "UPDATE sleeptime_passes SET status = 'undone'
         WHERE id = $1 AND status = 'done'
           AND NOT EXISTS (SELECT 1 FROM sleeptime_changes
                           WHERE pass_id = $1 AND undone_at IS NULL)
           AND EXISTS (SELECT 1 FROM sleeptime_changes WHERE pass_id = $1)",
        &[&pass.as_str()],
    )
    .await?;
    Ok(())
}

#[async_trait]
impl SleeptimeStore for PgStore {
    async fn sleeptime_settings(&self, agent: &AgentId) -> Result<SleeptimeSettings> {
        let c = self.client().await?;
        // One statement: no agent row, no result row (read after every run).
        let row = c
            .one_opt(
                "SELECT s.settings FROM agents a
                 LEFT JOIN sleeptime_settings s ON s.agent_id = a.id WHERE a.id = $1",
                &[&agent.as_str()],
            )
            .await
            .map_err(TxError::from)?
            .ok_or_else(|| Error::not_found("agent", agent.as_str()))?;
        // No row, or a row made by a pass before any settings were saved (`{}`): the defaults.
        Ok(row
            .try_get::<_, Option<serde_json::Value>>(0)
            .ok()
            .flatten()
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default())
    }

    async fn set_sleeptime_settings(&self, agent: &AgentId, s: &SleeptimeSettings) -> Result<()> {
        if s.frequency == 0 || s.max_steps == 0 || s.timeout_secs == 0 {
            return Err(Error::invalid(
                "sleep-time frequency, step limit and timeout must each be at least 1",
            ));
        }
        let value = rows::to_json(s)?;
        transaction!(self, |tx| {
            blocks::ensure_agent(&tx, agent, Lock::KeyShare).await?;
            tx.exec(
                "INSERT INTO sleeptime_settings (agent_id, settings) VALUES ($1, $2)
                 ON CONFLICT (agent_id) DO UPDATE SET settings = excluded.settings",
                &[&agent.as_str(), &value],
            )
            .await?;
        })
    }

    async fn last_read_seq(&self, agent: &AgentId) -> Result<i64> {
        let c = self.client().await?;
        blocks::ensure_agent(&c, agent, Lock::None).await?;
        let row = c
            .one_opt(
                "SELECT last_seq FROM sleeptime_settings WHERE agent_id = $1",
                &[&agent.as_str()],
            )
            .await
            .map_err(TxError::from)?;
        Ok(match row {
            Some(r) => r.try_get(0).map_err(TxError::from)?,
            None => 0,
        })
    }

    async fn record_pass(&self, pass: &SleeptimePass) -> Result<()> {
        transaction!(self, |tx| {
            blocks::ensure_agent(&tx, &pass.agent_id, Lock::NoKeyUpdate).await?;
            insert_pass(&tx, pass).await?;
        })
    }

    async fn commit_pass(&self, commit: &PassCommit) -> Result<SleeptimePass> {
        for op in &commit.passage_ops {
            if let PassageOp::Add { passage, .. } = op {
                passages::check_new(std::slice::from_ref(passage))?;
            }
        }
        transaction!(self, |tx| {
            blocks::ensure_agent(&tx, &commit.pass.agent_id, Lock::NoKeyUpdate).await?;
            let now = rows::now();
            let mut pass = commit.pass.clone();
            pass.status = PassStatus::Done;
            let (mut kinds, blocks_out) =
                apply_blocks(&tx, &pass.id, &commit.block_writes, now).await?;
            let (more, passages_out) = apply_passages(&tx, &pass, &commit.passage_ops, now).await?;
            kinds.extend(more);
            if let Some(reason) = left_out_reason(blocks_out + passages_out) {
                pass.reason = Some(reason);
            }
            insert_pass(&tx, &pass).await?;
            insert_changes(&tx, &pass.id, &kinds).await?;
            load(&tx, &pass.id).await?
        })
    }

    async fn get_pass(&self, id: &PassId) -> Result<SleeptimePass> {
        let c = self.client().await?;
        Ok(load(&c, id).await?)
    }

    async fn list_passes(&self, agent: &AgentId, limit: usize) -> Result<Vec<SleeptimePass>> {
        let c = self.client().await?;
        blocks::ensure_agent(&c, agent, Lock::None).await?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let found = c
            .rows(
                &format!(
                    "SELECT {PASS_COLS} FROM sleeptime_passes WHERE agent_id = $1
                     ORDER BY started_at DESC, pk DESC LIMIT $2"
                ),
                &[&agent.as_str(), &limit],
            )
            .await
            .map_err(TxError::from)?;
        let mut out = Vec::with_capacity(found.len());
        for r in &found {
            let mut pass = pass_from_row(r)?;
            pass.changes = changes(&c, &pass.id).await?;
            price(&c, &mut pass).await?;
            out.push(pass);
        }
        Ok(out)
    }

    async fn pass_backlog(&self, agent: &AgentId) -> Result<PassBacklog> {
        let c = self.client().await?;
        // One statement: no agent row, no result row.
        let row = c
            .one_opt(
                "WITH s AS (SELECT coalesce((SELECT last_seq FROM sleeptime_settings
                                             WHERE agent_id = $1), 0) AS seq,
                                   (SELECT max(ended_at) FROM sleeptime_passes
                                    WHERE agent_id = $1 AND status = 'done') AS at)
                 SELECT (SELECT count(*) FROM messages m
                         WHERE m.agent_id = $1 AND m.seq > s.seq
                           AND m.role = 'user' AND m.kind = 'chat'),
                        (SELECT count(*) FROM compactions k
                         WHERE k.agent_id = $1 AND (s.at IS NULL OR k.created_at > s.at)),
                        (SELECT m.id FROM messages m
                         WHERE m.agent_id = $1 AND m.seq <= s.seq
                         ORDER BY m.seq DESC LIMIT 1),
                        (SELECT m.created_at FROM messages m WHERE m.agent_id = $1
                         ORDER BY m.seq DESC LIMIT 1)
                 FROM agents, s WHERE agents.id = $1",
                &[&agent.as_str()],
            )
            .await
            .map_err(TxError::from)?
            .ok_or_else(|| Error::not_found("agent", agent.as_str()))?;
        let count = |i: usize| -> Result<u32> {
            Ok(u32::try_from(rows::uint(&row, i)?).unwrap_or(u32::MAX))
        };
        Ok(PassBacklog {
            turns: count(0)?,
            compactions: count(1)?,
            last_read: row
                .try_get::<_, Option<String>>(2)
                .map_err(TxError::from)?
                .map(MessageId::from),
            last_message_at: row.try_get(3).map_err(TxError::from)?,
        })
    }

    async fn pass_usage(&self, agent: Option<&AgentId>, since: Timestamp) -> Result<PassUsage> {
        let c = self.client().await?;
        let found = c
            .rows(
                "SELECT model, count(*), sum(prompt_tokens)::bigint, sum(completion_tokens)::bigint
                 FROM sleeptime_passes
                 WHERE started_at >= $1 AND status != 'skipped'
                   AND ($2::text IS NULL OR agent_id = $2)
                 GROUP BY model",
                &[&since, &agent.map(AgentId::as_str)],
            )
            .await
            .map_err(TxError::from)?;
        let mut out = PassUsage::default();
        for r in &found {
            let model: String = r.try_get(0).map_err(TxError::from)?;
            let (prompt, completion) = (rows::uint(r, 2)?, rows::uint(r, 3)?);
            out.passes += u32::try_from(rows::uint(r, 1)?).unwrap_or(u32::MAX);
            out.tokens += prompt + completion;
            if let Some(p) = price_of(&c, &model).await? {
                out.usd += p.cost(prompt, completion);
            }
        }
        Ok(out)
    }

    async fn undo_pass_changes(&self, pass: &PassId, index: Option<u32>) -> Result<SleeptimePass> {
        transaction!(self, |tx| {
            let record = load(&tx, pass).await?;
            // The agent's row, as a commit holds it: an undo and a pass never interleave.
            blocks::ensure_agent(&tx, &record.agent_id, Lock::NoKeyUpdate).await?;
            if let Some(i) = index
                && !record.changes.iter().any(|c| c.index == i)
            {
                return Err(TxError::from(Error::not_found("change", i.to_string())));
            }
            for change in record
                .changes
                .iter()
                .rev()
                .filter(|c| c.undone_at.is_none() && index.is_none_or(|i| i == c.index))
            {
                undo_change(&tx, pass, change).await?;
            }
            settle(&tx, pass).await?;
            load(&tx, pass).await?
        })
    }

    async fn claim_pass(&self, agent: &AgentId, pass: &PassId, ttl: Duration) -> Result<bool> {
        let c = self.client().await?;
        let taken = c
            .exec(
                "INSERT INTO sleeptime_settings (agent_id, settings, running_pass, running_until)
                 VALUES ($1, '{}', $2, clock_timestamp() + make_interval(secs => $3))
                 ON CONFLICT (agent_id) DO UPDATE
                 SET running_pass = excluded.running_pass,
                     running_until = excluded.running_until
                 WHERE sleeptime_settings.running_pass IS NULL
                    OR sleeptime_settings.running_pass = excluded.running_pass
                    OR sleeptime_settings.running_until <= clock_timestamp()",
                &[&agent.as_str(), &pass.as_str(), &ttl.as_secs_f64()],
            )
            .await
            .map_err(|e| blocks::missing_agent(e, agent))?;
        Ok(taken == 1)
    }

    async fn release_pass(&self, agent: &AgentId, pass: &PassId) -> Result<()> {
        let c = self.client().await?;
        c.exec(
            "UPDATE sleeptime_settings SET running_pass = NULL, running_until = NULL
             WHERE agent_id = $1 AND running_pass = $2",
            &[&agent.as_str(), &pass.as_str()],
        )
        .await
        .map_err(TxError::from)?;
        Ok(())
    }
}

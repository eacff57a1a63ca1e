//! Core-memory blocks on PostgreSQL: rows of their own, linked to agents, versioned, with an
//! edit history.
//!
//! Every change of a value locks the block's row (`SELECT … FOR UPDATE`), computes the new
//! value from the value stored *now*, checks it against the limit stored now, and writes the
//! row and its history row in the same transaction. A second writer of the same block — on
//! this replica or another — waits for the lock and then works on the committed result, so no
//! edit is lost and every one has its history row and version.

use crate::PgStore;
use crate::rows::{self, BLOCK_COLS, Cached, EDIT_COLS};
use crate::tx::{TxError, TxResult, transaction};
use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_core::memory::check_limit;
use engram_core::{
    AgentId, Applied, Block, BlockEdit, BlockId, BlockOp, BlockPatch, EditId, Editor, Error,
    NewBlock, OpOutcome, Result, StepId, Timestamp,
};
use engram_store_api::{BlockAgent, BlockList, BlockStore, SharedBlock, shared_blocks};
use tokio_postgres::error::SqlState;

/// The error for a label already used by another block of the same agent (the SQLite store's
/// wording).
pub(crate) fn label_conflict(label: &str) -> Error {
    Error::Conflict(format!(
        "an agent cannot have two blocks labelled {label:?}"
    ))
}

/// Loads one block; with `lock`, holds its row until the transaction ends.
/// Errors: `NotFound("block", id)`.
pub(crate) async fn load(c: &impl GenericClient, id: &BlockId, lock: Lock) -> TxResult<Block> {
    let sql = format!(
        "SELECT {BLOCK_COLS} FROM blocks b WHERE b.id = $1{}",
        lock.clause()
    );
    match c.one_opt(&sql, &[&id.as_str()]).await? {
        Some(r) => rows::block(&r),
        None => Err(Error::not_found("block", id.as_str()).into()),
    }
}

/// A row lock taken by a `SELECT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lock {
    /// A plain read.
    None,
    /// `FOR SHARE`: others may read and share-lock it, nobody may change it.
    Share,
    /// `FOR UPDATE`: this transaction alone may change it.
    Update,
    /// `FOR NO KEY UPDATE`: like `Update` against other lockers of the row, but rows that
    /// reference it (messages, leases) can still be written meanwhile.
    NoKeyUpdate,
    /// `FOR KEY SHARE`: the row cannot be deleted meanwhile; nothing else waits.
    KeyShare,
}

impl Lock {
    fn clause(self) -> &'static str {
        match self {
            Lock::None => "",
            Lock::Share => " FOR SHARE",
            Lock::Update => " FOR UPDATE",
            Lock::NoKeyUpdate => " FOR NO KEY UPDATE",
            Lock::KeyShare => " FOR KEY SHARE",
        }
    }
}

/// Checks the agent exists; with `lock`, holds its row (attaching and relabelling serialise on
/// it, which keeps labels unique per agent). Errors: `NotFound("agent", id)`.
pub(crate) async fn ensure_agent(c: &impl GenericClient, id: &AgentId, lock: Lock) -> TxResult<()> {
    match c.one_opt(&ensure_sql(lock), &[&id.as_str()]).await? {
        Some(_) => Ok(()),
        None => Err(Error::not_found("agent", id.as_str()).into()),
    }
}

/// The statement of [`ensure_agent`].
pub(crate) fn ensure_sql(lock: Lock) -> String {
    format!("SELECT 1 FROM agents WHERE id = $1{}", lock.clause())
}

/// `query` with the agent check of [`ensure_agent`] in one round trip: tokio-postgres sends
/// both before reading either answer, and PostgreSQL runs them in the order they were sent:
/// the check first (its statement is prepared beforehand and it is polled first, so it goes
/// out on its first poll), so a lock it takes is held before `query` runs. A missing agent is
/// `NotFound` whatever `query` answered (a write it made then is the caller's to roll back:
/// run it in a transaction, or let a foreign key refuse it).
pub(crate) async fn with_agent<T>(
    c: &impl GenericClient,
    id: &AgentId,
    lock: Lock,
    query: impl Future<Output = TxResult<T>>,
) -> TxResult<T> {
    c.prepare_cached(&ensure_sql(lock)).await?;
    let (exists, out) = tokio::join!(biased; ensure_agent(c, id, lock), query);
    exists?;
    out
}

/// `e`, or `NotFound("agent")` when it is a foreign key's refusal: for a single statement
/// whose only foreign key is the agent's, which then needs no check of its own.
pub(crate) fn missing_agent(e: tokio_postgres::Error, id: &AgentId) -> TxError {
    match e.code() {
        Some(c) if *c == SqlState::FOREIGN_KEY_VIOLATION => {
            Error::not_found("agent", id.as_str()).into()
        }
        _ => e.into(),
    }
}

/// Inserts a block row.
pub(crate) async fn insert(c: &impl GenericClient, b: &Block) -> TxResult<()> {
    c.exec(
        "INSERT INTO blocks (id, label, value, char_limit, description, read_only, version,
                             created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        &[
            &b.id.as_str(),
            &b.label,
            &b.value,
            &rows::int(b.limit as u64, "block limit")?,
            &b.description,
            &b.read_only,
            &rows::int(b.version, "version")?,
            &b.created_at,
            &b.updated_at,
        ],
    )
    .await?;
    Ok(())
}

/// Stores `b` (its version already bumped by the caller).
async fn save(c: &impl GenericClient, b: &Block) -> TxResult<()> {
    c.exec(
        "UPDATE blocks SET label = $2, value = $3, char_limit = $4, description = $5,
                read_only = $6, version = $7, updated_at = $8
         WHERE id = $1",
        &[
            &b.id.as_str(),
            &b.label,
            &b.value,
            &rows::int(b.limit as u64, "block limit")?,
            &b.description,
            &b.read_only,
            &rows::int(b.version, "version")?,
            &b.updated_at,
        ],
    )
    .await?;
    Ok(())
}

/// Links a block to an agent at `position`.
pub(crate) async fn link(
    c: &impl GenericClient,
    agent: &AgentId,
    block: &BlockId,
    position: i64,
) -> TxResult<()> {
    c.exec(
        "INSERT INTO agent_blocks (agent_id, block_id, position) VALUES ($1, $2, $3)",
        &[&agent.as_str(), &block.as_str(), &position],
    )
    .await?;
    Ok(())
}

/// Whether `agent` has a block other than `except` labelled `label`.
async fn label_taken(
    c: &impl GenericClient,
    agent: &AgentId,
    label: &str,
    except: &BlockId,
) -> TxResult<bool> {
    let row = c
        .one_opt(
            "SELECT 1 FROM agent_blocks ab JOIN blocks b ON b.id = ab.block_id
             WHERE ab.agent_id = $1 AND b.label = $2 AND b.id <> $3",
            &[&agent.as_str(), &label, &except.as_str()],
        )
        .await?;
    Ok(row.is_some())
}

/// The agents a block is attached to, by id (the order their rows are locked in).
async fn attached_agents(c: &impl GenericClient, block: &BlockId) -> TxResult<Vec<AgentId>> {
    let found = c
        .rows(
            "SELECT agent_id FROM agent_blocks WHERE block_id = $1 ORDER BY agent_id",
            &[&block.as_str()],
        )
        .await?;
    Ok(found
        .iter()
        .map(|r| AgentId::from(r.get::<_, String>(0)))
        .collect())
}

/// Records a value change of `before` into `after` as a history row by `editor`, naming the
/// step that made it (an agent's edit inside a step commit).
async fn record_edit(
    c: &impl GenericClient,
    before: &Block,
    after: &Block,
    editor: &Editor,
    step: Option<&StepId>,
    now: Timestamp,
) -> TxResult<()> {
    c.exec(
        "INSERT INTO block_history (id, block_id, editor, old_value, new_value, old_version,
                                    new_version, step_id, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        &[
            &EditId::new().as_str(),
            &before.id.as_str(),
            &rows::to_json(editor)?,
            &before.value,
            &after.value,
            &rows::int(before.version, "version")?,
            &rows::int(after.version, "version")?,
            &step.map(StepId::as_str),
            &now,
        ],
    )
    .await?;
    Ok(())
}

/// Sets `current`'s value to `new_value` (already checked), bumps its version, saves it and
/// records the edit (by `step`, when a step's commit makes it). Returns the block as stored.
pub(crate) async fn commit_value(
    c: &impl GenericClient,
    current: &Block,
    new_value: String,
    editor: &Editor,
    step: Option<&StepId>,
    now: Timestamp,
) -> TxResult<Block> {
    let mut b = current.clone();
    b.value = new_value;
    b.version += 1;
    b.updated_at = now.max(b.updated_at);
    record_edit(c, current, &b, editor, step, now).await?;
    save(c, &b).await?;
    Ok(b)
}

/// Applies `op` to block `id` as stored now, holding its row until the transaction ends, and
/// records the change by `editor`. Errors: `NotFound("block")`; a refusal is an
/// [`OpOutcome::Refused`].
pub(crate) async fn apply_op(
    c: &impl GenericClient,
    id: &BlockId,
    op: &BlockOp,
    editor: &Editor,
) -> TxResult<OpOutcome> {
    let current = load(c, id, Lock::Update).await?;
    Ok(match op.apply(&current, true) {
        Err(error) => OpOutcome::Refused { error, current },
        Ok(Applied::Unchanged) => OpOutcome::Unchanged(current),
        Ok(Applied::Changed(value)) => {
            OpOutcome::Changed(commit_value(c, &current, value, editor, None, rows::now()).await?)
        }
    })
}

#[async_trait]
impl BlockStore for PgStore {
    async fn create_block(&self, new: &NewBlock) -> Result<Block> {
        let block = new.to_block(rows::now())?;
        transaction!(self, |tx| { insert(&tx, &block).await? })?;
        Ok(block)
    }

    async fn create_agent_block(&self, agent: &AgentId, new: &NewBlock) -> Result<Block> {
        let block = new.to_block(rows::now())?;
        transaction!(self, |tx| {
            // The agent's lock serialises label checks on it, as attaching does.
            ensure_agent(&tx, agent, Lock::Update).await?;
            if label_taken(&tx, agent, &block.label, &block.id).await? {
                return Err(label_conflict(&block.label).into());
            }
            insert(&tx, &block).await?;
            let next: i64 = tx
                .one(
                    "SELECT coalesce(max(position) + 1, 0) FROM agent_blocks WHERE agent_id = $1",
                    &[&agent.as_str()],
                )
                .await?
                .get(0);
            link(&tx, agent, &block.id, next).await?;
        })?;
        Ok(block)
    }

    async fn shared_blocks(&self) -> Result<Vec<SharedBlock>> {
        let all = self.list_blocks(None).await?;
        let c = self.client().await?;
        let found = c
            .rows(
                "SELECT ab.block_id, a.id, a.name FROM agent_blocks ab
                 JOIN agents a ON a.id = ab.agent_id ORDER BY a.created_at, a.id",
                &[],
            )
            .await
            .map_err(crate::tx::TxError::from)?;
        let links = found
            .iter()
            .map(|r| {
                (
                    BlockId::from(r.get::<_, String>(0)),
                    BlockAgent {
                        id: AgentId::from(r.get::<_, String>(1)),
                        name: r.get(2),
                    },
                )
            })
            .collect();
        Ok(shared_blocks(all, links))
    }

    async fn get_block(&self, id: &BlockId) -> Result<Block> {
        let c = self.client().await?;
        Ok(load(&c, id, Lock::None).await?)
    }

    async fn list_blocks(&self, label: Option<&str>) -> Result<Vec<Block>> {
        let c = self.client().await?;
        let found = c
            .rows(
                &format!(
                    "SELECT {BLOCK_COLS} FROM blocks b
                     WHERE $1::text IS NULL OR b.label = $1 ORDER BY b.created_at, b.id"
                ),
                &[&label],
            )
            .await
            .map_err(crate::tx::TxError::from)?;
        Ok(rows::all(&found, rows::block)?)
    }

    async fn page_blocks(&self, q: &BlockList) -> Result<Vec<Block>> {
        let c = self.client().await?;
        Ok(crate::block_list::page(&c, q).await?)
    }

    async fn agent_blocks(&self, agent: &AgentId) -> Result<Vec<Block>> {
        let c = self.client().await?;
        let found = c
            .rows(
                &format!(
                    "SELECT {BLOCK_COLS} FROM agent_blocks ab JOIN blocks b ON b.id = ab.block_id
                     WHERE ab.agent_id = $1 ORDER BY ab.position"
                ),
                &[&agent.as_str()],
            )
            .await
            .map_err(crate::tx::TxError::from)?;
        // Read before every step: the agent is looked up only when it has no block to show.
        if found.is_empty() {
            ensure_agent(&c, agent, Lock::None).await?;
        }
        Ok(rows::all(&found, rows::block)?)
    }

    async fn agent_block(&self, agent: &AgentId, label: &str) -> Result<Block> {
        let c = self.client().await?;
        ensure_agent(&c, agent, Lock::None).await?;
        let row = c
            .one_opt(
                &format!(
                    "SELECT {BLOCK_COLS} FROM agent_blocks ab JOIN blocks b ON b.id = ab.block_id
                     WHERE ab.agent_id = $1 AND b.label = $2"
                ),
                &[&agent.as_str(), &label],
            )
            .await
            .map_err(crate::tx::TxError::from)?;
        match row {
            Some(r) => Ok(rows::block(&r)?),
            None => Err(Error::not_found("block", label)),
        }
    }

    async fn attach_block(&self, agent: &AgentId, block: &BlockId) -> Result<()> {
        transaction!(self, |tx| {
            // The agent's lock serialises label checks on it; the block's keeps its label
            // from changing under the check.
            ensure_agent(&tx, agent, Lock::Update).await?;
            let b = load(&tx, block, Lock::Share).await?;
            let linked = tx
                .one_opt(
                    "SELECT 1 FROM agent_blocks WHERE agent_id = $1 AND block_id = $2",
                    &[&agent.as_str(), &block.as_str()],
                )
                .await?
                .is_some();
            if !linked {
                if label_taken(&tx, agent, &b.label, block).await? {
                    return Err(label_conflict(&b.label).into());
                }
                let next: i64 = tx
                    .one(
                        "SELECT coalesce(max(position) + 1, 0) FROM agent_blocks
                         WHERE agent_id = $1",
                        &[&agent.as_str()],
                    )
                    .await?
                    .get(0);
                link(&tx, agent, block, next).await?;
            }
        })
    }

    async fn detach_block(&self, agent: &AgentId, block: &BlockId) -> Result<()> {
        transaction!(self, |tx| {
            ensure_agent(&tx, agent, Lock::None).await?;
            load(&tx, block, Lock::None).await?;
            tx.exec(
                "DELETE FROM agent_blocks WHERE agent_id = $1 AND block_id = $2",
                &[&agent.as_str(), &block.as_str()],
            )
            .await?;
        })
    }

    async fn update_block(
        &self,
        id: &BlockId,
        patch: &BlockPatch,
        editor: &Editor,
    ) -> Result<Block> {
        transaction!(self, |tx| {
            let now = rows::now();
            let before = load(&tx, id, Lock::Update).await?;
            if let Some(v) = patch.version.filter(|v| *v != before.version) {
                return Err(Error::StaleVersion {
                    based_on: v,
                    current: Box::new(before),
                }
                .into());
            }
            let mut b = before.clone();
            if let Some(label) = patch.label.as_ref().filter(|l| **l != b.label) {
                engram_core::memory::check_label(label)
                    .map_err(|e| Error::invalid(format!("invalid block label {label:?}: {e}")))?;
                for agent in attached_agents(&tx, id).await? {
                    ensure_agent(&tx, &agent, Lock::Update).await?;
                    if label_taken(&tx, &agent, label, id).await? {
                        return Err(label_conflict(label).into());
                    }
                }
                b.label.clone_from(label);
            }
            let limit = patch.limit.unwrap_or(b.limit);
            let value = patch.value.as_deref().unwrap_or(&b.value);
            check_limit(&b.value, value, limit).map_err(|e| Error::Invalid(e.to_string()))?;
            b.value = value.to_owned();
            b.limit = limit;
            if let Some(d) = &patch.description {
                b.description.clone_from(d);
            }
            if let Some(ro) = patch.read_only {
                b.read_only = ro;
            }
            if b != before {
                b.version += 1;
                b.updated_at = now.max(b.updated_at);
                if b.value != before.value {
                    record_edit(&tx, &before, &b, editor, None, now).await?;
                }
                save(&tx, &b).await?;
            }
            b
        })
    }

    async fn apply_block_op(
        &self,
        id: &BlockId,
        op: &BlockOp,
        editor: &Editor,
    ) -> Result<OpOutcome> {
        transaction!(self, |tx| { apply_op(&tx, id, op, editor).await? })
    }

    async fn block_agents(&self, block: &BlockId) -> Result<Vec<AgentId>> {
        let c = self.client().await?;
        load(&c, block, Lock::None).await?;
        Ok(attached_agents(&c, block).await?)
    }

    async fn block_edit(&self, id: &EditId) -> Result<BlockEdit> {
        let c = self.client().await?;
        let row = c
            .one_opt(
                &format!("SELECT {EDIT_COLS} FROM block_history WHERE id = $1"),
                &[&id.as_str()],
            )
            .await
            .map_err(crate::tx::TxError::from)?;
        match row {
            Some(r) => Ok(rows::edit(&r)?),
            None => Err(Error::not_found("edit", id.as_str())),
        }
    }

    async fn block_history(&self, id: &BlockId, limit: usize) -> Result<Vec<BlockEdit>> {
        let c = self.client().await?;
        load(&c, id, Lock::None).await?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let found = c
            .rows(
                &format!(
                    "SELECT {EDIT_COLS} FROM block_history WHERE block_id = $1
                     ORDER BY pk DESC LIMIT $2"
                ),
                &[&id.as_str(), &limit],
            )
            .await
            .map_err(crate::tx::TxError::from)?;
        Ok(rows::all(&found, rows::edit)?)
    }

    async fn delete_block(&self, id: &BlockId) -> Result<()> {
        transaction!(self, |tx| {
            let n = tx
                .exec("DELETE FROM blocks WHERE id = $1", &[&id.as_str()])
                .await?;
            if n == 0 {
                return Err(Error::not_found("block", id.as_str()).into());
            }
        })
    }
}

//! Core-memory blocks: rows of their own, linked to agents, with an edit history.
//!
//! Limits are in characters ([`memory::check_limit`]); every change of a value is checked against
//! the limit stored *now* and leaves a history row in the same transaction.

use crate::rooms::BlockRows;
use crate::sql::{self, DbResult, json, ts};
use engram_core::memory::check_limit;
use engram_core::{
    AgentId, Block, BlockEdit, BlockId, BlockPatch, EditId, Editor, Error, NewBlock, Result,
    StepId, Timestamp,
};
use rusqlite::{Connection, OptionalExtension, Row, params};

pub(crate) const BLOCK_COLS: &str = "b.id, b.label, b.value, b.char_limit, b.description, b.read_only, \
                          b.created_at, b.updated_at, b.version";

pub(crate) fn block_from_row(r: &Row<'_>) -> rusqlite::Result<Block> {
    Ok(Block {
        id: BlockId::from(r.get::<_, String>(0)?),
        label: r.get(1)?,
        value: r.get(2)?,
        limit: usize::try_from(sql::uint(r, 3)?).unwrap_or(usize::MAX),
        description: r.get(4)?,
        read_only: r.get(5)?,
        created_at: ts(r, 6)?,
        updated_at: ts(r, 7)?,
        version: sql::uint(r, 8)?,
    })
}

/// The history columns [`edit_from_row`] reads, in order.
pub(crate) const EDIT_COLS: &str =
    "id, block_id, editor, old_value, new_value, created_at, old_version, new_version, step_id";

fn opt_uint(r: &Row<'_>, i: usize) -> rusqlite::Result<Option<u64>> {
    Ok(r.get::<_, Option<i64>>(i)?
        .map(|v| u64::try_from(v).unwrap_or(0)))
}

pub(crate) fn edit_from_row(r: &Row<'_>) -> rusqlite::Result<BlockEdit> {
    Ok(BlockEdit {
        id: EditId::from(r.get::<_, String>(0)?),
        block_id: BlockId::from(r.get::<_, String>(1)?),
        editor: json(r, 2)?,
        old_value: r.get(3)?,
        new_value: r.get(4)?,
        created_at: ts(r, 5)?,
        old_version: opt_uint(r, 6)?,
        new_version: opt_uint(r, 7)?,
        step_id: r.get::<_, Option<String>>(8)?.map(StepId::from),
    })
}

/// The error for a label already used by another block of the same agent.
pub(crate) fn label_conflict(label: &str) -> Error {
    Error::Conflict(format!(
        "an agent cannot have two blocks labelled {label:?}"
    ))
}

/// Refuses only labels that cannot work (see [`engram_core::memory::check_label`]); path-like
/// labels such as `system/human/family` are kept as given.
pub(crate) fn check_label(label: &str) -> Result<()> {
    engram_core::memory::check_label(label)
        .map_err(|e| Error::invalid(format!("invalid block label {label:?}: {e}")))
}

fn limit_int(limit: usize) -> Result<i64> {
    i64::try_from(limit).map_err(|_| Error::invalid(format!("block limit is too large: {limit}")))
}

/// A new block row from `nb` ([`NewBlock::to_block`]), whose limit must also fit the column.
pub(crate) fn build(nb: &NewBlock, now: Timestamp) -> Result<Block> {
    let block = nb.to_block(now)?;
    limit_int(block.limit)?;
    Ok(block)
}

/// Inserts a block row.
pub(crate) fn insert(conn: &Connection, b: &Block) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO blocks (id, label, value, char_limit, description, read_only, created_at,
                             updated_at, version)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )
    .db()?
    .execute(params![
        b.id.as_str(),
        b.label,
        b.value,
        limit_int(b.limit)?,
        b.description,
        b.read_only,
        sql::micros(b.created_at),
        sql::micros(b.updated_at),
        sql::int(b.version, "version")?,
    ])
    .db()?;
    Ok(())
}

/// Stores `b` (its `version` already bumped by the caller).
fn save(conn: &Connection, b: &Block) -> Result<()> {
    conn.prepare_cached(
        "UPDATE blocks SET label = ?2, value = ?3, char_limit = ?4, description = ?5,
                read_only = ?6, updated_at = ?7, version = ?8
         WHERE id = ?1",
    )
    .db()?
    .execute(params![
        b.id.as_str(),
        b.label,
        b.value,
        limit_int(b.limit)?,
        b.description,
        b.read_only,
        sql::micros(b.updated_at),
        sql::int(b.version, "version")?,
    ])
    .db()?;
    Ok(())
}

/// Loads one block. Errors: `NotFound("block", id)`.
pub(crate) fn load(conn: &Connection, id: &BlockId) -> Result<Block> {
    conn.prepare_cached(&format!(
        "SELECT {BLOCK_COLS} FROM blocks b WHERE b.id = ?1"
    ))
    .db()?
    .query_row([id.as_str()], block_from_row)
    .optional()
    .db()?
    .ok_or_else(|| Error::not_found("block", id.as_str()))
}

/// Links `block` to `agent` after its other blocks (the last place in the context window).
pub(crate) fn link_last(conn: &Connection, agent: &AgentId, block: &BlockId) -> Result<()> {
    let next: i64 = conn
        .prepare_cached(
            "SELECT coalesce(max(position) + 1, 0) FROM agent_blocks WHERE agent_id = ?1",
        )
        .db()?
        .query_row([agent.as_str()], |r| r.get(0))
        .db()?;
    link(conn, agent, block, next)
}

/// Links a block to an agent at `position` (no clash check; callers do that).
pub(crate) fn link(
    conn: &Connection,
    agent: &AgentId,
    block: &BlockId,
    position: i64,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO agent_blocks (agent_id, block_id, position) VALUES (?1, ?2, ?3)",
    )
    .db()?
    .execute(params![agent.as_str(), block.as_str(), position])
    .db()?;
    Ok(())
}

/// Whether `agent` has a block other than `except` labelled `label`.
fn label_taken(conn: &Connection, agent: &str, label: &str, except: &BlockId) -> Result<bool> {
    conn.prepare_cached(
        "SELECT 1 FROM agent_blocks ab JOIN blocks b ON b.id = ab.block_id
         WHERE ab.agent_id = ?1 AND b.label = ?2 AND b.id != ?3",
    )
    .db()?
    .exists(params![agent, label, except.as_str()])
    .db()
}

fn attached_agents(conn: &Connection, block: &BlockId) -> Result<Vec<AgentId>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT a.id FROM agent_blocks ab JOIN agents a ON a.id = ab.agent_id
             WHERE ab.block_id = ?1 ORDER BY a.created_at, a.id",
        )
        .db()?;
    let rows = stmt
        .query_map([block.as_str()], |r| {
            Ok(AgentId::from(r.get::<_, String>(0)?))
        })
        .db()?;
    rows.collect::<rusqlite::Result<_>>().db()
}

/// Who made a change and where: the editor, and the step for edits by an agent's tool call.
pub(crate) struct Author<'a> {
    /// Recorded in the history row.
    pub editor: &'a Editor,
    /// The step whose tool call made the edit.
    pub step: Option<&'a StepId>,
}

impl<'a> Author<'a> {
    /// An author outside any step (a person, an import, an undo).
    pub(crate) fn by(editor: &'a Editor) -> Self {
        Self { editor, step: None }
    }
}

/// Records a value change of `before` into `after` (both versions) as a history row.
fn record_edit(
    conn: &Connection,
    before: &Block,
    after: &Block,
    author: &Author<'_>,
    now: Timestamp,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO block_history (id, block_id, editor, old_value, new_value, created_at,
                                   old_version, new_version, step_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )
    .db()?
    .execute(params![
        EditId::new().as_str(),
        before.id.as_str(),
        sql::to_json(author.editor)?,
        before.value,
        after.value,
        sql::micros(now),
        sql::int(before.version, "version")?,
        sql::int(after.version, "version")?,
        author.step.map(StepId::as_str),
    ])
    .db()?;
    Ok(())
}

/// Refuses a write based on `based_on` when `current` has moved on.
pub(crate) fn check_version(current: &Block, based_on: Option<u64>) -> Result<()> {
    match based_on {
        Some(v) if v != current.version => Err(Error::StaleVersion {
            based_on: v,
            current: Box::new(current.clone()),
        }),
        _ => Ok(()),
    }
}

/// Sets `current`'s value to `new_value` (already checked), bumps its version, saves it and
/// records the edit. Returns the block as stored.
pub(crate) fn commit_value(
    conn: &Connection,
    current: &Block,
    new_value: String,
    author: &Author<'_>,
    now: Timestamp,
) -> Result<Block> {
    let mut b = current.clone();
    b.value = new_value;
    b.version += 1;
    b.updated_at = now.max(b.updated_at);
    record_edit(conn, current, &b, author, now)?;
    save(conn, &b)?;
    Ok(b)
}

impl BlockRows<'_> {
    /// Creates a standalone block (attach it later with [`attach_block`](BlockRows::attach)).
    /// Defaults as in [`create`](crate::AgentRows::create).
    ///
    /// Errors: `Invalid` for a bad label or a value over an explicit limit.
    pub fn create(self, b: &NewBlock) -> Result<Block> {
        let block = build(b, sql::now())?;
        self.store.write(|tx| insert(tx, &block))?;
        Ok(block)
    }

    /// One block. Errors: `NotFound("block", id)`.
    pub fn get(self, id: &BlockId) -> Result<Block> {
        self.store.read(|c| load(c, id))
    }

    /// Every block (attached or not), oldest first, optionally only those labelled `label`.
    pub fn list(self, label: Option<&str>) -> Result<Vec<Block>> {
        self.store.read(|c| {
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {BLOCK_COLS} FROM blocks b
                     WHERE ?1 IS NULL OR b.label = ?1 ORDER BY b.created_at, b.id"
                ))
                .db()?;
            let rows = stmt.query_map([label], block_from_row).db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// The agent's blocks in attach order (the order they are compiled into the context).
    /// Errors: `NotFound("agent")`.
    pub fn of_agent(self, agent: &AgentId) -> Result<Vec<Block>> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {BLOCK_COLS} FROM agent_blocks ab JOIN blocks b ON b.id = ab.block_id
                     WHERE ab.agent_id = ?1 ORDER BY ab.position"
                ))
                .db()?;
            let rows = stmt.query_map([agent.as_str()], block_from_row).db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// The agent's block labelled `label`.
    /// Errors: `NotFound("agent")`; `NotFound("block", label)`.
    pub fn by_label(self, agent: &AgentId, label: &str) -> Result<Block> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            c.prepare_cached(&format!(
                "SELECT {BLOCK_COLS} FROM agent_blocks ab JOIN blocks b ON b.id = ab.block_id
                 WHERE ab.agent_id = ?1 AND b.label = ?2"
            ))
            .db()?
            .query_row(params![agent.as_str(), label], block_from_row)
            .optional()
            .db()?
            .ok_or_else(|| Error::not_found("block", label))
        })
    }

    /// The agents a block is attached to, oldest agent first. Errors: `NotFound("block")`.
    pub fn agents_of(self, block: &BlockId) -> Result<Vec<AgentId>> {
        self.store.read(|c| {
            load(c, block)?;
            attached_agents(c, block)
        })
    }

    /// Attaches an existing block to an agent, after its other blocks. Attaching a block that
    /// is already attached does nothing.
    ///
    /// Errors: `NotFound("agent" | "block")`; `Conflict` if the agent already has another
    /// block with the same label.
    pub fn attach(self, agent: &AgentId, block: &BlockId) -> Result<()> {
        self.store.write(|tx| {
            sql::ensure_agent(tx, agent)?;
            let b = load(tx, block)?;
            let linked = tx
                .prepare_cached("SELECT 1 FROM agent_blocks WHERE agent_id = ?1 AND block_id = ?2")
                .db()?
                .exists(params![agent.as_str(), block.as_str()])
                .db()?;
            if linked {
                return Ok(());
            }
            if label_taken(tx, agent.as_str(), &b.label, block)? {
                return Err(label_conflict(&b.label));
            }
            link_last(tx, agent, block)
        })
    }

    /// Detaches a block from an agent; the block itself stays. Detaching a block that is not
    /// attached does nothing. Errors: `NotFound("agent" | "block")`.
    pub fn detach(self, agent: &AgentId, block: &BlockId) -> Result<()> {
        self.store.write(|tx| {
            sql::ensure_agent(tx, agent)?;
            load(tx, block)?;
            tx.prepare_cached("DELETE FROM agent_blocks WHERE agent_id = ?1 AND block_id = ?2")
                .db()?
                .execute(params![agent.as_str(), block.as_str()])
                .db()?;
            Ok(())
        })
    }

    /// Applies `patch` in one transaction and returns the block as stored. When
    /// `patch.version` is given the block must still be at that version (a whole-value write
    /// names the version it read). The value (new or old) must fit the limit (new or old), in
    /// characters; a new label must be valid and free on every agent the block is attached to.
    /// A change bumps the block's version; a history row attributed to `editor` (with both
    /// versions) is written whenever the value changes. A patch that changes nothing writes
    /// nothing.
    ///
    /// Errors: `NotFound("block")`; `StaleVersion` with the current block; `Invalid` (limit
    /// message `Edit failed: Exceeds N character limit (requested M)…`, or a bad label);
    /// `Conflict` on a label clash. Nothing changes on error.
    pub fn update(self, id: &BlockId, patch: &BlockPatch, editor: &Editor) -> Result<Block> {
        self.store.write(|tx| {
            let now = sql::now();
            let before = load(tx, id)?;
            check_version(&before, patch.version)?;
            let mut b = before.clone();
            if let Some(label) = patch.label.as_ref().filter(|l| **l != b.label) {
                check_label(label)?;
                for agent in attached_agents(tx, id)? {
                    if label_taken(tx, agent.as_str(), label, id)? {
                        return Err(label_conflict(label));
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
            if b == before {
                return Ok(b);
            }
            b.version += 1;
            b.updated_at = now.max(b.updated_at);
            if b.value != before.value {
                record_edit(tx, &before, &b, &Author::by(editor), now)?;
            }
            save(tx, &b)?;
            Ok(b)
        })
    }

    /// Deletes a block, its links to agents and its history. Errors: `NotFound("block")`.
    pub fn delete(self, id: &BlockId) -> Result<()> {
        self.store.write(|tx| {
            let n = tx
                .execute("DELETE FROM blocks WHERE id = ?1", [id.as_str()])
                .db()?;
            if n == 0 {
                Err(Error::not_found("block", id.as_str()))
            } else {
                Ok(())
            }
        })
    }

    /// One recorded edit, by id. Errors: `NotFound("edit")`.
    pub fn edit(self, id: &EditId) -> Result<BlockEdit> {
        self.store.read(|c| {
            c.prepare_cached(&format!(
                "SELECT {EDIT_COLS} FROM block_history WHERE id = ?1"
            ))
            .db()?
            .query_row([id.as_str()], edit_from_row)
            .optional()
            .db()?
            .ok_or_else(|| Error::not_found("edit", id.as_str()))
        })
    }

    /// Up to `limit` recorded edits of a block, newest first. Errors: `NotFound("block")`.
    pub fn history(self, id: &BlockId, limit: usize) -> Result<Vec<BlockEdit>> {
        self.store.read(|c| {
            load(c, id)?;
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {EDIT_COLS} FROM block_history
                     WHERE block_id = ?1 ORDER BY pk DESC LIMIT ?2"
                ))
                .db()?;
            let rows = stmt
                .query_map(params![id.as_str(), sql::sat(limit)], edit_from_row)
                .db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }
}

//! Undoing one recorded block edit without losing the edits made after it.
//!
//! An edit is undone by its *reverse operation*: the text it changed, found again in the
//! block's current value with just enough surrounding text to be unique, is put back as it
//! was. Later edits elsewhere in the block stay. When the changed text is gone or ambiguous
//! (a later edit rewrote that part), the edit cannot be undone on its own; the caller is told
//! so and may choose a whole restore of the value before the edit, after seeing what that
//! loses ([`UndoPlan`]).

use crate::blocks::{self, Author};
use crate::rooms::BlockRows;
use crate::sql::{self, DbResult};
use engram_core::memory::check_limit;
use engram_core::{Block, BlockId, EditId, Editor, Error, Result};
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

pub use engram_core::block_op::revert_value;

/// What undoing one edit would do, computed from the block as stored now; nothing is written.
#[derive(Clone, Debug, PartialEq, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct UndoPlan {
    /// The edit to undo.
    pub edit_id: EditId,
    /// The block as stored now (its `version` is what an undo should name).
    pub block: Block,
    /// How many edits of the block were recorded after this one.
    pub later_edits: u32,
    /// The value after undoing just this edit, keeping every later one; `None` when the text
    /// it changed is no longer in the block exactly once.
    pub reverted: Option<String>,
    /// The value before the edit: what a whole restore writes, dropping every later edit.
    pub restored: String,
}

/// One recorded edit: its block, its values, and its row number (history order).
struct EditRow {
    block: BlockId,
    old_value: String,
    new_value: String,
    pk: i64,
}

fn load_edit(conn: &Connection, edit: &EditId) -> Result<EditRow> {
    conn.prepare_cached(
        "SELECT block_id, old_value, new_value, pk FROM block_history WHERE id = ?1",
    )
    .db()?
    .query_row([edit.as_str()], |r| {
        Ok(EditRow {
            block: BlockId::from(r.get::<_, String>(0)?),
            old_value: r.get(1)?,
            new_value: r.get(2)?,
            pk: r.get(3)?,
        })
    })
    .optional()
    .db()?
    .ok_or_else(|| Error::not_found("edit", edit.as_str()))
}

fn later_edits(conn: &Connection, e: &EditRow) -> Result<u32> {
    let n: i64 = conn
        .prepare_cached("SELECT count(*) FROM block_history WHERE block_id = ?1 AND pk > ?2")
        .db()?
        .query_row(params![e.block.as_str(), e.pk], |r| r.get(0))
        .db()?;
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

pub(crate) fn plan(conn: &Connection, edit: &EditId) -> Result<UndoPlan> {
    let e = load_edit(conn, edit)?;
    let block = blocks::load(conn, &e.block)?;
    Ok(UndoPlan {
        edit_id: edit.clone(),
        later_edits: later_edits(conn, &e)?,
        reverted: revert_value(&e.old_value, &e.new_value, &block.value),
        restored: e.old_value,
        block,
    })
}

/// Writes `value` over the block of `plan` as an undo of its edit: checked against the
/// block's current limit, recorded in the history.
pub(crate) fn write_undo(conn: &Connection, plan: &UndoPlan, value: &str) -> Result<Block> {
    let editor = Editor::Undo {
        edit_id: plan.edit_id.clone(),
    };
    check_limit(&plan.block.value, value, plan.block.limit)
        .map_err(|e| Error::Invalid(e.to_string()))?;
    if plan.block.value == value {
        return Ok(plan.block.clone());
    }
    blocks::commit_value(
        conn,
        &plan.block,
        value.to_owned(),
        &Author::by(&editor),
        sql::now(),
    )
}

/// [`BlockRows::undo_edit`] inside the caller's transaction (a sleep-time pass undoes all its
/// edits in one).
pub(crate) fn undo_in(tx: &Connection, edit: &EditId, based_on: Option<u64>) -> Result<Block> {
    let p = plan(tx, edit)?;
    blocks::check_version(&p.block, based_on)?;
    let Some(value) = p.reverted.clone() else {
        return Err(cannot_undo_alone(&p));
    };
    write_undo(tx, &p, &value)
}

/// The `Conflict` for an edit whose changed text later edits rewrote: only a whole restore
/// can undo it, losing them.
pub fn cannot_undo_alone(p: &UndoPlan) -> Error {
    engram_store_api::cannot_undo_alone(&p.block.label, p.later_edits)
}

impl BlockRows<'_> {
    /// What undoing `edit` would do to its block as stored now (see [`UndoPlan`]).
    /// Errors: `NotFound("edit")`.
    pub fn undo_plan(self, edit: &EditId) -> Result<UndoPlan> {
        self.store.read(|c| plan(c, edit))
    }

    /// Undoes just `edit`, keeping every edit made after it (its reverse operation, see
    /// [`revert_value`]), recorded as an edit by [`Editor::Undo`]. With `based_on` (the block
    /// version the person saw) it is refused if the block changed since.
    ///
    /// Errors: `NotFound("edit")`; `StaleVersion` with the current block; `Conflict` when the
    /// text the edit changed is no longer in the block exactly once (only a whole restore,
    /// [`restore_edit`](BlockRows::restore_edit), can undo it then); `Invalid` if the result no
    /// longer fits the limit. Nothing changes on error.
    pub fn undo_edit(self, edit: &EditId, based_on: Option<u64>) -> Result<Block> {
        self.store.write(|tx| undo_in(tx, edit, based_on))
    }

    /// Restores the whole value `edit` replaced (its `old_value`), dropping every later edit of
    /// the block — the choice offered when [`undo_edit`](BlockRows::undo_edit) cannot apply. It is a
    /// whole-value write: with `based_on` it is refused if the block changed since, so it never
    /// silently discards an edit the person has not seen. Recorded as an edit by
    /// [`Editor::Undo`].
    ///
    /// Errors: `NotFound("edit")`; `StaleVersion` with the current block; `Invalid` if the old
    /// value no longer fits.
    pub fn restore_edit(self, edit: &EditId, based_on: Option<u64>) -> Result<Block> {
        self.store.write(|tx| {
            let p = plan(tx, edit)?;
            blocks::check_version(&p.block, based_on)?;
            let value = p.restored.clone();
            write_undo(tx, &p, &value)
        })
    }
}

//! One block operation outside a step: what an edit from another program (an MCP client) does.
//!
//! The operation is applied to the value as stored when the write transaction begins (SQLite's
//! `BEGIN IMMEDIATE` serialises it against a step committing in this or another process), so an
//! agent's edit made meanwhile is kept, exactly as a step's own [`BlockWrite`](crate::BlockWrite)
//! is re-applied at commit. A change leaves a history row naming its editor, so it can be undone.

use crate::blocks::{self, Author, EDIT_COLS, edit_from_row};
use crate::rooms::BlockRows;
use crate::sql::{self, DbResult};
use engram_core::{
    AgentId, Applied, Block, BlockEdit, BlockId, BlockOp, Editor, NewBlock, OpOutcome, Result,
};
use rusqlite::params;

impl BlockRows<'_> {
    /// Applies `op` to block `id` as stored now, in one transaction, recording a history row
    /// by `editor` when the value changes. Read-only blocks refuse it, as they refuse an
    /// agent's tools.
    ///
    /// Errors: `NotFound("block")`; `Storage`. A refusal is an [`OpOutcome::Refused`], not an
    /// error.
    pub fn apply_op(self, id: &BlockId, op: &BlockOp, editor: &Editor) -> Result<OpOutcome> {
        self.store.write(|tx| {
            let current = blocks::load(tx, id)?;
            match op.apply(&current, true) {
                Err(error) => Ok(OpOutcome::Refused { error, current }),
                Ok(Applied::Unchanged) => Ok(OpOutcome::Unchanged(current)),
                Ok(Applied::Changed(value)) => {
                    let stored =
                        blocks::commit_value(tx, &current, value, &Author::by(editor), sql::now())?;
                    Ok(OpOutcome::Changed(stored))
                }
            }
        })
    }

    /// Creates a block for `agent` (after its other blocks) whose value is written by
    /// `editor`: the block starts empty and the value is recorded as `editor`'s edit in the
    /// same transaction, so the creation shows in the history and can be undone like any edit.
    ///
    /// Errors: `NotFound("agent")`; `Invalid` for a bad label or a value over an explicit
    /// limit; `Conflict` when the label is taken. Nothing is written on error.
    pub fn create_for_agent_as(
        self,
        agent: &AgentId,
        new: &NewBlock,
        editor: &Editor,
    ) -> Result<Block> {
        let now = sql::now();
        let full = blocks::build(new, now)?;
        let empty = Block {
            value: String::new(),
            ..full.clone()
        };
        self.store.write(|tx| {
            crate::sharing::insert_for_agent(tx, agent, &empty)?;
            if full.value.is_empty() {
                return Ok(empty);
            }
            blocks::commit_value(tx, &empty, full.value.clone(), &Author::by(editor), now)
        })
    }

    /// The newest edits recorded by MCP clients ([`Editor::Client`]) on any block, newest
    /// first, at most `limit`.
    ///
    /// Errors: `Storage`.
    pub fn client_edits(self, limit: usize) -> Result<Vec<BlockEdit>> {
        self.store.read(|c| {
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {EDIT_COLS} FROM block_history
                     WHERE json_extract(editor, '$.kind') = 'client'
                     ORDER BY pk DESC LIMIT ?1"
                ))
                .db()?;
            let rows = stmt
                .query_map(params![sql::sat(limit)], edit_from_row)
                .db()?;
            rows.collect::<rusqlite::Result<Vec<_>>>().db()
        })
    }

    /// Whether `edit` has been undone (a later history row is its undo).
    ///
    /// Errors: `Storage`.
    pub fn edit_undone(self, edit: &engram_core::EditId) -> Result<bool> {
        self.store.read(|c| {
            c.prepare_cached(
                "SELECT 1 FROM block_history
                 WHERE json_extract(editor, '$.kind') = 'undo'
                   AND json_extract(editor, '$.edit_id') = ?1",
            )
            .db()?
            .exists(params![edit.as_str()])
            .db()
        })
    }
}

//! Writing a sleep-time pass's changes in one transaction, and undoing them.
//!
//! A pass decides its changes while the chat goes on, and writes them all at its end, at once:
//! a pass that fails or is killed leaves nothing half-written. Block edits are operations
//! (`BlockOp`) re-applied to each block as stored at commit time, so an edit made meanwhile by
//! hand or by the chat is kept; a whole-value rewrite whose block moved on is rebased onto the
//! current value when the text it changed is still there exactly once (the reverse of undo's
//! reverse operation), and otherwise left out and said so. Nothing is deleted: a passage that
//! stopped being current is marked superseded (or merged) with a link to its successor.
//!
//! Undo goes through the block's versioned undo (`undo`): the text an edit changed is put
//! back and later edits stay; when a later edit rewrote that text the undo is refused, never
//! written over.

use crate::BlockWrite;
use crate::blocks::{self, Author};
use crate::passages;
use crate::rooms::SleeptimeRows;
use crate::sleeptime::{self, insert_pass};
use crate::sql::{self, DbResult};
use crate::undo::{self, revert_value};
use engram_core::{
    Applied, Block, BlockId, BlockOp, EditId, Editor, Error, PassChange, PassChangeKind, PassId,
    PassStatus, PassageId, Result, SleeptimePass, Timestamp,
};
use engram_store_api::{PassCommit, PassageOp, block_diff, left_out_reason};
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::HashMap;

/// The value of `block` at version `version`, from its history (`None` when not recorded).
fn value_at(conn: &Connection, block: &BlockId, version: u64) -> Result<Option<String>> {
    conn.prepare_cached(
        "SELECT new_value FROM block_history WHERE block_id = ?1 AND new_version = ?2
         ORDER BY pk DESC LIMIT 1",
    )
    .db()?
    .query_row(
        params![block.as_str(), sql::int(version, "version")?],
        |r| r.get(0),
    )
    .optional()
    .db()
}

/// The id of the newest history row of `block`.
fn last_edit(conn: &Connection, block: &BlockId) -> Result<EditId> {
    conn.prepare_cached("SELECT id FROM block_history WHERE block_id = ?1 ORDER BY pk DESC LIMIT 1")
        .db()?
        .query_row([block.as_str()], |r| {
            Ok(EditId::from(r.get::<_, String>(0)?))
        })
        .db()
}

/// `op` as it applies to `current`: a rewrite based on the version this commit first saw is
/// the pass's own; one based on an older version is rebased onto the current value when the
/// text it changed is still there once; `None` when it cannot apply.
fn rebase(
    conn: &Connection,
    op: &BlockOp,
    current: &Block,
    first_seen: u64,
) -> Result<Option<BlockOp>> {
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
    let Some(base) = value_at(conn, &current.id, *based_on_version)? else {
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
fn apply_blocks(
    tx: &Connection,
    pass: &PassId,
    writes: &[BlockWrite],
    now: Timestamp,
) -> Result<(Vec<PassChangeKind>, u32)> {
    let editor = Editor::Sleeptime {
        pass_id: pass.clone(),
    };
    let mut first_seen: HashMap<BlockId, u64> = HashMap::new();
    let mut out = Vec::new();
    let mut left_out = 0;
    for w in writes {
        let current = match blocks::load(tx, &w.block_id) {
            Ok(b) => b,
            Err(Error::NotFound { .. }) => {
                left_out += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        let seen = *first_seen
            .entry(w.block_id.clone())
            .or_insert(current.version);
        let Some(op) = rebase(tx, &w.op, &current, seen)? else {
            left_out += 1;
            continue;
        };
        match op.apply(&current, true) {
            Ok(Applied::Changed(value)) => {
                let after = blocks::commit_value(tx, &current, value, &Author::by(&editor), now)?;
                out.push(PassChangeKind::BlockEdit {
                    edit_id: last_edit(tx, &w.block_id)?,
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
fn apply_passages(
    tx: &Connection,
    pass: &SleeptimePass,
    ops: &[PassageOp],
    now: Timestamp,
) -> Result<(Vec<PassChangeKind>, u32)> {
    let mut out = Vec::new();
    let mut left_out = 0;
    for op in ops {
        match op {
            PassageOp::Add { id, passage } => {
                let p = passages::insert_as(tx, &pass.agent_id, id.clone(), passage, None, now)?;
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
                let text: Option<String> = tx
                    .prepare_cached(
                        "UPDATE passages SET superseded_at = ?1, superseded_kind = ?2,
                                superseded_by = ?3, superseded_pass = ?4
                         WHERE id = ?5 AND agent_id = ?6 AND superseded_at IS NULL
                           AND (?3 IS NULL OR ?3 != ?5)
                         RETURNING text",
                    )
                    .db()?
                    .query_row(
                        params![
                            sql::micros(now),
                            how.as_str(),
                            by.as_ref().map(PassageId::as_str),
                            pass.id.as_str(),
                            passage_id.as_str(),
                            pass.agent_id.as_str(),
                        ],
                        |r| r.get(0),
                    )
                    .optional()
                    .db()?;
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

fn insert_changes(tx: &Connection, pass: &PassId, kinds: &[PassChangeKind]) -> Result<()> {
    let mut stmt = tx
        .prepare_cached("INSERT INTO sleeptime_changes (pass_id, idx, change) VALUES (?1, ?2, ?3)")
        .db()?;
    for (i, k) in kinds.iter().enumerate() {
        stmt.execute(params![pass.as_str(), sql::sat(i), sql::to_json(k)?])
            .db()?;
    }
    Ok(())
}

/// Undoes change `c` of pass `pass` inside `tx`.
fn undo_change(tx: &Connection, pass: &PassId, c: &PassChange) -> Result<()> {
    match &c.kind {
        PassChangeKind::BlockEdit { edit_id, .. } => {
            undo::undo_in(tx, edit_id, None)?;
        }
        PassChangeKind::PassageSuperseded { passage_id, .. } => {
            tx.prepare_cached(
                "UPDATE passages SET superseded_at = NULL, superseded_kind = NULL,
                        superseded_by = NULL, superseded_pass = NULL
                 WHERE id = ?1 AND superseded_pass = ?2",
            )
            .db()?
            .execute(params![passage_id.as_str(), pass.as_str()])
            .db()?;
        }
        PassChangeKind::PassageAdded { passage_id, .. } => {
            let successor_of: Option<String> = tx
                .prepare_cached(
                    "SELECT id FROM passages WHERE superseded_by = ?1 AND superseded_at IS NOT NULL
                     LIMIT 1",
                )
                .db()?
                .query_row([passage_id.as_str()], |r| r.get(0))
                .optional()
                .db()?;
            if let Some(older) = successor_of {
                return Err(Error::Conflict(format!(
                    "passage {passage_id} replaced {older}; undo that replacement first"
                )));
            }
            // The pass added it: taking it away restores archival memory as it was.
            tx.prepare_cached("DELETE FROM passages WHERE id = ?1")
                .db()?
                .execute([passage_id.as_str()])
                .db()?;
        }
    }
    tx.prepare_cached(
        "UPDATE sleeptime_changes SET undone_at = ?1 WHERE pass_id = ?2 AND idx = ?3",
    )
    .db()?
    .execute(params![sql::micros(sql::now()), pass.as_str(), c.index])
    .db()?;
    Ok(())
}

/// Marks the pass undone when none of its changes stands.
fn settle(tx: &Connection, pass: &PassId) -> Result<()> {
    tx.prepare_cached(
        "UPDATE sleeptime_passes SET status = 'undone'
         WHERE id = ?1 AND status = 'done'
           AND NOT EXISTS (SELECT 1 FROM sleeptime_changes
                           WHERE pass_id = ?1 AND undone_at IS NULL)
           AND EXISTS (SELECT 1 FROM sleeptime_changes WHERE pass_id = ?1)",
    )
    .db()?
    .execute([pass.as_str()])
    .db()?;
    Ok(())
}

impl SleeptimeRows<'_> {
    /// Writes a pass and all its changes in one transaction (see the module docs): block
    /// edits as operations on the current values, passages added and superseded, the pass's
    /// record with one change per effect, and the agent's reading position. Operations that
    /// no longer apply (a block rewritten meanwhile in the same place, a passage already
    /// superseded) are left out and counted in the record's `reason`. Returns the record as
    /// stored.
    ///
    /// Errors: `NotFound("agent")`; `Invalid` for a passage without text; storage errors.
    /// Nothing is written on error.
    pub fn commit_pass(self, commit: &PassCommit) -> Result<SleeptimePass> {
        self.store.write(|tx| {
            sql::ensure_agent(tx, &commit.pass.agent_id)?;
            let now = sql::now();
            let mut pass = commit.pass.clone();
            pass.status = PassStatus::Done;
            let (mut kinds, blocks_out) = apply_blocks(tx, &pass.id, &commit.block_writes, now)?;
            let (more, passages_out) = apply_passages(tx, &pass, &commit.passage_ops, now)?;
            kinds.extend(more);
            if let Some(reason) = left_out_reason(blocks_out + passages_out) {
                pass.reason = Some(reason);
            }
            insert_pass(tx, &pass)?;
            insert_changes(tx, &pass.id, &kinds)?;
            sleeptime::load(tx, &pass.id)
        })
    }

    /// Undoes change `index` of pass `pass`, or with `None` every change still standing
    /// (newest first), in one transaction: all of them or, when one cannot be undone, none
    /// (see the module docs). A change already undone is left as it is.
    ///
    /// Errors: `NotFound("sleep-time pass" | "change")`; `Conflict` naming what a later edit
    /// changed (nothing is written over).
    pub fn undo_changes(self, pass: &PassId, index: Option<u32>) -> Result<SleeptimePass> {
        self.store.write(|tx| {
            let record = sleeptime::load(tx, pass)?;
            if let Some(i) = index
                && !record.changes.iter().any(|c| c.index == i)
            {
                return Err(Error::not_found("change", i.to_string()));
            }
            for c in record
                .changes
                .iter()
                .rev()
                .filter(|c| c.undone_at.is_none() && index.is_none_or(|i| i == c.index))
            {
                undo_change(tx, pass, c)?;
            }
            settle(tx, pass)?;
            sleeptime::load(tx, pass)
        })
    }
}

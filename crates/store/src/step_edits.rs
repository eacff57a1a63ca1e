//! Applying a step's block edits at commit time, inside the step's transaction, by the rules
//! every backend shares (`engram_store_api::StepStore`'s module docs): SQLite's
//! `BEGIN IMMEDIATE` has serialised this transaction against every other writer, also in other
//! processes, so each operation meets the block as stored now; a savepoint per tool call lets a
//! call's writes fail together.

use crate::blocks::{self, Author};
use crate::sql::DbResult;
use engram_core::block_op::{applied_message, refused_message};
use engram_core::{
    Applied, BlockId, Editor, Error, NewMessage, Result, StepId, Timestamp, ToolStatus,
};
use engram_store_api::{
    BlockChange, BlockWrite, call_groups, gone_message, rebase, restate, result_index,
};
use rusqlite::Connection;
use std::collections::HashMap;

/// What the block writes of a step did.
pub(crate) struct StepEdits {
    /// Every change, in order.
    pub changes: Vec<BlockChange>,
    /// Tool calls whose writes were refused.
    pub refused: Vec<String>,
}

/// `(change, whether the value changed)` for each write of one tool call.
type GroupResult = Vec<(BlockChange, bool)>;

/// Applies `writes` in order, one savepoint per tool call, rewriting the tool results in `msgs`
/// of calls that were refused (`Failed` + current value) or that restate the block (`OK` +
/// the value as committed).
///
/// Errors: a write that fails and has no tool result in `msgs` to answer with fails the whole
/// step: `NotFound("block")`, or `Invalid` with the refusal (limit message, text not found,
/// stale version…); storage errors.
pub(crate) fn apply(
    tx: &Connection,
    step: &StepId,
    writes: &[BlockWrite],
    msgs: &mut [NewMessage],
    now: Timestamp,
) -> Result<StepEdits> {
    let mut out = StepEdits {
        changes: Vec::new(),
        refused: Vec::new(),
    };
    // The version each block had when this commit first touched it.
    let mut first_seen: HashMap<BlockId, u64> = HashMap::new();
    for range in call_groups(writes) {
        let group = &writes[range];
        let call = group[0].tool_call_id();
        let answer = call.and_then(|id| result_index(msgs, id));
        tx.execute_batch("SAVEPOINT tool_call").db()?;
        match apply_group(tx, step, group, &mut first_seen, now) {
            Ok(results) => {
                tx.execute_batch("RELEASE tool_call").db()?;
                if let (Some(at), Some((last, _))) = (answer, results.last())
                    && group.iter().any(|w| w.restate_result)
                {
                    restate(&mut msgs[at], ToolStatus::Ok, applied_message(&last.block));
                }
                out.changes.extend(
                    results
                        .into_iter()
                        .filter(|(_, changed)| *changed)
                        .map(|(c, _)| c),
                );
            }
            Err(Refusal::Store(e)) => return Err(e),
            Err(refusal) => {
                tx.execute_batch("ROLLBACK TO tool_call; RELEASE tool_call")
                    .db()?;
                let (Some(at), Some(call)) = (answer, call) else {
                    return Err(refusal.into_error());
                };
                let text = match refusal {
                    Refusal::Op { why, block } => refused_message(&why, &blocks::load(tx, &block)?),
                    Refusal::Gone(id) => gone_message(&id),
                    Refusal::Store(e) => return Err(e),
                };
                restate(&mut msgs[at], ToolStatus::Failed, text);
                out.refused.push(call.to_owned());
            }
        }
    }
    Ok(out)
}

/// Why a tool call's writes were not applied.
enum Refusal {
    /// The operation does not apply to the current value.
    Op {
        /// For the model.
        why: String,
        /// The block it was meant for.
        block: BlockId,
    },
    /// The block is gone.
    Gone(BlockId),
    /// The database failed: the whole step fails.
    Store(Error),
}

impl Refusal {
    fn into_error(self) -> Error {
        match self {
            Refusal::Op { why, .. } => Error::Invalid(why),
            Refusal::Gone(id) => Error::not_found("block", id.as_str()),
            Refusal::Store(e) => e,
        }
    }
}

fn apply_group(
    tx: &Connection,
    step: &StepId,
    group: &[BlockWrite],
    first_seen: &mut HashMap<BlockId, u64>,
    now: Timestamp,
) -> Result<GroupResult, Refusal> {
    let mut changes = Vec::new();
    for w in group {
        let current = match blocks::load(tx, &w.block_id) {
            Ok(b) => b,
            Err(Error::NotFound { .. }) => return Err(Refusal::Gone(w.block_id.clone())),
            Err(e) => return Err(Refusal::Store(e)),
        };
        let base = *first_seen
            .entry(w.block_id.clone())
            .or_insert(current.version);
        let op = rebase(&w.op, base, current.version);
        let by_agent = matches!(w.editor, Editor::Agent { .. });
        let author = Author {
            editor: &w.editor,
            step: by_agent.then_some(step),
        };
        let (block, changed) = match op.apply(&current, by_agent) {
            Ok(Applied::Changed(value)) => (
                blocks::commit_value(tx, &current, value, &author, now).map_err(Refusal::Store)?,
                true,
            ),
            Ok(Applied::Unchanged) => (current, false),
            Err(e) => {
                return Err(Refusal::Op {
                    why: e.to_string(),
                    block: w.block_id.clone(),
                });
            }
        };
        let change = BlockChange {
            block,
            tool_call_id: w.tool_call_id().map(str::to_owned),
        };
        changes.push((change, changed));
    }
    Ok(changes)
}

//! Applying a step's block edits at commit time, inside the step's transaction.
//!
//! Each [`BlockWrite`] carries an operation, not a value: it is applied to the block as stored
//! *now* (SQLite's `BEGIN IMMEDIATE` has serialised this transaction against every other writer,
//! also in other processes), so edits made since the step started — by hand, by another agent
//! on a shared block — are kept. The writes of one tool call succeed or fail together (a
//! savepoint per call): when one no longer applies, the call's earlier writes are rolled back
//! and its stored result becomes a `Failed` one that shows the block's current value, so the
//! model can retry. Every tool call still gets exactly one result, in the same transaction.
//!
//! A whole-value write ([`BlockOp::Rewrite`]) names the version it read. Writes of this same
//! step that commit before it do not make it stale: a rewrite based on the version the block had
//! when this commit first touched it is re-based onto the step's own latest version.

use crate::blocks::{self, Author};
use crate::sql::DbResult;
use engram_core::block_op::{applied_message, refused_message};
use engram_core::{
    Applied, Block, BlockId, BlockOp, Editor, Error, NewMessage, Result, Role, StepId, Timestamp,
    ToolReturn, ToolStatus,
};
use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// One edit of a block by a step: an operation re-applied to the block's value as stored at
/// commit time (see [`RunRows::commit_step`](crate::RunRows::commit_step)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockWrite {
    /// The block to change.
    pub block_id: BlockId,
    /// What to do to its current value (checked against its limit, in characters).
    pub op: BlockOp,
    /// Who made the change (recorded in the block's history). For [`Editor::Agent`] with a
    /// `tool_call_id` whose tool result is among the step's messages, a write that no longer
    /// applies turns that result into a `Failed` one instead of failing the step.
    pub editor: Editor,
    /// Rewrite the (OK) tool result to describe the block as committed (memory tools, whose
    /// result is the block's value); user tools keep their own return value.
    pub restate_result: bool,
}

impl BlockWrite {
    /// The tool call that made this write, if an agent's tool made it.
    pub fn tool_call_id(&self) -> Option<&str> {
        match &self.editor {
            Editor::Agent { tool_call_id, .. } => tool_call_id.as_deref(),
            _ => None,
        }
    }
}

/// A block as a step left it, and the tool call that changed it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockChange {
    /// The block after the change, as stored (new version).
    pub block: Block,
    /// The tool call that made the change.
    pub tool_call_id: Option<String>,
}

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
    let mut i = 0;
    while i < writes.len() {
        // One tool call's writes are consecutive (a call runs to its end before the next).
        let call = writes[i].tool_call_id();
        let mut end = i + 1;
        while call.is_some() && end < writes.len() && writes[end].tool_call_id() == call {
            end += 1;
        }
        let group = &writes[i..end];
        i = end;
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
                    Refusal::Gone(id) => format!(
                        "The block {id} no longer exists (it was deleted meanwhile); nothing was written."
                    ),
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
        let op = match &w.op {
            // This step's own earlier writes do not make its rewrite stale.
            BlockOp::Rewrite {
                value,
                based_on_version,
            } if *based_on_version == base => BlockOp::Rewrite {
                value: value.clone(),
                based_on_version: current.version,
            },
            op => op.clone(),
        };
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

/// Index of the tool message answering `call` in `msgs`.
fn result_index(msgs: &[NewMessage], call: &str) -> Option<usize> {
    msgs.iter()
        .position(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(call))
}

/// Replaces the status and message of a stored tool-result envelope, keeping its time.
fn restate(msg: &mut NewMessage, status: ToolStatus, message: String) {
    let mut envelope = ToolReturn::parse(&msg.content).unwrap_or_else(|| ToolReturn {
        status,
        message: String::new(),
        time: engram_core::run::format_time(chrono::Utc::now()),
    });
    envelope.status = status;
    envelope.message = message;
    msg.content = envelope.to_json();
}

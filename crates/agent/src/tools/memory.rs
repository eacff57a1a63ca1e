//! Core-memory edits: append, replace, insert, rethink. Each tool call becomes a [`BlockOp`]
//! that is tried at once on a fresh read of the block (so the model is told the value with
//! everyone's edits) and queued as a write of the step; the store applies it again,
//! authoritatively, to the value stored when the step commits (DESIGN.md §8b). Read-only blocks
//! and limits (characters) are checked both times.

use super::args::Args;
use super::context::ToolContext;
use engram_core::block_op::{applied_message, refused_message};
use engram_core::{Applied, Block, BlockOp, Editor, ReplaceCount};
use engram_store::BlockWrite;

fn find(ctx: &ToolContext<'_>, label: &str) -> Result<usize, String> {
    let index = ctx
        .blocks
        .iter()
        .position(|b| b.label == label)
        .ok_or_else(|| {
            let labels: Vec<&str> = ctx.blocks.iter().map(|b| b.label.as_str()).collect();
            format!(
                "No block labelled '{label}'. Your blocks are: {}.",
                labels.join(", ")
            )
        })?;
    if ctx.blocks[index].read_only {
        return Err(format!(
            "The '{label}' block is read-only; it cannot be edited."
        ));
    }
    Ok(index)
}

/// Re-reads block `index` from the store and replays this step's queued writes on it, so the
/// working copy is what the block will be if nothing else changes before the commit. Its
/// `version` stays the stored one (queued writes are not committed yet). A block that can no
/// longer be read keeps its working copy; the commit will refuse the write then.
pub(super) async fn refresh(ctx: &mut ToolContext<'_>, index: usize) {
    let Ok(mut fresh) = ctx.store.get_block(&ctx.blocks[index].id).await else {
        return;
    };
    for w in ctx.writes.iter().filter(|w| w.block_id == fresh.id) {
        if let Ok(Applied::Changed(value)) = w.op.apply(&fresh, false) {
            fresh.value = value;
        }
    }
    ctx.blocks[index] = fresh;
}

/// Re-reads every block (before a user tool sees them all).
pub(super) async fn refresh_all(ctx: &mut ToolContext<'_>) {
    for index in 0..ctx.blocks.len() {
        refresh(ctx, index).await;
    }
}

/// Tries `op` on block `index` (already refreshed); when it changes the value, applies it to
/// the working copy and queues it. Returns the working copy after the op, or the refusal text.
fn apply(
    ctx: &mut ToolContext<'_>,
    index: usize,
    op: BlockOp,
    call_id: &str,
    restate_result: bool,
) -> Result<Applied, String> {
    let block = &mut ctx.blocks[index];
    let applied = op
        .apply(block, true)
        .map_err(|e| refused_message(&e.to_string(), block))?;
    if let Applied::Changed(value) = &applied {
        block.value.clone_from(value);
        block.updated_at = ctx.now;
        ctx.writes.push(BlockWrite {
            block_id: block.id.clone(),
            op,
            editor: Editor::Agent {
                agent_id: ctx.agent.id.clone(),
                tool_call_id: Some(call_id.to_owned()),
            },
            restate_result,
        });
    }
    Ok(applied)
}

/// A memory tool's edit: refresh, apply, and tell the model what the block holds now.
async fn edit(
    ctx: &mut ToolContext<'_>,
    call_id: &str,
    label: &str,
    op: impl FnOnce(&Block) -> BlockOp,
) -> Result<String, String> {
    let index = find(ctx, label)?;
    refresh(ctx, index).await;
    let op = op(&ctx.blocks[index]);
    let duplicate_line = matches!(op, BlockOp::Append { .. });
    match apply(ctx, index, op, call_id, true)? {
        Applied::Changed(_) => Ok(applied_message(&ctx.blocks[index])),
        Applied::Unchanged if duplicate_line => Ok(format!(
            "The '{label}' block already contains that line; nothing changed."
        )),
        Applied::Unchanged => Ok(format!(
            "The '{label}' block already holds that; nothing changed."
        )),
    }
}

/// `core_memory_append(label, content)`: value + "\n" + content. Text already present as a line
/// is not added again, so a fact repeated by the model does not bloat memory.
pub(super) async fn append(
    ctx: &mut ToolContext<'_>,
    call_id: &str,
    args: &Args,
) -> Result<String, String> {
    let label = args.str("label")?;
    let content = args.str("content")?;
    if content.trim().is_empty() {
        return Err("Argument 'content' is empty; nothing to append.".into());
    }
    edit(ctx, call_id, label, |_| BlockOp::Append {
        text: content.to_owned(),
    })
    .await
}

/// `core_memory_replace(label, old_content, new_content)`: replaces every occurrence.
pub(super) async fn replace_all(
    ctx: &mut ToolContext<'_>,
    call_id: &str,
    args: &Args,
) -> Result<String, String> {
    let label = args.str("label")?;
    let old = args.str_any(&["old_content", "old_str", "old_string"])?;
    let new = args.str_any(&["new_content", "new_str", "new_string"])?;
    if old.is_empty() {
        return Err("Argument 'old_content' is empty; say which text to replace.".into());
    }
    edit(ctx, call_id, label, |_| BlockOp::Replace {
        old: old.to_owned(),
        new: new.to_owned(),
        count: ReplaceCount::All,
    })
    .await
}

/// `memory_replace(label, old_str, new_str)`: the text must occur exactly once.
pub(super) async fn replace_once(
    ctx: &mut ToolContext<'_>,
    call_id: &str,
    args: &Args,
) -> Result<String, String> {
    let label = args.str("label")?;
    let old = args.str_any(&["old_str", "old_string"])?;
    let new = args.str_any(&["new_str", "new_string"])?;
    if old.is_empty() {
        return Err("Argument 'old_str' is empty; say which text to replace.".into());
    }
    edit(ctx, call_id, label, |_| BlockOp::Replace {
        old: old.to_owned(),
        new: new.to_owned(),
        count: ReplaceCount::Once,
    })
    .await
}

/// `memory_insert(label, new_str, insert_line=-1)`: inserts after line `insert_line`
/// (0 = at the top, -1 = at the end).
pub(super) async fn insert(
    ctx: &mut ToolContext<'_>,
    call_id: &str,
    args: &Args,
) -> Result<String, String> {
    let label = args.str("label")?;
    let text = args.str_any(&["new_str", "new_string", "content"])?;
    let line = args.opt_int("insert_line")?.unwrap_or(-1);
    edit(ctx, call_id, label, |_| BlockOp::Insert {
        line,
        text: text.to_owned(),
    })
    .await
}

/// `memory_rethink(label, new_memory)`: rewrites the whole block — a whole-value write based on
/// the version the model read in this step's context window, refused (with the current value)
/// if the block changed since.
pub(super) async fn rethink(
    ctx: &mut ToolContext<'_>,
    call_id: &str,
    args: &Args,
) -> Result<String, String> {
    let label = args.str("label")?;
    let new_memory = args.str_any(&["new_memory", "new_str", "new_string"])?;
    let read = ctx
        .blocks
        .iter()
        .find(|b| b.label == label)
        .map(|b| b.id.clone());
    let based_on = read.and_then(|id| ctx.read_versions.get(&id).copied());
    edit(ctx, call_id, label, |b| BlockOp::Rewrite {
        value: new_memory.to_owned(),
        based_on_version: based_on.unwrap_or(b.version),
    })
    .await
}

/// Tries a user tool's new value for block `label` (exists, not read-only, fits, not stale)
/// without applying it; the working copies must have been refreshed before the tool ran.
pub(super) fn check_value(ctx: &ToolContext<'_>, label: &str, value: &str) -> Result<(), String> {
    let block = &ctx.blocks[find(ctx, label)?];
    BlockOp::Rewrite {
        value: value.to_owned(),
        based_on_version: block.version,
    }
    .apply(block, true)
    .map(|_| ())
    .map_err(|e| format!("{e} (block '{label}')"))
}

/// Sets block `label` to `value` for a user tool: a whole-value write based on the version the
/// tool read (no write when unchanged).
pub(super) fn set_value(
    ctx: &mut ToolContext<'_>,
    label: &str,
    value: String,
    call_id: &str,
) -> Result<(), String> {
    let index = find(ctx, label)?;
    let op = BlockOp::Rewrite {
        value,
        based_on_version: ctx.blocks[index].version,
    };
    apply(ctx, index, op, call_id, false).map(|_| ())
}

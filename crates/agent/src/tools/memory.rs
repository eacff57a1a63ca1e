//! Core-memory edits: append, replace, insert, rethink. Each edit is checked against the block's
//! limit (characters) and its read-only flag, applied to the step's working copy, and queued as a
//! write that commits with the step.

use super::ToolContext;
use super::args::Args;
use engram_core::Editor;
use engram_core::memory::check_limit;
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

/// Applies `new_value` to block `index` if it fits, queues the write, and tells the model
/// what the block holds now.
fn write(
    ctx: &mut ToolContext<'_>,
    index: usize,
    new_value: String,
    tool_call_id: &str,
) -> Result<String, String> {
    let block = &mut ctx.blocks[index];
    check_limit(&block.value, &new_value, block.limit).map_err(|e| e.to_string())?;
    block.value = new_value;
    block.updated_at = ctx.now;
    ctx.writes.push(BlockWrite {
        block_id: block.id.clone(),
        new_value: block.value.clone(),
        editor: Editor::Agent {
            agent_id: ctx.agent.id.clone(),
            tool_call_id: Some(tool_call_id.to_owned()),
        },
    });
    Ok(format!(
        "The '{}' block now holds {}/{} characters:\n{}",
        block.label,
        block.chars(),
        block.limit,
        block.value
    ))
}

/// `core_memory_append(label, content)`: value + "\n" + content. Text already present as a line
/// is not added again, so a fact repeated by the model does not bloat memory.
pub(super) fn append(
    ctx: &mut ToolContext<'_>,
    call_id: &str,
    args: &Args,
) -> Result<String, String> {
    let label = args.str("label")?;
    let content = args.str("content")?;
    let index = find(ctx, label)?;
    let value = &ctx.blocks[index].value;
    if content.trim().is_empty() {
        return Err("Argument 'content' is empty; nothing to append.".into());
    }
    if value.lines().any(|line| line.trim() == content.trim()) {
        return Ok(format!(
            "The '{label}' block already contains that line; nothing changed."
        ));
    }
    let new_value = if value.is_empty() {
        content.to_owned()
    } else {
        format!("{value}\n{content}")
    };
    write(ctx, index, new_value, call_id)
}

/// `core_memory_replace(label, old_content, new_content)`: replaces every occurrence.
pub(super) fn replace_all(
    ctx: &mut ToolContext<'_>,
    call_id: &str,
    args: &Args,
) -> Result<String, String> {
    let label = args.str("label")?;
    let old = args.str_any(&["old_content", "old_str", "old_string"])?;
    let new = args.str_any(&["new_content", "new_str", "new_string"])?;
    let index = find(ctx, label)?;
    if old.is_empty() {
        return Err("Argument 'old_content' is empty; say which text to replace.".into());
    }
    let value = &ctx.blocks[index].value;
    if !value.contains(old) {
        return Err(format!(
            "The text '{old}' was not found in the '{label}' block; copy it exactly as it appears."
        ));
    }
    let new_value = value.replace(old, new);
    write(ctx, index, new_value, call_id)
}

/// `memory_replace(label, old_str, new_str)`: the text must occur exactly once.
pub(super) fn replace_once(
    ctx: &mut ToolContext<'_>,
    call_id: &str,
    args: &Args,
) -> Result<String, String> {
    let label = args.str("label")?;
    let old = args.str_any(&["old_str", "old_string"])?;
    let new = args.str_any(&["new_str", "new_string"])?;
    let index = find(ctx, label)?;
    if old.is_empty() {
        return Err("Argument 'old_str' is empty; say which text to replace.".into());
    }
    let value = &ctx.blocks[index].value;
    match value.matches(old).count() {
        0 => Err(format!(
            "The text '{old}' was not found in the '{label}' block; copy it exactly as it appears."
        )),
        1 => {
            let new_value = value.replacen(old, new, 1);
            write(ctx, index, new_value, call_id)
        }
        n => Err(format!(
            "The text '{old}' occurs {n} times in the '{label}' block; include more surrounding text so it matches exactly once."
        )),
    }
}

/// `memory_insert(label, new_str, insert_line=-1)`: inserts after line `insert_line`
/// (0 = at the top, -1 = at the end).
pub(super) fn insert(
    ctx: &mut ToolContext<'_>,
    call_id: &str,
    args: &Args,
) -> Result<String, String> {
    let label = args.str("label")?;
    let text = args.str_any(&["new_str", "new_string", "content"])?;
    let line = args.opt_int("insert_line")?.unwrap_or(-1);
    let index = find(ctx, label)?;
    let value = &ctx.blocks[index].value;
    let mut lines: Vec<&str> = if value.is_empty() {
        Vec::new()
    } else {
        value.split('\n').collect()
    };
    let at = match line {
        -1 => lines.len(),
        n if n >= 0 && (n as usize) <= lines.len() => n as usize,
        n => {
            return Err(format!(
                "insert_line {n} is out of range: the '{label}' block has {} lines (use 0 for the top, -1 for the end).",
                lines.len()
            ));
        }
    };
    lines.splice(at..at, text.split('\n'));
    write(ctx, index, lines.join("\n"), call_id)
}

/// `memory_rethink(label, new_memory)`: rewrites the whole block.
pub(super) fn rethink(
    ctx: &mut ToolContext<'_>,
    call_id: &str,
    args: &Args,
) -> Result<String, String> {
    let label = args.str("label")?;
    let new_memory = args.str_any(&["new_memory", "new_str", "new_string"])?;
    let index = find(ctx, label)?;
    write(ctx, index, new_memory.to_owned(), call_id)
}

/// Checks that a user tool may set block `label` to `value` (block exists, not read-only, fits).
pub(super) fn check_value(ctx: &ToolContext<'_>, label: &str, value: &str) -> Result<(), String> {
    let block = &ctx.blocks[find(ctx, label)?];
    check_limit(&block.value, value, block.limit)
        .map(|_| ())
        .map_err(|e| format!("{e} (block '{label}')"))
}

/// Sets block `label` to `value` for a user tool, queueing the write (no write when unchanged).
pub(super) fn set_value(
    ctx: &mut ToolContext<'_>,
    label: &str,
    value: String,
    call_id: &str,
) -> Result<(), String> {
    let index = find(ctx, label)?;
    if ctx.blocks[index].value != value {
        write(ctx, index, value, call_id)?;
    }
    Ok(())
}

//! The sleep-time agent's tools: block edits (the same versioned operations as the chat's
//! memory tools), archival inserts, searches that show passage ids, superseding and merging
//! passages, and `finish`. Nothing is written while the pass runs: edits queue in the
//! [`ToolContext`] and archival changes in [`PassState`], and the pass writes them all in one
//! transaction at its end (`SleeptimeRows::commit_pass`).

use super::args::Args;
use super::context::ToolContext;
use super::{memory, object};
use engram_core::block_op::applied_message;
use engram_core::block_op::revert_value;
use engram_core::run::format_time;
use engram_core::{BlockId, NewPassage, PassageId, SupersedeKind};
use engram_providers::ToolSpec;
use engram_store::PassageQuery;
use engram_store_api::PassageOp;
use serde_json::{Value, json};
use std::collections::HashMap;

/// Names of the sleep-time agent's tools, in the order offered.
pub const SLEEPTIME_TOOLS: &[&str] = &[
    "memory_rethink",
    "memory_replace",
    "memory_insert",
    "archival_memory_insert",
    "archival_memory_search",
    "archival_supersede",
    "archival_merge",
    "finish",
];

/// Search results shown to the sleep-time agent at most.
const SEARCH_TOP_K: usize = 8;

/// What a pass decided about archival memory so far, and whether it is done.
#[derive(Debug, Default)]
pub struct PassState {
    /// Archival changes, in order.
    pub passage_ops: Vec<PassageOp>,
    /// Set by `finish`.
    pub finished: bool,
    /// Each block's value as the model last saw it (in the prompt or a tool result): what a
    /// rewrite of the whole block was written against.
    pub seen: HashMap<BlockId, String>,
}

impl PassState {
    /// Whether `id` is a passage this pass added.
    fn added(&self, id: &PassageId) -> bool {
        self.passage_ops
            .iter()
            .any(|op| matches!(op, PassageOp::Add { id: a, .. } if a == id))
    }

    /// Whether this pass already marked `id` superseded.
    fn superseded(&self, id: &PassageId) -> bool {
        self.passage_ops
            .iter()
            .any(|op| matches!(op, PassageOp::Supersede { passage_id, .. } if passage_id == id))
    }
}

/// The schemas of the sleep-time agent's tools.
pub fn specs() -> Vec<ToolSpec> {
    let label = json!({"type": "string", "description": "block label, e.g. human"});
    let spec = |name: &str, description: &str, parameters: Value| ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters,
    };
    vec![
        spec(
            "memory_rethink",
            "Rewrite a whole block: drop duplicated lines, replace facts that changed, reorder.",
            object(
                json!({"label": label, "new_memory": {"type": "string"}}),
                &["label", "new_memory"],
            ),
        ),
        spec(
            "memory_replace",
            "Replace text that occurs exactly once in a block; empty new_str deletes it.",
            object(
                json!({"label": label, "old_str": {"type": "string"}, "new_str": {"type": "string"}}),
                &["label", "old_str", "new_str"],
            ),
        ),
        spec(
            "memory_insert",
            "Insert text into a block after line insert_line (0 = top, -1 = end).",
            object(
                json!({"label": label, "new_str": {"type": "string"}, "insert_line": {"type": "integer"}}),
                &["label", "new_str"],
            ),
        ),
        spec(
            "archival_memory_insert",
            "Save a passage to archival memory (e.g. detail moved out of a full block). Returns its id.",
            object(
                json!({"content": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}),
                &["content"],
            ),
        ),
        spec(
            "archival_memory_search",
            "Search archival memory; results carry passage ids for archival_supersede and archival_merge.",
            object(
                json!({"query": {"type": "string"}, "include_superseded": {"type": "boolean"}}),
                &["query"],
            ),
        ),
        spec(
            "archival_supersede",
            "Mark a passage as no longer true. Give new_content (saved as its replacement) or successor_id (an existing passage that replaces it).",
            object(
                json!({
                    "passage_id": {"type": "string"},
                    "new_content": {"type": "string"},
                    "successor_id": {"type": "string"}
                }),
                &["passage_id"],
            ),
        ),
        spec(
            "archival_merge",
            "Fold passages that say the same thing into one new passage with content.",
            object(
                json!({
                    "passage_ids": {"type": "array", "items": {"type": "string"}},
                    "content": {"type": "string"}
                }),
                &["passage_ids", "content"],
            ),
        ),
        spec(
            "finish",
            "End the pass once memory is tidy.",
            object(json!({"summary": {"type": "string"}}), &[]),
        ),
    ]
}

/// Runs one of the sleep-time agent's tool calls; `Err` is a failed result for the model.
pub async fn execute(
    ctx: &mut ToolContext<'_>,
    state: &mut PassState,
    name: &str,
    call_id: &str,
    arguments: &str,
) -> Result<String, String> {
    let args = Args::parse(arguments)?;
    let out = match name {
        "memory_rethink" => rethink(ctx, state, call_id, &args).await,
        "memory_replace" => memory::replace_once(ctx, call_id, &args).await,
        "memory_insert" => memory::insert(ctx, call_id, &args).await,
        _ => return other(ctx, state, name, &args).await,
    };
    // Whatever the result, it showed the block as it is now.
    if let Some(b) = args
        .opt_str("label")
        .ok()
        .flatten()
        .and_then(|l| ctx.blocks.iter().find(|b| b.label == l))
    {
        state.seen.insert(b.id.clone(), b.value.clone());
    }
    out
}

/// `memory_rethink` for a pass: the model wrote its new value against the block as it last
/// saw it; when the block changed since (a hand edit, the chat), the model's change is
/// carried onto the current value if the text it changed is still there exactly once, so the
/// other edit is kept. Otherwise it is refused with the current value, to be redone.
async fn rethink(
    ctx: &mut ToolContext<'_>,
    state: &PassState,
    call_id: &str,
    args: &Args,
) -> Result<String, String> {
    let label = args.str("label")?;
    let new_memory = args.str_any(&["new_memory", "new_str", "new_string"])?;
    let Some(index) = ctx.blocks.iter().position(|b| b.label == label) else {
        return memory::rethink(ctx, call_id, args).await;
    };
    memory::refresh(ctx, index).await;
    let current = &ctx.blocks[index];
    let seen = state.seen.get(&current.id).unwrap_or(&current.value);
    let value = if *seen == current.value {
        new_memory.to_owned()
    } else {
        revert_value(new_memory, seen, &current.value).ok_or_else(|| {
            engram_core::block_op::refused_message(
                "The block changed since you read it, in the part you rewrote; rewrite it again from its current value.",
                current,
            )
        })?
    };
    memory::set_value(ctx, label, value, call_id)?;
    Ok(applied_message(&ctx.blocks[index]))
}

/// The tools that are not block edits.
async fn other(
    ctx: &mut ToolContext<'_>,
    state: &mut PassState,
    name: &str,
    args: &Args,
) -> Result<String, String> {
    match name {
        "archival_memory_insert" => {
            let content = args.str("content")?;
            let tags = args.opt_strings("tags")?;
            let id = add(ctx, state, content, tags)?;
            Ok(format!("Will save passage {id}."))
        }
        "archival_memory_search" => search(ctx, state, args).await,
        "archival_supersede" => supersede(ctx, state, args).await,
        "archival_merge" => merge(ctx, state, args).await,
        "finish" => {
            state.finished = true;
            Ok("Pass finished.".into())
        }
        other => Err(format!(
            "Unknown tool '{other}'. Available tools: {}.",
            SLEEPTIME_TOOLS.join(", ")
        )),
    }
}

/// Queues a new passage; returns its id.
fn add(
    ctx: &ToolContext<'_>,
    state: &mut PassState,
    content: &str,
    tags: Vec<String>,
) -> Result<PassageId, String> {
    if content.trim().is_empty() {
        return Err("The passage text is empty; nothing to save.".into());
    }
    let id = PassageId::new();
    state.passage_ops.push(PassageOp::Add {
        id: id.clone(),
        passage: NewPassage {
            text: content.to_owned(),
            tags,
            embedding: None,
            created_at: Some(ctx.now),
        },
    });
    Ok(id)
}

/// Checks that `id` names one of the agent's current passages (or one this pass added).
async fn current(ctx: &ToolContext<'_>, state: &PassState, id: &str) -> Result<PassageId, String> {
    let id = PassageId::from(id);
    if state.added(&id) {
        return Ok(id);
    }
    if state.superseded(&id) {
        return Err(format!("Passage {id} is already replaced in this pass."));
    }
    match ctx.store.get_passage(&id).await {
        Ok(p) if p.agent_id == ctx.agent.id && p.superseded.is_none() => Ok(id),
        Ok(p) if p.agent_id == ctx.agent.id => Err(format!(
            "Passage {id} was already replaced; leave it as it is."
        )),
        _ => Err(format!(
            "No passage {id} in this agent's archival memory; search for the id first."
        )),
    }
}

async fn supersede(
    ctx: &mut ToolContext<'_>,
    state: &mut PassState,
    args: &Args,
) -> Result<String, String> {
    let old = current(ctx, state, args.str("passage_id")?).await?;
    let by = match (args.opt_str("new_content")?, args.opt_str("successor_id")?) {
        (Some(text), _) if !text.trim().is_empty() => add(ctx, state, text, Vec::new())?,
        (_, Some(id)) => current(ctx, state, id).await?,
        _ => return Err("Give new_content or successor_id: what holds the fact now.".into()),
    };
    if by == old {
        return Err("A passage cannot replace itself.".into());
    }
    state.passage_ops.push(PassageOp::Supersede {
        passage_id: old.clone(),
        by: Some(by.clone()),
        how: SupersedeKind::Superseded,
    });
    Ok(format!("Passage {old} will be marked replaced by {by}."))
}

async fn merge(
    ctx: &mut ToolContext<'_>,
    state: &mut PassState,
    args: &Args,
) -> Result<String, String> {
    let ids = args.opt_strings("passage_ids")?;
    if ids.len() < 2 {
        return Err("Name at least two passages to merge.".into());
    }
    let mut olds = Vec::with_capacity(ids.len());
    for id in &ids {
        olds.push(current(ctx, state, id).await?);
    }
    let by = add(ctx, state, args.str("content")?, Vec::new())?;
    for old in &olds {
        state.passage_ops.push(PassageOp::Supersede {
            passage_id: old.clone(),
            by: Some(by.clone()),
            how: SupersedeKind::Merged,
        });
    }
    Ok(format!("{} passages will be merged into {by}.", olds.len()))
}

async fn search(
    ctx: &mut ToolContext<'_>,
    state: &PassState,
    args: &Args,
) -> Result<String, String> {
    let include_superseded = matches!(args.opt_bool("include_superseded")?, Some(true));
    let q = PassageQuery {
        query: args.str("query")?.to_owned(),
        top_k: SEARCH_TOP_K,
        include_superseded,
        ..PassageQuery::default()
    };
    let hits = engram_retrieval::hybrid::passages(ctx.store, &ctx.agent.id, &q)
        .await
        .map_err(|e| format!("Search failed: {e}"))?;
    let mut results: Vec<Value> = hits
        .iter()
        .filter(|h| !state.superseded(&h.passage.id))
        .map(|h| {
            let mut r = json!({
                "id": h.passage.id,
                "timestamp": format_time(h.passage.created_at),
                "content": h.passage.text,
            });
            if let Some(s) = &h.passage.superseded {
                r["replaced_at"] = json!(format_time(s.at));
            }
            r
        })
        .collect();
    // Passages this pass added are not stored yet; the model may still want to see them.
    for op in &state.passage_ops {
        if let PassageOp::Add { id, passage } = op {
            results.push(json!({"id": id, "content": passage.text, "pending": true}));
        }
    }
    if results.is_empty() {
        return Ok("No matching passages in archival memory.".into());
    }
    Ok(Value::Array(results).to_string())
}

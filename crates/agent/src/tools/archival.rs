//! Archival memory tools: insert and search passages.

use super::args::Args;
use super::context::ToolContext;
use engram_core::run::format_time;
use engram_core::{NewPassage, TagMatch};
use engram_store::PassageQuery;
use serde_json::json;

/// Results returned to the model when it does not say how many.
const DEFAULT_TOP_K: usize = 5;
/// Never more than this many results, to protect the context window.
const MAX_TOP_K: usize = 50;

/// `archival_memory_insert(content, tags?)`: queues one passage (with its embedding when the
/// agent has an embedding model) to commit with the step.
pub(super) async fn insert(ctx: &mut ToolContext<'_>, args: &Args) -> Result<String, String> {
    let content = args.str("content")?;
    if content.trim().is_empty() {
        return Err("Argument 'content' is empty; nothing to save.".into());
    }
    let tags = args.opt_strings("tags")?;
    // An embedding outage never loses the passage: it is stored without a vector, found by
    // its words now and by meaning once its vector is backfilled.
    let (embedding, note) = match ctx.embedder {
        Some(e) => match e.embed_one(content).await {
            Ok(v) => (Some(v), ""),
            Err(err) => {
                tracing::warn!(%err, "storing a passage without a vector");
                (
                    None,
                    " (The embedding model is unavailable; it is searchable by its words until its vector is filled in.)",
                )
            }
        },
        None => (None, ""),
    };
    ctx.passages.push(NewPassage {
        text: content.to_owned(),
        tags,
        embedding,
        created_at: Some(ctx.now),
    });
    Ok(format!("Saved to archival memory.{note}"))
}

/// `archival_memory_search(query, tags?, tag_match_mode?, top_k?, start_datetime?, end_datetime?)`:
/// BM25, fused with vector similarity when the agent has an embedding model; filters apply
/// before the limit; only current passages unless `include_superseded`. Returns a JSON list of
/// `{timestamp, content, tags}`, plus `replaced_at`, `replaced_how` and `replaced_by` (the
/// successor's text) for a passage that was superseded or merged.
pub(super) async fn search(ctx: &mut ToolContext<'_>, args: &Args) -> Result<String, String> {
    let query = args.str("query")?.to_owned();
    let tag_match = match args.opt_str("tag_match_mode")? {
        None | Some("any") => TagMatch::Any,
        Some("all") => TagMatch::All,
        Some(other) => {
            return Err(format!(
                "tag_match_mode must be 'any' or 'all', not '{other}'."
            ));
        }
    };
    let top_k = args
        .opt_int("top_k")?
        .unwrap_or(DEFAULT_TOP_K as i64)
        .clamp(1, MAX_TOP_K as i64) as usize;
    // Without the embedding model the search still answers, by words alone.
    let embedding = match ctx.embedder {
        Some(e) if !query.trim().is_empty() => match e.embed_query(&query).await {
            Ok(v) => Some(v),
            Err(err) => {
                tracing::warn!(%err, "archival search by words alone");
                None
            }
        },
        _ => None,
    };
    let q = PassageQuery {
        query,
        tags: args.opt_strings("tags")?,
        tag_match,
        start: args.opt_time("start_datetime", false)?,
        end: args.opt_time("end_datetime", true)?,
        top_k,
        embedding,
        include_superseded: args.opt_bool("include_superseded")?.unwrap_or(false),
    };
    let hits = engram_retrieval::search(ctx.store, &ctx.agent.id, &q, ctx.reranker)
        .await
        .map_err(|e| format!("Search failed: {e}"))?;
    if hits.is_empty() {
        return Ok("No matching passages in archival memory.".into());
    }
    let mut results = Vec::with_capacity(hits.len());
    for h in &hits {
        let mut r = json!({"timestamp": format_time(h.passage.created_at), "content": h.passage.text, "tags": h.passage.tags});
        if let Some(s) = &h.passage.superseded {
            // A fact from the history: say when it stopped being true and what replaced it.
            r["replaced_at"] = json!(format_time(s.at));
            r["replaced_how"] = json!(s.kind.as_str());
            if let Some(id) = &s.by
                && let Ok(by) = ctx.store.get_passage(id).await
            {
                r["replaced_by"] = json!(by.text);
            }
        }
        results.push(r);
    }
    Ok(serde_json::Value::Array(results).to_string())
}

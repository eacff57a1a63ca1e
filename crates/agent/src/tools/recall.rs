//! `conversation_search`: search over recall memory (every past message), by words and, when
//! the agent has an embedding model, by meaning.

use super::args::Args;
use super::context::ToolContext;
use engram_core::Role;
use engram_core::run::format_time;
use engram_store::MessageQuery;
use serde_json::json;

const DEFAULT_LIMIT: usize = 10;
const MAX_LIMIT: usize = 50;
/// Long messages are cut in results so one search cannot flood the context window.
const MAX_RESULT_CHARS: usize = 1_000;

/// `conversation_search(query, roles?, limit?, start_date?, end_date?)`: returns a JSON list of
/// `{timestamp, role, content}`, best match first. BM25 fused with vector similarity when the
/// agent has an embedding model; an outage of the model makes it a search by words.
pub(super) async fn search(ctx: &mut ToolContext<'_>, args: &Args) -> Result<String, String> {
    let roles = args
        .opt_strings("roles")?
        .iter()
        .map(|r| match r.as_str() {
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            "tool" => Ok(Role::Tool),
            other => Err(format!(
                "Unknown role '{other}'; use user, assistant or tool."
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let q = MessageQuery {
        query: args.str("query")?.to_owned(),
        roles,
        start: args.opt_time("start_date", false)?,
        end: args.opt_time("end_date", true)?,
        limit: args
            .opt_int("limit")?
            .unwrap_or(DEFAULT_LIMIT as i64)
            .clamp(1, MAX_LIMIT as i64) as usize,
    };
    let embedding = match ctx.embedder {
        Some(e) if !q.query.trim().is_empty() => match e.embed_query(&q.query).await {
            Ok(v) => Some(v),
            Err(err) => {
                tracing::warn!(%err, "conversation search by words alone");
                None
            }
        },
        _ => None,
    };
    let hits =
        engram_retrieval::hybrid::messages(ctx.store, &ctx.agent.id, &q, embedding.as_deref())
            .await
            .map_err(|e| format!("Search failed: {e}"))?;
    if hits.is_empty() {
        return Ok("No matching messages in recall memory.".into());
    }
    let results: Vec<_> = hits
        .iter()
        .map(|h| {
            let m = &h.message;
            let text = if m.content.is_empty() {
                m.tool_calls.iter().map(|c| c.arguments.as_str()).collect::<Vec<_>>().join(" ")
            } else {
                m.content.clone()
            };
            let text: String = text.chars().take(MAX_RESULT_CHARS).collect();
            json!({"timestamp": format_time(m.created_at), "role": m.role.as_str(), "content": text})
        })
        .collect();
    Ok(serde_json::Value::Array(results).to_string())
}

//! Letta's agent list on PostgreSQL, filtered and paged in SQL: the filters (name, name
//! substring, tags, the user's access) are one `WHERE`, paged in creation order
//! ([`created_page`](crate::created_page)). The rules are [`AgentList`]'s, as the SQLite store
//! applies them.

use crate::created_page::{Page, read_page};
use crate::rows::{self, AGENT_COLS, Args, Cached};
use crate::tx::TxResult;
use deadpool_postgres::GenericClient;
use engram_core::{Agent, AgentId};
use engram_store_api::AgentList;

/// The agent's name with ASCII letters folded to lower case, as SQLite's `lower()` folds it.
const FOLD: &str = "translate(a.name, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')";

/// The list's filters on `a`.
fn filters(q: &AgentList, args: &mut Args) -> String {
    let mut cond = String::from("true");
    if let Some(name) = &q.name {
        cond.push_str(&format!(" AND a.name = {}", args.add(name.clone())));
    }
    if let Some(text) = q.query_text.as_deref().filter(|t| !t.is_empty()) {
        let pattern = args.add(rows::contains_pattern(text));
        cond.push_str(&format!(" AND {FOLD} LIKE {pattern} ESCAPE '\\'"));
    }
    if let Some(user) = &q.user {
        cond.push_str(&format!(
            " AND EXISTS (SELECT 1 FROM agent_access x WHERE x.agent_id = a.id AND x.user_id = {})",
            args.add(user.as_str().to_owned())
        ));
    }
    if !q.tags.is_empty() {
        let op = if q.match_all_tags { "@>" } else { "&&" };
        let tags = args.add(rows::dedup_tags(&q.tags));
        cond.push_str(&format!(" AND a.tags {op} {tags}::text[]"));
    }
    cond
}

/// Reads the page `q` asks for (see [`AgentList`] and `AgentStore::page_agents`).
pub(crate) async fn page(c: &impl GenericClient, q: &AgentList) -> TxResult<Vec<Agent>> {
    let page = Page {
        table: "agents",
        alias: "a",
        cols: AGENT_COLS,
        after: q.after.as_ref().map(AgentId::as_str),
        before: q.before.as_ref().map(AgentId::as_str),
        limit: q.limit,
        ascending: q.ascending,
    };
    let mut args = Args::default();
    let cond = filters(q, &mut args);
    read_page(c, &page, args, cond, rows::agent).await
}

/// How many agents pass `q`'s filters (see `AgentStore::count_agents`).
pub(crate) async fn count(c: &impl GenericClient, q: &AgentList) -> TxResult<u64> {
    let mut args = Args::default();
    let cond = filters(q, &mut args);
    let n: i64 = c
        .one(
            &format!("SELECT count(*) FROM agents a WHERE {cond}"),
            &args.refs(),
        )
        .await?
        .try_get(0)?;
    Ok(u64::try_from(n).unwrap_or(0))
}

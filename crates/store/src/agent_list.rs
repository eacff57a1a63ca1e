//! Listing agents as Letta's `GET /v1/agents/` does, filtered and paged in SQL: by exact name,
//! name substring, tags (any or all), with `after`/`before` cursors in either order, over the
//! `agents_by_created (created_at, id)` index, so a page costs the same however many agents
//! there are.

use crate::agents::{AGENT_COLS, agent_from_row};
use crate::created_page::{Page, read_page};
use crate::passage_rows::Query;
use crate::rooms::AgentRows;
use crate::sql::{self, DbResult};
use engram_core::{Agent, AgentId, Result};
use engram_store_api::AgentList;
use rusqlite::params_from_iter;

/// The WHERE clause of the filters (on table alias `a`).
fn filters(q: &AgentList, query: &mut Query) -> Result<String> {
    let mut cond = String::from("1");
    if let Some(name) = &q.name {
        cond.push_str(&format!(" AND a.name = {}", query.arg(name.clone())));
    }
    if let Some(text) = q.query_text.as_deref().filter(|t| !t.is_empty()) {
        cond.push_str(&format!(
            " AND instr(lower(a.name), lower({})) > 0",
            query.arg(text.to_owned())
        ));
    }
    if let Some(user) = &q.user {
        cond.push_str(&format!(
            " AND EXISTS (SELECT 1 FROM agent_access x WHERE x.agent_id = a.id AND x.user_id = {})",
            query.arg(user.as_str().to_owned())
        ));
    }
    let mut tags: Vec<&str> = Vec::new();
    for t in &q.tags {
        if !tags.contains(&t.as_str()) {
            tags.push(t);
        }
    }
    if !tags.is_empty() {
        let list = query.arg(sql::to_json(&tags)?);
        let need = if q.match_all_tags {
            query.arg(sql::sat(tags.len()))
        } else {
            "1".to_owned()
        };
        cond.push_str(&format!(
            " AND (SELECT count(*) FROM agent_tags t WHERE t.agent_id = a.id
                   AND t.tag IN (SELECT value FROM json_each({list}))) >= {need}"
        ));
    }
    Ok(cond)
}

impl AgentRows<'_> {
    /// A page of agents passing `q`'s filters, in creation order (see [`AgentList`]).
    pub fn page(self, q: &AgentList) -> Result<Vec<Agent>> {
        let page = Page {
            table: "agents",
            alias: "a",
            cols: AGENT_COLS,
            after: q.after.as_ref().map(AgentId::as_str),
            before: q.before.as_ref().map(AgentId::as_str),
            limit: q.limit,
            ascending: q.ascending,
        };
        self.store
            .read(|c| read_page(c, &page, |query| filters(q, query), agent_from_row))
    }

    /// How many agents pass `q`'s filters (cursors and limit aside).
    pub fn count(self, q: &AgentList) -> Result<u64> {
        self.store.read(|c| {
            let mut query = Query::default();
            let cond = filters(q, &mut query)?;
            c.prepare_cached(&format!("SELECT count(*) FROM agents a WHERE {cond}"))
                .db()?
                .query_row(params_from_iter(query.args), |r| sql::uint(r, 0))
                .db()
        })
    }
}

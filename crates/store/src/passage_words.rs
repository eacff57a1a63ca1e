//! Which of a search's passages hold the query's words, asked of the agent's full-text index
//! itself (its tokenizer and stemmer), so a window can tell a match from a neighbour that word
//! search brought along as context (`search::Neighbours::Admit`).

use crate::fts_partitions;
use crate::rooms::PassageRows;
use crate::search::{FtsQuery, fts_query};
use crate::sql::{self, DbResult};
use engram_core::{AgentId, PassageId, Result};
use rusqlite::params_from_iter;
use rusqlite::types::Value;
use std::collections::HashSet;

impl PassageRows<'_> {
    /// The passages among `ids` (the agent's) whose text holds at least one word of `query`,
    /// as word search counts words (stop words left out, stems compared). A blank query, or one
    /// of stop words only, matches none.
    ///
    /// Errors: `not_found` for an unknown agent; `Storage`.
    pub fn with_words(
        self,
        agent: &AgentId,
        query: &str,
        ids: &[PassageId],
    ) -> Result<HashSet<PassageId>> {
        let FtsQuery::Match(expr) = fts_query(query) else {
            return Ok(HashSet::new());
        };
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let Some(n) = fts_partitions::partition(c, agent)? else {
                return Ok(HashSet::new());
            };
            if ids.is_empty() {
                return Ok(HashSet::new());
            }
            let table = fts_partitions::passages_table(n);
            let list =
                serde_json::to_string(&ids.iter().map(PassageId::as_str).collect::<Vec<_>>())
                    .map_err(|e| engram_core::Error::Internal(e.to_string()))?;
            let sql = format!(
                "SELECT p.id FROM passages p JOIN {table} f ON f.rowid = p.pk
                 WHERE p.agent_id = ?1 AND p.id IN (SELECT value FROM json_each(?2))
                   AND {table} MATCH ?3"
            );
            let mut stmt = c.prepare_cached(&sql).db()?;
            let args = [
                Value::from(agent.as_str().to_owned()),
                Value::from(list),
                Value::from(expr),
            ];
            let rows = stmt
                .query_map(params_from_iter(args), |r| r.get::<_, String>(0))
                .db()?;
            rows.map(|r| r.map(PassageId::from).db()).collect()
        })
    }
}

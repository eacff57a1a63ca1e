//! Stored word-piece vectors of archival passages (late interaction's half of a passage,
//! computed once instead of at every search): which passages still need them, filling them in
//! without overwriting a newer write, and reading them for a search's candidates.
//!
//! The blobs are opaque here (`engram_retrieval::late::token_codes` writes and reads them); what the
//! store guarantees is that a blob belongs to the passage's current text and to the agent's
//! current embedding model.

use crate::message_vectors::current_model;
use crate::passage_rows::{PASSAGE_COLS, passage_from_row};
use crate::rooms::PassageRows;
use crate::sql::{self, DbResult};
use engram_core::{AgentId, Passage, PassageId, Result};
use rusqlite::params;
use std::collections::HashMap;

impl PassageRows<'_> {
    /// Up to `limit` of the agent's passages that have a vector but no token vectors of
    /// `model` (a handle such as `local/all-minilm-l6-v2`), oldest first; a backfill takes
    /// them batch by batch. Passages without a vector are left to the vector backfill, which
    /// computes both in one pass. Errors: `NotFound("agent")`.
    pub fn without_tokens(
        self,
        agent: &AgentId,
        model: &str,
        limit: usize,
    ) -> Result<Vec<Passage>> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {PASSAGE_COLS} FROM passages p
                     WHERE p.agent_id = ?1 AND p.embedding IS NOT NULL
                       AND NOT EXISTS (SELECT 1 FROM passage_tokens t
                                       WHERE t.pk = p.pk AND t.model = ?2)
                     ORDER BY p.pk LIMIT ?3"
                ))
                .db()?;
            let rows = stmt
                .query_map(
                    params![agent.as_str(), model, sql::sat(limit)],
                    passage_from_row,
                )
                .db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// How many of the agent's passages lack token vectors of `model` (with or without a
    /// vector). Errors: `NotFound("agent")`.
    pub fn count_without_tokens(self, agent: &AgentId, model: &str) -> Result<u64> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            c.prepare_cached(
                "SELECT count(*) FROM passages p WHERE p.agent_id = ?1
                   AND NOT EXISTS (SELECT 1 FROM passage_tokens t
                                   WHERE t.pk = p.pk AND t.model = ?2)",
            )
            .db()?
            .query_row(params![agent.as_str(), model], |r| sql::uint(r, 0))
            .db()
        })
    }

    /// Stores token-vector blobs of embedding model `model` computed for the agent's
    /// `(passage, text they were computed from, blob)`, in one transaction, only where the
    /// passage still has that text and only while `model` is still the agent's embedding
    /// model; a blob already there for the passage is replaced. Returns how many were stored.
    /// Errors: `NotFound("agent")`.
    pub fn fill_tokens(
        self,
        agent: &AgentId,
        model: &str,
        filled: &[(PassageId, String, Vec<u8>)],
    ) -> Result<usize> {
        self.store.write(|tx| {
            if current_model(tx, agent)?.as_deref() != Some(model) {
                return Ok(0);
            }
            let mut stmt = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO passage_tokens (pk, model, codes)
                     SELECT pk, ?4, ?5 FROM passages
                     WHERE id = ?1 AND agent_id = ?2 AND text = ?3",
                )
                .db()?;
            let mut n = 0;
            for (id, text, blob) in filled {
                n += stmt
                    .execute(params![id.as_str(), agent.as_str(), text, model, blob])
                    .db()?;
            }
            Ok(n)
        })
    }

    /// The stored token-vector blobs of `model` for those of `ids` that have them (passages
    /// of other agents are never returned). Errors: storage.
    pub fn tokens(
        self,
        agent: &AgentId,
        model: &str,
        ids: &[PassageId],
    ) -> Result<HashMap<PassageId, Vec<u8>>> {
        self.store.read(|c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT t.codes FROM passages p JOIN passage_tokens t ON t.pk = p.pk
                     WHERE p.id = ?1 AND p.agent_id = ?2 AND t.model = ?3",
                )
                .db()?;
            let mut found = HashMap::with_capacity(ids.len());
            for id in ids {
                let mut rows = stmt
                    .query(params![id.as_str(), agent.as_str(), model])
                    .db()?;
                if let Some(row) = rows.next().db()? {
                    found.insert(id.clone(), row.get::<_, Vec<u8>>(0).db()?);
                }
            }
            Ok(found)
        })
    }
}

//! Vectors of archival passages kept in step with the agent's embedding model: finding the
//! passages that lack one, filling them in without overwriting a newer write, and forgetting
//! them when the model changes.

use crate::passage_rows::{PASSAGE_COLS, passage_from_row};
use crate::passages::check_vector;
use crate::rooms::PassageRows;
use crate::search;
use crate::sql::{self, DbResult};
use engram_core::{AgentId, Passage, PassageId, Result};
use rusqlite::params;

impl PassageRows<'_> {
    /// Up to `limit` of the agent's passages without a stored vector, oldest first (a
    /// backfill takes them batch by batch). Errors: `NotFound("agent")`.
    pub fn without_vectors(self, agent: &AgentId, limit: usize) -> Result<Vec<Passage>> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {PASSAGE_COLS} FROM passages p
                     WHERE p.agent_id = ?1 AND p.embedding IS NULL ORDER BY p.pk LIMIT ?2"
                ))
                .db()?;
            let rows = stmt
                .query_map(params![agent.as_str(), sql::sat(limit)], passage_from_row)
                .db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// How many of the agent's passages have no stored vector. Errors: `NotFound("agent")`.
    pub fn count_without_vectors(self, agent: &AgentId) -> Result<u64> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            c.prepare_cached(
                "SELECT count(*) FROM passages WHERE agent_id = ?1 AND embedding IS NULL",
            )
            .db()?
            .query_row([agent.as_str()], |r| sql::uint(r, 0))
            .db()
        })
    }

    /// Fills in vectors of embedding model `model` (a handle such as `local/all-minilm-l6-v2`)
    /// computed for the agent's `(passage, text it was computed from, vector)` in one
    /// transaction, only where the passage still has no vector and still has that text (an
    /// edit or another writer meanwhile wins), and only while `model` is still the agent's
    /// embedding model (a backfill that started before a model change never stores the old
    /// model's vectors). Returns how many were stored.
    /// Errors: `NotFound("agent")`; `Invalid` for an empty or non-finite vector (then nothing
    /// is stored).
    pub fn fill_vectors(
        self,
        agent: &AgentId,
        model: &str,
        filled: &[(PassageId, String, Vec<f32>)],
    ) -> Result<usize> {
        for (_, _, v) in filled {
            check_vector(v)?;
        }
        self.store.write(|tx| {
            if crate::message_vectors::current_model(tx, agent)?.as_deref() != Some(model) {
                return Ok(0);
            }
            let mut stmt = tx
                .prepare_cached(
                    "UPDATE passages SET embedding_dim = ?2, embedding = ?3
                     WHERE id = ?1 AND embedding IS NULL AND text = ?4 AND agent_id = ?5",
                )
                .db()?;
            let mut n = 0;
            for (id, text, v) in filled {
                n += stmt
                    .execute(params![
                        id.as_str(),
                        sql::sat(v.len()),
                        search::encode_vector(v),
                        text,
                        agent.as_str()
                    ])
                    .db()?;
            }
            Ok(n)
        })
    }

    /// Forgets the vectors and token vectors of all the agent's passages (its embedding model
    /// changed: old vectors are not comparable with the new model's). Returns how many were cleared.
    /// Errors: `NotFound("agent")`.
    pub fn clear_vectors(self, agent: &AgentId) -> Result<usize> {
        self.store.write(|tx| {
            sql::ensure_agent(tx, agent)?;
            // Token vectors are the old model's too (`passage_tokens.rs`).
            tx.prepare_cached(
                "DELETE FROM passage_tokens
                 WHERE pk IN (SELECT pk FROM passages WHERE agent_id = ?1)",
            )
            .db()?
            .execute([agent.as_str()])
            .db()?;
            tx.prepare_cached(
                "UPDATE passages SET embedding_dim = NULL, embedding = NULL
                 WHERE agent_id = ?1 AND embedding IS NOT NULL",
            )
            .db()?
            .execute([agent.as_str()])
            .db()
        })
    }
}

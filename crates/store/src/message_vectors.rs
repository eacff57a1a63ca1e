//! Vectors of recall memory (messages), so conversation search finds by meaning as well as by
//! words.
//!
//! A message's vector is stored in `message_vectors` with the agent's embedding model handle
//! at the time. Search reads only vectors of the agent's *current* model, so after a model
//! change old vectors are never compared with new queries: those messages count by their words
//! until the backfill gives them a vector of the new model. Only text a person would search
//! for is embedded ([`embeddable_text`]): what users and the agent said, and the text arguments
//! of the agent's tool calls; not system text, heartbeats, alerts or tool results (which echo
//! what was searched or stored).
//!
//! The vector side of a conversation search is brute force over the agent's vectors of its
//! model that pass the search's filters: fine for tens of thousands of messages; a vector index
//! is a later step.

use crate::message_rows::{MSG_COLS, SEARCH_FILTERS, message_from_row};
use crate::passages::check_vector;
use crate::rooms::MessageRows;
use crate::search;
use crate::sql::{self, DbResult};
use engram_core::{AgentId, Result};
use engram_store_api::{MessageVector, UnembeddedMessage, embeddable_text};
use rusqlite::{Connection, OptionalExtension, params};

/// The candidates for a vector: user and assistant messages that are not hidden loop messages.
const CANDIDATES: &str = "m.agent_id = ?1 AND m.role IN ('user', 'assistant')
                          AND m.kind NOT IN ('heartbeat', 'alert')";

/// The agent's current embedding model handle, `None` without one.
pub(crate) fn current_model(conn: &Connection, agent: &AgentId) -> Result<Option<String>> {
    conn.prepare_cached("SELECT json_extract(embedding, '$.model') FROM agents WHERE id = ?1")
        .db()?
        .query_row([agent.as_str()], |r| r.get::<_, Option<String>>(0))
        .optional()
        .db()?
        .ok_or_else(|| engram_core::Error::not_found("agent", agent.as_str()))
}

/// Cosine ranking (message pk, similarity; best first) of up to `limit` of the agent's messages
/// that pass the conversation search's filters (`?1` agent, `?2` roles as a JSON array,
/// `?3`..`?4` time range, as in `message_rows::SEARCH_FILTERS`) and have a vector of the agent's
/// current model with the query's dimension.
pub(crate) fn vector_ranking(
    conn: &Connection,
    agent: &AgentId,
    filters: (&str, i64, i64),
    v: &[f32],
    limit: usize,
) -> Result<Vec<(i64, f64)>> {
    let qnorm = search::norm(v);
    let Some(model) = current_model(conn, agent)? else {
        return Ok(Vec::new());
    };
    if qnorm == 0.0 || limit == 0 {
        return Ok(Vec::new());
    }
    let (roles, start, end) = filters;
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT m.pk, v.vector FROM messages m JOIN message_vectors v ON v.message_pk = m.pk
             WHERE {SEARCH_FILTERS} AND v.model = ?5 AND length(v.vector) = ?6"
        ))
        .db()?;
    let mut rows = stmt
        .query(params![
            agent.as_str(),
            roles,
            start,
            end,
            model,
            sql::sat(v.len() * 4)
        ])
        .db()?;
    let mut scored: Vec<(i64, f64)> = Vec::new();
    while let Some(r) = rows.next().db()? {
        let Ok(blob) = r.get_ref(1).db()?.as_blob() else {
            continue;
        };
        if let Some(sim) = search::cosine(v, qnorm, blob) {
            scored.push((r.get(0).db()?, f64::from(sim)));
        }
    }
    let best_first = |a: &(i64, f64), b: &(i64, f64)| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0));
    if scored.len() > limit {
        scored.select_nth_unstable_by(limit - 1, best_first);
        scored.truncate(limit);
    }
    scored.sort_by(best_first);
    Ok(scored)
}

impl MessageRows<'_> {
    /// The agents that have an embedding model, oldest first (to resume their backfills).
    /// Errors: storage.
    pub fn agents_with_embeddings(self) -> Result<Vec<AgentId>> {
        self.store.read(|c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT id FROM agents WHERE json_extract(embedding, '$.model') IS NOT NULL
                     ORDER BY created_at, id",
                )
                .db()?;
            let rows = stmt
                .query_map([], |r| Ok(AgentId::from(r.get::<_, String>(0)?)))
                .db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// Up to `limit` of the agent's messages that need a vector of its current embedding model
    /// and have none, oldest first, after cursor `after` (`None` from the start). Empty when
    /// the agent has no embedding model. Errors: `NotFound("agent")`.
    pub fn without_vectors(
        self,
        agent: &AgentId,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<UnembeddedMessage>> {
        self.store.read(|c| {
            let Some(model) = current_model(c, agent)? else {
                return Ok(Vec::new());
            };
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {MSG_COLS}, m.pk FROM messages m
                     WHERE {CANDIDATES} AND m.pk > ?2 AND NOT EXISTS (
                         SELECT 1 FROM message_vectors v WHERE v.message_pk = m.pk AND v.model = ?3)
                     ORDER BY m.pk LIMIT ?4"
                ))
                .db()?;
            let rows = stmt
                .query_map(
                    params![
                        agent.as_str(),
                        after.unwrap_or(i64::MIN),
                        model,
                        sql::sat(limit)
                    ],
                    |r| {
                        Ok(UnembeddedMessage {
                            message: message_from_row(r)?,
                            cursor: r.get(14)?,
                        })
                    },
                )
                .db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// How many of the agent's messages need a vector of its current embedding model and have
    /// none (0 without a model). Errors: `NotFound("agent")`.
    pub fn count_without_vectors(self, agent: &AgentId) -> Result<u64> {
        self.store.read(|c| {
            let Some(model) = current_model(c, agent)? else {
                return Ok(0);
            };
            c.prepare_cached(&format!(
                "SELECT count(*) FROM messages m WHERE {CANDIDATES} AND NOT EXISTS (
                     SELECT 1 FROM message_vectors v WHERE v.message_pk = m.pk AND v.model = ?2)"
            ))
            .db()?
            .query_row(params![agent.as_str(), model], |r| sql::uint(r, 0))
            .db()
        })
    }

    /// Stores vectors of `model` for the agent's messages in one transaction, replacing a
    /// vector of another model. A vector is stored only where the agent's embedding model is
    /// still `model` and the message still has the text it was computed from (an edit, a
    /// deleted message or a model change meanwhile wins); nothing is stored at all when the
    /// model changed. Returns how many were stored.
    /// Errors: `NotFound("agent")`; `Invalid` for a non-finite vector, or an empty one for
    /// non-empty text (then nothing is stored).
    pub fn fill_vectors(
        self,
        agent: &AgentId,
        model: &str,
        filled: &[MessageVector],
    ) -> Result<usize> {
        for f in filled {
            if !(f.text.is_empty() && f.vector.is_empty()) {
                check_vector(&f.vector)?;
            }
        }
        self.store.write(|tx| {
            sql::ensure_agent(tx, agent)?;
            if current_model(tx, agent)?.as_deref() != Some(model) {
                return Ok(0);
            }
            let mut load = tx
                .prepare_cached(&format!(
                    "SELECT {MSG_COLS}, m.pk FROM messages m WHERE m.id = ?1 AND m.agent_id = ?2"
                ))
                .db()?;
            let mut put = tx
                .prepare_cached(
                    "INSERT INTO message_vectors (message_pk, model, vector) VALUES (?1, ?2, ?3)
                     ON CONFLICT (message_pk) DO UPDATE
                     SET model = excluded.model, vector = excluded.vector",
                )
                .db()?;
            let mut n = 0;
            for f in filled {
                let Some((m, pk)) = load
                    .query_row(params![f.id.as_str(), agent.as_str()], |r| {
                        Ok((message_from_row(r)?, r.get::<_, i64>(14)?))
                    })
                    .optional()
                    .db()?
                else {
                    continue;
                };
                if embeddable_text(&m).unwrap_or_default() != f.text {
                    continue;
                }
                n += put
                    .execute(params![pk, model, search::encode_vector(&f.vector)])
                    .db()?;
            }
            Ok(n)
        })
    }
}

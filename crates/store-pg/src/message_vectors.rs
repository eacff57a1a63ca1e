//! Vectors of recall memory on PostgreSQL (the rules are the interface's:
//! `engram_store_api::embeddable_text` and `MessageStore::fill_message_vectors`).
//!
//! Each message has at most one vector, in `message_vectors`, with the embedding model it came
//! from; search (`ranking::message_vectors`) reads the vectors of the agent's current model
//! with the query's dimension and ranks them exactly, as the passages' vectors are ranked.

use crate::rows::{self, Cached, MESSAGE_COLS};
use crate::tx::TxResult;
use deadpool_postgres::GenericClient;
use engram_core::{AgentId, Error};
use engram_store_api::{MessageVector, UnembeddedMessage, embeddable_text};

/// The messages that may have a vector: user and assistant messages that are not hidden loop
/// messages (`$1` the agent).
const CANDIDATES: &str = "m.agent_id = $1 AND m.role IN ('user', 'assistant')
                          AND m.kind NOT IN ('heartbeat', 'alert')";

/// The agent's current embedding model handle, `None` without one. With `share`, the agent's
/// row is held until the transaction ends, so a change of model commits before or after.
/// Errors: `NotFound("agent")`.
pub(crate) async fn current_model(
    c: &impl GenericClient,
    agent: &AgentId,
    share: bool,
) -> TxResult<Option<String>> {
    let lock = if share { " FOR SHARE" } else { "" };
    let row = c
        .one_opt(
            &format!("SELECT embedding ->> 'model' FROM agents WHERE id = $1{lock}"),
            &[&agent.as_str()],
        )
        .await?
        .ok_or_else(|| Error::not_found("agent", agent.as_str()))?;
    Ok(row.try_get(0)?)
}

/// Up to `limit` messages without a vector of `model`, by `seq`, after `after`.
pub(crate) async fn without(
    c: &impl GenericClient,
    agent: &AgentId,
    after: Option<i64>,
    limit: usize,
) -> TxResult<Vec<UnembeddedMessage>> {
    let Some(model) = current_model(c, agent, false).await? else {
        return Ok(Vec::new());
    };
    let found = c
        .rows(
            &format!(
                "SELECT {MESSAGE_COLS} FROM messages m
                 WHERE {CANDIDATES} AND m.seq > $2 AND NOT EXISTS (
                     SELECT 1 FROM message_vectors v WHERE v.message_id = m.id AND v.model = $3)
                 ORDER BY m.seq LIMIT $4"
            ),
            &[
                &agent.as_str(),
                &after.unwrap_or(i64::MIN),
                &model,
                &rows::limit(limit),
            ],
        )
        .await?;
    found
        .iter()
        .map(|r| {
            let message = rows::message(r)?;
            Ok(UnembeddedMessage {
                cursor: message.seq,
                message,
            })
        })
        .collect()
}

/// How many messages lack a vector of the agent's current model.
pub(crate) async fn count_without(c: &impl GenericClient, agent: &AgentId) -> TxResult<u64> {
    let Some(model) = current_model(c, agent, false).await? else {
        return Ok(0);
    };
    let row = c
        .one(
            &format!(
                "SELECT count(*) FROM messages m WHERE {CANDIDATES} AND NOT EXISTS (
                     SELECT 1 FROM message_vectors v WHERE v.message_id = m.id AND v.model = $2)"
            ),
            &[&agent.as_str(), &model],
        )
        .await?;
    rows::uint(&row, 0)
}

/// A vector as stored: `(dim, bytes)`, `(0, [])` for a message with nothing to embed.
/// Errors: `Invalid` for a non-finite vector, or an empty one for non-empty text.
pub(crate) fn coded(f: &MessageVector) -> engram_core::Result<(i32, Vec<u8>)> {
    if f.text.is_empty() && f.vector.is_empty() {
        return Ok((0, Vec::new()));
    }
    rows::encode_vector(&f.vector)
}

/// Stores the vectors of `filled` (already [`coded`]) whose message still has the text they
/// were computed from; inside the caller's transaction, which holds the agent's row and has
/// checked its model. Returns how many were stored.
pub(crate) async fn fill(
    c: &impl GenericClient,
    agent: &AgentId,
    model: &str,
    filled: &[(&MessageVector, (i32, Vec<u8>))],
) -> TxResult<usize> {
    let ids: Vec<&str> = filled.iter().map(|(f, _)| f.id.as_str()).collect();
    let found = c
        .rows(
            &format!(
                "SELECT {MESSAGE_COLS} FROM messages m WHERE m.agent_id = $1 AND m.id = ANY($2)"
            ),
            &[&agent.as_str(), &ids],
        )
        .await?;
    let mut texts = std::collections::HashMap::with_capacity(found.len());
    for r in &found {
        let m = rows::message(r)?;
        texts.insert(m.id.clone(), embeddable_text(&m).unwrap_or_default());
    }
    let mut n = 0;
    for (f, (dim, bytes)) in filled {
        if texts.get(&f.id) != Some(&f.text) {
            continue;
        }
        n += c
            .exec(
                "INSERT INTO message_vectors (message_id, model, dim, vector)
                 VALUES ($1, $2, $3, $4)
                 ON CONFLICT (message_id) DO UPDATE
                 SET model = excluded.model, dim = excluded.dim, vector = excluded.vector",
                &[&f.id.as_str(), &model, dim, bytes],
            )
            .await?;
    }
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

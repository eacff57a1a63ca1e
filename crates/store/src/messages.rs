//! Recall memory: every message an agent ever had, ordered by `seq`, and conversation search.

use crate::candidates::{Bm25, CandidateDepth, Candidates, NeighbourMap, Ranking};
use crate::fts_partitions;
use crate::message_pages;
use crate::message_rows::{MSG_COLS, SEARCH_FILTERS, kind_str, message_from_row};
use crate::rooms::MessageRows;
use crate::search::{self, FtsQuery, fts_query};
use crate::sql::{self, DbResult};
use engram_core::{
    AgentId, Error, Message, MessageId, NewMessage, Result, Role, RunId, StepId, Timestamp,
};
use rusqlite::{Connection, OptionalExtension, params};

/// Distance between the `seq` numbers of consecutive appended messages (the storage
/// interface's, shared by every backend).
pub use engram_store_api::SEQ_GAP;

pub use engram_core::MessageHit;
pub use engram_store_api::MessageQuery;

/// The highest `seq` of the agent's messages, if any.
pub(crate) fn max_seq(conn: &Connection, agent: &AgentId) -> Result<Option<i64>> {
    conn.prepare_cached("SELECT max(seq) FROM messages WHERE agent_id = ?1")
        .db()?
        .query_row([agent.as_str()], |r| r.get(0))
        .db()
}

/// Inserts a fully formed message row (seq and id chosen by the caller).
pub(crate) fn insert_row(conn: &Connection, m: &Message) -> Result<()> {
    let tool_calls = if m.tool_calls.is_empty() {
        None
    } else {
        Some(sql::to_json(&m.tool_calls)?)
    };
    conn.prepare_cached(
        "INSERT INTO messages (id, agent_id, seq, role, kind, content, reasoning, tool_calls,
                               tool_call_id, tool_name, run_id, step_id, in_context, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    )
    .db()?
    .execute(params![
        m.id.as_str(),
        m.agent_id.as_str(),
        m.seq,
        m.role.as_str(),
        kind_str(m.kind),
        m.content,
        m.reasoning,
        tool_calls,
        m.tool_call_id,
        m.tool_name,
        m.run_id.as_ref().map(RunId::as_str),
        m.step_id.as_ref().map(StepId::as_str),
        m.in_context,
        sql::micros(m.created_at),
    ])
    .db()?;
    Ok(())
}

/// Stores `nm` at `seq`, keeping its id and time (truncated to microseconds) when given;
/// `now` stamps the rest. Errors: `Conflict` when the id exists.
pub(crate) fn insert_new(
    conn: &Connection,
    agent: &AgentId,
    seq: i64,
    nm: &NewMessage,
    in_context: bool,
    now: Timestamp,
) -> Result<Message> {
    let m = Message {
        id: nm.id.clone().unwrap_or_default(),
        agent_id: agent.clone(),
        seq,
        role: nm.role,
        kind: nm.kind,
        content: nm.content.clone(),
        reasoning: nm.reasoning.clone(),
        tool_calls: nm.tool_calls.clone(),
        tool_call_id: nm.tool_call_id.clone(),
        tool_name: nm.tool_name.clone(),
        run_id: nm.run_id.clone(),
        step_id: nm.step_id.clone(),
        in_context,
        created_at: nm.created_at.map_or(now, sql::truncate),
    };
    insert_row(conn, &m).map_err(|e| match e {
        Error::Conflict(_) => Error::Conflict(format!("message {} already exists", m.id)),
        e => e,
    })?;
    Ok(m)
}

/// Appends `msgs` after the agent's last message, in context, `SEQ_GAP` apart. Keeps given ids
/// and times (truncated to microseconds); `now` stamps the rest. The agent must exist.
pub(crate) fn append(
    conn: &Connection,
    agent: &AgentId,
    msgs: &[NewMessage],
    now: Timestamp,
) -> Result<Vec<Message>> {
    let mut seq = max_seq(conn, agent)?.unwrap_or(0);
    let mut out = Vec::with_capacity(msgs.len());
    for nm in msgs {
        seq = seq
            .checked_add(SEQ_GAP)
            .ok_or_else(|| Error::Internal("message sequence overflow".into()))?;
        let m = insert_new(conn, agent, seq, nm, true, now)?;
        out.push(m);
    }
    Ok(out)
}

/// The agent's in-context messages by `seq`.
pub(crate) fn in_context(conn: &Connection, agent: &AgentId) -> Result<Vec<Message>> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {MSG_COLS} FROM messages m WHERE m.agent_id = ?1 AND m.in_context = 1 ORDER BY m.seq"
        ))
        .db()?;
    let rows = stmt.query_map([agent.as_str()], message_from_row).db()?;
    rows.collect::<rusqlite::Result<_>>().db()
}

/// The SQL of a conversation search (filters as in [`SEARCH_FILTERS`], `?5` limit): with the
/// agent's full-text partition, a ranked search `(pk, -bm25)` of the matches of the FTS5
/// expression `?6` in the agent's own table (BM25 over its own messages only, see
/// `fts_partitions`), else the newest messages with score 0.
fn search_sql(partition: Option<i64>) -> String {
    if let Some(n) = partition {
        let table = fts_partitions::messages_table(n);
        // CROSS JOIN keeps FTS as the outer loop (see `passages::text_sql`).
        format!(
            "SELECT m.pk, -bm25({table}) AS score
             FROM {table} CROSS JOIN messages m ON m.pk = {table}.rowid
             WHERE {table} MATCH ?6 AND {SEARCH_FILTERS}
             ORDER BY bm25({table}) LIMIT ?5"
        )
    } else {
        format!(
            "SELECT {MSG_COLS}, 0.0 FROM messages m WHERE {SEARCH_FILTERS} ORDER BY m.seq DESC LIMIT ?5"
        )
    }
}

/// The SQL of the message just before (`before`) or after message `?5` in the conversation
/// that passes the filters of [`SEARCH_FILTERS`], at most `?6` microseconds away from it.
fn neighbour_sql(before: bool) -> String {
    let (cmp, order, sign) = if before {
        ("<", "DESC", "-")
    } else {
        (">", "ASC", "+")
    };
    format!(
        "SELECT m.pk FROM messages h, messages m
         WHERE h.pk = ?5 AND {SEARCH_FILTERS} AND m.seq {cmp} h.seq
           AND m.created_at BETWEEN min(h.created_at, h.created_at {sign} ?6)
                                AND max(h.created_at, h.created_at {sign} ?6)
         ORDER BY m.seq {order} LIMIT 1"
    )
}

/// Roles searched when the query names none: everything people and tools said, not system text.
const DEFAULT_ROLES: [Role; 3] = [Role::User, Role::Assistant, Role::Tool];

impl MessageRows<'_> {
    /// Appends messages to the agent's history in one transaction, in context, with `seq`
    /// numbers `SEQ_GAP` apart after the last one. Keeps `NewMessage::id` and `created_at` when
    /// given (times truncated to microseconds). Returns the stored messages.
    ///
    /// Errors: `NotFound("agent")`; `Conflict` if a given id already exists.
    pub fn append(self, agent: &AgentId, msgs: &[NewMessage]) -> Result<Vec<Message>> {
        self.store.write(|tx| {
            sql::ensure_agent(tx, agent)?;
            append(tx, agent, msgs, sql::now())
        })
    }

    /// The messages in the agent's context window, by `seq`. Errors: `NotFound("agent")`.
    pub fn in_context(self, agent: &AgentId) -> Result<Vec<Message>> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            in_context(c, agent)
        })
    }

    /// A page of history for scrolling back: the `limit` newest messages with
    /// `seq < before_seq` (all when `None`), returned oldest first. Pass the first returned
    /// message's `seq` to get the page before it. Errors: `NotFound("agent")`.
    pub fn list(
        self,
        agent: &AgentId,
        before_seq: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Message>> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {MSG_COLS} FROM messages m WHERE m.agent_id = ?1 AND m.seq < ?2
                     ORDER BY m.seq DESC LIMIT ?3"
                ))
                .db()?;
            let rows = stmt
                .query_map(
                    params![
                        agent.as_str(),
                        before_seq.unwrap_or(i64::MAX),
                        sql::sat(limit)
                    ],
                    message_from_row,
                )
                .db()?;
            let mut page: Vec<Message> = rows.collect::<rusqlite::Result<_>>().db()?;
            page.reverse();
            Ok(page)
        })
    }

    /// One message. Errors: `NotFound("message", id)`.
    pub fn get(self, id: &MessageId) -> Result<Message> {
        self.store.read(|c| {
            c.prepare_cached(&format!(
                "SELECT {MSG_COLS} FROM messages m WHERE m.id = ?1"
            ))
            .db()?
            .query_row([id.as_str()], message_from_row)
            .optional()
            .db()?
            .ok_or_else(|| Error::not_found("message", id.as_str()))
        })
    }

    /// Takes messages out of the context window and stores the new recursive summary, in one
    /// transaction, with a [`Compaction`](crate::Compaction) row marking where it happened. The messages stay in recall memory (listed and searchable).
    ///
    /// Errors: `NotFound("agent")`; `NotFound("message", id)` if an id is not one of the agent's
    /// messages (then nothing changes).
    pub fn evict(self, agent: &AgentId, ids: &[MessageId], summary: &str) -> Result<()> {
        self.store.write(|tx| {
            let n = tx
                .prepare_cached("UPDATE agents SET summary = ?2 WHERE id = ?1")
                .db()?
                .execute(params![agent.as_str(), summary])
                .db()?;
            if n == 0 {
                return Err(Error::not_found("agent", agent.as_str()));
            }
            let mut stmt = tx
                .prepare_cached(
                    "UPDATE messages SET in_context = 0 WHERE id = ?1 AND agent_id = ?2
                     RETURNING seq",
                )
                .db()?;
            let mut newest: Option<i64> = None;
            for id in ids {
                let seq: i64 = stmt
                    .query_row(params![id.as_str(), agent.as_str()], |r| r.get(0))
                    .optional()
                    .db()?
                    .ok_or_else(|| Error::not_found("message", id.as_str()))?;
                newest = newest.max(Some(seq));
            }
            // The chat shows a divider where this compaction happened.
            if let Some(seq) = newest {
                message_pages::record_compaction(tx, agent, seq, summary, ids.len())?;
            }
            Ok(())
        })
    }

    /// The primitive of recall search: reads the candidates of `q` over the agent's whole
    /// history (in context or not; see [`Candidates`]), `depth` deep on each side, hands them
    /// to `rank` and loads the messages of the ranking it returns, in its order, in one read.
    /// Roles, kinds and dates are filtered in SQL before the depth; hidden loop messages
    /// (heartbeats, alerts) are never candidates. The lexical side is BM25 over content,
    /// reasoning and tool-call arguments, with each hit's neighbours among the matching
    /// messages (just before and after it, within 30 minutes); the vector side, with
    /// `embedding` (the query's vector from the agent's current embedding model), the cosine
    /// of messages with a vector of that model. An empty query lists the newest matching
    /// messages and text without words finds nothing without a vector, both without calling
    /// `rank`. User text can never cause an FTS5 syntax error. The ranking itself is
    /// `engram_retrieval`'s.
    ///
    /// Errors: `NotFound("agent")`; `Invalid` for an empty or non-finite query vector.
    pub fn rank(
        self,
        agent: &AgentId,
        q: &MessageQuery,
        embedding: Option<&[f32]>,
        depth: CandidateDepth,
        rank: impl FnOnce(Candidates) -> Ranking,
    ) -> Result<Vec<MessageHit>> {
        if let Some(v) = embedding {
            crate::passages::check_vector(v)?;
        }
        let roles: &[Role] = if q.roles.is_empty() {
            &DEFAULT_ROLES
        } else {
            &q.roles
        };
        let roles = sql::to_json(&roles.iter().map(|r| r.as_str()).collect::<Vec<_>>())?;
        let start = q.start.map_or(i64::MIN, sql::micros);
        let end = q.end.map_or(i64::MAX, sql::micros);
        let limit = sql::sat(q.limit);
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            if q.limit == 0 {
                return Ok(Vec::new());
            }
            let fts = fts_query(&q.query);
            let expr = match fts {
                FtsQuery::NoTerms if embedding.is_none() => return Ok(Vec::new()),
                FtsQuery::NoTerms => None,
                FtsQuery::Match(expr) => Some(expr),
                FtsQuery::Blank => {
                    let mut stmt = c.prepare_cached(&search_sql(None)).db()?;
                    let rows = stmt
                        .query_map(params![agent.as_str(), roles, start, end, limit], |r| {
                            Ok(MessageHit {
                                message: message_from_row(r)?,
                                score: r.get(14)?,
                            })
                        })
                        .db()?;
                    return rows.collect::<rusqlite::Result<_>>().db();
                }
            };
            // An agent that never had text has no partition, and nothing can match.
            let Some(partition) = fts_partitions::partition(c, agent)? else {
                return Ok(Vec::new());
            };
            let pool = sql::sat(depth.lexical);
            let bm25: Option<Ranking> = match expr {
                None => None,
                Some(expr) => Some(
                    c.prepare_cached(&search_sql(Some(partition)))
                        .db()?
                        .query_map(
                            params![agent.as_str(), roles, start, end, pool, expr],
                            |r| Ok((r.get(0)?, r.get(1)?)),
                        )
                        .db()?
                        .collect::<rusqlite::Result<_>>()
                        .db()?,
                ),
            };
            // Each hit's neighbours among the matching messages, one seek a side.
            let lexical = match bm25 {
                None => None,
                Some(ranking) => {
                    let mut neighbours = NeighbourMap::with_capacity(ranking.len());
                    for &(pk, _) in &ranking {
                        let mut out = [None, None];
                        for (slot, before) in [true, false].into_iter().enumerate() {
                            out[slot] = c
                                .prepare_cached(&neighbour_sql(before))
                                .db()?
                                .query_row(
                                    params![
                                        agent.as_str(),
                                        roles,
                                        start,
                                        end,
                                        pk,
                                        search::NEIGHBOUR_WINDOW_MICROS
                                    ],
                                    |r| r.get(0),
                                )
                                .optional()
                                .db()?;
                        }
                        neighbours.insert(pk, out);
                    }
                    Some(Bm25 {
                        ranking,
                        neighbours,
                    })
                }
            };
            let vector = match embedding {
                Some(v) => Some(crate::message_vectors::vector_ranking(
                    c,
                    agent,
                    (&roles, start, end),
                    v,
                    depth.vector,
                )?),
                None => None,
            };
            let ranking = rank(Candidates { lexical, vector });
            let mut load = c
                .prepare_cached(&format!(
                    "SELECT {MSG_COLS} FROM messages m WHERE m.pk = ?1"
                ))
                .db()?;
            ranking
                .into_iter()
                .map(|(pk, score)| {
                    Ok(MessageHit {
                        message: load.query_row([pk], message_from_row).db()?,
                        score,
                    })
                })
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;

    #[test]
    fn ranked_search_scans_fts_first() {
        let store = Store::open_in_memory().unwrap();
        let step = store
            .write(|c| {
                c.execute_batch(
                    "INSERT INTO agents (id, name, description, system, llm, loop_style, max_steps,
                                         tools, created_at, updated_at)
                     VALUES ('agent-x', 'A', '', '', '{}', 'tool_loop', 50, '[]', 0, 0);
                     INSERT INTO messages (id, agent_id, seq, role, kind, content, in_context,
                                           created_at)
                     VALUES ('m1', 'agent-x', 1024, 'user', 'chat', 'kiwi', 1, 0);",
                )
                .db()?;
                crate::fts_partitions::flush(c)?;
                let sql = format!("EXPLAIN QUERY PLAN {}", search_sql(Some(1)));
                let args = params!["agent-x", "[\"user\"]", 0, 1, 5, "\"kiwi\""];
                c.query_row(&sql, args, |r| r.get::<_, String>(3)).db()
            })
            .unwrap();
        assert!(step.starts_with("SCAN messages_fts_1"), "{step}");
    }
}

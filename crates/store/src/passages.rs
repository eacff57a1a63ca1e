//! Archival memory: passages with tags and optional embeddings, listed and searched.
//!
//! Search reads BM25 candidates from the agent's own FTS5 table (`fts_partitions`) with their
//! neighbouring passages (`passage_neighbours`, one statement for all candidates) and, when the
//! caller brings a query embedding, cosine candidates from the agent's vector index
//! (`vector_index`: exact below 20,000 vectors, an HNSW graph re-scored from the stored vectors
//! above, built in the background by `vector_build`; only vectors of the query's dimension),
//! handed to `engram_retrieval`, which fuses and smooths them ([`PassageRows::rank`]); without
//! filters the index is walked on a second thread while the lexical side runs. Tag
//! and date filters apply before the limit: in each SQL query, and for vectors as a restriction
//! of the index search or, when they keep few rows, an exact scan of those rows.

use crate::candidates::{Bm25, CandidateDepth, Candidates, Ranking};
use crate::fts_partitions;
use crate::passage_neighbours;
use crate::passage_rows;
use crate::passage_rows::{
    PASSAGE_COLS, PassageQuery, Query, dedup, filters, load_by_pk, passage_from_row,
};
use crate::rooms::PassageRows;
use crate::search::{self, FtsQuery, fts_query};
use crate::sql::{self, DbResult};
use crate::vector_index::Indexes;
use engram_core::{
    AgentId, Error, NewPassage, Passage, PassageHit, PassageId, Result, StepId, Timestamp,
};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};
use std::collections::HashSet;
use std::sync::Mutex;

pub(crate) use engram_store_api::check_vector;

/// Stores passages for an existing agent (no transaction of its own).
pub(crate) fn insert(
    conn: &Connection,
    agent: &AgentId,
    ps: &[NewPassage],
    step: Option<&StepId>,
    now: Timestamp,
) -> Result<Vec<Passage>> {
    ps.iter()
        .map(|np| insert_as(conn, agent, PassageId::new(), np, step, now))
        .collect()
}

/// Stores one passage under the id `id` (minted by the caller, who may name it before it is
/// written) for an existing agent (no transaction of its own).
pub(crate) fn insert_as(
    conn: &Connection,
    agent: &AgentId,
    id: PassageId,
    np: &NewPassage,
    step: Option<&StepId>,
    now: Timestamp,
) -> Result<Passage> {
    let mut insert_passage = conn
        .prepare_cached(
            "INSERT INTO passages (id, agent_id, text, created_at, embedding_dim, embedding, step_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .db()?;
    if np.text.trim().is_empty() {
        return Err(Error::invalid("a passage needs some text"));
    }
    if let Some(v) = &np.embedding {
        check_vector(v)?;
    }
    let p = Passage {
        id,
        agent_id: agent.clone(),
        text: np.text.clone(),
        tags: dedup(&np.tags).into_iter().map(str::to_owned).collect(),
        created_at: np.created_at.map_or(now, sql::truncate),
        superseded: None,
    };
    insert_passage
        .execute(params![
            p.id.as_str(),
            agent.as_str(),
            p.text,
            sql::micros(p.created_at),
            np.embedding.as_ref().map(|v| sql::sat(v.len())),
            np.embedding.as_deref().map(search::encode_vector),
            step.map(StepId::as_str),
        ])
        .db()?;
    insert_tags(conn, &p.id, &p.tags)?;
    Ok(p)
}

/// Stores `tags` (in order, without duplicates) on the existing passage `id`, with the copies of
/// its agent, time and row key that the tag index (`passage_tags_by_agent_tag_time`) ranges
/// over. Every writer of tag rows goes through here (no transaction of its own).
pub(crate) fn insert_tags<S: AsRef<str>>(
    conn: &Connection,
    id: &PassageId,
    tags: &[S],
) -> Result<()> {
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO passage_tags (passage_id, tag, position, agent_id, created_at, passage_pk)
             SELECT id, ?2, ?3, agent_id, created_at, pk FROM passages WHERE id = ?1",
        )
        .db()?;
    for (i, tag) in tags.iter().enumerate() {
        insert
            .execute(params![id.as_str(), tag.as_ref(), sql::sat(i)])
            .db()?;
    }
    Ok(())
}

fn ranked(conn: &Connection, sql: &str, args: Vec<Value>) -> Result<Ranking> {
    let mut stmt = conn.prepare_cached(sql).db()?;
    let rows = stmt
        .query_map(params_from_iter(args), |r| Ok((r.get(0)?, r.get(1)?)))
        .db()?;
    rows.collect::<rusqlite::Result<_>>().db()
}

/// The SQL and arguments of a BM25 ranking (or newest first for a blank query) of up to
/// `limit` passages; `None` when nothing can match.
fn text_sql(
    agent: &AgentId,
    partition: Option<i64>,
    q: &PassageQuery,
    fts: &FtsQuery,
    limit: usize,
) -> Result<Option<(String, Vec<Value>)>> {
    let mut query = Query::default();
    let filters = filters(agent, q, &mut query)?;
    let sql = match fts {
        FtsQuery::NoTerms => return Ok(None),
        FtsQuery::Blank => format!(
            "SELECT p.pk, 0.0 FROM passages p WHERE {filters}
             ORDER BY p.created_at DESC, p.pk DESC LIMIT {}",
            query.arg(sql::sat(limit))
        ),
        // CROSS JOIN pins the FTS table as the outer loop. Left to itself the planner may walk
        // the agent's passages by index and probe FTS once per row, and every probe recomputes
        // BM25's document frequencies from whole doclists: seconds instead of milliseconds.
        // The agent's own table: BM25's statistics are its own (see `fts_partitions`).
        FtsQuery::Match(expr) => {
            let Some(n) = partition else {
                return Ok(None);
            };
            let table = fts_partitions::passages_table(n);
            if !is_filtered(q) {
                // The table holds only this agent's passages: without tag or date filters the
                // match alone answers, and no passage row (with its vector, 1.5 kB at 384
                // dimensions) is read for candidates that do not make the cut.
                let mut bare = Query::default();
                let sql = format!(
                    "SELECT rowid, -bm25({table}) FROM {table} WHERE {table} MATCH {}
                     ORDER BY bm25({table}) LIMIT {}",
                    bare.arg(expr.clone()),
                    bare.arg(sql::sat(limit))
                );
                return Ok(Some((sql, bare.args)));
            }
            format!(
                "SELECT p.pk, -bm25({table}) FROM {table}
                 CROSS JOIN passages p ON p.pk = {table}.rowid
                 WHERE {table} MATCH {} AND {filters}
                 ORDER BY bm25({table}) LIMIT {}",
                query.arg(expr.clone()),
                query.arg(sql::sat(limit))
            )
        }
    };
    Ok(Some((sql, query.args)))
}

/// BM25 candidates of a query with words (up to `limit`) and their neighbours (see
/// `passage_neighbours`); none when the agent has no full-text table yet.
fn bm25_candidates(
    conn: &Connection,
    agent: &AgentId,
    q: &PassageQuery,
    fts: &FtsQuery,
    limit: usize,
) -> Result<Bm25> {
    let partition = fts_partitions::partition(conn, agent)?;
    let Some((sql, args)) = text_sql(agent, partition, q, fts, limit)? else {
        return Ok(Bm25::default());
    };
    let ranking = ranked(conn, &sql, args)?;
    let keys: Vec<i64> = ranking.iter().map(|(k, _)| *k).collect();
    let neighbours = passage_neighbours::neighbour_map(conn, agent, q, &keys)?;
    Ok(Bm25 {
        ranking,
        neighbours,
    })
}

/// The newest `limit` passages that pass the filters, score 0 (a blank query lists).
fn newest(conn: &Connection, agent: &AgentId, q: &PassageQuery, limit: usize) -> Result<Ranking> {
    match text_sql(agent, None, q, &FtsQuery::Blank, limit)? {
        Some((sql, args)) => ranked(conn, &sql, args),
        None => Ok(Vec::new()),
    }
}

/// Exact cosine ranking of up to `limit` passages that pass the filters and whose vectors have
/// the query's dimension, read from SQLite (a selective filter: too few rows for the graph).
fn exact_vector_ranking(
    conn: &Connection,
    agent: &AgentId,
    q: &PassageQuery,
    v: &[f32],
    limit: usize,
) -> Result<Ranking> {
    let qnorm = search::norm(v);
    if qnorm == 0.0 {
        return Ok(Vec::new());
    }
    let mut query = Query::default();
    let filters = filters(agent, q, &mut query)?;
    let sql = format!(
        "SELECT p.pk, p.embedding FROM passages p WHERE {filters} AND p.embedding_dim = {}",
        query.arg(sql::sat(v.len()))
    );
    let mut stmt = conn.prepare_cached(&sql).db()?;
    let mut rows = stmt.query(params_from_iter(query.args)).db()?;
    let mut scored: Ranking = Vec::new();
    while let Some(r) = rows.next().db()? {
        let Ok(blob) = r.get_ref(1).db()?.as_blob() else {
            continue;
        };
        if blob.len() == v.len() * 4
            && let Some(sim) = search::cosine(v, qnorm, blob)
        {
            scored.push((r.get(0).db()?, f64::from(sim)));
        }
    }
    let best_first = |a: &(i64, f64), b: &(i64, f64)| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0));
    if scored.len() > limit && limit > 0 {
        scored.select_nth_unstable_by(limit - 1, best_first);
        scored.truncate(limit);
    }
    scored.sort_by(best_first);
    Ok(scored)
}

/// Whether the search filters by tags, dates or (see `passage_rows::effective`) leaves
/// superseded passages out.
fn is_filtered(q: &PassageQuery) -> bool {
    !q.tags.is_empty() || q.start.is_some() || q.end.is_some() || !q.include_superseded
}

/// Cosine ranking of up to `limit` passages whose vectors have the query's dimension, from the
/// agent's vector index (see `vector_index`), and what `beside` (the lexical side) returns:
/// without filters the two run at once (`Indexes::search_beside`). Filters apply before the
/// limit: a selective one (at most `exact_filtered` rows) is scored exactly from SQLite, a
/// broad one restricts the index's search to the rows that pass it.
fn vector_ranking<T>(
    conn: &Connection,
    indexes: &Mutex<Indexes>,
    agent: &AgentId,
    q: &PassageQuery,
    v: &[f32],
    limit: usize,
    beside: impl FnOnce(&Connection) -> Result<T>,
) -> Result<(Ranking, T)> {
    if search::norm(v) == 0.0 {
        return Ok((Vec::new(), beside(conn)?));
    }
    let mut indexes = indexes.lock().unwrap_or_else(|p| p.into_inner());
    if !is_filtered(q) {
        return indexes.search_beside(conn, agent.as_str(), v, limit, None, beside);
    }
    let other = beside(conn)?;
    filtered_vector_ranking(conn, &mut indexes, agent, q, v, limit).map(|r| (r, other))
}

/// [`vector_ranking`] with tag or date filters.
fn filtered_vector_ranking(
    conn: &Connection,
    indexes: &mut Indexes,
    agent: &AgentId,
    q: &PassageQuery,
    v: &[f32],
    limit: usize,
) -> Result<Ranking> {
    let mut query = Query::default();
    let filters = filters(agent, q, &mut query)?;
    let sql = format!(
        "SELECT p.pk FROM passages p WHERE {filters} AND p.embedding_dim = {}",
        query.arg(sql::sat(v.len()))
    );
    let passing: HashSet<i64> = conn
        .prepare_cached(&sql)
        .db()?
        .query_map(params_from_iter(query.args), |r| r.get(0))
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?;
    if passing.len() <= indexes.config().exact_filtered {
        return exact_vector_ranking(conn, agent, q, v, limit);
    }
    let hits = indexes.search(conn, agent.as_str(), v, limit, Some(&passing))?;
    if hits.len() < limit.min(passing.len()) {
        // The graph walk ran out of passing neighbours before the limit (a filter that keeps
        // few rows of a large agent): score the passing rows exactly instead.
        return exact_vector_ranking(conn, agent, q, v, limit);
    }
    Ok(hits)
}

impl PassageRows<'_> {
    /// Stores passages in one transaction; tags are deduplicated keeping their order, given
    /// times are kept (truncated to microseconds), embeddings stored at their native dimension.
    ///
    /// Errors: `NotFound("agent")`; `Invalid` for empty text or an empty/non-finite embedding
    /// (then nothing is stored).
    pub fn insert(self, agent: &AgentId, ps: &[NewPassage]) -> Result<Vec<Passage>> {
        self.store.write(|tx| {
            sql::ensure_agent(tx, agent)?;
            insert(tx, agent, ps, None, sql::now())
        })
    }

    /// One passage. Errors: `NotFound("passage", id)`.
    pub fn get(self, id: &PassageId) -> Result<Passage> {
        self.store.read(|c| {
            c.prepare_cached(&format!(
                "SELECT {PASSAGE_COLS} FROM passages p WHERE p.id = ?1"
            ))
            .db()?
            .query_row([id.as_str()], passage_from_row)
            .optional()
            .db()?
            .ok_or_else(|| Error::not_found("passage", id.as_str()))
        })
    }

    /// Deletes one of the agent's passages (with its tags and index entries).
    /// Errors: `NotFound("passage", id)` if the agent has no such passage.
    pub fn delete(self, agent: &AgentId, id: &PassageId) -> Result<()> {
        self.store.write(|tx| {
            let n = tx
                .prepare_cached("DELETE FROM passages WHERE id = ?1 AND agent_id = ?2")
                .db()?
                .execute(params![id.as_str(), agent.as_str()])
                .db()?;
            if n == 0 {
                Err(Error::not_found("passage", id.as_str()))
            } else {
                Ok(())
            }
        })
    }

    /// The primitive of archival search: reads the candidates of `q` (see [`Candidates`]),
    /// `depth` deep on each side, hands them to `rank` and loads the passages of the ranking it
    /// returns, in its order, all in one read. Tag, date and superseded filters apply to both
    /// sides before the depth. Without a query embedding there is no vector side; a blank
    /// query without one lists the newest `q.top_k` passages (score 0) and text without words
    /// finds nothing, both without calling `rank`. With an embedding, the lexical side (if the
    /// query has words) is read while the vector index is walked on a second thread (no
    /// filters). A row deleted meanwhile is left out. The ranking itself is
    /// `engram_retrieval`'s.
    ///
    /// Errors: `NotFound("agent")`; `Invalid` for an empty or non-finite query embedding.
    pub fn rank(
        self,
        agent: &AgentId,
        q: &PassageQuery,
        depth: CandidateDepth,
        rank: impl FnOnce(Candidates) -> Ranking,
    ) -> Result<Vec<PassageHit>> {
        if let Some(v) = &q.embedding {
            check_vector(v)?;
        }
        let fts = fts_query(&q.query);
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            if q.top_k == 0 {
                return Ok(Vec::new());
            }
            let q = &*passage_rows::effective(c, agent, q)?;
            let ranking: Ranking = match (&q.embedding, &fts) {
                (None, FtsQuery::Match(_)) => rank(Candidates {
                    lexical: Some(bm25_candidates(c, agent, q, &fts, depth.lexical)?),
                    vector: None,
                }),
                (None, FtsQuery::Blank) => newest(c, agent, q, q.top_k)?,
                (None, FtsQuery::NoTerms) => Vec::new(),
                (Some(v), _) => {
                    let lexical = |c: &Connection| match fts {
                        FtsQuery::Match(_) => {
                            bm25_candidates(c, agent, q, &fts, depth.lexical).map(Some)
                        }
                        FtsQuery::Blank | FtsQuery::NoTerms => Ok(None),
                    };
                    let (vector, lexical) =
                        vector_ranking(c, &self.store.vectors, agent, q, v, depth.vector, lexical)?;
                    rank(Candidates {
                        lexical,
                        vector: Some(vector),
                    })
                }
            };
            let mut hits = Vec::with_capacity(ranking.len());
            for (pk, score) in ranking {
                // A row another process deleted after the index saw it is simply not a hit.
                if let Some(passage) = load_by_pk(c, pk)? {
                    hits.push(PassageHit {
                        passage,
                        score,
                        context: false,
                    });
                }
            }
            Ok(hits)
        })
    }

    /// The agent's passages without a stored embedding, oldest first (to backfill after an
    /// embedding model is configured). Errors: `NotFound("agent")`.
    pub fn embeddings_missing(self, agent: &AgentId) -> Result<Vec<Passage>> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {PASSAGE_COLS} FROM passages p
                     WHERE p.agent_id = ?1 AND p.embedding IS NULL ORDER BY p.pk"
                ))
                .db()?;
            let rows = stmt.query_map([agent.as_str()], passage_from_row).db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// The stored embeddings of the agent's passages, oldest passage first, at their native
    /// dimension (passages without one are left out). For exports: the vectors belong to the
    /// agent's embedding model, which the store does not record per passage.
    /// Errors: `NotFound("agent")`.
    pub fn vectors(self, agent: &AgentId) -> Result<Vec<(PassageId, Vec<f32>)>> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let mut stmt = c
                .prepare_cached(
                    "SELECT id, embedding FROM passages
                     WHERE agent_id = ?1 AND embedding IS NOT NULL ORDER BY pk",
                )
                .db()?;
            let rows = stmt
                .query_map([agent.as_str()], |r| {
                    let bytes: Vec<u8> = r.get(1)?;
                    Ok((
                        PassageId::from(r.get::<_, String>(0)?),
                        search::decode_vector(&bytes),
                    ))
                })
                .db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// Stores (or replaces) a passage's embedding at its native dimension.
    /// Errors: `NotFound("passage")`; `Invalid` for an empty or non-finite vector.
    pub fn set_embedding(self, id: &PassageId, v: &[f32]) -> Result<()> {
        check_vector(v)?;
        self.store.write(|tx| {
            let n = tx
                .prepare_cached(
                    "UPDATE passages SET embedding_dim = ?2, embedding = ?3 WHERE id = ?1",
                )
                .db()?
                .execute(params![
                    id.as_str(),
                    sql::sat(v.len()),
                    search::encode_vector(v)
                ])
                .db()?;
            if n == 0 {
                Err(Error::not_found("passage", id.as_str()))
            } else {
                Ok(())
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;
    use engram_core::TagMatch;

    /// The first step of SQLite's plan for `sql`.
    fn first_step(store: &Store, sql: &str, args: Vec<Value>) -> String {
        store
            .read(|c| {
                let mut stmt = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).db()?;
                let rows = stmt
                    .query_map(params_from_iter(args), |r| r.get::<_, String>(3))
                    .db()?;
                let steps = rows.collect::<rusqlite::Result<Vec<_>>>().db()?;
                Ok(steps.into_iter().next().unwrap_or_default())
            })
            .unwrap()
    }

    #[test]
    fn bm25_search_always_scans_fts_first() {
        let store = Store::open_in_memory().unwrap();
        let agent = AgentId::from("agent-plan");
        store
            .write(|tx| {
                tx.execute_batch(
                    "INSERT INTO agents (id, name, description, system, llm, loop_style, max_steps,
                                         tools, created_at, updated_at)
                     VALUES ('agent-plan', 'A', '', '', '{}', 'tool_loop', 50, '[]', 0, 0);
                     INSERT INTO passages (id, agent_id, text, created_at)
                     VALUES ('p1', 'agent-plan', 'coffee', 0);",
                )
                .db()
            })
            .unwrap();
        let n = store
            .read(|c| fts_partitions::partition(c, &agent))
            .unwrap();
        let fts = fts_query("coffee garden");
        let now = Some(chrono::Utc::now());
        for tags in [
            vec![],
            vec!["a".to_owned()],
            vec!["a".to_owned(), "b".to_owned()],
        ] {
            for tag_match in [TagMatch::Any, TagMatch::All] {
                for (start, end) in [(None, None), (now, now)] {
                    let q = PassageQuery {
                        tags: tags.clone(),
                        tag_match,
                        start,
                        end,
                        ..Default::default()
                    };
                    let (sql, args) = text_sql(&agent, n, &q, &fts, 5).unwrap().unwrap();
                    let step = first_step(&store, &sql, args);
                    assert!(step.starts_with("SCAN passages_fts_"), "{step} for {q:?}");
                }
            }
        }
    }
}

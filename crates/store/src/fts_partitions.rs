//! Full-text indexes of one agent each, so BM25 ranks an agent's passages and messages by that
//! agent's own statistics.
//!
//! BM25 weighs a word by how rare it is among the indexed documents and a document by its
//! length against the average one. With one FTS5 table for every agent, both statistics
//! covered everybody: agent A's ranking for "tulips" changed when agent B stored 10,000
//! passages about gardens, and the agent filter applied only after the match. Here every agent
//! that has text gets a *partition* `n` (a row of `fts_partitions`) and two contentless FTS5
//! tables of its own, `passages_fts_<n>` and `messages_fts_<n>`, with the tokenizer the shared
//! tables had (`porter unicode61`).
//!
//! SQL triggers cannot name a table that depends on the row, so the triggers on `passages`,
//! `messages` and `agents` only queue what changed in `fts_pending` (kind, operation, row key,
//! agent), and [`flush`] routes the queue to the agent's tables at the end of every write
//! transaction of the store, before it commits: the index never disagrees with a committed row,
//! whatever code path wrote it (inserts, edits, rollbacks, imports, cascading deletes). A
//! partition is created the first time an agent has text and dropped with the agent.

use crate::sql::DbResult;
use engram_core::{AgentId, Result};
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::BTreeMap;

/// The tokenizer of every partition (as the shared tables had): Porter stemming over
/// `unicode61` words, so "gardening" finds "garden".
const TOKENIZE: &str = "porter unicode61";

/// The name of a partition's passage index.
pub(crate) fn passages_table(n: i64) -> String {
    format!("passages_fts_{n}")
}

/// The name of a partition's message index.
pub(crate) fn messages_table(n: i64) -> String {
    format!("messages_fts_{n}")
}

/// The agent's partition number, if it has one (an agent that never had text has none, and
/// then nothing of it can match).
pub(crate) fn partition(conn: &Connection, agent: &AgentId) -> Result<Option<i64>> {
    conn.prepare_cached("SELECT n FROM fts_partitions WHERE agent_id = ?1")
        .db()?
        .query_row([agent.as_str()], |r| r.get(0))
        .optional()
        .db()
}

/// The agent's partition, created with its two empty tables if missing.
fn ensure_partition(conn: &Connection, agent: &str) -> Result<i64> {
    if let Some(n) = partition(conn, &AgentId::from(agent.to_owned()))? {
        return Ok(n);
    }
    conn.prepare_cached("INSERT INTO fts_partitions (agent_id) VALUES (?1)")
        .db()?
        .execute([agent])
        .db()?;
    let n = conn.last_insert_rowid();
    conn.execute_batch(&format!(
        "CREATE VIRTUAL TABLE {} USING fts5 (
             text, content = '', contentless_delete = 1, tokenize = '{TOKENIZE}');
         CREATE VIRTUAL TABLE {} USING fts5 (
             body, reasoning, tool_args,
             content = '', contentless_delete = 1, tokenize = '{TOKENIZE}');",
        passages_table(n),
        messages_table(n)
    ))
    .db()?;
    Ok(n)
}

/// Drops the partition of an agent that no longer exists (its rows are gone by cascade).
fn drop_partition(conn: &Connection, agent: &str) -> Result<()> {
    let Some(n) = partition(conn, &AgentId::from(agent.to_owned()))? else {
        return Ok(());
    };
    conn.execute_batch(&format!(
        "DROP TABLE IF EXISTS {}; DROP TABLE IF EXISTS {};",
        passages_table(n),
        messages_table(n)
    ))
    .db()?;
    conn.prepare_cached("DELETE FROM fts_partitions WHERE n = ?1")
        .db()?
        .execute([n])
        .db()?;
    Ok(())
}

/// Indexes one row of `kind` ("passage" or "message") in partition `n`, if the row exists and
/// still belongs to `agent`.
fn index_row(conn: &Connection, kind: &str, n: i64, pk: i64, agent: &str) -> Result<()> {
    let sql = match kind {
        "passage" => format!(
            "INSERT INTO {} (rowid, text) SELECT pk, text FROM passages
             WHERE pk = ?1 AND agent_id = ?2",
            passages_table(n)
        ),
        _ => format!(
            "INSERT INTO {} (rowid, body, reasoning, tool_args)
             SELECT pk, content, coalesce(reasoning, ''),
                    coalesce((SELECT group_concat(json_extract(value, '$.arguments'), ' ')
                              FROM json_each(tool_calls)), '')
             FROM messages WHERE pk = ?1 AND agent_id = ?2",
            messages_table(n)
        ),
    };
    conn.prepare_cached(&sql)
        .db()?
        .execute(params![pk, agent])
        .db()?;
    Ok(())
}

/// Removes one row of `kind` from partition `n`.
fn unindex_row(conn: &Connection, kind: &str, n: i64, pk: i64) -> Result<()> {
    let table = match kind {
        "passage" => passages_table(n),
        _ => messages_table(n),
    };
    conn.prepare_cached(&format!("DELETE FROM {table} WHERE rowid = ?1"))
        .db()?
        .execute([pk])
        .db()?;
    Ok(())
}

/// A text column of a queue row.
fn text<'r>(r: &'r rusqlite::Row<'_>, i: usize) -> Result<&'r str> {
    r.get_ref(i)
        .db()?
        .as_str()
        .map_err(|e| engram_core::Error::Storage(format!("fts_pending: {e}")))
}

/// What the queue says about one row, keyed by (agent's place in the list of agents, kind,
/// row key): whether it was in the index before the first queued change (every operation but
/// an insert implies it was).
type Changes = BTreeMap<(usize, bool, i64), bool>;

/// Routes every queued change to the agents' own tables and empties the queue (see the module
/// docs). Called by the store inside each write transaction, before it commits; costs one
/// empty-table read when nothing text-bearing changed.
///
/// Errors: [`engram_core::Error::Storage`] if SQLite fails (the transaction then rolls back).
pub(crate) fn flush(conn: &Connection) -> Result<()> {
    let mut changes: Changes = BTreeMap::new();
    let mut agents: Vec<String> = Vec::new();
    {
        let mut stmt = conn
            .prepare_cached("SELECT kind, op, pk, agent_id FROM fts_pending ORDER BY seq")
            .db()?;
        let mut rows = stmt.query([]).db()?;
        while let Some(r) = rows.next().db()? {
            let kind = text(r, 0)?;
            let op = text(r, 1)?;
            let pk: i64 = r.get(2).db()?;
            let agent = text(r, 3)?;
            // A write touches few agents: a linear look-up beats hashing the ids.
            let a = match agents.iter().rposition(|x| x == agent) {
                Some(a) => a,
                None => {
                    agents.push(agent.to_owned());
                    agents.len() - 1
                }
            };
            if kind == "agent" {
                continue;
            }
            // Only the first change of a row says whether the index held it before.
            changes
                .entry((a, kind == "passage", pk))
                .or_insert(op != "insert");
        }
    }
    if agents.is_empty() {
        return Ok(());
    }
    conn.prepare_cached("DELETE FROM fts_pending")
        .db()?
        .execute([])
        .db()?;
    let mut exists = conn
        .prepare_cached("SELECT 1 FROM agents WHERE id = ?1")
        .db()?;
    for agent in &agents {
        if exists.exists([agent]).db()? {
            continue;
        }
        drop_partition(conn, agent)?;
        crate::vector_index::forget_agent_log(conn, agent)?;
    }
    let mut partitions: Vec<Option<i64>> = vec![None; agents.len()];
    for ((a, is_passage, pk), was_indexed) in changes {
        let agent = agents[a].as_str();
        let n = match partitions[a] {
            Some(n) => n,
            None if !exists.exists([agent]).db()? => continue,
            None => {
                let n = ensure_partition(conn, agent)?;
                partitions[a] = Some(n);
                n
            }
        };
        let kind = if is_passage { "passage" } else { "message" };
        if was_indexed {
            unindex_row(conn, kind, n, pk)?;
        }
        index_row(conn, kind, n, pk, agent)?;
    }
    Ok(())
}

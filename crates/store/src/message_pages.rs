//! Paging through recall memory in SQL: ranges by `seq` in either order, and windows of the
//! conversation around a place a reader jumps to (the start, a message, a date), with the
//! compactions (where older messages were folded into the summary) that fall inside them.
//!
//! Every query here reads through the `(agent_id, seq)` unique index (or `messages_by_time`
//! for dates), so a page costs the same at message 50 as at message 50,000.

use crate::message_rows::message_from_row;
use crate::rooms::MessageRows;
use crate::sql::{self, DbResult, ts};
use engram_core::{AgentId, Error, Message, MessageId, Result};
pub use engram_store_api::{Compaction, MessageWindow, WindowAt};
use rusqlite::{Connection, OptionalExtension, params};

const MSG_COLS: &str = "m.id, m.agent_id, m.seq, m.role, m.kind, m.content, m.reasoning, \
                        m.tool_calls, m.tool_call_id, m.tool_name, m.run_id, m.step_id, \
                        m.in_context, m.created_at";

/// Which way a page of messages runs (the storage interface's, shared by every backend).
pub use engram_store_api::SeqOrder;

/// The `seq` of one of the agent's messages. Errors: `NotFound("message", id)` when it is not
/// one of the agent's.
pub(crate) fn seq_of(c: &Connection, agent: &AgentId, id: &MessageId) -> Result<i64> {
    c.prepare_cached("SELECT seq FROM messages WHERE id = ?1 AND agent_id = ?2")
        .db()?
        .query_row(params![id.as_str(), agent.as_str()], |r| r.get(0))
        .optional()
        .db()?
        .ok_or_else(|| Error::not_found("message", id.as_str()))
}

/// Messages with `lower < seq < upper` (unbounded where `None`), the `limit` nearest `lower`
/// in `Asc` order or nearest `upper` in `Desc` order, returned in that order.
fn range(
    c: &Connection,
    agent: &AgentId,
    lower: Option<i64>,
    upper: Option<i64>,
    limit: usize,
    order: SeqOrder,
) -> Result<Vec<Message>> {
    let dir = match order {
        SeqOrder::Asc => "ASC",
        SeqOrder::Desc => "DESC",
    };
    let mut stmt = c
        .prepare_cached(&format!(
            "SELECT {MSG_COLS} FROM messages m
             WHERE m.agent_id = ?1 AND m.seq > ?2 AND m.seq < ?3
             ORDER BY m.seq {dir} LIMIT ?4"
        ))
        .db()?;
    let rows = stmt
        .query_map(
            params![
                agent.as_str(),
                lower.unwrap_or(i64::MIN),
                upper.unwrap_or(i64::MAX),
                sql::sat(limit)
            ],
            message_from_row,
        )
        .db()?;
    rows.collect::<rusqlite::Result<_>>().db()
}

/// Up to `limit` messages older than `upper` (oldest first) and whether more lie beyond.
fn older(
    c: &Connection,
    agent: &AgentId,
    upper: Option<i64>,
    limit: usize,
) -> Result<(Vec<Message>, bool)> {
    let (mut page, more) = MessageWindow::cut(
        range(c, agent, None, upper, limit + 1, SeqOrder::Desc)?,
        limit,
    );
    page.reverse();
    Ok((page, more))
}

/// Up to `limit` messages newer than `lower` (oldest first) and whether more lie beyond.
fn newer(
    c: &Connection,
    agent: &AgentId,
    lower: Option<i64>,
    limit: usize,
) -> Result<(Vec<Message>, bool)> {
    Ok(MessageWindow::cut(
        range(c, agent, lower, None, limit + 1, SeqOrder::Asc)?,
        limit,
    ))
}

/// The window centred on the message at `seq` (see [`MessageWindow::around`]).
fn around(c: &Connection, agent: &AgentId, seq: i64, limit: usize) -> Result<MessageWindow> {
    let (before, more_before) = older(c, agent, Some(seq), limit - 1)?;
    let (after, more_after) = newer(c, agent, Some(seq - 1), limit)?;
    Ok(MessageWindow::around(
        before,
        more_before,
        after,
        more_after,
        limit,
    ))
}

fn compactions_between(
    c: &Connection,
    agent: &AgentId,
    first: i64,
    last: i64,
) -> Result<Vec<Compaction>> {
    let mut stmt = c
        .prepare_cached(
            "SELECT seq, summary, evicted, created_at FROM compactions
             WHERE agent_id = ?1 AND seq >= ?2 AND seq <= ?3 ORDER BY seq, id",
        )
        .db()?;
    let rows = stmt
        .query_map(params![agent.as_str(), first, last], |r| {
            Ok(Compaction {
                seq: r.get(0)?,
                summary: r.get(1)?,
                evicted: r.get(2)?,
                created_at: ts(r, 3)?,
            })
        })
        .db()?;
    rows.collect::<rusqlite::Result<_>>().db()
}

/// Records a compaction whose newest folded message is `seq` (inside the caller's transaction).
pub(crate) fn record_compaction(
    tx: &Connection,
    agent: &AgentId,
    seq: i64,
    summary: &str,
    evicted: usize,
) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO compactions (agent_id, seq, summary, evicted, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )
    .db()?
    .execute(params![
        agent.as_str(),
        seq,
        summary,
        sql::sat(evicted),
        sql::micros(sql::now())
    ])
    .db()?;
    Ok(())
}

/// Records one compaction for an agent imported with a summary: at its newest message that is
/// out of the context window (none when every message is in it), as the migration does for
/// agents compacted before dividers were kept.
pub(crate) fn record_imported_compaction(
    tx: &Connection,
    agent: &AgentId,
    summary: &str,
) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO compactions (agent_id, seq, summary, evicted, created_at)
         SELECT agent_id, max(seq), ?2, count(*), max(created_at) FROM messages
         WHERE agent_id = ?1 AND in_context = 0 HAVING count(*) > 0",
    )
    .db()?
    .execute(params![agent.as_str(), summary])
    .db()?;
    Ok(())
}

impl MessageRows<'_> {
    /// A page of the agent's messages with `after_seq < seq < before_seq` (each bound
    /// exclusive and optional), at most `limit`, in `order`: the page nearest `after_seq` when
    /// ascending, nearest `before_seq` when descending. One indexed SQL range read.
    ///
    /// Errors: `NotFound("agent")`.
    pub fn page(
        self,
        agent: &AgentId,
        after_seq: Option<i64>,
        before_seq: Option<i64>,
        limit: usize,
        order: SeqOrder,
    ) -> Result<Vec<Message>> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            range(c, agent, after_seq, before_seq, limit, order)
        })
    }

    /// How many messages the agent has (every kind, in context or not).
    ///
    /// Errors: `NotFound("agent")`.
    pub fn count(self, agent: &AgentId) -> Result<u64> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let n: i64 = c
                .prepare_cached("SELECT count(*) FROM messages WHERE agent_id = ?1")
                .db()?
                .query_row([agent.as_str()], |r| r.get(0))
                .db()?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
    }

    /// The `seq` of one of the agent's messages.
    ///
    /// Errors: `NotFound("agent")`; `NotFound("message", id)` when the id is not one of the
    /// agent's messages.
    pub fn seq(self, agent: &AgentId, id: &MessageId) -> Result<i64> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            seq_of(c, agent, id)
        })
    }

    /// A window of at most `limit` (at least 1) messages at `at`, oldest first, with whether
    /// more lie on either side and the compactions inside it. All reads share one snapshot.
    ///
    /// Errors: `NotFound("agent")`; `NotFound("message", id)` for a cursor that is not one of
    /// the agent's messages.
    pub fn window(self, agent: &AgentId, at: &WindowAt, limit: usize) -> Result<MessageWindow> {
        let limit = limit.max(1);
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let mut w = match at {
                WindowAt::Latest => {
                    let (messages, has_older) = older(c, agent, None, limit)?;
                    MessageWindow::of(messages, has_older, false)
                }
                WindowAt::Start => {
                    let (messages, has_newer) = newer(c, agent, None, limit)?;
                    MessageWindow::of(messages, false, has_newer)
                }
                WindowAt::Before { id } => {
                    let seq = seq_of(c, agent, id)?;
                    let (messages, has_older) = older(c, agent, Some(seq), limit)?;
                    MessageWindow::of(messages, has_older, true)
                }
                WindowAt::After { id } => {
                    let seq = seq_of(c, agent, id)?;
                    let (messages, has_newer) = newer(c, agent, Some(seq), limit)?;
                    MessageWindow::of(messages, true, has_newer)
                }
                WindowAt::Around { id } => around(c, agent, seq_of(c, agent, id)?, limit)?,
                WindowAt::Date { at } => {
                    let first: Option<i64> = c
                        .prepare_cached(
                            "SELECT seq FROM messages WHERE agent_id = ?1 AND created_at >= ?2
                             ORDER BY created_at, seq LIMIT 1",
                        )
                        .db()?
                        .query_row(params![agent.as_str(), sql::micros(*at)], |r| r.get(0))
                        .optional()
                        .db()?;
                    match first {
                        Some(seq) => around(c, agent, seq, limit)?,
                        None => {
                            let (messages, has_older) = older(c, agent, None, limit)?;
                            let mut w = MessageWindow::of(messages, has_older, false);
                            w.anchor = w.messages.last().map(|m| m.id.clone());
                            w
                        }
                    }
                }
            };
            // Both ends included: neighbouring pages may both carry a divider; readers merge
            // them by `seq`.
            if let (Some(first), Some(last)) = (w.messages.first(), w.messages.last()) {
                w.compactions = compactions_between(c, agent, first.seq, last.seq)?;
            }
            Ok(w)
        })
    }
}

//! Recall memory on PostgreSQL: an agent's messages numbered by `seq`, appended in batches
//! under the agent's row lock, and searched by their words (`tsvector`, GIN index).
//!
//! Why a row lock: the next `seq` is read from the agent's last message, so two appenders must
//! not both read the same last one. An append locks the agent's row (`FOR NO KEY UPDATE`: other
//! appends and agent changes wait, rows that merely reference the agent do not) and only then
//! reads `max(seq)`; under READ COMMITTED that read is a fresh snapshot taken after the lock was
//! granted, so it sees every append committed before. The read must be in a later statement
//! than the lock: in the locking statement it would use that statement's snapshot, taken before
//! the wait. Each insert reads it itself, sent in one pipeline after the lock. A
//! sequence object would not do: it hands out numbers in the order transactions ask, not the
//! order they commit.

use crate::PgStore;
use crate::blocks::{self, Lock};
use crate::message_vectors;
use crate::rewrite::seq_of;
use crate::rows::{self, Cached, MESSAGE_COLS};
use crate::tx::{TxError, TxResult, in_order, one_trip, transaction};
use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_core::{AgentId, Error, Message, MessageHit, MessageId, NewMessage, Result, Timestamp};
use engram_store_api::{
    CandidateDepth, Compaction, Hit, MessageQuery, MessageSearch, MessageStore, MessageVector,
    MessageWindow, QueryWords, Ranker, SEQ_GAP, SeqOrder, UnembeddedMessage, WindowAt, query_words,
};
use std::sync::LazyLock;
use tokio_postgres::IsolationLevel;
use tokio_postgres::types::ToSql;

/// The filters every search shares: `$1` agent, `$2` roles, `$3`..`$4` time range (either
/// `NULL` for no bound). Hidden loop messages never match.
const FILTERS: &str = "m.agent_id = $1 AND m.role = ANY($2)
       AND m.kind NOT IN ('heartbeat', 'alert')
       AND ($3::timestamptz IS NULL OR m.created_at >= $3)
       AND ($4::timestamptz IS NULL OR m.created_at <= $4)";

/// The statement [`ToAppend::send`] runs for each message: an insert whose `seq` is the
/// agent's last plus [`SEQ_GAP`], read by the insert itself (`$3` is the gap). Inside a
/// transaction that holds the agent's row (see the module docs), each insert is a statement of
/// its own and so reads a snapshot taken after the lock and after the inserts before it. An id
/// that is taken fails the statement (see [`taken`]).
pub(crate) static APPEND_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO messages ({})
         VALUES ($1, $2, (SELECT coalesce(max(seq), 0) FROM messages WHERE agent_id = $2) + $3,
                 $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
         RETURNING seq",
        MESSAGE_COLS.replace("m.", "")
    )
});

/// `e`, or `Conflict` when it is an insert's clash on a message id (another agent's message,
/// or the same id twice in one batch).
fn taken(e: tokio_postgres::Error, id: &MessageId) -> TxError {
    let clash = e
        .as_db_error()
        .is_some_and(|db| db.constraint() == Some("messages_pkey"));
    match clash {
        true => Error::Conflict(format!("message {id} already exists")).into(),
        false => e.into(),
    }
}

/// Messages ready to append after the agent's last, in order: their rows (`seq` still to come)
/// and their tool calls as JSON, made before any statement is sent, so that sending them
/// fails only by a failing statement (see `tx::pipelined`).
pub(crate) struct ToAppend(Vec<(Message, Option<serde_json::Value>)>);

impl ToAppend {
    /// `msgs` as the agent's next messages; those without a time get `now`. Errors: a tool
    /// call list that cannot be written as JSON.
    pub(crate) fn new(agent: &AgentId, msgs: &[NewMessage], now: Timestamp) -> TxResult<Self> {
        let ready = msgs.iter().map(|nm| -> TxResult<_> {
            let m = row_of(nm, agent, 0, true, now);
            let calls = rows::tool_calls_json(&m.tool_calls)?;
            Ok((m, calls))
        });
        Ok(Self(ready.collect::<TxResult<_>>()?))
    }

    /// Inserts the messages, one statement each, in one pipeline (with [`APPEND_SQL`]
    /// prepared beforehand every insert goes out on the first poll); the messages with their
    /// `seq`. Inside the caller's transaction, which must hold the agent's row (or lock it
    /// in the same pipeline, before). The first failure, in order, is the answer. Errors:
    /// `Conflict` on an id clash (the transaction is then aborted).
    pub(crate) async fn send(&self, c: &impl GenericClient) -> TxResult<Vec<Message>> {
        let inserts = self.0.iter().map(|(m, calls)| async move {
            let row = c
                .one(&APPEND_SQL, &RowParams::new(m, SEQ_GAP, calls).list())
                .await
                .map_err(|e| taken(e, &m.id))?;
            Ok::<i64, TxError>(row.try_get(0)?)
        });
        let seqs = in_order(inserts.collect()).await;
        self.0
            .iter()
            .zip(seqs)
            .map(|((m, _), seq)| {
                Ok(Message {
                    seq: seq?,
                    ..m.clone()
                })
            })
            .collect()
    }
}

/// A message's row as the parameters `$1`..`$14` of an insert into `MESSAGE_COLS`, with
/// `seq` in the third place: the row's own `seq` ([`insert_row`]), or the gap an append adds
/// to the agent's last ([`APPEND_SQL`]).
struct RowParams<'a> {
    m: &'a Message,
    id: &'a str,
    agent: &'a str,
    seq: i64,
    calls: &'a Option<serde_json::Value>,
    role: &'static str,
    kind: &'static str,
    run: Option<&'a str>,
    step: Option<&'a str>,
}

impl<'a> RowParams<'a> {
    fn new(m: &'a Message, seq: i64, calls: &'a Option<serde_json::Value>) -> Self {
        Self {
            m,
            id: m.id.as_str(),
            agent: m.agent_id.as_str(),
            seq,
            calls,
            role: m.role.as_str(),
            kind: rows::kind_str(m.kind),
            run: m.run_id.as_ref().map(|r| r.as_str()),
            step: m.step_id.as_ref().map(|s| s.as_str()),
        }
    }

    /// The parameters, in `MESSAGE_COLS` order.
    fn list(&self) -> [&(dyn ToSql + Sync); 14] {
        let m = self.m;
        [
            &self.id,
            &self.agent,
            &self.seq,
            &self.role,
            &self.kind,
            &m.content,
            &m.reasoning,
            self.calls,
            &m.tool_call_id,
            &m.tool_name,
            &self.run,
            &self.step,
            &m.in_context,
            &m.created_at,
        ]
    }
}

/// The row `nm` is stored as at `seq`: its id and time kept when given (times truncated to
/// microseconds), else a fresh id and `now`.
pub(crate) fn row_of(
    nm: &NewMessage,
    agent: &AgentId,
    seq: i64,
    in_context: bool,
    now: Timestamp,
) -> Message {
    Message {
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
        created_at: nm.created_at.map_or(now, rows::truncate),
    }
}

/// Inserts one message as it is (its `seq` must be free). A clash on the id (another agent's
/// message, or twice in one batch) inserts nothing and is a `Conflict`; the caller's
/// transaction is then to be rolled back.
pub(crate) async fn insert_row(c: &impl GenericClient, m: &Message) -> TxResult<()> {
    let calls = rows::tool_calls_json(&m.tool_calls)?;
    let inserted = c
        .exec(
            &format!(
                "INSERT INTO messages ({})
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
                 ON CONFLICT (id) DO NOTHING",
                MESSAGE_COLS.replace("m.", "")
            ),
            &RowParams::new(m, m.seq, &calls).list(),
        )
        .await?;
    if inserted == 0 {
        return Err(Error::Conflict(format!("message {} already exists", m.id)).into());
    }
    Ok(())
}

#[async_trait]
impl MessageStore for PgStore {
    async fn append_messages(&self, agent: &AgentId, msgs: &[NewMessage]) -> Result<Vec<Message>> {
        let ready = ToAppend::new(agent, msgs, rows::now())?;
        // The whole transaction in one round trip: the lock, then the inserts (a missing
        // agent fails them by its foreign key).
        let lock = blocks::ensure_sql(Lock::NoKeyUpdate);
        one_trip!(self, prepare [&APPEND_SQL, &lock], |c| {
            blocks::with_agent(&c, agent, Lock::NoKeyUpdate, ready.send(&c))
        })
    }

    async fn get_message(&self, id: &MessageId) -> Result<Message> {
        let c = self.client().await?;
        let row = c
            .one_opt(
                &format!("SELECT {MESSAGE_COLS} FROM messages m WHERE m.id = $1"),
                &[&id.as_str()],
            )
            .await
            .map_err(TxError::from)?;
        match row {
            Some(r) => Ok(rows::message(&r)?),
            None => Err(Error::not_found("message", id.as_str())),
        }
    }

    async fn page_messages(
        &self,
        agent: &AgentId,
        after_seq: Option<i64>,
        before_seq: Option<i64>,
        limit: usize,
        order: SeqOrder,
    ) -> Result<Vec<Message>> {
        let c = self.client().await?;
        blocks::ensure_agent(&c, agent, Lock::None).await?;
        Ok(range(&c, agent, after_seq, before_seq, limit, order).await?)
    }

    async fn message_window(
        &self,
        agent: &AgentId,
        at: &WindowAt,
        limit: usize,
    ) -> Result<MessageWindow> {
        let mut c = self.client().await?;
        // One snapshot for every read of the window.
        let tx = c
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(TxError::from)?;
        blocks::ensure_agent(&tx, agent, Lock::None).await?;
        let w = window(&tx, agent, at, limit.max(1)).await?;
        tx.commit().await.map_err(TxError::from)?;
        Ok(w)
    }

    async fn count_messages(&self, agent: &AgentId) -> Result<u64> {
        let c = self.client().await?;
        blocks::ensure_agent(&c, agent, Lock::None).await?;
        let n: i64 = c
            .one(
                "SELECT count(*) FROM messages WHERE agent_id = $1",
                &[&agent.as_str()],
            )
            .await
            .map_err(TxError::from)?
            .get(0);
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn search_messages(
        &self,
        agent: &AgentId,
        q: &MessageSearch,
    ) -> Result<Vec<Hit<Message>>> {
        let c = self.client().await?;
        blocks::ensure_agent(&c, agent, Lock::None).await?;
        let roles: Vec<&str> = q.roles().iter().map(|r| r.as_str()).collect();
        let limit = rows::limit(q.limit);
        let found = match query_words(&q.query) {
            QueryWords::NoWords => return Ok(Vec::new()),
            QueryWords::Blank => c
                .rows(
                    &format!(
                        "SELECT {MESSAGE_COLS}, 0::float8 FROM messages m WHERE {FILTERS}
                         ORDER BY m.seq DESC LIMIT $5"
                    ),
                    &[&agent.as_str(), &roles, &q.start, &q.end, &limit],
                )
                .await
                .map_err(TxError::from)?,
            // Normalisation 1 divides the rank by 1 + log(length): long messages do not win
            // by length alone (as BM25's length normalisation does on SQLite).
            QueryWords::Words(words) => c
                .rows(
                    &format!(
                        "SELECT {MESSAGE_COLS}, ts_rank(m.words, q, 1)::float8 AS score
                         FROM messages m, to_tsquery('engram_words', $6) AS q
                         WHERE {FILTERS} AND m.words @@ q
                         ORDER BY score DESC, m.seq DESC LIMIT $5"
                    ),
                    &[
                        &agent.as_str(),
                        &roles,
                        &q.start,
                        &q.end,
                        &limit,
                        &rows::tsquery_any(&words),
                    ],
                )
                .await
                .map_err(TxError::from)?,
        };
        let ranked = found
            .iter()
            .map(|r| Ok((rows::message(r)?, r.try_get::<_, f64>(14)?)))
            .collect::<crate::tx::TxResult<Vec<_>>>()?;
        Ok(Hit::from_ranked(ranked))
    }
    async fn rank_messages(
        &self,
        agent: &AgentId,
        q: &MessageQuery,
        embedding: Option<&[f32]>,
        depth: CandidateDepth,
        rank: Ranker<'_>,
    ) -> Result<Vec<MessageHit>> {
        let c = self.client().await?;
        crate::ranking::rank_messages(&c, agent, q, embedding, depth, rank).await
    }

    async fn messages_without_vectors(
        &self,
        agent: &AgentId,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<UnembeddedMessage>> {
        let c = self.client().await?;
        Ok(message_vectors::without(&c, agent, after, limit).await?)
    }

    async fn count_messages_without_vectors(&self, agent: &AgentId) -> Result<u64> {
        let c = self.client().await?;
        Ok(message_vectors::count_without(&c, agent).await?)
    }

    async fn fill_message_vectors(
        &self,
        agent: &AgentId,
        model: &str,
        filled: &[MessageVector],
    ) -> Result<usize> {
        let coded = filled
            .iter()
            .map(|f| Ok((f, message_vectors::coded(f)?)))
            .collect::<Result<Vec<_>>>()?;
        transaction!(self, |tx| {
            let current = message_vectors::current_model(&tx, agent, true).await?;
            if current.as_deref() == Some(model) {
                message_vectors::fill(&tx, agent, model, &coded).await?
            } else {
                0
            }
        })
    }
}

/// Messages with `lower < seq < upper` (unbounded where `None`), the `limit` nearest `lower`
/// in `Asc` order or nearest `upper` in `Desc` order, returned in that order.
async fn range(
    c: &impl GenericClient,
    agent: &AgentId,
    lower: Option<i64>,
    upper: Option<i64>,
    limit: usize,
    order: SeqOrder,
) -> TxResult<Vec<Message>> {
    let dir = match order {
        SeqOrder::Asc => "ASC",
        SeqOrder::Desc => "DESC",
    };
    let found = c
        .rows(
            &format!(
                "SELECT {MESSAGE_COLS} FROM messages m
                 WHERE m.agent_id = $1 AND m.seq > $2 AND m.seq < $3
                 ORDER BY m.seq {dir} LIMIT $4"
            ),
            &[
                &agent.as_str(),
                &lower.unwrap_or(i64::MIN),
                &upper.unwrap_or(i64::MAX),
                &rows::limit(limit),
            ],
        )
        .await?;
    rows::all(&found, rows::message)
}

/// Up to `limit` messages older than `upper` (oldest first) and whether more lie beyond.
async fn older(
    c: &impl GenericClient,
    agent: &AgentId,
    upper: Option<i64>,
    limit: usize,
) -> TxResult<(Vec<Message>, bool)> {
    let page = range(c, agent, None, upper, limit + 1, SeqOrder::Desc).await?;
    let (mut page, more) = MessageWindow::cut(page, limit);
    page.reverse();
    Ok((page, more))
}

/// Up to `limit` messages newer than `lower` (oldest first) and whether more lie beyond.
async fn newer(
    c: &impl GenericClient,
    agent: &AgentId,
    lower: Option<i64>,
    limit: usize,
) -> TxResult<(Vec<Message>, bool)> {
    let page = range(c, agent, lower, None, limit + 1, SeqOrder::Asc).await?;
    Ok(MessageWindow::cut(page, limit))
}

/// The window centred on the message at `seq` (see [`MessageWindow::around`]).
async fn around(
    c: &impl GenericClient,
    agent: &AgentId,
    seq: i64,
    limit: usize,
) -> TxResult<MessageWindow> {
    let (before, more_before) = older(c, agent, Some(seq), limit - 1).await?;
    let (after, more_after) = newer(c, agent, Some(seq - 1), limit).await?;
    Ok(MessageWindow::around(
        before,
        more_before,
        after,
        more_after,
        limit,
    ))
}

/// The window at `at` (`limit` at least 1), as the SQLite store cuts it.
async fn window(
    c: &impl GenericClient,
    agent: &AgentId,
    at: &WindowAt,
    limit: usize,
) -> TxResult<MessageWindow> {
    let mut w = match at {
        WindowAt::Latest => {
            let (messages, has_older) = older(c, agent, None, limit).await?;
            MessageWindow::of(messages, has_older, false)
        }
        WindowAt::Start => {
            let (messages, has_newer) = newer(c, agent, None, limit).await?;
            MessageWindow::of(messages, false, has_newer)
        }
        WindowAt::Before { id } => {
            let seq = seq_of(c, agent, id).await?;
            let (messages, has_older) = older(c, agent, Some(seq), limit).await?;
            MessageWindow::of(messages, has_older, true)
        }
        WindowAt::After { id } => {
            let seq = seq_of(c, agent, id).await?;
            let (messages, has_newer) = newer(c, agent, Some(seq), limit).await?;
            MessageWindow::of(messages, true, has_newer)
        }
        WindowAt::Around { id } => around(c, agent, seq_of(c, agent, id).await?, limit).await?,
        WindowAt::Date { at } => {
            let first = c
                .one_opt(
                    "SELECT seq FROM messages WHERE agent_id = $1 AND created_at >= $2
                     ORDER BY created_at, seq LIMIT 1",
                    &[&agent.as_str(), at],
                )
                .await?;
            match first {
                Some(r) => around(c, agent, r.try_get(0)?, limit).await?,
                None => {
                    let (messages, has_older) = older(c, agent, None, limit).await?;
                    let mut w = MessageWindow::of(messages, has_older, false);
                    w.anchor = w.messages.last().map(|m| m.id.clone());
                    w
                }
            }
        }
    };
    // Both ends included: neighbouring pages may both carry a divider; readers merge them by
    // `seq`.
    if let (Some(first), Some(last)) = (w.messages.first(), w.messages.last()) {
        let found = c
            .rows(
                "SELECT seq, summary, evicted, created_at FROM compactions
                 WHERE agent_id = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq, pk",
                &[&agent.as_str(), &first.seq, &last.seq],
            )
            .await?;
        w.compactions = rows::all(&found, |r| {
            Ok(Compaction {
                seq: r.try_get(0)?,
                summary: r.try_get(1)?,
                evicted: u32::try_from(rows::uint(r, 2)?).unwrap_or(u32::MAX),
                created_at: r.try_get(3)?,
            })
        })?;
    }
    Ok(w)
}

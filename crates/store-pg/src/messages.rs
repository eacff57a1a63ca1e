//! Recall memory on PostgreSQL: an agent's messages numbered by `seq`, appended in batches
//! under the agent's row lock, and searched by their words (`tsvector`, GIN index).
//!
//! Why a row lock: the next `seq` is read from the agent's last message, so two appenders must
//! not both read the same last one. An append locks the agent's row (`FOR NO KEY UPDATE`: other
//! appends and agent changes wait, rows that merely reference the agent do not) and only then
//! reads `max(seq)`; under READ COMMITTED that read is a fresh snapshot taken after the lock was
//! granted, so it sees every append committed before. The read must be a statement of its own:
//! in the locking statement it would use that statement's snapshot, taken before the wait. A
//! sequence object would not do: it hands out numbers in the order transactions ask, not the
//! order they commit.

use crate::PgStore;
use crate::blocks::{self, Lock};
use crate::rewrite::seq_of;
use crate::rows::{self, Cached, MESSAGE_COLS};
use crate::tx::{TxError, TxResult, transaction};
use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_core::{AgentId, Error, Message, MessageHit, MessageId, NewMessage, Result, Timestamp};
use engram_store_api::{
    CandidateDepth, Compaction, Hit, MessageQuery, MessageSearch, MessageStore, MessageWindow,
    QueryWords, Ranker, SEQ_GAP, SeqOrder, WindowAt, query_words,
};
use tokio_postgres::IsolationLevel;

/// The filters every search shares: `$1` agent, `$2` roles, `$3`..`$4` time range (either
/// `NULL` for no bound). Hidden loop messages never match.
const FILTERS: &str = "m.agent_id = $1 AND m.role = ANY($2)
       AND m.kind NOT IN ('heartbeat', 'alert')
       AND ($3::timestamptz IS NULL OR m.created_at >= $3)
       AND ($4::timestamptz IS NULL OR m.created_at <= $4)";

/// The `seq` of the agent's last message (0 for none). Inside the caller's transaction, which
/// must hold the agent's row (`FOR NO KEY UPDATE`, see the module docs) so the read sees the
/// last committed message; it may be sent in one pipeline with the locking statement, which
/// PostgreSQL runs first.
pub(crate) async fn last_seq(c: &impl GenericClient, agent: &AgentId) -> TxResult<i64> {
    Ok(c.one(
        "SELECT coalesce(max(seq), 0) FROM messages WHERE agent_id = $1",
        &[&agent.as_str()],
    )
    .await?
    .try_get(0)?)
}

/// Appends `msgs` after `last`, the agent's last `seq` as [`last_seq`] read it in this
/// transaction (which holds the agent's row). Messages without a time get `now`. The inserts
/// go in one pipeline (one round trip); the first failure, in order, is the answer.
/// Errors: `Conflict` on an id clash (the caller's transaction is then to be rolled back).
pub(crate) async fn append_after(
    c: &impl GenericClient,
    agent: &AgentId,
    last: i64,
    msgs: &[NewMessage],
    now: Timestamp,
) -> TxResult<Vec<Message>> {
    let mut seq = last;
    let mut out = Vec::with_capacity(msgs.len());
    for nm in msgs {
        seq = seq
            .checked_add(SEQ_GAP)
            .ok_or_else(|| Error::Internal("message sequence overflow".into()))?;
        out.push(row_of(nm, agent, seq, true, now));
    }
    let inserted = futures::future::join_all(out.iter().map(|m| insert_row(c, m))).await;
    inserted.into_iter().collect::<TxResult<Vec<()>>>()?;
    Ok(out)
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
    let inserted = c
        .exec(
            &format!(
                "INSERT INTO messages ({})
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
                 ON CONFLICT (id) DO NOTHING",
                MESSAGE_COLS.replace("m.", "")
            ),
            &[
                &m.id.as_str(),
                &m.agent_id.as_str(),
                &m.seq,
                &m.role.as_str(),
                &rows::kind_str(m.kind),
                &m.content,
                &m.reasoning,
                &rows::tool_calls_json(&m.tool_calls)?,
                &m.tool_call_id,
                &m.tool_name,
                &m.run_id.as_ref().map(|r| r.as_str()),
                &m.step_id.as_ref().map(|s| s.as_str()),
                &m.in_context,
                &m.created_at,
            ],
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
        transaction!(self, |tx| {
            let last = blocks::with_agent(&tx, agent, Lock::NoKeyUpdate, last_seq(&tx, agent));
            append_after(&tx, agent, last.await?, msgs, rows::now()).await?
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

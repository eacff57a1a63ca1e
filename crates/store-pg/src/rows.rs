//! Rows to the engine's types and back: column lists, JSON columns, times and integers.

use crate::tx::TxResult;
use chrono::DateTime;
use deadpool_postgres::GenericClient;
use engram_core::{
    Agent, AgentId, Block, BlockEdit, BlockId, EditId, Error, LoopStyle, Message, MessageId,
    MessageKind, PassId, Passage, PassageId, Role, RunId, StepId, SupersedeKind, Supersession,
    Timestamp, ToolCall,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

/// The columns [`agent`] reads, in order.
pub(crate) const AGENT_COLS: &str = "id, name, description, system, llm, embedding, loop_style, \
     max_steps, tools, tool_rules, summary, created_at, updated_at";

/// How many columns [`AGENT_COLS`] names: a query may read more after them.
pub(crate) const AGENT_WIDTH: usize = 13;

/// The columns [`block`] reads, in order (table alias `b`).
pub(crate) const BLOCK_COLS: &str = "b.id, b.label, b.value, b.char_limit, b.description, \
     b.read_only, b.version, b.created_at, b.updated_at";

/// The columns [`edit`] reads, in order.
pub(crate) const EDIT_COLS: &str =
    "id, block_id, editor, old_value, new_value, old_version, new_version, step_id, created_at";

/// The columns [`message`] reads, in order (table alias `m`).
pub(crate) const MESSAGE_COLS: &str = "m.id, m.agent_id, m.seq, m.role, m.kind, m.content, \
     m.reasoning, m.tool_calls, m.tool_call_id, m.tool_name, m.run_id, m.step_id, \
     m.in_context, m.created_at";

/// The columns [`passage`] reads, in order (table alias `p`).
pub(crate) const PASSAGE_COLS: &str = "p.id, p.agent_id, p.text, p.tags, p.created_at, \
     p.superseded_at, p.superseded_kind, p.superseded_by, p.superseded_pass";

/// `t` cut to the microseconds PostgreSQL keeps, so returned values equal later reads.
pub(crate) fn truncate(t: Timestamp) -> Timestamp {
    DateTime::from_timestamp_micros(t.timestamp_micros()).unwrap_or(t)
}

/// The current time, truncated like everything stored.
pub(crate) fn now() -> Timestamp {
    truncate(chrono::Utc::now())
}

/// A JSON column's value.
pub(crate) fn to_json(v: &impl Serialize) -> TxResult<Value> {
    serde_json::to_value(v)
        .map_err(|e| Error::Internal(format!("cannot encode a JSON column: {e}")).into())
}

pub(crate) fn from_json<T: DeserializeOwned>(row: &Row, idx: usize, what: &str) -> TxResult<T> {
    let v: Value = row.try_get(idx)?;
    serde_json::from_value(v)
        .map_err(|e| Error::Storage(format!("a stored {what} cannot be read: {e}")).into())
}

/// The `tsquery` text (for `to_tsquery('engram_words', …)`) matching any of `words`, each a
/// quoted lexeme, stemmed by `to_tsquery` as the index is: user text never reaches the query
/// parser as operators.
pub(crate) fn tsquery_any(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("'{}'", w.replace('\\', "\\\\").replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// A count given as a `LIMIT` (`bigint`), saturating.
pub(crate) fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A count or version as stored (`bigint`).
pub(crate) fn int(v: u64, what: &str) -> TxResult<i64> {
    i64::try_from(v).map_err(|_| Error::invalid(format!("{what} is too large: {v}")).into())
}

/// A non-negative `bigint` column.
pub(crate) fn uint(row: &Row, idx: usize) -> TxResult<u64> {
    let v: i64 = row.try_get(idx)?;
    u64::try_from(v).map_err(|_| Error::Storage(format!("negative value {v} stored")).into())
}

fn opt_uint(row: &Row, idx: usize) -> TxResult<Option<u64>> {
    let v: Option<i64> = row.try_get(idx)?;
    Ok(v.map(|v| u64::try_from(v).unwrap_or(0)))
}

pub(crate) fn loop_style_str(s: LoopStyle) -> &'static str {
    match s {
        LoopStyle::Classic => "classic",
        LoopStyle::ToolLoop => "tool_loop",
    }
}

pub(crate) fn agent(r: &Row) -> TxResult<Agent> {
    let loop_style: String = r.try_get(6)?;
    let max_steps: i64 = r.try_get(7)?;
    Ok(Agent {
        id: AgentId::from(r.try_get::<_, String>(0)?),
        name: r.try_get(1)?,
        description: r.try_get(2)?,
        system: r.try_get(3)?,
        llm: from_json(r, 4, "model setting")?,
        embedding: match r.try_get::<_, Option<Value>>(5)? {
            None => None,
            Some(_) => Some(from_json(r, 5, "embedding setting")?),
        },
        loop_style: if loop_style == "classic" {
            LoopStyle::Classic
        } else {
            LoopStyle::ToolLoop
        },
        max_steps: u32::try_from(max_steps).unwrap_or(u32::MAX),
        tools: from_json(r, 8, "tool list")?,
        tool_rules: from_json(r, 9, "tool rule list")?,
        summary: r.try_get(10)?,
        created_at: r.try_get(11)?,
        updated_at: r.try_get(12)?,
    })
}

pub(crate) fn block(r: &Row) -> TxResult<Block> {
    Ok(Block {
        id: BlockId::from(r.try_get::<_, String>(0)?),
        label: r.try_get(1)?,
        value: r.try_get(2)?,
        limit: usize::try_from(uint(r, 3)?).unwrap_or(usize::MAX),
        description: r.try_get(4)?,
        read_only: r.try_get(5)?,
        version: uint(r, 6)?,
        created_at: r.try_get(7)?,
        updated_at: r.try_get(8)?,
    })
}

pub(crate) fn edit(r: &Row) -> TxResult<BlockEdit> {
    Ok(BlockEdit {
        id: EditId::from(r.try_get::<_, String>(0)?),
        block_id: BlockId::from(r.try_get::<_, String>(1)?),
        editor: from_json(r, 2, "editor")?,
        old_value: r.try_get(3)?,
        new_value: r.try_get(4)?,
        old_version: opt_uint(r, 5)?,
        new_version: opt_uint(r, 6)?,
        step_id: r.try_get::<_, Option<String>>(7)?.map(StepId::from),
        created_at: r.try_get(8)?,
    })
}

pub(crate) fn role_from(s: &str) -> TxResult<Role> {
    Ok(match s {
        "system" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        other => return Err(Error::Storage(format!("unknown stored role {other:?}")).into()),
    })
}

pub(crate) fn kind_str(k: MessageKind) -> &'static str {
    match k {
        MessageKind::Chat => "chat",
        MessageKind::Heartbeat => "heartbeat",
        MessageKind::Alert => "alert",
        MessageKind::Event => "event",
    }
}

fn kind_from(s: &str) -> TxResult<MessageKind> {
    Ok(match s {
        "chat" => MessageKind::Chat,
        "heartbeat" => MessageKind::Heartbeat,
        "alert" => MessageKind::Alert,
        "event" => MessageKind::Event,
        other => return Err(Error::Storage(format!("unknown stored kind {other:?}")).into()),
    })
}

/// A message's tool calls as stored: `NULL` when it has none.
pub(crate) fn tool_calls_json(calls: &[ToolCall]) -> TxResult<Option<Value>> {
    if calls.is_empty() {
        Ok(None)
    } else {
        to_json(&calls).map(Some)
    }
}

pub(crate) fn message(r: &Row) -> TxResult<Message> {
    Ok(Message {
        id: MessageId::from(r.try_get::<_, String>(0)?),
        agent_id: AgentId::from(r.try_get::<_, String>(1)?),
        seq: r.try_get(2)?,
        role: role_from(r.try_get(3)?)?,
        kind: kind_from(r.try_get(4)?)?,
        content: r.try_get(5)?,
        reasoning: r.try_get(6)?,
        tool_calls: match r.try_get::<_, Option<Value>>(7)? {
            None => Vec::new(),
            Some(_) => from_json(r, 7, "tool call list")?,
        },
        tool_call_id: r.try_get(8)?,
        tool_name: r.try_get(9)?,
        run_id: r.try_get::<_, Option<String>>(10)?.map(RunId::from),
        step_id: r.try_get::<_, Option<String>>(11)?.map(StepId::from),
        in_context: r.try_get(12)?,
        created_at: r.try_get(13)?,
    })
}

pub(crate) fn passage(r: &Row) -> TxResult<Passage> {
    let superseded_at: Option<Timestamp> = r.try_get(5)?;
    let superseded = match superseded_at {
        None => None,
        Some(at) => Some(Supersession {
            kind: r
                .try_get::<_, Option<&str>>(6)?
                .and_then(SupersedeKind::parse)
                .unwrap_or(SupersedeKind::Superseded),
            at,
            by: r.try_get::<_, Option<String>>(7)?.map(PassageId::from),
            pass_id: r.try_get::<_, Option<String>>(8)?.map(PassId::from),
        }),
    };
    Ok(Passage {
        id: PassageId::from(r.try_get::<_, String>(0)?),
        agent_id: AgentId::from(r.try_get::<_, String>(1)?),
        text: r.try_get(2)?,
        tags: r.try_get(3)?,
        created_at: r.try_get(4)?,
        superseded,
    })
}

/// Every row through `f`.
pub(crate) fn all<T>(rows: &[Row], f: impl Fn(&Row) -> TxResult<T>) -> TxResult<Vec<T>> {
    rows.iter().map(f).collect()
}

/// Statements prepared once per connection (`prepare_cached`), so each call is one round trip.
#[async_trait::async_trait]
pub(crate) trait Cached: GenericClient {
    /// Runs a statement; the number of rows it changed.
    async fn exec(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, tokio_postgres::Error> {
        let statement = self.prepare_cached(sql).await?;
        self.execute(&statement, params).await
    }

    /// Every row of a query.
    async fn rows(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        let statement = self.prepare_cached(sql).await?;
        self.query(&statement, params).await
    }

    /// The one row of a query (an error for none or several).
    async fn one(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, tokio_postgres::Error> {
        let statement = self.prepare_cached(sql).await?;
        self.query_one(&statement, params).await
    }

    /// The row of a query, if any (an error for several).
    async fn one_opt(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, tokio_postgres::Error> {
        let statement = self.prepare_cached(sql).await?;
        self.query_opt(&statement, params).await
    }
}

impl<C: GenericClient> Cached for C {}

/// Tags without duplicates, first occurrence kept.
pub(crate) fn dedup_tags(tags: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(tags.len());
    for t in tags {
        if !out.contains(t) {
            out.push(t.clone());
        }
    }
    out
}

/// A statement's arguments, numbered as they are added.
#[derive(Default)]
pub(crate) struct Args(Vec<Box<dyn ToSql + Sync + Send>>);

impl Args {
    /// Adds `v`; its placeholder (`$n`).
    pub(crate) fn add(&mut self, v: impl ToSql + Sync + Send + 'static) -> String {
        self.0.push(Box::new(v));
        format!("${}", self.0.len())
    }

    /// The arguments, as a statement takes them.
    pub(crate) fn refs(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.0
            .iter()
            .map(|b| b.as_ref() as &(dyn ToSql + Sync))
            .collect()
    }
}

/// A `LIKE … ESCAPE '\\'` pattern for text that contains `needle`, ASCII letters folded to
/// lower case (compare it with text folded the same way, as SQLite's `LIKE` and `lower()` do).
pub(crate) fn contains_pattern(needle: &str) -> String {
    let escaped = needle
        .to_ascii_lowercase()
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("%{escaped}%")
}

/// A checked vector as stored: `(embedding_dim, little-endian f32 bytes)`.
/// Errors: `Invalid` for an empty or non-finite vector, or one of over 2^31 dimensions.
pub(crate) fn encode_vector(v: &[f32]) -> engram_core::Result<(i32, Vec<u8>)> {
    engram_store_api::check_vector(v)?;
    let dim = i32::try_from(v.len())
        .map_err(|_| Error::invalid("an embedding has too many dimensions"))?;
    Ok((dim, v.iter().flat_map(|x| x.to_le_bytes()).collect()))
}

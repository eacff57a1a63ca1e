//! Sleep-time settings and pass records: what each agent's passes may do, where the last one
//! stopped reading, and the record of every pass with its changes (see `pass_commit` for how a
//! pass's changes are written and undone).

use crate::rooms::SleeptimeRows;
use crate::sql::{self, DbResult, json, ts};
use engram_core::{
    AgentId, Error, MessageId, PassChange, PassId, PassStatus, PassTrigger, PassUsage, Result,
    SleeptimePass, SleeptimeSettings, Timestamp,
};
use engram_store_api::PassBacklog;
use rusqlite::{Connection, OptionalExtension, Row, params};

const PASS_COLS: &str = "id, agent_id, trigger, status, reason, model, started_at, ended_at, \
    messages_read, last_seq, model_calls, prompt_tokens, completion_tokens";

fn pass_from_row(r: &Row<'_>) -> rusqlite::Result<SleeptimePass> {
    Ok(SleeptimePass {
        id: PassId::from(r.get::<_, String>(0)?),
        agent_id: AgentId::from(r.get::<_, String>(1)?),
        trigger: PassTrigger::parse(&r.get::<_, String>(2)?),
        status: PassStatus::parse(&r.get::<_, String>(3)?),
        reason: r.get(4)?,
        model: r.get(5)?,
        started_at: ts(r, 6)?,
        ended_at: ts(r, 7)?,
        messages_read: r.get(8)?,
        last_seq: r.get(9)?,
        model_calls: r.get(10)?,
        prompt_tokens: sql::uint(r, 11)?,
        completion_tokens: sql::uint(r, 12)?,
        cost_usd: None,
        changes: Vec::new(),
    })
}

/// Sets the pass's cost at its model's price.
fn price(conn: &Connection, pass: &mut SleeptimePass) -> Result<()> {
    pass.cost_usd = crate::prices::price_of(conn, &pass.model)?
        .map(|p| p.cost(pass.prompt_tokens, pass.completion_tokens));
    Ok(())
}

/// The changes of pass `id`, in order.
pub(crate) fn changes(conn: &Connection, id: &PassId) -> Result<Vec<PassChange>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT idx, change, undone_at FROM sleeptime_changes WHERE pass_id = ?1 ORDER BY idx",
        )
        .db()?;
    let rows = stmt
        .query_map([id.as_str()], |r| {
            Ok(PassChange {
                index: r.get(0)?,
                kind: json(r, 1)?,
                undone_at: r.get::<_, Option<i64>>(2)?.map(|_| ts(r, 2)).transpose()?,
            })
        })
        .db()?;
    rows.collect::<rusqlite::Result<_>>().db()
}

/// Pass `id` with its changes. Errors: `NotFound("sleep-time pass")`.
pub(crate) fn load(conn: &Connection, id: &PassId) -> Result<SleeptimePass> {
    let mut pass = conn
        .prepare_cached(&format!(
            "SELECT {PASS_COLS} FROM sleeptime_passes WHERE id = ?1"
        ))
        .db()?
        .query_row([id.as_str()], pass_from_row)
        .optional()
        .db()?
        .ok_or_else(|| Error::not_found("sleep-time pass", id.as_str()))?;
    pass.changes = changes(conn, id)?;
    price(conn, &mut pass)?;
    Ok(pass)
}

/// Writes the row of `pass` (not its changes) and, for a pass that ran, moves the agent's
/// reading position to its `last_seq`.
pub(crate) fn insert_pass(conn: &Connection, pass: &SleeptimePass) -> Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO sleeptime_passes ({PASS_COLS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
    ))
    .db()?
    .execute(params![
        pass.id.as_str(),
        pass.agent_id.as_str(),
        pass.trigger.as_str(),
        pass.status.as_str(),
        pass.reason,
        pass.model,
        sql::micros(pass.started_at),
        sql::micros(pass.ended_at),
        pass.messages_read,
        pass.last_seq,
        pass.model_calls,
        sql::int(pass.prompt_tokens, "tokens")?,
        sql::int(pass.completion_tokens, "tokens")?,
    ])
    .db()?;
    if pass.status == PassStatus::Done {
        conn.prepare_cached(
            "INSERT INTO sleeptime_settings (agent_id, settings, last_seq) VALUES (?1, '{}', ?2)
             ON CONFLICT (agent_id) DO UPDATE SET last_seq = max(last_seq, excluded.last_seq)",
        )
        .db()?
        .execute(params![pass.agent_id.as_str(), pass.last_seq])
        .db()?;
    }
    Ok(())
}

/// What passes used since `since` (every pass that ran, also failed or undone ones: their
/// tokens were spent), by model priced; one agent's or everyone's.
fn usage(conn: &Connection, agent: Option<&AgentId>, since: Timestamp) -> Result<PassUsage> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT model, count(*), sum(prompt_tokens), sum(completion_tokens)
             FROM sleeptime_passes
             WHERE started_at >= ?1 AND status != 'skipped' AND (?2 IS NULL OR agent_id = ?2)
             GROUP BY model",
        )
        .db()?;
    let rows: Vec<(String, u32, u64, u64)> = stmt
        .query_map(
            params![sql::micros(since), agent.map(AgentId::as_str)],
            |r| Ok((r.get(0)?, r.get(1)?, sql::uint(r, 2)?, sql::uint(r, 3)?)),
        )
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?;
    let mut out = PassUsage::default();
    for (model, passes, prompt, completion) in rows {
        out.passes += passes;
        out.tokens += prompt + completion;
        if let Some(p) = crate::prices::price_of(conn, &model)? {
            out.usd += p.cost(prompt, completion);
        }
    }
    Ok(out)
}

impl SleeptimeRows<'_> {
    /// The agent's sleep-time settings (defaults when never set). Errors: `NotFound("agent")`.
    pub fn settings(self, agent: &AgentId) -> Result<SleeptimeSettings> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let stored: Option<String> = c
                .prepare_cached("SELECT settings FROM sleeptime_settings WHERE agent_id = ?1")
                .db()?
                .query_row([agent.as_str()], |r| r.get(0))
                .optional()
                .db()?;
            Ok(stored
                .and_then(|s| serde_json::from_str(&s).ok())
                .unwrap_or_default())
        })
    }

    /// Stores the agent's sleep-time settings (its reading position is kept).
    /// Errors: `NotFound("agent")`; `Invalid` for a frequency, step limit or timeout of 0.
    pub fn set_settings(self, agent: &AgentId, s: &SleeptimeSettings) -> Result<()> {
        if s.frequency == 0 || s.max_steps == 0 || s.timeout_secs == 0 {
            return Err(Error::invalid(
                "sleep-time frequency, step limit and timeout must each be at least 1",
            ));
        }
        let text = sql::to_json(s)?;
        self.store.write(|tx| {
            sql::ensure_agent(tx, agent)?;
            tx.prepare_cached(
                "INSERT INTO sleeptime_settings (agent_id, settings) VALUES (?1, ?2)
                 ON CONFLICT (agent_id) DO UPDATE SET settings = excluded.settings",
            )
            .db()?
            .execute(params![agent.as_str(), text])
            .db()?;
            Ok(())
        })
    }

    /// The sequence number of the last message the agent's passes read (0 before the first).
    /// Errors: `NotFound("agent")`.
    pub fn last_seq(self, agent: &AgentId) -> Result<i64> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            Ok(
                c.prepare_cached("SELECT last_seq FROM sleeptime_settings WHERE agent_id = ?1")
                    .db()?
                    .query_row([agent.as_str()], |r| r.get(0))
                    .optional()
                    .db()?
                    .unwrap_or(0),
            )
        })
    }

    /// What is waiting for the agent's next pass: user messages since the last message a pass
    /// read, compactions since the last pass that ran, that last message and when the newest
    /// message was stored.
    /// Errors: `NotFound("agent")`.
    pub fn backlog(self, agent: &AgentId) -> Result<PassBacklog> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            c.prepare_cached(
                "WITH s AS (SELECT coalesce((SELECT last_seq FROM sleeptime_settings
                                             WHERE agent_id = ?1), 0) AS seq,
                                   coalesce((SELECT max(ended_at) FROM sleeptime_passes
                                             WHERE agent_id = ?1 AND status = 'done'), 0) AS at)
                 SELECT (SELECT count(*) FROM messages, s
                         WHERE agent_id = ?1 AND messages.seq > s.seq
                           AND role = 'user' AND kind = 'chat'),
                        (SELECT count(*) FROM compactions, s
                         WHERE agent_id = ?1 AND compactions.created_at > s.at),
                        (SELECT m.id FROM messages m, s
                         WHERE m.agent_id = ?1 AND m.seq <= s.seq
                         ORDER BY m.seq DESC LIMIT 1),
                        (SELECT created_at FROM messages WHERE agent_id = ?1
                         ORDER BY seq DESC LIMIT 1)",
            )
            .db()?
            .query_row([agent.as_str()], |r| {
                Ok(PassBacklog {
                    turns: r.get(0)?,
                    compactions: r.get(1)?,
                    last_read: r.get::<_, Option<String>>(2)?.map(MessageId::from),
                    last_message_at: match r.get::<_, Option<i64>>(3)? {
                        Some(_) => Some(ts(r, 3)?),
                        None => None,
                    },
                })
            })
            .db()
        })
    }

    /// Passes that ran since `since`, the tokens they used and their cost: the agent's when
    /// given, else every agent's together. Skipped passes do not count.
    pub fn usage(self, agent: Option<&AgentId>, since: Timestamp) -> Result<PassUsage> {
        self.store.read(|c| usage(c, agent, since))
    }

    /// Records a pass that wrote nothing (skipped, failed); a pass with changes goes through
    /// [`commit_pass`](SleeptimeRows::commit_pass). Errors: `NotFound("agent")`.
    pub fn record_pass(self, pass: &SleeptimePass) -> Result<()> {
        self.store.write(|tx| {
            sql::ensure_agent(tx, &pass.agent_id)?;
            insert_pass(tx, pass)
        })
    }

    /// One pass with its changes. Errors: `NotFound("sleep-time pass")`.
    pub fn get_pass(self, id: &PassId) -> Result<SleeptimePass> {
        self.store.read(|c| load(c, id))
    }

    /// The agent's passes, newest first, at most `limit`, with their changes.
    /// Errors: `NotFound("agent")`.
    pub fn list_passes(self, agent: &AgentId, limit: usize) -> Result<Vec<SleeptimePass>> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {PASS_COLS} FROM sleeptime_passes WHERE agent_id = ?1
                     ORDER BY started_at DESC, pk DESC LIMIT ?2"
                ))
                .db()?;
            let mut passes: Vec<SleeptimePass> = stmt
                .query_map(params![agent.as_str(), sql::sat(limit)], pass_from_row)
                .db()?
                .collect::<rusqlite::Result<_>>()
                .db()?;
            for p in &mut passes {
                p.changes = changes(c, &p.id)?;
                price(c, p)?;
            }
            Ok(passes)
        })
    }
}

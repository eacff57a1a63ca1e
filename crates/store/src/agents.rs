//! Agents: their settings, the cached compiled system prompt, and memory counters.

use crate::Store;
use crate::blocks;
use crate::rooms::AgentRows;
use crate::sql::{self, DbResult, json, json_opt, to_json, ts};
use engram_core::{Agent, AgentId, AgentPatch, Block, BlockId, Error, LoopStyle, NewBlock, Result};
use rusqlite::{Connection, OptionalExtension, Row, params};
use std::collections::HashSet;

pub(crate) const AGENT_COLS: &str = "id, name, description, system, llm, embedding, loop_style, max_steps, \
                          tools, summary, created_at, updated_at, tool_rules";

fn loop_style_str(s: LoopStyle) -> &'static str {
    match s {
        LoopStyle::Classic => "classic",
        LoopStyle::ToolLoop => "tool_loop",
    }
}

fn parse_loop_style(s: &str) -> LoopStyle {
    // Unknown values can only come from a newer Engram; the default loop is the safe reading.
    if s == "classic" {
        LoopStyle::Classic
    } else {
        LoopStyle::ToolLoop
    }
}

pub(crate) fn agent_from_row(r: &Row<'_>) -> rusqlite::Result<Agent> {
    Ok(Agent {
        id: AgentId::from(r.get::<_, String>(0)?),
        name: r.get(1)?,
        description: r.get(2)?,
        system: r.get(3)?,
        llm: json(r, 4)?,
        embedding: json_opt(r, 5)?,
        loop_style: parse_loop_style(&r.get::<_, String>(6)?),
        max_steps: r.get(7)?,
        tools: json(r, 8)?,
        summary: r.get(9)?,
        created_at: ts(r, 10)?,
        updated_at: ts(r, 11)?,
        tool_rules: json(r, 12)?,
    })
}

/// Loads one agent.
pub(crate) fn load(conn: &Connection, id: &AgentId) -> Result<Agent> {
    conn.prepare_cached(&format!("SELECT {AGENT_COLS} FROM agents WHERE id = ?1"))
        .db()?
        .query_row([id.as_str()], agent_from_row)
        .optional()
        .db()?
        .ok_or_else(|| Error::not_found("agent", id.as_str()))
}

/// Inserts one agent row. Errors: `Conflict` when the id exists.
pub(crate) fn insert_row(tx: &Connection, agent: &Agent) -> Result<()> {
    if crate::sql::ensure_agent(tx, &agent.id).is_ok() {
        return Err(Error::Conflict(format!(
            "agent {} already exists",
            agent.id
        )));
    }
    let embedding = agent.embedding.as_ref().map(to_json).transpose()?;
    tx.prepare_cached(&format!(
        "INSERT INTO agents ({AGENT_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
    ))
    .db()?
    .execute(params![
        agent.id.as_str(),
        agent.name,
        agent.description,
        agent.system,
        to_json(&agent.llm)?,
        embedding,
        loop_style_str(agent.loop_style),
        agent.max_steps,
        to_json(&agent.tools)?,
        agent.summary,
        sql::micros(agent.created_at),
        sql::micros(agent.updated_at),
        to_json(&agent.tool_rules)?,
    ])
    .db()?;
    Ok(())
}

pub(crate) fn save(conn: &Connection, a: &Agent, clear_cache: bool) -> Result<()> {
    let embedding = a.embedding.as_ref().map(to_json).transpose()?;
    conn.prepare_cached(
        "UPDATE agents SET name = ?2, description = ?3, system = ?4, llm = ?5, embedding = ?6,
                loop_style = ?7, max_steps = ?8, tools = ?9, updated_at = ?10, tool_rules = ?12,
                system_cache_memory = CASE WHEN ?11 THEN NULL ELSE system_cache_memory END,
                system_cache_prompt = CASE WHEN ?11 THEN NULL ELSE system_cache_prompt END
         WHERE id = ?1",
    )
    .db()?
    .execute(params![
        a.id.as_str(),
        a.name,
        a.description,
        a.system,
        to_json(&a.llm)?,
        embedding,
        loop_style_str(a.loop_style),
        a.max_steps,
        to_json(&a.tools)?,
        sql::micros(a.updated_at),
        clear_cache,
        to_json(&a.tool_rules)?,
    ])
    .db()?;
    Ok(())
}

impl Store {
    fn delete_agent_rows(&self, id: &AgentId) -> Result<()> {
        self.write(|tx| {
            crate::sql::ensure_agent(tx, id)?;
            let block_ids: Vec<String> = {
                let mut stmt = tx
                    .prepare_cached("SELECT block_id FROM agent_blocks WHERE agent_id = ?1")
                    .db()?;
                let rows = stmt.query_map([id.as_str()], |r| r.get(0)).db()?;
                rows.collect::<rusqlite::Result<_>>().db()?
            };
            for table in ["messages", "passages", "steps", "agent_blocks"] {
                tx.execute(
                    &format!("DELETE FROM {table} WHERE agent_id = ?1"),
                    [id.as_str()],
                )
                .db()?;
            }
            // What an imported agent file carried beyond Engram's model goes with the agent.
            tx.execute(
                "DELETE FROM settings WHERE key = ?1",
                [format!("{}{id}", crate::EXTRAS_SETTING_PREFIX)],
            )
            .db()?;
            for b in &block_ids {
                tx.prepare_cached(
                    "DELETE FROM blocks WHERE id = ?1
                       AND NOT EXISTS (SELECT 1 FROM agent_blocks WHERE block_id = ?1)",
                )
                .db()?
                .execute([b])
                .db()?;
            }
            tx.execute("DELETE FROM agents WHERE id = ?1", [id.as_str()])
                .db()?;
            tracing::debug!(agent = %id, "deleted agent");
            Ok(())
        })
    }
}

impl AgentRows<'_> {
    /// Stores `agent` (built by the caller: id, times, settings, optional summary), creates
    /// `blocks` and attaches them, then attaches the existing blocks `attach`, in that order.
    /// New blocks get [`DEFAULT_BLOCK_LIMIT`](engram_core::DEFAULT_BLOCK_LIMIT) characters unless
    /// given a limit (the default is raised to fit the value) and the default description for
    /// `persona`/`human`. One transaction. Returns the agent (times truncated to microseconds)
    /// and its blocks in attach order.
    ///
    /// Errors: `Invalid` for a bad label or a value over an explicit limit; `NotFound("block")`
    /// for an unknown id in `attach`; `Conflict` if the agent id exists or two blocks share a label.
    pub fn create(
        self,
        agent: &Agent,
        blocks: &[NewBlock],
        attach: &[BlockId],
    ) -> Result<(Agent, Vec<Block>)> {
        let mut agent = agent.clone();
        agent.created_at = sql::truncate(agent.created_at);
        agent.updated_at = sql::truncate(agent.updated_at);
        self.store.write(|tx| {
            insert_row(tx, &agent)?;

            let now = sql::now();
            let mut attached: Vec<Block> = Vec::with_capacity(blocks.len() + attach.len());
            let mut labels = HashSet::new();
            let mut claim = |b: &Block| {
                if labels.insert(b.label.clone()) {
                    Ok(())
                } else {
                    Err(blocks::label_conflict(&b.label))
                }
            };
            for nb in blocks {
                let b = blocks::build(nb, now)?;
                claim(&b)?;
                blocks::insert(tx, &b)?;
                attached.push(b);
            }
            for id in attach {
                if attached.iter().any(|b| &b.id == id) {
                    continue;
                }
                let b = blocks::load(tx, id)?;
                claim(&b)?;
                attached.push(b);
            }
            for (pos, b) in attached.iter().enumerate() {
                blocks::link(tx, &agent.id, &b.id, sql::sat(pos))?;
            }
            Ok((agent, attached))
        })
    }

    /// One agent. Errors: `NotFound("agent", id)`.
    pub fn get(self, id: &AgentId) -> Result<Agent> {
        self.store.read(|c| load(c, id))
    }

    /// Every agent, oldest first.
    pub fn list(self) -> Result<Vec<Agent>> {
        self.store.read(|c| {
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {AGENT_COLS} FROM agents ORDER BY created_at, id"
                ))
                .db()?;
            let rows = stmt.query_map([], agent_from_row).db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// Applies `patch` and bumps `updated_at`; returns the agent as stored. A changed `system`
    /// drops the cached compiled prompt (the cache is keyed only by the memory section).
    ///
    /// Errors: `NotFound("agent", id)`.
    pub fn update(self, id: &AgentId, patch: &AgentPatch) -> Result<Agent> {
        self.store.write(|tx| {
            let mut a = load(tx, id)?;
            let system_changed = patch.apply_to(&mut a);
            a.updated_at = sql::now().max(a.updated_at);
            save(tx, &a, system_changed)?;
            Ok(a)
        })
    }

    /// Deletes the agent with its messages, passages, steps and block links in one transaction;
    /// blocks that were attached to it and are attached to no other agent are deleted too
    /// (shared blocks survive). Errors: `NotFound("agent", id)`.
    pub fn delete(self, id: &AgentId) -> Result<()> {
        self.store.delete_agent_rows(id)?;
        // Its saved vector index goes with it (after the commit: the rows are the truth).
        self.store
            .vectors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .forget(id.as_str());
        Ok(())
    }

    /// The cached compiled system prompt: `(memory_section, compiled_prompt)`, or `None` if
    /// nothing is cached (new agent, or the instructions changed). Errors: `NotFound("agent")`.
    pub fn system_cache(self, id: &AgentId) -> Result<Option<(String, String)>> {
        self.store.read(|c| {
            let row: Option<(Option<String>, Option<String>)> = c
                .prepare_cached(
                    "SELECT system_cache_memory, system_cache_prompt FROM agents WHERE id = ?1",
                )
                .db()?
                .query_row([id.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .db()?;
            match row {
                None => Err(Error::not_found("agent", id.as_str())),
                Some((Some(memory), Some(prompt))) => Ok(Some((memory, prompt))),
                Some(_) => Ok(None),
            }
        })
    }

    /// Caches the compiled system prompt and the memory section it was built from. Does not
    /// touch `updated_at` (a cache is not a setting). Errors: `NotFound("agent")`.
    pub fn set_system_cache(self, id: &AgentId, memory_section: &str, prompt: &str) -> Result<()> {
        self.store.write(|tx| {
            let n = tx
                .prepare_cached(
                    "UPDATE agents SET system_cache_memory = ?2, system_cache_prompt = ?3 WHERE id = ?1",
                )
                .db()?
                .execute(params![id.as_str(), memory_section, prompt])
                .db()?;
            if n == 0 { Err(Error::not_found("agent", id.as_str())) } else { Ok(()) }
        })
    }

    /// `(messages, passages)`: how many messages the agent's recall memory holds (all of them,
    /// in context or not) and how many passages its archival memory holds. One indexed lookup
    /// of trigger-maintained counters. Errors: `NotFound("agent")`.
    pub fn memory_counts(self, id: &AgentId) -> Result<(u64, u64)> {
        self.store.read(|c| {
            c.prepare_cached("SELECT messages, passages FROM agent_stats WHERE agent_id = ?1")
                .db()?
                .query_row([id.as_str()], |r| Ok((sql::uint(r, 0)?, sql::uint(r, 1)?)))
                .optional()
                .db()?
                .ok_or_else(|| Error::not_found("agent", id.as_str()))
        })
    }
}

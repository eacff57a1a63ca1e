//! Steps: one LLM call and everything it changed, committed as one transaction.

use crate::sql::{self, DbResult, ts, uint};
use crate::{Store, agents, blocks, messages, passages};
use engram_core::{
    AgentId, Block, BlockId, Editor, Message, NewMessage, NewPassage, Passage, Result, RunId, Step,
    StepId,
};
use rusqlite::{Connection, Row, params};
use serde::{Deserialize, Serialize};

/// A new value for a block, written by a step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockWrite {
    /// The block to change.
    pub block_id: BlockId,
    /// Its whole new value (checked against the block's limit, in characters).
    pub new_value: String,
    /// Who made the change (recorded in the block's history).
    pub editor: Editor,
}

/// Everything one step wrote. The agent is `step.agent_id`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepCommit {
    /// The step's record (usage, timings).
    pub step: Step,
    /// Messages to append (the assistant message, then one tool result per call, …). Those
    /// without a run or step id get the step's.
    pub messages: Vec<NewMessage>,
    /// Block edits made by the step's tools, applied in order.
    pub block_writes: Vec<BlockWrite>,
    /// Archival passages inserted by the step's tools.
    pub passages: Vec<NewPassage>,
}

/// What [`Store::commit_step`] stored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CommittedStep {
    /// The appended messages, with ids and `seq`.
    pub messages: Vec<Message>,
    /// Each written block after its write, one per [`BlockWrite`], in order.
    pub blocks: Vec<Block>,
    /// The inserted passages.
    pub passages: Vec<Passage>,
}

const STEP_COLS: &str = "id, agent_id, run_id, step_index, model, prompt_tokens, \
                         completion_tokens, finish_reason, started_at, llm_ms, step_ms";

fn step_from_row(r: &Row<'_>) -> rusqlite::Result<Step> {
    Ok(Step {
        id: StepId::from(r.get::<_, String>(0)?),
        agent_id: AgentId::from(r.get::<_, String>(1)?),
        run_id: RunId::from(r.get::<_, String>(2)?),
        index: r.get(3)?,
        model: r.get(4)?,
        prompt_tokens: uint(r, 5)?,
        completion_tokens: uint(r, 6)?,
        finish_reason: r.get(7)?,
        started_at: ts(r, 8)?,
        llm_ms: uint(r, 9)?,
        step_ms: uint(r, 10)?,
    })
}

fn insert_step(conn: &Connection, s: &Step) -> Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO steps ({STEP_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
    ))
    .db()?
    .execute(params![
        s.id.as_str(),
        s.agent_id.as_str(),
        s.run_id.as_str(),
        s.index,
        s.model,
        sql::int(s.prompt_tokens, "prompt_tokens")?,
        sql::int(s.completion_tokens, "completion_tokens")?,
        s.finish_reason,
        sql::micros(s.started_at),
        sql::int(s.llm_ms, "llm_ms")?,
        sql::int(s.step_ms, "step_ms")?,
    ])
    .db()?;
    Ok(())
}

impl Store {
    /// Commits a step all or nothing, in one transaction: the step row, then the block writes
    /// in order (each checked against the block's limit as stored *now*, since a concurrent
    /// edit may have used up room; a history row for each write that changes the value), the
    /// passages, and the messages (appended in context).
    ///
    /// Errors (nothing of the step is stored): `NotFound("agent" | "block")`; `Invalid` with the
    /// limit message if a write no longer fits, or for an empty passage; `Conflict` if the step
    /// id or a message id already exists.
    pub fn commit_step(&self, c: &StepCommit) -> Result<CommittedStep> {
        let agent = &c.step.agent_id;
        let msgs: Vec<NewMessage> = c
            .messages
            .iter()
            .map(|m| {
                let mut m = m.clone();
                m.run_id.get_or_insert_with(|| c.step.run_id.clone());
                m.step_id.get_or_insert_with(|| c.step.id.clone());
                m
            })
            .collect();
        self.write(|tx| {
            agents::ensure_exists(tx, agent)?;
            insert_step(tx, &c.step)?;
            let now = sql::now();
            let blocks = c
                .block_writes
                .iter()
                .map(|w| blocks::write_value(tx, &w.block_id, &w.new_value, &w.editor, now))
                .collect::<Result<Vec<_>>>()?;
            let passages = passages::insert(tx, agent, &c.passages, now)?;
            let messages = messages::append(tx, agent, &msgs, now)?;
            Ok(CommittedStep {
                messages,
                blocks,
                passages,
            })
        })
    }

    /// The agent's steps, oldest first; only those of `run` when given.
    /// Errors: `NotFound("agent")`.
    pub fn list_steps(&self, agent: &AgentId, run: Option<&RunId>) -> Result<Vec<Step>> {
        self.read(|c| {
            agents::ensure_exists(c, agent)?;
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {STEP_COLS} FROM steps WHERE agent_id = ?1 AND (?2 IS NULL OR run_id = ?2)
                     ORDER BY started_at, step_index, id"
                ))
                .db()?;
            let rows = stmt
                .query_map(params![agent.as_str(), run.map(RunId::as_str)], step_from_row)
                .db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }
}

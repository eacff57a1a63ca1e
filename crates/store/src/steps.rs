//! Steps: one LLM call and everything it changed, committed as one transaction.

use crate::approvals::{self, ApprovalWrite};
use crate::rooms::RunRows;
use crate::sql::{self, DbResult, ts, uint};
use crate::step_edits::{self, BlockChange, BlockWrite};
use crate::{messages, passages};
use engram_core::{AgentId, Message, NewMessage, NewPassage, Passage, Result, RunId, Step, StepId};
use rusqlite::{Connection, Row, params};
use serde::{Deserialize, Serialize};

/// Everything one step wrote. The agent is `step.agent_id`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepCommit {
    /// The step's record (usage, timings).
    pub step: Step,
    /// Messages to append (the assistant message, then one tool result per call, …). Those
    /// without a run or step id get the step's.
    pub messages: Vec<NewMessage>,
    /// Block edits made by the step's tools, applied in order to the values stored at commit.
    pub block_writes: Vec<BlockWrite>,
    /// Archival passages inserted by the step's tools.
    pub passages: Vec<NewPassage>,
    /// Whether the step pauses on a call a person must approve, or answers one (stored in the
    /// same transaction as the messages, so a pending call is never lost or left unmarked).
    #[serde(default)]
    pub approval: ApprovalWrite,
}

/// What [`RunRows::commit_step`] stored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CommittedStep {
    /// The appended messages, with ids and `seq`.
    pub messages: Vec<Message>,
    /// Each change a [`BlockWrite`] made, in order (writes that changed nothing or were
    /// refused are not listed).
    pub blocks: Vec<BlockChange>,
    /// Tool calls whose block writes no longer applied at commit: their stored results were
    /// turned into `Failed` ones showing the block's current value.
    pub refused: Vec<String>,
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

pub(crate) fn insert_step(conn: &Connection, s: &Step) -> Result<()> {
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

impl RunRows<'_> {
    /// Commits a step all or nothing, in one transaction: the step row, then the block writes
    /// (module `step_edits`: each operation is applied to the block's value as
    /// stored *now*, bumping its version, with a history row naming the step; an operation that
    /// no longer applies turns its tool call's result into a `Failed` one that shows the current
    /// value), the passages, and the messages (appended in context).
    ///
    /// Errors (nothing of the step is stored): `NotFound("agent")`; `NotFound("block")` or
    /// `Invalid` (the refusal: limit message, text not found, stale version…) for a write that
    /// has no tool result in the step to answer with; `Invalid` for an empty passage;
    /// `Conflict` if the step id or a message id already exists, or the step asks for an
    /// approval while another is pending; `NotFound("pending approval")` if it resolves one
    /// that is no longer pending.
    pub fn commit_step(self, c: &StepCommit) -> Result<CommittedStep> {
        let agent = &c.step.agent_id;
        let mut msgs: Vec<NewMessage> = c
            .messages
            .iter()
            .map(|m| {
                let mut m = m.clone();
                m.run_id.get_or_insert_with(|| c.step.run_id.clone());
                m.step_id.get_or_insert_with(|| c.step.id.clone());
                m
            })
            .collect();
        self.store.write(|tx| {
            sql::ensure_agent(tx, agent)?;
            insert_step(tx, &c.step)?;
            let now = sql::now();
            let edits = step_edits::apply(tx, &c.step.id, &c.block_writes, &mut msgs, now)?;
            let passages = passages::insert(tx, agent, &c.passages, Some(&c.step.id), now)?;
            let messages = messages::append(tx, agent, &msgs, now)?;
            approvals::apply(tx, agent, &c.approval)?;
            Ok(CommittedStep {
                messages,
                blocks: edits.changes,
                passages,
                refused: edits.refused,
            })
        })
    }

    /// The agent's steps, oldest first; only those of `run` when given.
    /// Errors: `NotFound("agent")`.
    pub fn list_steps(self, agent: &AgentId, run: Option<&RunId>) -> Result<Vec<Step>> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
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

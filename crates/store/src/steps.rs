//! Steps: one LLM call and everything it changed, committed as one transaction.

use crate::approvals;
use crate::rooms::RunRows;
use crate::sql::{self, DbResult, ts, uint};
use crate::step_edits;
use crate::{messages, passages};
use engram_core::{AgentId, Error, Result, RunId, Step, StepId};
use engram_store_api::{CommittedStep, Lease, StepCommit};
use rusqlite::{Connection, Row, params};

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
        self.commit_step_leased(None, c)
    }

    /// [`commit_step`](Self::commit_step) fenced by `lease` when given: refused with
    /// `LeaseLost` (nothing stored) unless it is still the agent's current, unexpired lease,
    /// which no one can take over until the step is committed; `Invalid` for another agent's
    /// lease.
    pub fn commit_step_leased(
        self,
        lease: Option<&Lease>,
        c: &StepCommit,
    ) -> Result<CommittedStep> {
        let agent = &c.step.agent_id;
        if lease.is_some_and(|l| &l.agent_id != agent) {
            return Err(Error::invalid("a step commits under its own agent's lease"));
        }
        let held = lease.map(|l| self.store.hold_lease(l)).transpose()?;
        let mut msgs = c.stamped_messages();
        let out = self.store.write(|tx| {
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
        });
        drop(held);
        out
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

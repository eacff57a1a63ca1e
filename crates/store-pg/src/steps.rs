//! Steps on PostgreSQL: a step's commit in one transaction, fenced by the agent's lease.
//!
//! Locks, in this order: the lease row (`FOR UPDATE`, after checking token and expiry: nobody
//! takes the lease over until the commit ends), the agent's row (`FOR NO KEY UPDATE`, as an
//! append takes it, so `seq` follows every committed message), then each block a write touches
//! (`FOR UPDATE`, as any edit takes it). A tool call's writes run inside a savepoint, rolled
//! back when one of them no longer applies (the rules are the interface's:
//! `engram_store_api::StepStore`).

use crate::PgStore;
use crate::blocks::{self, Lock};
use crate::leases::{HOLD_SQL, hold};
use crate::messages::{APPEND_SQL, ToAppend};
use crate::passages;
use crate::rows::{self, Cached, EDIT_COLS};
use crate::tx::{TxError, TxResult, one_trip, transaction};
use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_core::block_op::{applied_message, refused_message};
use engram_core::{
    AgentId, Applied, BlockId, Editor, Error, MessageId, NewMessage, PendingApproval, Result,
    RunId, Step, StepId, Timestamp, ToolCall, ToolStatus,
};
use engram_store_api::{
    ApprovalWrite, BlockChange, BlockWrite, CommittedStep, Lease, ModelUsage, StepCommit,
    StepStore, ToolEdit, call_groups, gone_message, rebase, restate, result_index,
};
use std::collections::HashMap;
use std::sync::LazyLock;
use tokio_postgres::Row;

const STEP_COLS: &str = "id, agent_id, run_id, step_index, model, prompt_tokens, \
                         completion_tokens, finish_reason, started_at, llm_ms, step_ms";

fn step_from_row(r: &Row) -> TxResult<Step> {
    Ok(Step {
        id: StepId::from(r.try_get::<_, String>(0)?),
        agent_id: AgentId::from(r.try_get::<_, String>(1)?),
        run_id: RunId::from(r.try_get::<_, String>(2)?),
        index: u32::try_from(rows::uint(r, 3)?).unwrap_or(u32::MAX),
        model: r.try_get(4)?,
        prompt_tokens: rows::uint(r, 5)?,
        completion_tokens: rows::uint(r, 6)?,
        finish_reason: r.try_get(7)?,
        started_at: r.try_get(8)?,
        llm_ms: rows::uint(r, 9)?,
        step_ms: rows::uint(r, 10)?,
    })
}

/// The statement [`StepRow::send`] runs.
static STEP_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO steps ({STEP_COLS})
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
    )
});

/// A step ready to insert: its counts as `bigint`s, converted before any statement is sent
/// (see `tx::pipelined`).
pub(crate) struct StepRow<'a> {
    step: &'a Step,
    counts: [i64; 4],
}

impl<'a> StepRow<'a> {
    /// Errors: `Invalid` for a count past `bigint`.
    pub(crate) fn new(step: &'a Step) -> TxResult<Self> {
        Ok(Self {
            step,
            counts: [
                rows::int(step.prompt_tokens, "prompt_tokens")?,
                rows::int(step.completion_tokens, "completion_tokens")?,
                rows::int(step.llm_ms, "llm_ms")?,
                rows::int(step.step_ms, "step_ms")?,
            ],
        })
    }

    /// Inserts the step (one statement). Errors: `Conflict` when its id is taken (the
    /// transaction is then aborted).
    pub(crate) async fn send(&self, c: &impl GenericClient) -> TxResult<()> {
        let (s, [prompt, completion, llm_ms, step_ms]) = (self.step, &self.counts);
        let inserted = c
            .exec(
                &STEP_SQL,
                &[
                    &s.id.as_str(),
                    &s.agent_id.as_str(),
                    &s.run_id.as_str(),
                    &i64::from(s.index),
                    &s.model,
                    prompt,
                    completion,
                    &s.finish_reason,
                    &rows::truncate(s.started_at),
                    llm_ms,
                    step_ms,
                ],
            )
            .await;
        match inserted {
            Ok(_) => Ok(()),
            Err(e) if e.as_db_error().and_then(|d| d.constraint()) == Some("steps_pkey") => {
                Err(Error::Conflict(format!("step {} already exists", s.id)).into())
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// Inserts a step row. Errors as [`StepRow::send`]; `Invalid` for a count past `bigint`.
pub(crate) async fn insert_step(c: &impl GenericClient, s: &Step) -> TxResult<()> {
    StepRow::new(s)?.send(c).await
}

/// The fence of a commit under `lease` (see `leases::hold`); nothing without one.
async fn fence(c: &impl GenericClient, lease: Option<&Lease>) -> TxResult<()> {
    match lease {
        Some(lease) => hold(c, lease).await,
        None => Ok(()),
    }
}

/// Why a tool call's writes were not applied.
enum Refusal {
    /// The operation does not apply to the current value (`why` is for the model).
    Op { why: String, block: BlockId },
    /// The block is gone.
    Gone(BlockId),
    /// The database or the engine failed: the whole step fails.
    Fatal(TxError),
}

impl From<TxError> for Refusal {
    fn from(e: TxError) -> Self {
        Refusal::Fatal(e)
    }
}

/// Applies one tool call's writes to the blocks as stored now; `(change, changed)` each.
async fn apply_group(
    c: &impl GenericClient,
    step: &StepId,
    group: &[BlockWrite],
    first_seen: &mut HashMap<BlockId, u64>,
    now: Timestamp,
) -> std::result::Result<Vec<(BlockChange, bool)>, Refusal> {
    let mut changes = Vec::new();
    for w in group {
        let current = match blocks::load(c, &w.block_id, Lock::Update).await {
            Ok(b) => b,
            Err(TxError::Engine(Error::NotFound { .. })) => {
                return Err(Refusal::Gone(w.block_id.clone()));
            }
            Err(e) => return Err(e.into()),
        };
        let base = *first_seen
            .entry(w.block_id.clone())
            .or_insert(current.version);
        let op = rebase(&w.op, base, current.version);
        let by_agent = matches!(w.editor, Editor::Agent { .. });
        let (block, changed) = match op.apply(&current, by_agent) {
            Ok(Applied::Changed(value)) => {
                let author_step = by_agent.then_some(step);
                let b =
                    blocks::commit_value(c, &current, value, &w.editor, author_step, now).await?;
                (b, true)
            }
            Ok(Applied::Unchanged) => (current, false),
            Err(e) => {
                return Err(Refusal::Op {
                    why: e.to_string(),
                    block: w.block_id.clone(),
                });
            }
        };
        changes.push((
            BlockChange {
                block,
                tool_call_id: w.tool_call_id().map(str::to_owned),
            },
            changed,
        ));
    }
    Ok(changes)
}

/// Applies a step's block writes in order, a savepoint per tool call, rewriting the results in
/// `msgs` of calls that were refused or that restate the block. Returns the changes and the
/// refused calls. Errors: a refused write with no tool result to answer with fails the step.
async fn apply_writes(
    c: &impl GenericClient,
    step: &StepId,
    writes: &[BlockWrite],
    msgs: &mut [NewMessage],
    now: Timestamp,
) -> TxResult<(Vec<BlockChange>, Vec<String>)> {
    let mut changes = Vec::new();
    let mut refused = Vec::new();
    let mut first_seen = HashMap::new();
    for range in call_groups(writes) {
        let group = &writes[range];
        let call = group[0].tool_call_id();
        let answer = call.and_then(|id| result_index(msgs, id));
        // A call's writes fail together; a lone write that fails has written nothing, so only
        // a call with several writes needs a savepoint to undo.
        let savepoint = group.len() > 1;
        if savepoint {
            c.batch_execute("SAVEPOINT tool_call").await?;
        }
        match apply_group(c, step, group, &mut first_seen, now).await {
            Ok(results) => {
                if savepoint {
                    c.batch_execute("RELEASE SAVEPOINT tool_call").await?;
                }
                if let (Some(at), Some((last, _))) = (answer, results.last())
                    && group.iter().any(|w| w.restate_result)
                {
                    restate(&mut msgs[at], ToolStatus::Ok, applied_message(&last.block));
                }
                changes.extend(results.into_iter().filter(|(_, ch)| *ch).map(|(c, _)| c));
            }
            Err(Refusal::Fatal(e)) => return Err(e),
            Err(refusal) => {
                if savepoint {
                    c.batch_execute("ROLLBACK TO SAVEPOINT tool_call; RELEASE SAVEPOINT tool_call")
                        .await?;
                }
                let (Some(at), Some(call)) = (answer, call) else {
                    return Err(match refusal {
                        Refusal::Op { why, .. } => Error::Invalid(why).into(),
                        Refusal::Gone(id) => Error::not_found("block", id.as_str()).into(),
                        Refusal::Fatal(e) => e,
                    });
                };
                let text = match refusal {
                    Refusal::Op { why, block } => {
                        refused_message(&why, &blocks::load(c, &block, Lock::None).await?)
                    }
                    Refusal::Gone(id) => gone_message(&id),
                    Refusal::Fatal(e) => return Err(e),
                };
                restate(&mut msgs[at], ToolStatus::Failed, text);
                refused.push(call.to_owned());
            }
        }
    }
    Ok((changes, refused))
}

/// Stores `p` as the agent's pending approval. Errors: `Conflict` when one is pending.
async fn insert_approval(c: &impl GenericClient, p: &PendingApproval) -> TxResult<()> {
    let inserted = c
        .exec(
            "INSERT INTO pending_approvals
                 (agent_id, run_id, step_id, message_id, tool_call, requested_at)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (agent_id) DO NOTHING",
            &[
                &p.agent_id.as_str(),
                &p.run_id.as_str(),
                &p.step_id.as_str(),
                &p.message_id.as_str(),
                &rows::to_json(&p.tool_call)?,
                &rows::truncate(p.requested_at),
            ],
        )
        .await?;
    if inserted == 0 {
        return Err(Error::Conflict(format!(
            "the agent already has a tool call waiting for approval; decide it first (asked: '{}')",
            p.tool_call.name
        ))
        .into());
    }
    Ok(())
}

/// Applies a step's [`ApprovalWrite`] inside its transaction. `Resolve` fails with
/// `NotFound("pending approval")` when nothing is pending, so a call is never answered twice.
async fn apply_approval(
    c: &impl GenericClient,
    agent: &AgentId,
    w: &ApprovalWrite,
) -> TxResult<()> {
    match w {
        ApprovalWrite::Keep => Ok(()),
        ApprovalWrite::Request(p) => insert_approval(c, p).await,
        ApprovalWrite::Resolve(next) => {
            let n = c
                .exec(
                    "DELETE FROM pending_approvals WHERE agent_id = $1",
                    &[&agent.as_str()],
                )
                .await?;
            if n == 0 {
                return Err(Error::not_found("pending approval", agent.as_str()).into());
            }
            match next {
                Some(p) => insert_approval(c, p).await,
                None => Ok(()),
            }
        }
    }
}

#[async_trait]
impl StepStore for PgStore {
    async fn commit_step(&self, lease: Option<&Lease>, c: &StepCommit) -> Result<CommittedStep> {
        passages::check_new(&c.passages)?;
        let agent = &c.step.agent_id;
        if lease.is_some_and(|l| &l.agent_id != agent) {
            return Err(Error::invalid("a step commits under its own agent's lease"));
        }
        let step = StepRow::new(&c.step)?;
        let lock = blocks::ensure_sql(Lock::NoKeyUpdate);
        let plain = c.block_writes.is_empty()
            && c.passages.is_empty()
            && matches!(c.approval, ApprovalWrite::Keep);
        if plain {
            let ready = ToAppend::new(agent, &c.stamped_messages(), rows::now())?;
            // A step that only adds messages (most chat steps): the whole transaction in one
            // round trip, in this order: the fence, the agent's lock, the step, the messages.
            // A lost lease fails its statement and a missing agent fails the inserts by their
            // foreign keys, so the `COMMIT` sent with them rolls back (see `tx::pipelined`).
            return one_trip!(self, prepare [HOLD_SQL, &lock, &STEP_SQL, &APPEND_SQL], |tx| async {
                let (held, locked, inserted, messages) = tokio::join!(
                    biased;
                    fence(&tx, lease),
                    blocks::ensure_agent(&tx, agent, Lock::NoKeyUpdate),
                    step.send(&tx),
                    ready.send(&tx),
                );
                held?;
                locked?;
                inserted?;
                Ok(CommittedStep {
                    messages: messages?,
                    ..CommittedStep::default()
                })
            });
        }
        transaction!(self, |tx| {
            // The checks and the step in one round trip, in this order: the statements are
            // prepared first, so each goes out on its first poll, and the fence and the
            // agent's lock come before the rest. A failed check is the answer (what ran after
            // it is rolled back with the transaction).
            tokio::try_join!(tx.prepare_cached(HOLD_SQL), tx.prepare_cached(&lock))?;
            tx.prepare_cached(&STEP_SQL).await?;
            let (held, locked, inserted) = tokio::join!(
                biased;
                fence(&tx, lease),
                blocks::ensure_agent(&tx, agent, Lock::NoKeyUpdate),
                step.send(&tx),
            );
            held?;
            locked?;
            inserted?;
            let now = rows::now();
            // A fresh copy each attempt: a conflict runs the whole body again.
            let mut msgs = c.stamped_messages();
            let (changes, refused) =
                apply_writes(&tx, &c.step.id, &c.block_writes, &mut msgs, now).await?;
            let passages = passages::insert(&tx, agent, &c.passages, Some(&c.step.id), now).await?;
            let messages = ToAppend::new(agent, &msgs, now)?.send(&tx).await?;
            apply_approval(&tx, agent, &c.approval).await?;
            CommittedStep {
                messages,
                blocks: changes,
                refused,
                passages,
            }
        })
    }

    async fn tool_edits(&self, agent: &AgentId, runs: &[RunId]) -> Result<Vec<ToolEdit>> {
        let c = self.client().await?;
        blocks::ensure_agent(&c, agent, Lock::None).await?;
        let runs: Vec<&str> = runs.iter().map(RunId::as_str).collect();
        let cols = EDIT_COLS
            .split(',')
            .map(|col| format!("h.{}", col.trim()))
            .collect::<Vec<_>>()
            .join(", ");
        let found = c
            .rows(
                &format!(
                    "SELECT {cols}, b.label FROM block_history h
                     JOIN steps s ON s.id = h.step_id
                     JOIN blocks b ON b.id = h.block_id
                     WHERE s.agent_id = $1 AND s.run_id = ANY($2)
                     ORDER BY h.pk"
                ),
                &[&agent.as_str(), &runs],
            )
            .await
            .map_err(TxError::from)?;
        Ok(rows::all(&found, |r| {
            Ok(ToolEdit {
                edit: rows::edit(r)?,
                label: r.try_get(9)?,
            })
        })?)
    }

    async fn usage_by_model(
        &self,
        agent: &AgentId,
        run: Option<&RunId>,
    ) -> Result<Vec<ModelUsage>> {
        let c = self.client().await?;
        blocks::ensure_agent(&c, agent, Lock::None).await?;
        // `::bigint`: PostgreSQL sums bigints as numeric.
        let found = c
            .rows(
                "SELECT model, sum(prompt_tokens)::bigint, sum(completion_tokens)::bigint,
                        count(*)
                 FROM steps WHERE agent_id = $1 AND ($2::text IS NULL OR run_id = $2)
                 GROUP BY model ORDER BY model COLLATE \"C\"",
                &[&agent.as_str(), &run.map(RunId::as_str)],
            )
            .await
            .map_err(TxError::from)?;
        let count = |r: &Row, i: usize| -> TxResult<u64> {
            Ok(u64::try_from(r.try_get::<_, i64>(i)?).unwrap_or(0))
        };
        Ok(rows::all(&found, |r| {
            Ok(ModelUsage {
                model: r.try_get(0)?,
                prompt_tokens: count(r, 1)?,
                completion_tokens: count(r, 2)?,
                steps: count(r, 3)?,
            })
        })?)
    }

    async fn list_steps(&self, agent: &AgentId, run: Option<&RunId>) -> Result<Vec<Step>> {
        let c = self.client().await?;
        blocks::ensure_agent(&c, agent, Lock::None).await?;
        let found = c
            .rows(
                &format!(
                    "SELECT {STEP_COLS} FROM steps
                     WHERE agent_id = $1 AND ($2::text IS NULL OR run_id = $2)
                     ORDER BY started_at, step_index, id"
                ),
                &[&agent.as_str(), &run.map(RunId::as_str)],
            )
            .await
            .map_err(TxError::from)?;
        Ok(rows::all(&found, step_from_row)?)
    }

    async fn pending_approval(&self, agent: &AgentId) -> Result<Option<PendingApproval>> {
        let c = self.client().await?;
        // Asked before every message: one statement, a row for the agent (none when it is
        // not there) with the waiting call's columns, NULL when no call waits.
        let row = c
            .one_opt(
                "SELECT p.run_id, p.step_id, p.message_id, p.tool_call, p.requested_at
                 FROM agents a LEFT JOIN pending_approvals p ON p.agent_id = a.id
                 WHERE a.id = $1",
                &[&agent.as_str()],
            )
            .await
            .map_err(TxError::from)?
            .ok_or_else(|| Error::not_found("agent", agent.as_str()))?;
        let Some(run) = row.try_get::<_, Option<String>>(0).map_err(TxError::from)? else {
            return Ok(None);
        };
        let r = row;
        Ok(Some(PendingApproval {
            agent_id: agent.clone(),
            run_id: RunId::from(run),
            step_id: StepId::from(r.try_get::<_, String>(1).map_err(TxError::from)?),
            message_id: MessageId::from(r.try_get::<_, String>(2).map_err(TxError::from)?),
            tool_call: rows::from_json::<ToolCall>(&r, 3, "tool call")?,
            requested_at: r.try_get(4).map_err(TxError::from)?,
            // A server has no MCP tools of its own yet: every paused call is a built-in or
            // Python tool's.
            server: None,
        }))
    }

    async fn drop_pending_approval(&self, agent: &AgentId) -> Result<bool> {
        transaction!(self, |tx| {
            blocks::ensure_agent(&tx, agent, Lock::None).await?;
            tx.exec(
                "DELETE FROM pending_approvals WHERE agent_id = $1",
                &[&agent.as_str()],
            )
            .await?
                > 0
        })
    }

    async fn repair_tool_calls(&self, agent: &AgentId, now: Timestamp) -> Result<usize> {
        if !crate::repair::needed(&self.client().await?, agent).await? {
            return Ok(0);
        }
        transaction!(self, |tx| { crate::repair::repair(&tx, agent, now).await? })
    }

    async fn needs_repair(&self, agent: &AgentId) -> Result<bool> {
        Ok(crate::repair::needed(&self.client().await?, agent).await?)
    }
}

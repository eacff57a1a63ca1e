//! Going on after a person decided a tool call that waited for approval.
//!
//! The paused step stored the model's assistant message with the call unanswered and a
//! pending-approval row naming it (see `answer` and [`engram_store::ApprovalWrite`]). Deciding
//! answers that call (approved: the tool runs; denied: a `Failed` result with the reason), then
//! the calls after it in the same message in order, and commits those answers as a step of
//! their own (no model call, no tokens) in one transaction that also clears the row. Then the
//! run goes on as any run does. Everything needed is stored, so this works after a restart.

use crate::announce;
use crate::answer::{self, Pass};
use crate::context;
use crate::outcome::RunOutcome;
use crate::rules::Rules;
use crate::run::{self, RunContext};
use crate::{EventSink, Runtime};
use engram_core::{
    AgentId, ApprovalDecision, Error, LoopStyle, PendingApproval, Result, Role, RunEvent, Step,
    StepId, ToolReturn, ToolStatus, Usage,
};
use engram_store::{ApprovalWrite, StepCommit};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

impl Runtime {
    /// The tool call the agent's run waits on, if any. Errors: `NotFound("agent")`.
    pub async fn pending_approval(&self, agent_id: &AgentId) -> Result<Option<PendingApproval>> {
        self.store().pending_approval(agent_id).await
    }

    /// Answers the agent's pending call with a person's `decision` and goes on with the run:
    /// approved, the tool runs; denied, the model reads a `Failed` result carrying the reason.
    /// The calls after it in the same assistant message are then answered in order (a later
    /// call that needs approval pauses the run again, stop reason `requires_approval`), and the
    /// loop continues as after any step. Events as for [`run`](Self::run), starting with
    /// `RunStarted` of the paused run's id.
    ///
    /// Errors (nothing written): `NotFound("pending approval")` when no call waits (e.g.
    /// another window decided it first); `invalid_input` when `decision.tool_call_id` names
    /// another call; `conflict` when the call's message left the context (the approval is
    /// then dropped); configuration errors as for `run`.
    pub async fn resolve_approval(
        &self,
        agent_id: &AgentId,
        decision: ApprovalDecision,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome> {
        let turn = self.turn(agent_id).await?;
        self.resolve_approval_in(&turn, decision, events, cancel)
            .await
    }

    /// [`resolve_approval`](Self::resolve_approval) in a turn the caller already holds (see
    /// [`turn`](Self::turn)). Errors as for `resolve_approval`.
    pub async fn resolve_approval_in(
        &self,
        turn: &crate::Turn,
        decision: ApprovalDecision,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome> {
        let agent_id = turn.agent();
        let pending = self
            .store()
            .pending_approval(agent_id)
            .await?
            .ok_or_else(|| Error::not_found("pending approval", agent_id.as_str()))?;
        if let Some(id) = &decision.tool_call_id
            && *id != pending.tool_call.id
        {
            return Err(Error::invalid(format!(
                "tool call {id} is not the one waiting for approval ({} {})",
                pending.tool_call.name, pending.tool_call.id
            )));
        }
        // The message that made the call may be gone (deleted or rolled back by an older
        // Engram): then the call is no longer in the conversation either.
        let assistant = match self.store().get_message(&pending.message_id).await {
            Ok(m) => Some(m),
            Err(Error::NotFound { .. }) => None,
            Err(e) => return Err(e),
        };
        let Some((assistant, pos)) = assistant.and_then(|a| {
            let pos = a
                .tool_calls
                .iter()
                .position(|c| c.id == pending.tool_call.id)
                .filter(|_| a.in_context)?;
            Some((a, pos))
        }) else {
            self.store().drop_pending_approval(agent_id).await?;
            return Err(Error::Conflict(format!(
                "the call to '{}' is no longer in the conversation; nothing was run",
                pending.tool_call.name
            )));
        };
        let setup = self.setup(agent_id).await?;
        let hold = self.take_lease(agent_id, &pending.run_id).await?;
        let started = Instant::now();
        let started_at = chrono::Utc::now();
        let run_id = pending.run_id.clone();
        let _ = events.send(RunEvent::RunStarted {
            run_id: run_id.clone(),
            agent_id: agent_id.clone(),
        });
        let ctx = context::load(
            self.store(),
            self.folders.as_deref(),
            agent_id,
            started_at,
            true,
        )
        .await?;
        // The run's rule history (counts, last tool) is rebuilt from what already ran in it.
        let mut rules = Rules::new(&setup.agent.tool_rules);
        for m in ctx.messages.iter().filter(|m| {
            m.role == Role::Tool
                && m.run_id.as_ref() == Some(&run_id)
                && ToolReturn::parse(&m.content).is_some_and(|r| r.status == ToolStatus::Ok)
        }) {
            if let Some(name) = &m.tool_name {
                rules.record(name);
            }
        }
        let index = self
            .store()
            .list_steps(agent_id, Some(&run_id))
            .await?
            .len() as u32
            + 1;
        let step_id = StepId::new();
        let classic = setup.agent.loop_style == LoopStyle::Classic;
        let reranker = self.reranker();
        let mut tool_ctx = self.tool_context(
            &ctx,
            setup.embedder.as_ref(),
            reranker.as_deref(),
            started_at,
        );
        let mut pass = Pass {
            rules: &mut rules,
            events,
            cancel,
            run_id: &run_id,
            // The answers belong to the step whose message made the calls.
            step_id: &pending.step_id,
            classic,
        };
        let calls = &assistant.tool_calls[pos..];
        let mut answers =
            answer::answer_calls(&mut tool_ctx, calls, Some(decision), &mut pass).await;
        let mut messages = std::mem::take(&mut answers.messages);
        let next = answer::next_stop(
            &answers,
            true,
            cancel.is_cancelled(),
            &pass,
            started_at,
            &mut messages,
        );
        let again = answers.waiting.clone().map(|call| PendingApproval {
            tool_call: call,
            requested_at: started_at,
            ..pending.clone()
        });
        let commit = StepCommit {
            step: Step {
                id: step_id,
                agent_id: agent_id.clone(),
                run_id: run_id.clone(),
                index,
                model: setup.agent.llm.model.clone(),
                prompt_tokens: 0,
                completion_tokens: 0,
                finish_reason: Some("approval".into()),
                started_at,
                llm_ms: 0,
                step_ms: started.elapsed().as_millis() as u64,
            },
            messages,
            block_writes: tool_ctx.writes,
            passages: tool_ctx.passages,
            approval: ApprovalWrite::Resolve(again),
        };
        let committed = self
            .store()
            .commit_step(Some(hold.lease()), &commit)
            .await?;
        announce::step(events, agent_id, &committed, Usage::default());
        if answers.waiting.is_some() {
            announce::pending(self.store(), events, agent_id).await;
        }
        // An edit refused at commit gets a step to retry, as in any step.
        let next = run::go_on_after_refusals(next, &committed);
        let written = committed.messages;
        match next {
            None => {
                let run = RunContext {
                    setup: &setup,
                    run_id,
                    events,
                    cancel,
                    hold: &hold,
                    rules,
                    usage: Usage::default(),
                };
                Ok(self.drive(run, index + 1, written).await)
            }
            Some(stop) => {
                hold.release().await;
                let _ = events.send(RunEvent::Done {
                    run_id: run_id.clone(),
                    stop_reason: stop,
                    usage: Usage::default(),
                });
                Ok(RunOutcome {
                    run_id,
                    messages: written,
                    stop_reason: stop,
                    usage: Usage::default(),
                    error: None,
                })
            }
        }
    }
}

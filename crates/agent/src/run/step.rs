//! One step in its phases: prepare the context (relieving memory pressure), call the model,
//! answer every tool call it made, and commit all of it in one transaction.

use super::call::Called;
use super::runtime::Runtime;
use super::setup::RunContext;
use crate::announce;
use crate::answer::{self, Pass};
use crate::calibrate;
use crate::compact::{self, Pressure};
use crate::context::{self, Context};
use crate::reply;
use engram_core::{
    LoopStyle, Message, MessageId, MessageKind, NewMessage, NewPassage, PendingApproval, Result,
    RunEvent, Step, StepId, StopReason, Timestamp, Usage,
};
use engram_providers::{ChatResponse, ToolChoice};
use engram_store::{ApprovalWrite, BlockWrite, CommittedStep, StepCommit};
use std::time::Instant;

/// One step's result, for the run to decide what comes next.
pub(super) struct StepEnd {
    pub messages: Vec<Message>,
    pub next: Option<StopReason>,
    /// What each tool call of the step did: name, arguments and result (time left out).
    pub effects: Vec<String>,
}

/// Which step this is, and when it began.
struct StepClock {
    id: StepId,
    index: u32,
    started: Instant,
    started_at: Timestamp,
}

/// What a step's model call and tool calls produced, before it is committed.
struct Answered {
    response: ChatResponse,
    /// The assistant message, then one result per answered call.
    messages: Vec<NewMessage>,
    /// The memory edits and passages the tools queued.
    block_writes: Vec<BlockWrite>,
    passages: Vec<NewPassage>,
    /// A call that waits for a person, if any.
    approval: ApprovalWrite,
    /// `(call id, effect)` of each answered call, for the run's repeat check.
    effects: Vec<(String, String)>,
    /// Why the run ends after this step, if it does.
    next: Option<StopReason>,
}

/// Whether the run goes on after a commit that refused some memory edits: an edit refused
/// at commit (the block changed while the step ran) was answered with a `Failed` result
/// showing the current value, so the model gets a step to retry rather than the turn ending
/// on an edit it believes was made.
pub(crate) fn go_on_after_refusals(
    next: Option<StopReason>,
    committed: &CommittedStep,
) -> Option<StopReason> {
    match next {
        Some(StopReason::EndTurn | StopReason::NoToolCall) if !committed.refused.is_empty() => {
            tracing::info!(refused = ?committed.refused, "memory edits refused at commit; continuing");
            None
        }
        next => next,
    }
}

impl Runtime {
    /// Takes step `index` of the run.
    pub(super) async fn step(&self, run: &mut RunContext<'_>, index: u32) -> Result<StepEnd> {
        let clock = StepClock {
            id: StepId::new(),
            index,
            started: Instant::now(),
            started_at: chrono::Utc::now(),
        };
        run.emit(RunEvent::StepStarted {
            step_id: clock.id.clone(),
            index,
        });
        let (mut ctx, allowed) = self.prepare(run).await?;
        let llm_started = Instant::now();
        let response = match self.call_model(run, &mut ctx, index).await? {
            Called::Reply(r) => r,
            Called::BrokenOff { text, error } => {
                let reason = if error.is_some() {
                    "error"
                } else {
                    "cancelled"
                };
                let end = self.commit_partial(run, &ctx, &clock, text, reason).await?;
                return match error {
                    Some(e) => Err(e),
                    None => Ok(end),
                };
            }
        };
        let llm_ms = llm_started.elapsed().as_millis() as u64;
        // What the answer's usage teaches the token counter is stored while the step goes on
        // (it never fails the step).
        let prompt_tokens = response.usage.as_ref().map(|u| u.prompt_tokens);
        let learn = async {
            if let Some(reported) = prompt_tokens {
                calibrate::observe(
                    self.store(),
                    &ctx.agent.llm.model,
                    &ctx.counter,
                    ctx.breakdown.total,
                    reported,
                )
                .await;
            }
        };
        let step = async {
            let answered = self.answer(run, &ctx, &clock, response, &allowed).await;
            self.commit(run, &ctx, &clock, answered, llm_ms).await
        };
        let ((), end) = tokio::join!(learn, step);
        end
    }

    /// The step's context, with memory pressure relieved (compacted when over `compact_at`,
    /// or one warning per fill when over `warn_at`), and the tools the agent's rules allow
    /// now (a narrowed choice must be taken).
    async fn prepare(&self, run: &RunContext<'_>) -> Result<(Context, Vec<String>)> {
        let agent_id = &run.setup.agent.id;
        let ctx = context::load_expecting(
            self.store(),
            self.folders.as_deref(),
            &run.setup.agent,
            chrono::Utc::now(),
            true,
        )
        .await?;
        let warned = self
            .warned
            .lock()
            .map(|w| w.contains(agent_id))
            .unwrap_or(false);
        let set_warned = |on: bool| {
            if let Ok(mut w) = self.warned.lock() {
                if on {
                    w.insert(agent_id.clone());
                } else {
                    w.remove(agent_id);
                }
            }
        };
        let mut ctx = match compact::pressure(&ctx, &self.settings, warned) {
            Pressure::Low => {
                set_warned(false);
                ctx
            }
            Pressure::Warned => ctx,
            Pressure::Warn(percent) => {
                let alert = NewMessage::hidden(
                    MessageKind::Alert,
                    crate::prompts::memory_pressure_alert(percent),
                );
                self.store.append_messages(agent_id, &[alert]).await?;
                set_warned(true);
                context::load(
                    self.store(),
                    self.folders.as_deref(),
                    agent_id,
                    chrono::Utc::now(),
                    true,
                )
                .await?
            }
            Pressure::Compact => {
                let model = &*run.setup.model;
                tokio::select! {
                    r = compact::compact(self.store(), model, &ctx, self.target_tokens(&ctx), &self.settings) => r?,
                    () = run.cancel.cancelled() => return Err(engram_core::Error::Cancelled),
                }
                context::load(
                    self.store(),
                    self.folders.as_deref(),
                    agent_id,
                    chrono::Utc::now(),
                    true,
                )
                .await?
            }
        };
        let offered: Vec<String> = ctx.request.tools.iter().map(|t| t.name.clone()).collect();
        let allowed = run.rules.allowed(&offered);
        if allowed.len() < offered.len() {
            ctx.request.tools.retain(|t| allowed.contains(&t.name));
            ctx.request.tool_choice = ToolChoice::Required;
        }
        Ok((ctx, allowed))
    }

    /// Answers every tool call of the model's reply (a call under a `requires_approval` rule
    /// pauses the run instead) and decides whether the run goes on.
    async fn answer(
        &self,
        run: &mut RunContext<'_>,
        ctx: &Context,
        clock: &StepClock,
        mut response: ChatResponse,
        allowed: &[String],
    ) -> Answered {
        let agent_id = &run.setup.agent.id;
        let classic = ctx.agent.loop_style == LoopStyle::Classic;
        // Minted here so a pending approval can name the message that made the call.
        let assistant_id = MessageId::new();
        if classic && reply::deliver_plain_text(&mut response, allowed, &assistant_id) {
            tracing::info!(%agent_id, step = clock.index, "classic loop: plain text delivered with send_message");
        }
        for call in &response.tool_calls {
            run.emit(RunEvent::ToolCall { call: call.clone() });
        }
        let mut messages = vec![NewMessage {
            id: Some(assistant_id.clone()),
            ..NewMessage::assistant(
                response.content.clone(),
                response.reasoning.clone(),
                response.tool_calls.clone(),
            )
            .in_step(&run.run_id, &clock.id)
        }];
        let reranker = self.models.reranker();
        let mut tool_ctx = self.tool_context(
            ctx,
            run.setup.embedder.as_ref(),
            reranker.as_deref(),
            chrono::Utc::now(),
        );
        let mut pass = Pass {
            rules: &mut run.rules,
            events: run.events,
            cancel: run.cancel,
            run_id: &run.run_id,
            step_id: &clock.id,
            classic,
        };
        let mut answers =
            answer::answer_calls(&mut tool_ctx, &response.tool_calls, None, &mut pass).await;
        messages.extend(std::mem::take(&mut answers.messages));
        let next = answer::next_stop(
            &answers,
            !response.tool_calls.is_empty(),
            run.cancel.is_cancelled(),
            &pass,
            tool_ctx.now,
            &mut messages,
        );
        let approval = match &answers.waiting {
            Some(call) => ApprovalWrite::Request(PendingApproval {
                agent_id: agent_id.clone(),
                run_id: run.run_id.clone(),
                step_id: clock.id.clone(),
                message_id: assistant_id,
                tool_call: call.clone(),
                requested_at: tool_ctx.now,
                server: None,
            }),
            None => ApprovalWrite::Keep,
        };
        Answered {
            response,
            messages,
            block_writes: tool_ctx.writes,
            passages: tool_ctx.passages,
            approval,
            effects: answers.effects,
            next,
        }
    }

    /// Commits the step (its record, messages, memory edits, passages and any pending
    /// approval) in one transaction and tells the run's readers.
    async fn commit(
        &self,
        run: &mut RunContext<'_>,
        ctx: &Context,
        clock: &StepClock,
        answered: Answered,
        llm_ms: u64,
    ) -> Result<StepEnd> {
        let Answered {
            response,
            messages,
            block_writes,
            passages,
            approval,
            effects,
            next,
        } = answered;
        let waiting = matches!(approval, ApprovalWrite::Request(_));
        let agent_id = &run.setup.agent.id;
        let (prompt_tokens, completion_tokens) = match response.usage {
            Some(u) => (u.prompt_tokens, u.completion_tokens),
            // The provider did not count: what was sent is our count of the context, what
            // came back our count of the reply.
            None => (
                ctx.breakdown.total as u64,
                (ctx.counter.count(&response.content)
                    + response
                        .tool_calls
                        .iter()
                        .map(|c| ctx.counter.count(&c.arguments))
                        .sum::<usize>()) as u64,
            ),
        };
        let commit = StepCommit {
            step: Step {
                id: clock.id.clone(),
                agent_id: agent_id.clone(),
                run_id: run.run_id.clone(),
                index: clock.index,
                model: ctx.agent.llm.model.clone(),
                prompt_tokens,
                completion_tokens,
                finish_reason: response.finish_reason.clone(),
                started_at: clock.started_at,
                llm_ms,
                step_ms: clock.started.elapsed().as_millis() as u64,
            },
            messages,
            block_writes,
            passages,
            approval,
        };
        let committed = self
            .store
            .commit_step(Some(run.hold.lease()), &commit)
            .await?;
        let mut step_usage = Usage::default();
        step_usage.add_step(prompt_tokens, completion_tokens);
        run.usage.add_step(prompt_tokens, completion_tokens);
        announce::step(run.events, agent_id, &committed, step_usage);
        if waiting {
            announce::pending(self.store(), run.events, agent_id).await;
        }
        let next = go_on_after_refusals(next, &committed);
        // A call refused at commit got another answer than the one recorded here; its retries
        // respond to a change, so they never count as repeats.
        let effects = effects
            .into_iter()
            .filter(|(id, _)| !committed.refused.contains(id))
            .map(|(_, effect)| effect)
            .collect();
        Ok(StepEnd {
            messages: committed.messages,
            next,
            effects,
        })
    }

    /// Ends a step whose answer broke off (the user stopped it: `finish_reason` "cancelled";
    /// the connection dropped or time ran out: "error"): keeps the text that arrived as an
    /// assistant message (no tool calls, so nothing is left unanswered) and counts what was
    /// sent and what arrived, so a stopped run shows what it used.
    async fn commit_partial(
        &self,
        run: &mut RunContext<'_>,
        ctx: &Context,
        clock: &StepClock,
        text: String,
        finish_reason: &str,
    ) -> Result<StepEnd> {
        let prompt_tokens = ctx.breakdown.total as u64;
        let completion_tokens = ctx.counter.count(&text) as u64;
        run.usage.add_step(prompt_tokens, completion_tokens);
        let step = Step {
            id: clock.id.clone(),
            agent_id: ctx.agent.id.clone(),
            run_id: run.run_id.clone(),
            index: clock.index,
            model: ctx.agent.llm.model.clone(),
            prompt_tokens,
            completion_tokens,
            finish_reason: Some(finish_reason.into()),
            started_at: clock.started_at,
            llm_ms: clock.started.elapsed().as_millis() as u64,
            step_ms: clock.started.elapsed().as_millis() as u64,
        };
        let message = NewMessage::assistant(text, None, Vec::new()).in_step(&run.run_id, &clock.id);
        let commit = StepCommit {
            step,
            messages: vec![message],
            block_writes: Vec::new(),
            passages: Vec::new(),
            approval: ApprovalWrite::Keep,
        };
        let committed = self
            .store
            .commit_step(Some(run.hold.lease()), &commit)
            .await?;
        let mut step_usage = Usage::default();
        step_usage.add_step(prompt_tokens, completion_tokens);
        announce::step(run.events, &ctx.agent.id, &committed, step_usage);
        Ok(StepEnd {
            messages: committed.messages,
            next: Some(StopReason::Cancelled),
            effects: Vec::new(),
        })
    }
}

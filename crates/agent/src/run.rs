//! The agent loop: one user message starts a run of steps; each step compiles the context,
//! calls the model, answers every tool call it returned, and commits all of it in one
//! transaction. The run goes on while the model asks to (heartbeat in the classic loop, tool
//! calls in the tool loop) up to the step limit.

use crate::calibrate;
use crate::compact::{self, Pressure};
use crate::context::{self, Context};
use crate::outcome::{LoopSettings, RunOutcome};
use crate::prompts;
use crate::python::PythonHost;
use crate::rules::Rules;
use crate::tools::{self, ToolContext};
use crate::window;
use crate::{Embedder, EventSink, ModelResolver};
use engram_core::error::ProviderFault;
use engram_core::run::format_time;
use engram_core::{
    AgentId, Error, ErrorBody, LoopStyle, Message, MessageKind, NewMessage, Result, RunEvent,
    RunId, Step, StepId, StopReason, ToolStatus, Usage,
};
use engram_providers::{ChatModel, ChatResponse, Delta, ToolChoice};
use engram_store::{StepCommit, Store};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// Runs agents. One run per agent at a time: a second message to a busy agent waits its turn,
/// so two runs never interleave their steps.
pub struct Runtime {
    store: Store,
    models: Arc<dyn ModelResolver>,
    settings: LoopSettings,
    python: Arc<PythonHost>,
    /// Calls tools of MCP servers; `None` answers such calls with a `Failed` result.
    mcp: Option<Arc<dyn crate::McpCaller>>,
    busy: Mutex<HashMap<AgentId, Arc<tokio::sync::Mutex<()>>>>,
    /// Agents warned about memory pressure in the current fill (since their context was last
    /// below the warning threshold), so the warning fires once per fill.
    warned: Mutex<HashSet<AgentId>>,
}

/// How many times a tool effect (call, arguments, result) may happen in a run before a step
/// that only repeats such effects ends the run with [`StopReason::NoProgress`].
const NO_PROGRESS_REPEATS: u32 = 2;

/// One step's result, for the loop to decide what comes next.
struct StepEnd {
    messages: Vec<Message>,
    next: Option<StopReason>,
    /// What each tool call of the step did: name, arguments and result (time left out).
    effects: Vec<String>,
}

impl Runtime {
    /// A runtime over `store`, resolving models with `models`.
    pub fn new(store: Store, models: Arc<dyn ModelResolver>) -> Self {
        Self::with_settings(store, models, LoopSettings::default())
    }

    /// Same, with custom thresholds.
    pub fn with_settings(
        store: Store,
        models: Arc<dyn ModelResolver>,
        settings: LoopSettings,
    ) -> Self {
        Self {
            store,
            models,
            settings,
            python: Arc::new(PythonHost::default()),
            mcp: None,
            busy: Mutex::new(HashMap::new()),
            warned: Mutex::new(HashSet::new()),
        }
    }

    /// Runs user tools with `python` (default: `python3` from `PATH`, 30 s per call).
    pub fn with_python(mut self, python: Arc<PythonHost>) -> Self {
        self.python = python;
        self
    }

    /// Calls tools of MCP servers through `mcp`.
    pub fn with_mcp(mut self, mcp: Arc<dyn crate::McpCaller>) -> Self {
        self.mcp = Some(mcp);
        self
    }

    /// Where user tools run.
    pub fn python(&self) -> &Arc<PythonHost> {
        &self.python
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The context-window thresholds in use.
    pub fn settings(&self) -> &LoopSettings {
        &self.settings
    }

    /// The agent's context as the next call would see it (for the context-window meter).
    pub fn context(&self, agent_id: &AgentId) -> Result<Context> {
        context::load(&self.store, agent_id, chrono::Utc::now(), true)
    }

    /// Sends `input` (a user message) to the agent and runs steps until it is done.
    ///
    /// Errors before anything is written (unknown agent, model not configured, a context window
    /// too small for the agent: `context_window_too_small`) are returned as `Err`. Failures during the run (provider down, cancelled) end it with a stop reason and
    /// `RunOutcome::error`; everything committed before stays valid, and an `Error` then a `Done`
    /// event are emitted. Each step is written in one transaction, so a crash loses at most the
    /// step in flight.
    pub async fn run(
        &self,
        agent_id: &AgentId,
        input: NewMessage,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome> {
        let lock = {
            let mut busy = self
                .busy
                .lock()
                .map_err(|_| Error::Internal("run registry poisoned".into()))?;
            busy.entry(agent_id.clone()).or_default().clone()
        };
        let _turn = lock.lock().await;

        let agent = self.store.get_agent(agent_id)?;
        let model = self.models.chat_model(&agent.llm)?;
        // A window that cannot hold the agent is the user's to fix; say so before anything is
        // written, instead of a run that compacts on every step.
        let ctx = context::load(&self.store, agent_id, chrono::Utc::now(), true)?;
        window::check(
            compact::fixed_tokens(&ctx),
            ctx.breakdown.context_window,
            &agent.llm.model,
            &self.settings,
        )?;
        drop(ctx);
        let embedder = agent
            .embedding
            .as_ref()
            .map(|c| self.models.embedder(c))
            .transpose()?;

        let run_id = RunId::new();
        let emit = |e: RunEvent| {
            let _ = events.send(e);
        };
        emit(RunEvent::RunStarted {
            run_id: run_id.clone(),
            agent_id: agent_id.clone(),
        });
        let repaired = self
            .store
            .repair_orphaned_tool_calls(agent_id, chrono::Utc::now())?;
        if repaired > 0 {
            tracing::warn!(%agent_id, repaired, "answered tool calls left open by an interrupted run");
        }
        let mut input = input;
        input.run_id = Some(run_id.clone());
        let mut written = self.store.append_messages(agent_id, &[input])?;
        for m in &written {
            emit(RunEvent::Message { message: m.clone() });
        }

        let mut usage = Usage::default();
        let mut rules = Rules::new(&agent.tool_rules);
        let mut stop = StopReason::MaxSteps;
        let mut error = None;
        // How often each tool effect happened in this run, to notice a model that only
        // repeats itself.
        let mut seen: HashMap<String, u32> = HashMap::new();
        for index in 1..=agent.max_steps.max(1) {
            if cancel.is_cancelled() {
                stop = StopReason::Cancelled;
                break;
            }
            let step = self.step(
                agent_id,
                &*model,
                embedder.as_ref(),
                &run_id,
                index,
                events,
                cancel,
                &mut usage,
                &mut rules,
            );
            match step.await {
                Ok(end) => {
                    written.extend(end.messages);
                    if let Some(reason) = end.next {
                        stop = reason;
                        break;
                    }
                    // A step that only repeats calls already made twice with the same results
                    // would be repeated again until the step limit. (Once is allowed: a model
                    // may check a result again.)
                    let repeated = !end.effects.is_empty()
                        && end
                            .effects
                            .iter()
                            .all(|e| seen.get(e).is_some_and(|n| *n >= NO_PROGRESS_REPEATS));
                    if repeated {
                        tracing::warn!(%agent_id, step = index, "the model repeats itself; stopping the run");
                        stop = StopReason::NoProgress;
                        break;
                    }
                    for e in end.effects {
                        *seen.entry(e).or_default() += 1;
                    }
                }
                Err(e) => {
                    stop = match &e {
                        Error::Cancelled => StopReason::Cancelled,
                        Error::Provider { .. } => StopReason::LlmApiError,
                        _ => StopReason::Error,
                    };
                    if !matches!(e, Error::Cancelled) {
                        tracing::warn!(%agent_id, error = %e, "run ended with an error");
                        let body = ErrorBody::from(&e);
                        emit(RunEvent::Error {
                            error: body.clone(),
                        });
                        error = Some(body);
                    }
                    break;
                }
            }
        }
        emit(RunEvent::Done {
            run_id: run_id.clone(),
            stop_reason: stop,
            usage,
        });
        Ok(RunOutcome {
            run_id,
            messages: written,
            stop_reason: stop,
            usage,
            error,
        })
    }

    #[allow(clippy::too_many_arguments)]
    async fn step(
        &self,
        agent_id: &AgentId,
        model: &dyn ChatModel,
        embedder: Option<&Embedder>,
        run_id: &RunId,
        index: u32,
        events: &EventSink,
        cancel: &CancellationToken,
        usage: &mut Usage,
        rules: &mut Rules,
    ) -> Result<StepEnd> {
        let started = Instant::now();
        let started_at = chrono::Utc::now();
        let step_id = StepId::new();
        let _ = events.send(RunEvent::StepStarted {
            step_id: step_id.clone(),
            index,
        });

        let mut ctx = self.prepare(agent_id, model, cancel).await?;
        let classic = ctx.agent.loop_style == LoopStyle::Classic;
        // Tool rules narrow what this call may use; a narrowed choice must be taken.
        let offered: Vec<String> = ctx.request.tools.iter().map(|t| t.name.clone()).collect();
        let allowed = rules.allowed(&offered);
        if allowed.len() < offered.len() {
            ctx.request.tools.retain(|t| allowed.contains(&t.name));
            ctx.request.tool_choice = ToolChoice::Required;
        }

        // Deltas stream out as they come; the text is also kept so a cancelled reply keeps
        // what already arrived.
        let partial = Arc::new(Mutex::new(String::new()));
        let on_delta = {
            let events = events.clone();
            let partial = partial.clone();
            move |d: Delta| {
                let event = match d {
                    Delta::Text(t) => {
                        if let Ok(mut p) = partial.lock() {
                            p.push_str(&t);
                        }
                        if classic {
                            RunEvent::ReasoningDelta { delta: t }
                        } else {
                            RunEvent::TextDelta { delta: t }
                        }
                    }
                    Delta::Reasoning(t) => RunEvent::ReasoningDelta { delta: t },
                };
                let _ = events.send(event);
            }
        };

        let llm_started = Instant::now();
        let mut compacted_for_error = false;
        let response: ChatResponse = loop {
            let call = model.complete(&ctx.request, &on_delta);
            let result = tokio::select! {
                r = call => r,
                () = cancel.cancelled() => {
                    let text = partial.lock().map(|p| p.clone()).unwrap_or_default();
                    return self.commit_cancelled(&ctx, run_id, &step_id, index, text, started_at, started, events);
                }
            };
            match result {
                Ok(r) => break r,
                // Our count said it fits but the provider disagrees, so our count is off. An
                // estimated count learns from it (the provider's ratio is at least window /
                // estimate); either way, halve what was sent (or reach the usual target, if
                // that is smaller), once.
                Err(e) if e.fault == ProviderFault::ContextLength && !compacted_for_error => {
                    compacted_for_error = true;
                    if !ctx.counter.is_exact() {
                        calibrate::refused(
                            &self.store,
                            &ctx.agent.llm.model,
                            &ctx.counter,
                            ctx.breakdown.total,
                            ctx.breakdown.context_window,
                        );
                        ctx = context::load(&self.store, agent_id, chrono::Utc::now(), true)?;
                    }
                    let target = self.target_tokens(&ctx).min(ctx.breakdown.total / 2);
                    compact::compact(&self.store, model, &ctx, target, &self.settings).await?;
                    ctx = context::load(&self.store, agent_id, chrono::Utc::now(), true)?;
                }
                Err(e) => return Err(e.into()),
            }
        };
        let llm_ms = llm_started.elapsed().as_millis() as u64;
        if let Some(u) = &response.usage {
            calibrate::observe(
                &self.store,
                &ctx.agent.llm.model,
                &ctx.counter,
                ctx.breakdown.total,
                u.prompt_tokens,
            );
        }

        for call in &response.tool_calls {
            let _ = events.send(RunEvent::ToolCall { call: call.clone() });
        }
        let mut messages = vec![
            NewMessage::assistant(
                response.content.clone(),
                response.reasoning.clone(),
                response.tool_calls.clone(),
            )
            .in_step(run_id, &step_id),
        ];
        let mut tool_ctx = ToolContext {
            agent: &ctx.agent,
            store: &self.store,
            blocks: ctx.blocks.clone(),
            read_versions: ctx
                .blocks
                .iter()
                .map(|b| (b.id.clone(), b.version))
                .collect(),
            writes: Vec::new(),
            passages: Vec::new(),
            embedder,
            now: chrono::Utc::now(),
            custom: &ctx.custom_tools,
            python: &self.python,
            mcp: self.mcp.as_deref(),
        };
        let (mut heartbeat, mut failed, mut replied) = (false, false, false);
        let (mut terminal, mut keep_going) = (false, false);
        let mut effects = Vec::with_capacity(response.tool_calls.len());
        for call in &response.tool_calls {
            // Every call gets exactly one result, also when the run is being cancelled.
            let out = if cancel.is_cancelled() {
                tools::ToolOutput {
                    result: engram_core::ToolReturn::failed(
                        "The run was cancelled before this tool ran.",
                        tool_ctx.now,
                    ),
                    heartbeat: false,
                    reply: None,
                }
            } else if let Err(why) = rules.check(&call.name) {
                tools::ToolOutput {
                    result: engram_core::ToolReturn::failed(why, tool_ctx.now),
                    heartbeat: false,
                    reply: None,
                }
            } else {
                let out = tools::execute(&mut tool_ctx, call).await;
                let after = rules.record(&call.name);
                terminal |= after.terminal;
                keep_going |= after.keep_going;
                out
            };
            let _ = events.send(RunEvent::ToolResult {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                status: out.result.status,
                message: out.result.message.clone(),
            });
            if let Some(reply) = &out.reply {
                replied = true;
                if classic {
                    let _ = events.send(RunEvent::TextDelta {
                        delta: reply.clone(),
                    });
                }
            }
            heartbeat |= out.heartbeat;
            failed |= out.result.status == ToolStatus::Failed;
            effects.push((
                call.id.clone(),
                format!(
                    "{}\u{0}{}\u{0}{:?}\u{0}{}",
                    call.name, call.arguments, out.result.status, out.result.message
                ),
            ));
            messages.push(
                NewMessage::tool(&call.id, &call.name, out.result.to_json())
                    .in_step(run_id, &step_id),
            );
        }

        let next = if cancel.is_cancelled() {
            Some(StopReason::Cancelled)
        } else if classic {
            if response.tool_calls.is_empty() {
                Some(StopReason::NoToolCall)
            } else if terminal && (heartbeat || failed || keep_going) {
                Some(StopReason::ToolRule)
            } else if heartbeat || failed || keep_going {
                let reason = if failed && !heartbeat {
                    prompts::HEARTBEAT_AFTER_FAILURE
                } else {
                    prompts::HEARTBEAT_REQUESTED
                };
                let content = serde_json::json!({"type": "heartbeat", "reason": reason, "time": format_time(tool_ctx.now)});
                messages.push(
                    NewMessage::hidden(MessageKind::Heartbeat, content.to_string())
                        .in_step(run_id, &step_id),
                );
                None
            } else {
                Some(StopReason::EndTurn)
            }
        } else if response.tool_calls.is_empty() || (replied && !heartbeat && !keep_going) {
            Some(StopReason::EndTurn)
        } else if terminal {
            Some(StopReason::ToolRule)
        } else {
            None
        };

        let completion_fallback = || {
            let counter = ctx.counter;
            counter.count(&response.content)
                + response
                    .tool_calls
                    .iter()
                    .map(|c| counter.count(&c.arguments))
                    .sum::<usize>()
        };
        let (prompt_tokens, completion_tokens) = match response.usage {
            Some(u) => (u.prompt_tokens, u.completion_tokens),
            None => (ctx.breakdown.total as u64, completion_fallback() as u64),
        };
        let step = Step {
            id: step_id,
            agent_id: agent_id.clone(),
            run_id: run_id.clone(),
            index,
            model: ctx.agent.llm.model.clone(),
            prompt_tokens,
            completion_tokens,
            finish_reason: response.finish_reason.clone(),
            started_at,
            llm_ms,
            step_ms: started.elapsed().as_millis() as u64,
        };
        let commit = StepCommit {
            step,
            messages,
            block_writes: tool_ctx.writes,
            passages: tool_ctx.passages,
        };
        let committed = self.store.commit_step(&commit)?;
        let mut step_usage = Usage::default();
        step_usage.add_step(prompt_tokens, completion_tokens);
        usage.add_step(prompt_tokens, completion_tokens);
        announce(events, agent_id, &committed, step_usage);
        // An edit refused at commit (the block changed while the step ran) was answered with a
        // `Failed` result showing the current value: give the model a step to retry rather than
        // ending the turn on an edit it believes was made.
        let next = match next {
            Some(StopReason::EndTurn | StopReason::NoToolCall) if !committed.refused.is_empty() => {
                tracing::info!(%agent_id, refused = ?committed.refused, "memory edits refused at commit; continuing");
                None
            }
            next => next,
        };
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

    /// Loads the context and relieves memory pressure: compacts when over `compact_at`, or sends
    /// the model one warning per fill when over `warn_at`.
    async fn prepare(
        &self,
        agent_id: &AgentId,
        model: &dyn ChatModel,
        cancel: &CancellationToken,
    ) -> Result<Context> {
        let ctx = context::load(&self.store, agent_id, chrono::Utc::now(), true)?;
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
        match compact::pressure(&ctx, &self.settings, warned) {
            Pressure::Low => {
                set_warned(false);
                Ok(ctx)
            }
            Pressure::Warned => Ok(ctx),
            Pressure::Warn(percent) => {
                let alert =
                    NewMessage::hidden(MessageKind::Alert, prompts::memory_pressure_alert(percent));
                self.store.append_messages(agent_id, &[alert])?;
                set_warned(true);
                context::load(&self.store, agent_id, chrono::Utc::now(), true)
            }
            Pressure::Compact => {
                tokio::select! {
                    r = compact::compact(&self.store, model, &ctx, self.target_tokens(&ctx), &self.settings) => r?,
                    () = cancel.cancelled() => return Err(Error::Cancelled),
                }
                context::load(&self.store, agent_id, chrono::Utc::now(), true)
            }
        }
    }

    /// Where compaction aims: `compact_to` of the window, in tokens.
    fn target_tokens(&self, ctx: &Context) -> usize {
        (ctx.breakdown.context_window as f32 * self.settings.compact_to) as usize
    }

    /// Ends a step the user cancelled mid-answer: keeps the text that arrived as an assistant
    /// message (no tool calls, so nothing is left unanswered).
    #[allow(clippy::too_many_arguments)]
    fn commit_cancelled(
        &self,
        ctx: &Context,
        run_id: &RunId,
        step_id: &StepId,
        index: u32,
        text: String,
        started_at: engram_core::Timestamp,
        started: Instant,
        events: &EventSink,
    ) -> Result<StepEnd> {
        if text.is_empty() {
            return Err(Error::Cancelled);
        }
        let step = Step {
            id: step_id.clone(),
            agent_id: ctx.agent.id.clone(),
            run_id: run_id.clone(),
            index,
            model: ctx.agent.llm.model.clone(),
            prompt_tokens: ctx.breakdown.total as u64,
            completion_tokens: 0,
            finish_reason: Some("cancelled".into()),
            started_at,
            llm_ms: started.elapsed().as_millis() as u64,
            step_ms: started.elapsed().as_millis() as u64,
        };
        let message = NewMessage::assistant(text, None, Vec::new()).in_step(run_id, step_id);
        let commit = StepCommit {
            step,
            messages: vec![message],
            block_writes: Vec::new(),
            passages: Vec::new(),
        };
        let committed = self.store.commit_step(&commit)?;
        announce(events, &ctx.agent.id, &committed, Usage::default());
        Ok(StepEnd {
            messages: committed.messages,
            next: Some(StopReason::Cancelled),
            effects: Vec::new(),
        })
    }
}

/// Emits what a committed step changed: blocks (last state of each), messages, usage.
fn announce(
    events: &EventSink,
    agent_id: &AgentId,
    committed: &engram_store::CommittedStep,
    usage: Usage,
) {
    let mut seen = std::collections::HashSet::new();
    for change in committed.blocks.iter().rev() {
        if seen.insert(change.block.id.clone()) {
            let _ = events.send(RunEvent::MemoryChanged {
                agent_id: agent_id.clone(),
                block: change.block.clone(),
                tool_call_id: change.tool_call_id.clone(),
            });
        }
    }
    for m in &committed.messages {
        let _ = events.send(RunEvent::Message { message: m.clone() });
    }
    if usage.step_count > 0 {
        let _ = events.send(RunEvent::Usage { usage });
    }
}

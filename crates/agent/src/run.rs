//! The agent loop: one user message starts a run of steps; each step compiles the context,
//! calls the model, answers every tool call it returned, and commits all of it in one
//! transaction. The run goes on while the model asks to (heartbeat in the classic loop, tool
//! calls in the tool loop) up to the step limit.

use crate::announce;
use crate::answer::{self, Pass};
use crate::calibrate;
use crate::compact::{self, Pressure};
use crate::context::{self, Context};
use crate::outcome::{LoopSettings, RunOutcome};
use crate::python::PythonHost;
use crate::reply;
use crate::rules::Rules;
use crate::tools::ToolContext;
use crate::window;
use crate::{Embedder, EventSink, ModelResolver};
use engram_core::error::ProviderFault;
use engram_core::{
    Agent, AgentId, Error, ErrorBody, LoopStyle, Message, MessageId, MessageKind, NewMessage,
    PendingApproval, Result, RunEvent, RunId, Step, StepId, StopReason, Timestamp, Usage,
};
use engram_providers::{ChatModel, ChatResponse, Delta, LiveTags, ToolChoice};
use engram_store::{ApprovalWrite, StepCommit, Store};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// Runs agents. One run per agent at a time: a second message to a busy agent waits its turn,
/// so two runs never interleave their steps.
pub struct Runtime {
    store: Store,
    pub(crate) models: Arc<dyn ModelResolver>,
    settings: LoopSettings,
    python: Arc<PythonHost>,
    /// Calls tools of MCP servers; `None` answers such calls with a `Failed` result.
    pub(crate) mcp: Option<Arc<dyn crate::McpCaller>>,
    busy: Mutex<HashMap<AgentId, Arc<tokio::sync::Mutex<()>>>>,
    /// Agents warned about memory pressure in the current fill (since their context was last
    /// below the warning threshold), so the warning fires once per fill.
    warned: Mutex<HashSet<AgentId>>,
}

/// An agent's turn, held (see [`Runtime::turn`]): while it lives, no other run or approval
/// decision of that agent runs. Dropping it lets the next one go.
pub struct Turn {
    agent: AgentId,
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

impl Turn {
    /// The agent whose turn this is.
    pub fn agent(&self) -> &AgentId {
        &self.agent
    }
}

/// How many times a tool effect (call, arguments, result) may happen in a run before a step
/// that only repeats such effects ends the run with [`StopReason::NoProgress`].
const NO_PROGRESS_REPEATS: u32 = 2;

/// How many times the same call (tool and arguments) may be made in a run, whatever it returned,
/// before a step that only repeats such calls ends the run with [`StopReason::NoProgress`]: a
/// small model searching its history for the same words step after step gets a slightly
/// different result each time (the history grows with its own calls), and would go on to the
/// step limit.
const SAME_CALL_REPEATS: u32 = 3;

/// The call part (tool and arguments) of an effect `name\0arguments\0status\0result`.
fn call_of(effect: &str) -> &str {
    let mut ends = effect.match_indices('\0').map(|(i, _)| i);
    match (ends.next(), ends.next()) {
        (Some(_), Some(end)) => &effect[..end],
        _ => effect,
    }
}

/// What a run needs before anything is written (see [`Runtime::setup`]).
pub(crate) struct Setup {
    pub agent: engram_core::Agent,
    pub model: Arc<dyn ChatModel>,
    pub embedder: Option<Embedder>,
}

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

    /// The reranker archival search uses now (see [`engram_retrieval::rerank`]), if any.
    pub(crate) fn reranker(&self) -> Option<Arc<dyn crate::Reranker>> {
        self.models.reranker()
    }

    /// The context-window thresholds in use.
    pub fn settings(&self) -> &LoopSettings {
        &self.settings
    }

    /// The agent's context as the next call would see it (for the context-window meter).
    pub fn context(&self, agent_id: &AgentId) -> Result<Context> {
        context::load(&self.store, agent_id, chrono::Utc::now(), true)
    }

    /// Checks what [`run`](Self::run) checks before it writes anything (the agent exists, its
    /// model resolves, the context window can hold it), so a caller about to change the
    /// conversation first (regenerate, edit & resend) can refuse before losing anything.
    ///
    /// Errors: `NotFound("agent")`, configuration errors (no provider, no key),
    /// `context_window_too_small`.
    pub fn preflight(&self, agent_id: &AgentId) -> Result<()> {
        let agent = self.store.get_agent(agent_id)?;
        self.models.chat_model(&agent.llm)?;
        self.check_window(&agent)?;
        if let Some(e) = &agent.embedding {
            self.models.embedder(e)?;
        }
        Ok(())
    }

    /// Sends `input` (a user message) to the agent and runs steps until it is done.
    ///
    /// Errors before anything is written (unknown agent, model not configured, a context window
    /// too small for the agent: `context_window_too_small`; `conflict` while a tool call waits
    /// for approval, naming the call — decide it with [`resolve_approval`](Self::resolve_approval)
    /// first) are returned as `Err`. Failures during the run (provider down, cancelled) end it
    /// with a stop reason and `RunOutcome::error`; everything committed before stays valid, and
    /// an `Error` then a `Done` event are emitted. Each step is written in one transaction, so a
    /// crash loses at most the step in flight. A call of a tool under a `requires_approval`
    /// rule ends the run with [`StopReason::RequiresApproval`] (see `answer`).
    pub async fn run(
        &self,
        agent_id: &AgentId,
        input: NewMessage,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome> {
        let turn = self.turn(agent_id).await?;
        self.run_in(&turn, input, events, cancel).await
    }

    /// [`run`](Self::run) in a turn the caller already holds (see [`turn`](Self::turn)), so
    /// that what it checked or changed under the same lock (a rollback before a regenerate)
    /// cannot be overtaken by another run. The run is stored under `input.run_id` when given,
    /// else under a new id. Errors as for `run`.
    pub async fn run_in(
        &self,
        turn: &Turn,
        input: NewMessage,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome> {
        let agent_id = &turn.agent;
        if let Some(p) = self.store.pending_approval(agent_id)? {
            return Err(p.blocks_new_message());
        }
        let setup = self.setup(agent_id)?;

        let run_id = input.run_id.clone().unwrap_or_default();
        let _ = events.send(RunEvent::RunStarted {
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
        let written = self.store.append_messages(agent_id, &[input])?;
        for m in &written {
            let _ = events.send(RunEvent::Message { message: m.clone() });
        }
        let rules = Rules::new(&setup.agent.tool_rules);
        Ok(self
            .drive(&setup, run_id, 1, written, rules, events, cancel)
            .await)
    }

    /// Waits for the agent's turn: one run (or approval decision, or change to the
    /// conversation that must not overlap one) per agent at a time. Runs waiting for the turn
    /// get it in the order they asked. Errors: `Internal` if the lock table is poisoned.
    pub async fn turn(&self, agent_id: &AgentId) -> Result<Turn> {
        let lock = self.turn_lock(agent_id)?;
        Ok(Turn {
            agent: agent_id.clone(),
            _guard: lock.lock_owned().await,
        })
    }

    /// The agent's turn if nobody holds it or waits for it now, else `None` (a run is in
    /// flight or queued). Errors: `Internal` if the lock table is poisoned.
    pub fn try_turn(&self, agent_id: &AgentId) -> Result<Option<Turn>> {
        let lock = self.turn_lock(agent_id)?;
        Ok(lock.try_lock_owned().ok().map(|guard| Turn {
            agent: agent_id.clone(),
            _guard: guard,
        }))
    }

    fn turn_lock(&self, agent_id: &AgentId) -> Result<Arc<tokio::sync::Mutex<()>>> {
        let mut busy = self
            .busy
            .lock()
            .map_err(|_| Error::Internal("run registry poisoned".into()))?;
        Ok(busy.entry(agent_id.clone()).or_default().clone())
    }

    /// What a run needs before anything is written: the agent, its model clients, and the
    /// check that its context window can hold it.
    pub(crate) fn setup(&self, agent_id: &AgentId) -> Result<Setup> {
        let agent = self.store.get_agent(agent_id)?;
        let model = self.models.chat_model(&agent.llm)?;
        self.check_window(&agent)?;
        let embedder = agent
            .embedding
            .as_ref()
            .map(|c| self.models.embedder(c))
            .transpose()?;
        Ok(Setup {
            agent,
            model,
            embedder,
        })
    }

    /// Refuses an agent whose fixed part (system prompt, blocks, tools) does not fit its
    /// context window: that is the user's to fix, so it is said before anything is written,
    /// instead of a run that compacts on every step. Error: `context_window_too_small`.
    fn check_window(&self, agent: &Agent) -> Result<()> {
        let ctx = context::load(&self.store, &agent.id, chrono::Utc::now(), true)?;
        window::check(
            compact::fixed_tokens(&ctx),
            ctx.breakdown.context_window,
            &agent.llm.model,
            &self.settings,
        )
    }

    /// What the tools of one step see: the agent and its blocks as `ctx` read them (a
    /// model's whole-value rewrite is based on those versions), nothing queued yet, the
    /// step's clock `now`.
    pub(crate) fn tool_context<'a>(
        &'a self,
        ctx: &'a Context,
        embedder: Option<&'a Embedder>,
        reranker: Option<&'a dyn crate::Reranker>,
        now: Timestamp,
    ) -> ToolContext<'a> {
        ToolContext {
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
            reranker,
            now,
            custom: &ctx.custom_tools,
            python: &self.python,
            mcp: self.mcp.as_deref(),
        }
    }

    /// Takes steps `first..=max_steps` of run `run_id` until one ends the run (at least one
    /// step, so a run resumed after an approval decision on its last step still lets the
    /// model read the result); `written` holds what the run committed so far. Always ends
    /// with a `Done` event.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn drive(
        &self,
        setup: &Setup,
        run_id: RunId,
        first: u32,
        mut written: Vec<Message>,
        mut rules: Rules,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> RunOutcome {
        let agent_id = &setup.agent.id;
        let emit = |e: RunEvent| {
            let _ = events.send(e);
        };
        let mut usage = Usage::default();
        let mut stop = StopReason::MaxSteps;
        let mut error = None;
        // How often each tool effect happened in this run, to notice a model that only
        // repeats itself.
        let mut seen: HashMap<String, u32> = HashMap::new();
        let mut calls: HashMap<String, u32> = HashMap::new();
        for index in first..=setup.agent.max_steps.max(first) {
            if cancel.is_cancelled() {
                stop = StopReason::Cancelled;
                break;
            }
            let step = self.step(
                agent_id,
                &*setup.model,
                setup.embedder.as_ref(),
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
                        && (end
                            .effects
                            .iter()
                            .all(|e| seen.get(e).is_some_and(|n| *n >= NO_PROGRESS_REPEATS))
                            || end.effects.iter().all(|e| {
                                calls
                                    .get(call_of(e))
                                    .is_some_and(|n| *n >= SAME_CALL_REPEATS)
                            }));
                    if repeated {
                        tracing::warn!(%agent_id, step = index, "the model repeats itself; stopping the run");
                        stop = StopReason::NoProgress;
                        break;
                    }
                    for e in end.effects {
                        *calls.entry(call_of(&e).to_owned()).or_default() += 1;
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
        // A run that told the user nothing ends with an error that says why, never in silence:
        // an empty answer, a turn ended with memory edits only, or a model stopped for
        // repeating itself or at the step limit.
        let classic = setup.agent.loop_style == LoopStyle::Classic;
        if error.is_none() && reply::told_nothing(&written, classic) {
            let silent = match stop {
                StopReason::EndTurn | StopReason::NoToolCall if reply::ends_empty(&written) => {
                    stop = StopReason::LlmApiError;
                    Some(reply::empty_reply_error())
                }
                // A classic-loop model that only edited memory and never called send_message.
                StopReason::EndTurn
                | StopReason::NoToolCall
                | StopReason::NoProgress
                | StopReason::MaxSteps => Some(reply::no_answer_error(stop, setup.agent.max_steps)),
                _ => None,
            };
            if let Some(e) = silent {
                tracing::warn!(%agent_id, stop = stop.as_str(), "the run ended without a reply");
                let body = ErrorBody::from(&Error::from(e));
                emit(RunEvent::Error {
                    error: body.clone(),
                });
                error = Some(body);
            }
        }
        // How the turn ended is stored, so a reload shows its usage line and "stopped" label.
        let record = engram_store::RunRecord {
            id: run_id.clone(),
            agent_id: agent_id.clone(),
            stop_reason: stop,
            error: error.clone(),
            usage,
            ended_at: chrono::Utc::now(),
        };
        if let Err(e) = self.store.record_run(&record) {
            tracing::warn!(%agent_id, error = %e, "could not record how the run ended");
        }
        emit(RunEvent::Done {
            run_id: run_id.clone(),
            stop_reason: stop,
            usage,
        });
        RunOutcome {
            run_id,
            messages: written,
            stop_reason: stop,
            usage,
            error,
        }
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
        // what already arrived. Thinking and tool calls a model writes into its text are
        // shown as reasoning and not at all (`LiveTags`), as the finished reply will have them.
        let partial = Arc::new(Mutex::new(String::new()));
        let live = Arc::new(Mutex::new(LiveTags::new()));
        let show = {
            let events = events.clone();
            move |d: Delta| {
                let event = match d {
                    Delta::Text(t) if !classic => RunEvent::TextDelta { delta: t },
                    Delta::Text(t) | Delta::Reasoning(t) => RunEvent::ReasoningDelta { delta: t },
                };
                let _ = events.send(event);
            }
        };
        let on_delta = {
            let partial = partial.clone();
            let live = live.clone();
            let show = show.clone();
            move |d: Delta| match d {
                Delta::Text(t) => {
                    if let Ok(mut p) = partial.lock() {
                        p.push_str(&t);
                    }
                    let shown = live.lock().map(|mut l| l.push(&t)).unwrap_or_default();
                    shown.into_iter().for_each(&show);
                }
                reasoning => show(reasoning),
            }
        };

        let llm_started = Instant::now();
        let mut compacted_for_error = false;
        let mut asked_again = false;
        let limit = self.settings.step_time_limit;
        let mut response: ChatResponse = loop {
            // The output limit bounds a rambling model in tokens; this bounds it in time.
            if let Ok(mut l) = live.lock() {
                *l = LiveTags::new();
            }
            let call = tokio::time::timeout(limit, model.complete(&ctx.request, &on_delta));
            let result = tokio::select! {
                r = call => r.unwrap_or_else(|_| Err(reply::step_timeout_error(limit))),
                () = cancel.cancelled() => {
                    let text = partial.lock().map(|p| p.clone()).unwrap_or_default();
                    if text.is_empty() {
                        // Nothing arrived, but the prompt was sent: the run shows that it was.
                        usage.add_step(ctx.breakdown.total as u64, 0);
                        return Err(Error::Cancelled);
                    }
                    return self.commit_partial(&ctx, run_id, &step_id, index, text, "cancelled", started_at, started, events, usage);
                }
            };
            // A `<` held back in case it began a tag was text after all.
            let held = live.lock().map(|mut l| l.finish()).unwrap_or_default();
            held.into_iter().for_each(&show);
            match result {
                // A model that answered with nothing is asked once more: small models do this
                // now and then, and a second sample usually says something.
                Ok(r) if reply::says_nothing(&r) && !asked_again => {
                    asked_again = true;
                    tracing::info!(%agent_id, step = index, "the model answered with nothing; asking again");
                }
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
                Err(e) => {
                    // The server died mid-answer, or the step ran out of time: keep the part
                    // of the reply that arrived, then end the run with the error.
                    let text = partial.lock().map(|p| p.clone()).unwrap_or_default();
                    if !text.is_empty() {
                        self.commit_partial(
                            &ctx, run_id, &step_id, index, text, "error", started_at, started,
                            events, usage,
                        )?;
                    }
                    return Err(e.into());
                }
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

        // Minted here so a pending approval can name the message that made the call.
        let assistant_id = MessageId::new();
        if classic && reply::deliver_plain_text(&mut response, &allowed, &assistant_id) {
            tracing::info!(%agent_id, step = index, "classic loop: plain text delivered with send_message");
        }
        for call in &response.tool_calls {
            let _ = events.send(RunEvent::ToolCall { call: call.clone() });
        }
        let mut messages = vec![NewMessage {
            id: Some(assistant_id.clone()),
            ..NewMessage::assistant(
                response.content.clone(),
                response.reasoning.clone(),
                response.tool_calls.clone(),
            )
            .in_step(run_id, &step_id)
        }];
        let reranker = self.models.reranker();
        let mut tool_ctx =
            self.tool_context(&ctx, embedder, reranker.as_deref(), chrono::Utc::now());
        let mut pass = Pass {
            rules,
            events,
            cancel,
            run_id,
            step_id: &step_id,
            classic,
        };
        let mut answers =
            answer::answer_calls(&mut tool_ctx, &response.tool_calls, None, &mut pass).await;
        messages.extend(std::mem::take(&mut answers.messages));
        let next = answer::next_stop(
            &answers,
            !response.tool_calls.is_empty(),
            cancel.is_cancelled(),
            &pass,
            tool_ctx.now,
            &mut messages,
        );
        let effects = answers.effects;
        let approval = match &answers.waiting {
            Some(call) => ApprovalWrite::Request(PendingApproval {
                agent_id: agent_id.clone(),
                run_id: run_id.clone(),
                step_id: step_id.clone(),
                message_id: assistant_id.clone(),
                tool_call: call.clone(),
                requested_at: tool_ctx.now,
                server: None,
            }),
            None => ApprovalWrite::Keep,
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
            approval,
        };
        let committed = self.store.commit_step(&commit)?;
        let mut step_usage = Usage::default();
        step_usage.add_step(prompt_tokens, completion_tokens);
        usage.add_step(prompt_tokens, completion_tokens);
        announce::step(events, agent_id, &committed, step_usage);
        if answers.waiting.is_some() {
            announce::pending(&self.store, events, agent_id);
        }
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
                let alert = NewMessage::hidden(
                    MessageKind::Alert,
                    crate::prompts::memory_pressure_alert(percent),
                );
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

    /// Ends a step whose answer broke off (the user stopped it: `finish_reason` "cancelled"; the
    /// connection dropped: "error"): keeps the text that arrived as an assistant message (no
    /// tool calls, so nothing is left unanswered) and counts what was sent and what arrived,
    /// so a stopped run shows what it used.
    #[allow(clippy::too_many_arguments)]
    fn commit_partial(
        &self,
        ctx: &Context,
        run_id: &RunId,
        step_id: &StepId,
        index: u32,
        text: String,
        finish_reason: &str,
        started_at: Timestamp,
        started: Instant,
        events: &EventSink,
        usage: &mut Usage,
    ) -> Result<StepEnd> {
        let prompt_tokens = ctx.breakdown.total as u64;
        let completion_tokens = ctx.counter.count(&text) as u64;
        usage.add_step(prompt_tokens, completion_tokens);
        let step = Step {
            id: step_id.clone(),
            agent_id: ctx.agent.id.clone(),
            run_id: run_id.clone(),
            index,
            model: ctx.agent.llm.model.clone(),
            prompt_tokens,
            completion_tokens,
            finish_reason: Some(finish_reason.into()),
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
            approval: ApprovalWrite::Keep,
        };
        let committed = self.store.commit_step(&commit)?;
        let mut step_usage = Usage::default();
        step_usage.add_step(prompt_tokens, completion_tokens);
        announce::step(events, &ctx.agent.id, &committed, step_usage);
        Ok(StepEnd {
            messages: committed.messages,
            next: Some(StopReason::Cancelled),
            effects: Vec::new(),
        })
    }
}

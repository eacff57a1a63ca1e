//! A run from the user's message to its `Done` event: steps until one ends the run, then how
//! it ended, stored.

use super::LeaseHold;
use super::repeats::Repeats;
use super::runtime::Runtime;
use super::setup::{RunContext, Setup};
use super::turn::Turn;
use crate::EventSink;
use crate::outcome::RunOutcome;
use crate::reply;
use crate::rules::Rules;
use engram_core::{
    AgentId, Error, ErrorBody, LoopStyle, Message, NewMessage, Result, RunEvent, StopReason,
};
use tokio_util::sync::CancellationToken;

impl Runtime {
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
        agent_id: &engram_core::AgentId,
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
        self.run_checked(turn, input, async { Ok(()) }, events, cancel)
            .await
    }

    /// [`run_in`](Self::run_in) after `check`, a condition of the caller's (a trusted
    /// endpoint) read while the run reads its own: nothing is written when it fails, and its
    /// error comes before the run's. Errors as for `run`.
    pub async fn run_checked(
        &self,
        turn: &Turn,
        input: NewMessage,
        check: impl Future<Output = Result<()>>,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome> {
        let agent_id = turn.agent();
        let run_id = input.run_id.clone().unwrap_or_default();
        // Everything a run reads before it writes goes out at once (one round trip on a
        // database server), with a try for the lease, given back at once when the run
        // cannot start.
        let reads = async {
            let (checked, setup) = tokio::join!(check, self.setup_unless_waiting(agent_id));
            checked.and(setup)
        };
        let (setup, free) = tokio::join!(reads, self.try_lease(agent_id, &run_id));
        let mut setup = match setup {
            Ok(read) => read,
            Err(e) => {
                if let Ok(Some(hold)) = &free {
                    hold.release().await;
                }
                return Err(e);
            }
        };
        let hold = match free? {
            Some(hold) => hold,
            None => {
                // Another run holds the agent: wait for it, then read again (what it left,
                // such as a call waiting for approval, decides whether this run starts).
                let hold = self.take_lease(agent_id, &run_id).await?;
                match self.setup_unless_waiting(agent_id).await {
                    Ok(read) => setup = read,
                    Err(e) => {
                        hold.release().await;
                        return Err(e);
                    }
                }
                hold
            }
        };
        self.run_leased(setup, hold, run_id, input, events, cancel)
            .await
    }

    /// Takes the agent's lease in `turn` for `run`, for a caller that must change the
    /// conversation under it before the run starts (a rollback before a regenerate), then
    /// hands it to [`run_held`](Self::run_held): nothing from another replica can come in
    /// between. Errors: `AgentBusy` when another holder keeps it past the wait; the store's.
    pub async fn lease_for(&self, turn: &Turn, run: &engram_core::RunId) -> Result<LeaseHold> {
        self.take_lease(turn.agent(), run).await
    }

    /// [`run_in`](Self::run_in) under `hold`, a lease of the turn's agent taken with
    /// [`lease_for`](Self::lease_for) for the run `input.run_id` names (a new id when unset).
    /// Errors as for `run`; `Invalid` for a lease of another agent.
    pub async fn run_held(
        &self,
        turn: &Turn,
        hold: LeaseHold,
        input: NewMessage,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome> {
        let agent_id = turn.agent();
        if &hold.lease().agent_id != agent_id {
            return Err(Error::invalid("a run goes on under its own agent's lease"));
        }
        let setup = self.setup_unless_waiting(agent_id).await?;
        let run_id = input.run_id.clone().unwrap_or_default();
        self.run_leased(setup, hold, run_id, input, events, cancel)
            .await
    }

    /// The run's [setup](Self::setup), unless a call waits for approval (then a new message
    /// is refused: `Conflict`), with whether the context may need a repair (see
    /// `StepStore::needs_repair`). All are read at once (one round trip on a database
    /// server); the waiting call is the answer before any setup error.
    ///
    /// Read before the lease is held, the repair's answer stays true under it: tool calls are
    /// left open only by a crash or an imported file, never by a holder's commits (a step
    /// stores its calls with their results, a paused call is not open, and a dropped one has
    /// left the conversation).
    async fn setup_unless_waiting(&self, agent_id: &AgentId) -> Result<Setup> {
        let (waiting, setup, repair) = tokio::join!(
            self.store.pending_approval(agent_id),
            self.setup(agent_id),
            self.store.needs_repair(agent_id)
        );
        if let Some(p) = waiting? {
            return Err(p.blocks_new_message());
        }
        let setup = setup?;
        Ok(Setup {
            repair: repair?,
            ..setup
        })
    }

    /// The run itself, from its first event on, under `hold`.
    async fn run_leased(
        &self,
        setup: Setup,
        hold: LeaseHold,
        run_id: engram_core::RunId,
        input: NewMessage,
        events: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome> {
        let agent_id = &setup.agent.id.clone();
        let run = RunContext {
            setup: &setup,
            run_id,
            events,
            cancel,
            hold: &hold,
            rules: Rules::new(&setup.agent.tool_rules),
            usage: Default::default(),
        };
        run.emit(RunEvent::RunStarted {
            run_id: run.run_id.clone(),
            agent_id: agent_id.clone(),
        });
        if setup.repair {
            let repaired = self
                .store
                .repair_tool_calls(agent_id, chrono::Utc::now())
                .await?;
            if repaired > 0 {
                tracing::warn!(%agent_id, repaired, "answered tool calls left open by an interrupted run");
            }
        }
        let input = NewMessage {
            run_id: Some(run.run_id.clone()),
            ..input
        };
        let written = self.store.append_messages(agent_id, &[input]).await?;
        for m in &written {
            run.emit(RunEvent::Message { message: m.clone() });
        }
        Ok(self.drive(run, 1, written).await)
    }

    /// Takes steps `first..=max_steps` of the run until one ends it (at least one step, so a
    /// run resumed after an approval decision on its last step still lets the model read the
    /// result); `written` holds what the run committed so far. Always ends with a `Done`
    /// event.
    pub(crate) async fn drive(
        &self,
        mut run: RunContext<'_>,
        first: u32,
        mut written: Vec<Message>,
    ) -> RunOutcome {
        let agent_id = &run.setup.agent.id;
        let mut stop = StopReason::MaxSteps;
        let mut error = None;
        let mut repeats = Repeats::default();
        for index in first..=run.setup.agent.max_steps.max(first) {
            if run.cancel.is_cancelled() {
                stop = StopReason::Cancelled;
                break;
            }
            match self.step(&mut run, index).await {
                Ok(end) => {
                    written.extend(end.messages);
                    if let Some(reason) = end.next {
                        stop = reason;
                        break;
                    }
                    if repeats.only_repeats(&end.effects) {
                        tracing::warn!(%agent_id, step = index, "the model repeats itself; stopping the run");
                        stop = StopReason::NoProgress;
                        break;
                    }
                    repeats.record(end.effects);
                }
                Err(e) => {
                    stop = stop_reason_of(&e);
                    if !matches!(e, Error::Cancelled) {
                        tracing::warn!(%agent_id, error = %e, "run ended with an error");
                        error = Some(report(&run, &e));
                    }
                    break;
                }
            }
        }
        self.finish(run, stop, error, written).await
    }

    /// Ends a run: says why when it told the user nothing, stores how it ended (so a reload
    /// shows its usage line and "stopped" label), and emits `Done`.
    async fn finish(
        &self,
        run: RunContext<'_>,
        mut stop: StopReason,
        mut error: Option<ErrorBody>,
        written: Vec<Message>,
    ) -> RunOutcome {
        let agent = &run.setup.agent;
        // Never silence: an empty answer, a turn ended with memory edits only, or a model
        // stopped for repeating itself or at the step limit ends with an error that says why.
        let classic = agent.loop_style == LoopStyle::Classic;
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
                | StopReason::MaxSteps => Some(reply::no_answer_error(stop, agent.max_steps)),
                _ => None,
            };
            if let Some(e) = silent {
                tracing::warn!(agent_id = %agent.id, stop = stop.as_str(), "the run ended without a reply");
                error = Some(report(&run, &Error::from(e)));
            }
        }
        let record = engram_store::RunRecord {
            id: run.run_id.clone(),
            agent_id: agent.id.clone(),
            stop_reason: stop,
            error: error.clone(),
            usage: run.usage,
            ended_at: chrono::Utc::now(),
        };
        // Nothing commits under the lease any more: it goes back while the run's end is
        // stored.
        let (recorded, ()) = tokio::join!(self.store.record_run(&record), run.hold.release());
        if let Err(e) = recorded {
            tracing::warn!(agent_id = %agent.id, error = %e, "could not record how the run ended");
        }
        run.emit(RunEvent::Done {
            run_id: run.run_id.clone(),
            stop_reason: stop,
            usage: run.usage,
        });
        RunOutcome {
            run_id: run.run_id,
            messages: written,
            stop_reason: stop,
            usage: run.usage,
            error,
        }
    }
}

/// The stop reason of a run a step's error ended.
fn stop_reason_of(e: &Error) -> StopReason {
    match e {
        Error::Cancelled => StopReason::Cancelled,
        Error::Provider { .. } => StopReason::LlmApiError,
        _ => StopReason::Error,
    }
}

/// Tells the run's readers about `e`; returns what is stored with the run.
fn report(run: &RunContext<'_>, e: &Error) -> ErrorBody {
    let body = ErrorBody::from(e);
    run.emit(RunEvent::Error {
        error: body.clone(),
    });
    body
}

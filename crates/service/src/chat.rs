//! Runs: a service call that starts one (a message, a regenerate, an edit & resend, approval
//! decisions) returns its id and a stream of its events; the run lives in the one run
//! [`Registry`](crate::runs::Registry), where any transport can join it late, list it or stop
//! it by its id. Transports only forward the stream to their medium (a Tauri channel, SSE,
//! a terminal).

use crate::rooms::Runs;
use crate::runs::{Entry, RunEvents, RunningRun};
use crate::{Engram, Notice};
use engram_agent::{Claim, EventSink, RunOutcome};
use engram_core::{
    AgentId, ApprovalDecision, Error, MessageId, NewMessage, Result, RunEvent, RunId,
};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// What a run is asked to do.
#[derive(Clone, Debug, PartialEq)]
pub enum RunRequest {
    /// Send a user message.
    Message {
        /// Its text (not blank).
        text: String,
    },
    /// Roll back the agent's last turn and run it again (also "retry" after a failed run).
    Regenerate,
    /// Replace one of the user's messages and run from there (rolling back what followed).
    EditAndResend {
        /// The user message replaced.
        message_id: MessageId,
        /// Its new text (not blank).
        text: String,
    },
    /// Decide the calls waiting for approval, in order; each lets the paused run go on.
    Approvals {
        /// The decisions (at least one).
        decisions: Vec<ApprovalDecision>,
    },
}

/// A run started by [`Runs::start`]: its events, then its outcome.
#[derive(Debug)]
pub struct Run {
    /// The run's events, from its first on.
    pub events: RunEvents,
    outcome: Outcome,
}

#[derive(Debug)]
enum Outcome {
    Pending(oneshot::Receiver<Result<RunOutcome>>),
    Ready(Box<Result<RunOutcome>>),
}

impl Run {
    /// The run's id (the id its events and stored messages carry; cancel it with
    /// [`Runs::cancel`]).
    pub fn run_id(&self) -> &RunId {
        self.events.run_id()
    }

    /// Waits for the run to end (events nobody read are dropped) and returns how it ended.
    /// Errors: what stopped an approval decision after an earlier one ran (see
    /// [`RunRequest::Approvals`]); `Internal` if the run's task died.
    pub async fn outcome(self) -> Result<RunOutcome> {
        match self.outcome {
            Outcome::Ready(r) => *r,
            Outcome::Pending(rx) => rx
                .await
                .unwrap_or_else(|_| Err(Error::Internal("the run's task ended early".into()))),
        }
    }
}

impl Engram {
    /// The id the run will be stored under: a new one, or for approval decisions the paused
    /// run's (which goes on). Checks what needs no lock first.
    async fn run_id_for(&self, agent: &AgentId, request: &RunRequest) -> Result<RunId> {
        match request {
            RunRequest::Message { text } | RunRequest::EditAndResend { text, .. }
                if text.trim().is_empty() =>
            {
                Err(Error::invalid("the message is empty"))
            }
            RunRequest::Approvals { decisions } if decisions.is_empty() => {
                Err(Error::invalid("no approval decision was given"))
            }
            RunRequest::Approvals { .. } => self
                .backend
                .pending_approval(agent)
                .await?
                .map(|p| p.run_id)
                .ok_or_else(|| Error::not_found("pending approval", agent.as_str())),
            _ => Ok(RunId::new()),
        }
    }

    /// Registers the run, runs it and passes its events on; the registry entry goes when
    /// the run ends, however it ends.
    async fn run_as(
        &self,
        agent: &AgentId,
        run_id: RunId,
        request: RunRequest,
        events: &EventSink,
        cancel: CancellationToken,
    ) -> Result<RunOutcome> {
        // Claimed as it is registered: from here the agent is busy, for every check that
        // asks, before the run gets its turn.
        let claim = self.runtime.claim(agent)?;
        let entry = self.runs.register(agent, run_id.clone(), cancel.clone());
        let (tx, mut rx) = mpsc::unbounded_channel();
        let run = async {
            let outcome = self.execute(claim, run_id, request, &tx, &cancel).await;
            drop(tx);
            outcome
        };
        let forward = self.forward(agent, &entry, &mut rx, events);
        let (outcome, ()) = tokio::join!(run, forward);
        outcome
    }

    async fn execute(
        &self,
        claim: Claim,
        run_id: RunId,
        request: RunRequest,
        tx: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome> {
        let agent = &claim.agent().clone();
        let message = |text: String| NewMessage {
            run_id: Some(run_id.clone()),
            ..NewMessage::user(text)
        };
        match request {
            RunRequest::Message { text } => {
                let turn = claim.turn().await;
                let check = self.check_pending_endpoints(agent);
                self.runtime
                    .run_checked(&turn, message(text), check, tx, cancel)
                    .await
            }
            RunRequest::Regenerate => {
                let turn = self.turn_for_rewrite(claim).await?;
                let last = self.last_user_message(agent).await?;
                self.resend(&turn, &last.id, message(last.content), tx, cancel)
                    .await
            }
            RunRequest::EditAndResend { message_id, text } => {
                let turn = self.turn_for_rewrite(claim).await?;
                self.check_resendable(agent, &message_id).await?;
                self.resend(&turn, &message_id, message(text), tx, cancel)
                    .await
            }
            RunRequest::Approvals { decisions } => {
                // One turn for all the decisions, so no other run slips in between them.
                let turn = claim.turn().await;
                let mut merged: Option<RunOutcome> = None;
                for d in decisions {
                    let next = self
                        .runtime
                        .resolve_approval_in(&turn, d, tx, cancel)
                        .await?;
                    merged = Some(match merged {
                        None => next,
                        Some(mut m) => {
                            m.messages.extend(next.messages);
                            RunOutcome {
                                messages: m.messages,
                                ..next
                            }
                        }
                    });
                }
                merged.ok_or_else(|| Error::invalid("no approval decision was given"))
            }
        }
    }

    /// Passes a run's events on to `events`, telling other windows about the messages and
    /// memory edits it commits, and keeping what it streamed for readers that join late.
    async fn forward(
        &self,
        agent: &AgentId,
        entry: &Entry<'_>,
        rx: &mut mpsc::UnboundedReceiver<RunEvent>,
        events: &EventSink,
    ) {
        while let Some(event) = rx.recv().await {
            match &event {
                RunEvent::Message { message } => self.notify(Notice::MessagesChanged {
                    agent_id: message.agent_id.clone(),
                }),
                RunEvent::MemoryChanged { block, .. } => self.notify_block(&block.id).await,
                // The step has committed: its messages get vectors in the background, so the
                // turn never waits for the embedding model. A shared server fills in its
                // messages and passages a moment after the run is done, once for the runs
                // that end meanwhile (fewer reads of the database).
                RunEvent::Usage { .. } if !self.shared => self.spawn_backfill(agent),
                // The turn is over: the backlog may call for a sleep-time pass (in its own
                // task; the next message never waits for it).
                RunEvent::Done { .. } => {
                    if self.shared {
                        self.backfill_after_run(agent);
                    } else {
                        self.spawn_backfill(agent);
                    }
                    self.sleeper.after_run(agent);
                }
                _ => {}
            }
            entry.push(&event);
            // A caller that went away is no reason to stop: the history must stay whole.
            let _ = events.send(event);
        }
    }
}

impl Runs<'_> {
    /// Starts a run in a task of its own (it goes on when the caller goes away, so the stored
    /// conversation stays whole) and resolves once it started: with its first event in
    /// `events`, or with the error that kept it from starting. A run waiting for an earlier
    /// run of the same agent resolves when its turn comes.
    ///
    /// Errors (nothing written): `invalid_input` (blank text, no decision, nothing to
    /// regenerate, a message that is not one the user wrote); `not_found` (agent, message, no
    /// pending approval); `conflict` while a call waits for approval (for a message), or,
    /// for a regenerate or edit & resend, while another run of the agent is in flight or
    /// someone else changed a block the rolled-back turn edited; configuration errors (no
    /// provider, no key, `context_window_too_small`).
    pub async fn start(self, agent: &AgentId, request: RunRequest) -> Result<Run> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (done_tx, done_rx) = oneshot::channel();
        let engram = self.engram.handle()?;
        let owner = agent.clone();
        let run_id = self.engram.run_id_for(agent, &request).await?;
        let id = run_id.clone();
        tokio::spawn(async move {
            let outcome = engram
                .run_as(&owner, id, request, &tx, CancellationToken::new())
                .await;
            drop(tx);
            let _ = done_tx.send(outcome);
        });
        let (first, outcome) = match rx.recv().await {
            Some(first) => (Some(first), Outcome::Pending(done_rx)),
            // No event at all: the run could not start (or ended without a word).
            None => match done_rx.await {
                Ok(Err(e)) => return Err(e),
                Ok(ok) => (None, Outcome::Ready(Box::new(ok))),
                Err(_) => return Err(Error::Internal("the run's task ended early".into())),
            },
        };
        Ok(Run {
            events: RunEvents::new(run_id, agent.clone(), first, rx),
            outcome,
        })
    }

    /// Runs `request` to its end in the caller's task, streaming its events into `events`
    /// (and to every window that [attaches](Self::attach)); stop it with `cancel` or by its
    /// id. Errors as [`start`](Self::start); failures during the run are in the outcome.
    pub async fn request(
        self,
        agent: &AgentId,
        request: RunRequest,
        events: &EventSink,
        cancel: CancellationToken,
    ) -> Result<RunOutcome> {
        let run_id = self.engram.run_id_for(agent, &request).await?;
        self.engram
            .run_as(agent, run_id, request, events, cancel)
            .await
    }

    /// Sends a user message and runs the agent to the end of its turn, streaming into
    /// `events` ([`request`](Self::request) with [`RunRequest::Message`]).
    pub async fn send_message(
        self,
        agent: &AgentId,
        text: &str,
        events: &EventSink,
        cancel: CancellationToken,
    ) -> Result<RunOutcome> {
        let text = text.to_owned();
        self.request(agent, RunRequest::Message { text }, events, cancel)
            .await
    }

    /// Decides the agent's pending call and runs on, streaming into `events`: approved, the
    /// tool runs; denied, the model reads a `Failed` result with the reason. Errors:
    /// `not_found` when no call waits (`what` = `pending approval`); `invalid_input` when
    /// `decision.tool_call_id` names another call; `conflict` when the call left the
    /// conversation; configuration errors as for a message.
    pub async fn resolve_approval(
        self,
        agent: &AgentId,
        decision: ApprovalDecision,
        events: &EventSink,
        cancel: CancellationToken,
    ) -> Result<RunOutcome> {
        let request = RunRequest::Approvals {
            decisions: vec![decision],
        };
        self.request(agent, request, events, cancel).await
    }

    /// Joins the agent's run in flight (the oldest, when several are queued): its events so
    /// far, then the rest. `None` when the agent is not running.
    pub fn attach(self, agent: &AgentId) -> Option<RunEvents> {
        self.engram.runs.attach(|_, a| a == agent)
    }

    /// Joins run `run` while it is in flight; `None` once it ended (or for an unknown id).
    pub fn attach_id(self, run: &RunId) -> Option<RunEvents> {
        self.engram.runs.attach(|id, _| id == run)
    }

    /// Stops run `run` (what already arrived stays). Returns whether it was in flight.
    pub fn cancel(self, run: &RunId) -> bool {
        self.engram.runs.cancel(|id, _| id == run) > 0
    }

    /// Stops every run of the agent, also those queued for its turn. Returns how many.
    pub fn cancel_agent(self, agent: &AgentId) -> usize {
        self.cancel_agent_run(agent, None)
    }

    /// Stops the agent's run `run` when given (a run of another agent is left alone), else
    /// every run of the agent. Returns how many runs were told to stop.
    /// On a shared server the other replicas are told too, and stop the agent's runs they
    /// hold; the count is this replica's.
    pub fn cancel_agent_run(self, agent: &AgentId, run: Option<&RunId>) -> usize {
        if let Some(link) = &self.engram.link {
            link.cancel(agent, run);
        }
        self.engram
            .runs
            .cancel(|id, a| a == agent && run.is_none_or(|r| r == id))
    }

    /// Stops every run of every agent (each keeps what already arrived), e.g. before the
    /// process exits. Returns how many runs were told to stop.
    pub fn cancel_all(self) -> usize {
        self.engram.runs.cancel(|_, _| true)
    }

    /// The runs in flight or queued, oldest first: every agent's, or only `agent`'s.
    pub fn running(self, agent: Option<&AgentId>) -> Vec<RunningRun> {
        self.engram.runs.list(|a| agent.is_none_or(|x| x == a))
    }

    /// Whether the agent has a run in flight (or waiting its turn), or its conversation is
    /// being changed. The runtime's turns are the one record of it.
    pub fn is_running(self, agent: &AgentId) -> bool {
        self.engram.runtime.is_busy(agent)
    }
}

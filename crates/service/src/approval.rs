//! Tool calls a person approves (Letta's `requires_approval` rule): the per-agent "ask before
//! running" setting, the pending call, and the decision that lets the paused run go on.

use crate::{Engram, Notice};
use engram_agent::{EventSink, RunOutcome};
use engram_core::{
    Agent, AgentId, AgentPatch, ApprovalDecision, Error, PendingApproval, Result, RunEvent,
    ToolRule,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

impl Engram {
    /// Turns "ask before running" on or off for `tool` on the agent: adds or removes its
    /// `requires_approval` rule (other rules are kept). Works for any tool the agent has —
    /// built-in, Python or from an MCP server — as rules are keyed by tool name.
    /// Errors: `not_found` (agent); `invalid_input` when the tool is not attached to the agent.
    pub fn set_tool_approval(&self, agent: &AgentId, tool: &str, on: bool) -> Result<Agent> {
        let current = self.store.get_agent(agent)?;
        if !current.tools.iter().any(|t| t == tool) {
            return Err(Error::invalid(format!(
                "tool '{tool}' is not attached to agent '{}'; attach it first",
                current.name
            )));
        }
        let mut rules: Vec<ToolRule> = current
            .tool_rules
            .into_iter()
            .filter(|r| !matches!(r, ToolRule::RequiresApproval { tool_name } if tool_name == tool))
            .collect();
        if on {
            rules.push(ToolRule::RequiresApproval {
                tool_name: tool.to_owned(),
            });
        }
        let updated = self.store.update_agent(
            agent,
            &AgentPatch {
                tool_rules: Some(rules),
                ..Default::default()
            },
        )?;
        self.notify(Notice::AgentChanged {
            agent_id: agent.clone(),
        });
        Ok(updated)
    }

    /// The tool call the agent's run waits on, if any (stored: it survives a restart).
    /// Errors: `not_found`.
    pub fn pending_approval(&self, agent: &AgentId) -> Result<Option<PendingApproval>> {
        self.store.pending_approval(agent)
    }

    /// Decides the agent's pending call and runs on, streaming events into `events` as
    /// [`send_message`](Self::send_message) does (the run can be stopped the same ways).
    /// Approved, the tool runs; denied, the model reads a `Failed` result with the reason.
    /// Errors: `not_found` when no call waits (`what` = `pending approval`); `invalid_input`
    /// when `decision.tool_call_id` names another call; `conflict` when the call left the
    /// conversation; configuration errors as for `send_message`.
    pub async fn resolve_approval(
        &self,
        agent: &AgentId,
        decision: ApprovalDecision,
        events: &EventSink,
        cancel: CancellationToken,
    ) -> Result<RunOutcome> {
        let handle = self.register(agent, cancel);
        self.live.begin(agent, handle.id);
        let (tx, mut rx) = mpsc::unbounded_channel();
        let run = async {
            let outcome = self
                .runtime
                .resolve_approval(agent, decision, &tx, &handle.token)
                .await;
            drop(tx);
            outcome
        };
        let forward = self.forward(agent, handle.id, &mut rx, events);
        let (outcome, ()) = tokio::join!(run, forward);
        drop(handle);
        outcome
    }

    /// Passes a run's events on to `events`, telling other windows about the messages,
    /// memory edits and approvals it commits, and keeping what it streamed for windows that
    /// join it late ([`attach_run`](Self::attach_run)).
    pub(crate) async fn forward(
        &self,
        agent: &AgentId,
        run: u64,
        rx: &mut mpsc::UnboundedReceiver<RunEvent>,
        events: &EventSink,
    ) {
        while let Some(event) = rx.recv().await {
            match &event {
                RunEvent::Message { message } => self.notify(Notice::MessagesChanged {
                    agent_id: message.agent_id.clone(),
                }),
                RunEvent::MemoryChanged { block, .. } => self.notify_block(&block.id),
                // The step has committed: its messages get vectors in the background, so the
                // turn never waits for the embedding model.
                RunEvent::Usage { .. } | RunEvent::Done { .. } => self.spawn_backfill(agent),
                _ => {}
            }
            self.live.push(agent, run, &event);
            let _ = events.send(event);
        }
    }
}

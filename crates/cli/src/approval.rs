//! Tool calls waiting for a person, on the command line: `--approve-all` / `--deny-all` decide
//! them for scripts; without a flag a one-shot `engram chat` stops and names the call; the REPL
//! asks y/n (and a reason on no). `engram tool approval` sets the rule.

use crate::terminal::safe;
use anyhow::Result;
use engram_core::{AgentId, ApprovalDecision, PendingApproval, StopReason};
use engram_service::{Engram, RunOutcome, RunRequest};
use std::sync::Arc;

/// How a non-interactive chat answers calls that wait for approval.
#[derive(Clone, Debug)]
pub enum Policy {
    /// Stop and say which call waits.
    Ask,
    /// Approve every call.
    ApproveAll,
    /// Deny every call, with this reason.
    DenyAll(Option<String>),
}

impl Policy {
    /// The policy the flags ask for.
    pub fn from_flags(approve_all: bool, deny_all: bool, reason: Option<String>) -> Self {
        match (approve_all, deny_all) {
            (true, _) => Self::ApproveAll,
            (_, true) => Self::DenyAll(reason),
            _ => Self::Ask,
        }
    }

    fn decision(&self) -> Option<ApprovalDecision> {
        match self {
            Self::Ask => None,
            Self::ApproveAll => Some(ApprovalDecision {
                approve: true,
                ..Default::default()
            }),
            Self::DenyAll(reason) => Some(ApprovalDecision {
                approve: false,
                reason: reason.clone(),
                ..Default::default()
            }),
        }
    }
}

/// One line naming a waiting call: `tool(arguments) [tool_call_id]`, escaped for a terminal.
pub fn describe(p: &PendingApproval) -> String {
    format!(
        "{}({}) [{}]",
        safe(&p.tool_call.name),
        safe(&p.tool_call.arguments),
        safe(&p.tool_call.id)
    )
}

/// The error a one-shot chat ends with when a call waits and no flag decides it.
pub fn waiting_error(agent: &AgentId, p: &PendingApproval) -> anyhow::Error {
    anyhow::anyhow!(
        "the run is waiting for your approval of {}; decide it with `engram chat {agent} \
         --approve-all` or `--deny-all [--reason …]`, or in the interactive chat",
        describe(p)
    )
}

/// Decides waiting calls by `policy` until none waits (or `policy` is [`Policy::Ask`]),
/// appending each continuation's messages to `merged`. Errors: those of the service.
pub async fn settle(
    engram: &Arc<Engram>,
    agent: &AgentId,
    policy: &Policy,
    merged: &mut Option<RunOutcome>,
) -> Result<()> {
    while let Some(decision) = policy.decision() {
        if engram.runs().pending_approval(agent).await?.is_none() {
            break;
        }
        let request = RunRequest::Approvals {
            decisions: vec![decision],
        };
        let out = engram.runs().start(agent, request).await?.outcome().await?;
        merge(merged, out);
    }
    Ok(())
}

/// Adds a continuation to what a chat has done so far.
pub fn merge(merged: &mut Option<RunOutcome>, next: RunOutcome) {
    match merged {
        None => *merged = Some(next),
        Some(m) => {
            m.messages.extend(next.messages);
            m.stop_reason = next.stop_reason;
            m.usage.prompt_tokens += next.usage.prompt_tokens;
            m.usage.completion_tokens += next.usage.completion_tokens;
            m.usage.total_tokens += next.usage.total_tokens;
            m.usage.step_count += next.usage.step_count;
            m.error = next.error.or(m.error.take());
        }
    }
}

/// Asks on the terminal about a waiting call: `y` approves; anything else denies, after
/// asking for an optional reason. `None` when stdin closed.
pub async fn ask<R>(
    lines: &mut tokio::io::Lines<R>,
    p: &PendingApproval,
) -> Result<Option<ApprovalDecision>>
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    eprint!("  ? run {} — approve? [y/N] ", describe(p));
    let Some(answer) = lines.next_line().await? else {
        return Ok(None);
    };
    if matches!(answer.trim(), "y" | "Y" | "yes") {
        return Ok(Some(ApprovalDecision {
            tool_call_id: Some(p.tool_call.id.clone()),
            approve: true,
            reason: None,
        }));
    }
    eprint!("  reason (optional, Enter to skip): ");
    let reason = lines.next_line().await?.unwrap_or_default();
    Ok(Some(ApprovalDecision {
        tool_call_id: Some(p.tool_call.id.clone()),
        approve: false,
        reason: Some(reason.trim().to_owned()).filter(|r| !r.is_empty()),
    }))
}

/// Whether the run ended waiting for a person's decision.
pub fn is_waiting(outcome: &RunOutcome) -> bool {
    outcome.stop_reason == StopReason::RequiresApproval
}

/// Sets "ask before running" for `tool` on `agent` and prints the result.
pub async fn set_rule(engram: &Engram, agent: &str, tool: &str, on: bool) -> Result<()> {
    let agent = engram
        .tools()
        .set_approval(&AgentId::from(agent), tool, on)
        .await?;
    println!(
        "{}: {} {}",
        safe(&agent.name),
        safe(tool),
        if on {
            "asks before running"
        } else {
            "runs without asking"
        }
    );
    Ok(())
}

//! Answering a step's tool calls, in the model's order, and what the loop does next.
//!
//! Shared by a fresh step and by the continuation after a person decided a call that waited
//! for approval. Calls run one after another; the first call of a tool under a
//! `requires_approval` rule stops the pass: it and every call after it stay unanswered until a
//! person decides (one call at a time), so results are always stored in the order the model
//! made the calls, and nothing after a call the person may deny has run on the assumption
//! that it ran. Calls before it have run and are answered in the same commit.

use crate::EventSink;
use crate::prompts;
use crate::rules::Rules;
use crate::tools::{self, ToolContext, ToolOutput};
use engram_core::approval::denied_message;
use engram_core::run::format_time;
use engram_core::{
    ApprovalDecision, MessageKind, NewMessage, RunEvent, RunId, StepId, StopReason, ToolCall,
    ToolReturn, ToolRule, ToolStatus,
};
use tokio_util::sync::CancellationToken;

/// What answering a step's calls gave.
#[derive(Debug, Default)]
pub(crate) struct Answers {
    /// One tool message per answered call, in call order.
    pub messages: Vec<NewMessage>,
    /// Classic loop: some call asked for a heartbeat.
    pub heartbeat: bool,
    /// Some call failed (or was refused or denied).
    pub failed: bool,
    /// `send_message` ran.
    pub replied: bool,
    /// An `exit_loop` rule fired.
    pub terminal: bool,
    /// A `continue_loop` rule fired.
    pub keep_going: bool,
    /// `(call id, effect)` of each answered call, for the no-progress check.
    pub effects: Vec<(String, String)>,
    /// The call that waits for a person; it and the calls after it are unanswered.
    pub waiting: Option<ToolCall>,
}

/// Where a pass of answers is written and reported.
pub(crate) struct Pass<'a> {
    pub rules: &'a mut Rules,
    pub events: &'a EventSink,
    pub cancel: &'a CancellationToken,
    pub run_id: &'a RunId,
    pub step_id: &'a StepId,
    pub classic: bool,
}

/// Answers `calls` in order. `decision`, when given, is a person's answer to `calls[0]` (the
/// call that waited); a later call that needs approval stops the pass (see the module docs).
pub(crate) async fn answer_calls(
    tool_ctx: &mut ToolContext<'_>,
    calls: &[ToolCall],
    mut decision: Option<ApprovalDecision>,
    pass: &mut Pass<'_>,
) -> Answers {
    let mut a = Answers::default();
    let (agent, now) = (tool_ctx.agent, tool_ctx.now);
    for call in calls {
        let decided = decision.take();
        let fail = |why: String| ToolOutput {
            result: ToolReturn::failed(why, now),
            heartbeat: false,
            reply: None,
        };
        // Every call gets exactly one result, also when the run is being cancelled.
        let out = if pass.cancel.is_cancelled() {
            fail("The run was cancelled before this tool ran.".into())
        } else if let Err(why) = pass.rules.check(&call.name) {
            fail(why)
        } else {
            match decided {
                Some(d) if !d.approve => fail(denied_message(d.reason.as_deref())),
                Some(_) => run(tool_ctx, call, pass.rules, &mut a).await,
                None if needs_approval(&agent.tool_rules, &agent.tools, &call.name) => {
                    a.waiting = Some(call.clone());
                    break;
                }
                None => run(tool_ctx, call, pass.rules, &mut a).await,
            }
        };
        let _ = pass.events.send(RunEvent::ToolResult {
            tool_call_id: call.id.clone(),
            name: call.name.clone(),
            status: out.result.status,
            message: out.result.message.clone(),
        });
        if let Some(reply) = &out.reply {
            a.replied = true;
            if pass.classic {
                let _ = pass.events.send(RunEvent::TextDelta {
                    delta: reply.clone(),
                });
            }
        }
        a.heartbeat |= out.heartbeat;
        a.failed |= out.result.status == ToolStatus::Failed;
        a.effects.push((
            call.id.clone(),
            format!(
                "{}\u{0}{}\u{0}{:?}\u{0}{}",
                call.name, call.arguments, out.result.status, out.result.message
            ),
        ));
        a.messages.push(
            NewMessage::tool(&call.id, &call.name, out.result.to_json())
                .in_step(pass.run_id, pass.step_id),
        );
    }
    a
}

/// Whether a call of `name` waits for a person: an attached tool under a `requires_approval`
/// rule (a call of a tool the agent does not have fails at once instead).
fn needs_approval(rules: &[ToolRule], attached: &[String], name: &str) -> bool {
    ToolRule::requires_approval(rules, name) && attached.iter().any(|t| t == name)
}

async fn run(
    tool_ctx: &mut ToolContext<'_>,
    call: &ToolCall,
    rules: &mut Rules,
    a: &mut Answers,
) -> ToolOutput {
    let out = tools::execute(tool_ctx, call).await;
    let after = rules.record(&call.name);
    a.terminal |= after.terminal;
    a.keep_going |= after.keep_going;
    out
}

/// What the loop does after a step whose calls were answered: `None` takes another step
/// (in the classic loop after appending the hidden heartbeat message to `messages`), `Some`
/// ends the run. `had_calls` is whether the model called any tool in the step.
pub(crate) fn next_stop(
    a: &Answers,
    had_calls: bool,
    cancelled: bool,
    pass: &Pass<'_>,
    now: engram_core::Timestamp,
    messages: &mut Vec<NewMessage>,
) -> Option<StopReason> {
    let (heartbeat, failed, keep_going) = (a.heartbeat, a.failed, a.keep_going);
    if cancelled {
        Some(StopReason::Cancelled)
    } else if a.waiting.is_some() {
        Some(StopReason::RequiresApproval)
    } else if pass.classic {
        if !had_calls {
            Some(StopReason::NoToolCall)
        } else if a.terminal && (heartbeat || failed || keep_going) {
            Some(StopReason::ToolRule)
        } else if heartbeat || failed || keep_going {
            let reason = if failed && !heartbeat {
                prompts::HEARTBEAT_AFTER_FAILURE
            } else {
                prompts::HEARTBEAT_REQUESTED
            };
            let content = serde_json::json!({"type": "heartbeat", "reason": reason, "time": format_time(now)});
            messages.push(
                NewMessage::hidden(MessageKind::Heartbeat, content.to_string())
                    .in_step(pass.run_id, pass.step_id),
            );
            None
        } else {
            Some(StopReason::EndTurn)
        }
    } else if !had_calls || (a.replied && !heartbeat && !keep_going) {
        Some(StopReason::EndTurn)
    } else if a.terminal {
        Some(StopReason::ToolRule)
    } else {
        None
    }
}

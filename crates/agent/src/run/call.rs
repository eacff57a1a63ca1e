//! One step's model call: the reply streams out as it comes, a reply of nothing is asked
//! for once more, a context window the provider finds too full is compacted once, and the
//! step's time limit and the cancel switch can end it, keeping the text that arrived.

use super::runtime::Runtime;
use super::setup::RunContext;
use crate::calibrate;
use crate::compact;
use crate::context::{self, Context};
use crate::reply;
use engram_core::error::ProviderFault;
use engram_core::{Error, LoopStyle, Result, RunEvent};
use engram_providers::{ChatResponse, Delta, LiveTags};
use std::sync::{Arc, Mutex};

/// How a model call ended.
pub(super) enum Called {
    /// A whole reply.
    Reply(ChatResponse),
    /// The reply broke off after some text arrived: the user stopped it (`error: None`) or
    /// the connection or the time limit ended it. The text is kept as the step's answer.
    BrokenOff { text: String, error: Option<Error> },
}

impl Runtime {
    /// Calls the model with `ctx`'s request, streaming its deltas to the run's readers.
    /// `ctx` is reloaded when the call compacts the conversation. Errors: the provider's or
    /// the time limit's error, or `Cancelled`, when nothing arrived before.
    pub(super) async fn call_model(
        &self,
        run: &mut RunContext<'_>,
        ctx: &mut Context,
        index: u32,
    ) -> Result<Called> {
        let agent_id = &run.setup.agent.id;
        let model = &*run.setup.model;
        let classic = ctx.agent.loop_style == LoopStyle::Classic;
        // Deltas stream out as they come; the text is also kept so a reply that breaks off
        // keeps what already arrived. Thinking and tool calls a model writes into its text
        // are shown as reasoning and not at all (`LiveTags`), as the finished reply will
        // have them.
        let partial = Arc::new(Mutex::new(String::new()));
        let live = Arc::new(Mutex::new(LiveTags::new()));
        let show = {
            let events = run.events.clone();
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
        let arrived = || partial.lock().map(|p| p.clone()).unwrap_or_default();

        let mut compacted_for_error = false;
        let mut asked_again = false;
        let limit = self.settings.step_time_limit;
        loop {
            // The output limit bounds a rambling model in tokens; this bounds it in time.
            if let Ok(mut l) = live.lock() {
                *l = LiveTags::new();
            }
            let call = tokio::time::timeout(limit, model.complete(&ctx.request, &on_delta));
            let result = tokio::select! {
                r = call => r.unwrap_or_else(|_| Err(reply::step_timeout_error(limit))),
                () = run.cancel.cancelled() => {
                    let text = arrived();
                    if text.is_empty() {
                        // Nothing arrived, but the prompt was sent: the run shows that it was.
                        run.usage.add_step(ctx.breakdown.total as u64, 0);
                        return Err(Error::Cancelled);
                    }
                    return Ok(Called::BrokenOff { text, error: None });
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
                Ok(r) => return Ok(Called::Reply(r)),
                // Our count said it fits but the provider disagrees, so our count is off. An
                // estimated count learns from it (the provider's ratio is at least window /
                // estimate); either way, halve what was sent (or reach the usual target, if
                // that is smaller), once.
                Err(e) if e.fault == ProviderFault::ContextLength && !compacted_for_error => {
                    compacted_for_error = true;
                    if !ctx.counter.is_exact() {
                        calibrate::refused(
                            self.store(),
                            &ctx.agent.llm.model,
                            &ctx.counter,
                            ctx.breakdown.total,
                            ctx.breakdown.context_window,
                        )
                        .await;
                        *ctx = context::load(
                            self.store(),
                            self.folders.as_deref(),
                            agent_id,
                            chrono::Utc::now(),
                            true,
                        )
                        .await?;
                    }
                    let target = self.target_tokens(ctx).min(ctx.breakdown.total / 2);
                    compact::compact(self.store(), model, ctx, target, &self.settings).await?;
                    *ctx = context::load(
                        self.store(),
                        self.folders.as_deref(),
                        agent_id,
                        chrono::Utc::now(),
                        true,
                    )
                    .await?;
                }
                // The server died mid-answer, or the step ran out of time: the part of the
                // reply that arrived is kept, then the run ends with the error.
                Err(e) => {
                    let text = arrived();
                    if text.is_empty() {
                        return Err(e.into());
                    }
                    return Ok(Called::BrokenOff {
                        text,
                        error: Some(e.into()),
                    });
                }
            }
        }
    }
}

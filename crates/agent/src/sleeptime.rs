//! The sleep-time pass: a short agent loop of its own that reads what was said since the last
//! pass and tidies the primary agent's memory while nobody waits for it.
//!
//! It has its own instructions ([`SLEEPTIME_SYSTEM`]), its own tools
//! (`tools::sleeptime`), a step limit and a time limit, and may use another model than the
//! chat. Nothing is written while it runs: block edits queue as versioned operations and
//! archival changes as [`PassageOp`](engram_store::PassageOp)s, and all of them are written in one transaction when it
//! finishes (`SleeptimeRows::commit_pass`). A pass whose model call fails, that runs out of time or
//! budget, or whose process dies, leaves memory as it was; only a record of the failure is
//! written (none when the process died).

use crate::Runtime;
use crate::tools::ToolContext;
use crate::tools::sleeptime::{self, PassState, SLEEPTIME_TOOLS};
use engram_core::{
    AgentId, Block, Message, MessageKind, PassId, PassStatus, PassTrigger, Result, Role,
    SleeptimePass, SleeptimeSettings, ToolReturn,
};
use engram_providers::{ChatMessage, ChatRequest, ToolChoice};
use engram_store_api::{PassCommit, SeqOrder};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Messages one pass reads at most; a longer backlog is read by the passes after it.
pub const MAX_MESSAGES_READ: usize = 200;

/// Characters of one message shown to the sleep-time agent at most.
const MAX_MESSAGE_CHARS: usize = 2_000;

/// The sleep-time agent's instructions (Engram's own words).
pub const SLEEPTIME_SYSTEM: &str = "You tend the memory of another agent while it is not \
talking to anyone. Below are its memory blocks and the part of its conversation you have not \
seen yet. Make its memory accurate, short and free of repetition:
- When the conversation shows a fact has changed (a move, a new job, a changed plan), put the \
new fact in the block in place of the old one; never keep both.
- Remove lines that say the same thing twice. Keep the user's own words for names and details.
- Move detail that crowds a block into archival memory with archival_memory_insert.
- When an archival passage states something that is no longer true, call archival_supersede \
with the new fact; when several passages say the same thing, call archival_merge. Search first \
to find passage ids. Nothing is deleted: replaced passages stay as history.
- Change only what the conversation supports; do not invent facts.
Prefer memory_replace for small changes and memory_rethink to rewrite a whole block. Call \
finish when memory is tidy, or at once when nothing needs changing.";

/// What a pass is asked to do.
#[derive(Clone, Debug)]
pub struct PassRequest {
    /// The id the pass is recorded under.
    pub pass_id: PassId,
    /// The primary agent whose memory is tended.
    pub agent_id: AgentId,
    /// What started it.
    pub trigger: PassTrigger,
    /// The agent's sleep-time settings (model, step and time limits).
    pub settings: SleeptimeSettings,
    /// Tokens the pass may spend before the budget runs out (`None`: no budget); a pass that
    /// passes it ends and writes nothing.
    pub token_allowance: Option<u64>,
}

/// The model a pass calls and the settings it calls it with (the pass's own, or the agent's).
#[derive(Clone, Copy)]
struct PassModel<'a> {
    llm: &'a engram_core::LlmConfig,
    client: &'a dyn engram_providers::ChatModel,
}

/// What a pass has used so far: model calls and tokens (for its record and its budget).
struct Tally {
    model_calls: u32,
    prompt_tokens: u64,
    completion_tokens: u64,
}

/// The conversation as the sleep-time agent reads it: user and assistant text and the tools
/// the assistant called, one line group per message, each cut to a readable length.
fn transcript(messages: &[Message]) -> String {
    let mut out = String::new();
    for m in messages {
        if m.kind != MessageKind::Chat {
            continue;
        }
        let who = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
            _ => continue,
        };
        let mut text: String = m.content.chars().take(MAX_MESSAGE_CHARS).collect();
        for c in &m.tool_calls {
            let args: String = c.arguments.chars().take(300).collect();
            text.push_str(&format!("\n  [called {}({args})]", c.name));
        }
        if text.trim().is_empty() {
            continue;
        }
        out.push_str(&format!("{who}: {text}\n"));
    }
    out
}

/// The blocks as the sleep-time agent reads them.
fn render_blocks(blocks: &[Block]) -> String {
    blocks
        .iter()
        .map(|b| {
            format!(
                "<{label} chars=\"{}/{}\"{}>\n{}\n</{label}>",
                b.chars(),
                b.limit,
                if b.read_only { " read_only" } else { "" },
                b.value,
                label = b.label
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Runtime {
    /// Runs one sleep-time pass over `req.agent_id`'s memory and records it: on success its
    /// changes are written in one transaction (see the module docs); on a model failure, a
    /// timeout, cancellation or an exhausted token allowance nothing is written but a record
    /// with status `failed` and the reason. Does not check budgets or whether passes are on
    /// (the service does).
    ///
    /// Errors: `NotFound("agent")`; configuration errors resolving the pass's model (nothing is
    /// recorded then); storage errors.
    pub async fn sleeptime_pass(
        &self,
        req: &PassRequest,
        cancel: &CancellationToken,
    ) -> Result<SleeptimePass> {
        let started_at = chrono::Utc::now();
        let agent = self.store().get_agent(&req.agent_id).await?;
        let llm = req
            .settings
            .llm
            .clone()
            .unwrap_or_else(|| agent.llm.clone());
        let model = self.models.chat_model(&llm)?;
        let last_seq = self.store().last_read_seq(&agent.id).await?;
        let read = self
            .store()
            .page_messages(
                &agent.id,
                Some(last_seq),
                None,
                MAX_MESSAGES_READ,
                SeqOrder::Asc,
            )
            .await?;
        let blocks = self.store().agent_blocks(&agent.id).await?;
        let mut pass_agent = agent.clone();
        pass_agent.tools = SLEEPTIME_TOOLS.iter().map(|s| (*s).to_owned()).collect();
        let mut ctx = ToolContext {
            agent: &pass_agent,
            store: self.store(),
            folders: None,
            read_versions: blocks.iter().map(|b| (b.id.clone(), b.version)).collect(),
            blocks,
            writes: Vec::new(),
            passages: Vec::new(),
            embedder: None,
            reranker: None,
            now: started_at,
            custom: &[],
            python: self.python(),
            mcp: None,
        };
        let mut state = PassState {
            seen: ctx
                .blocks
                .iter()
                .map(|b| (b.id.clone(), b.value.clone()))
                .collect(),
            ..PassState::default()
        };
        let mut tally = Tally {
            model_calls: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
        };
        let limit = Duration::from_secs(u64::from(req.settings.timeout_secs));
        let called = PassModel {
            llm: &llm,
            client: &*model,
        };
        let work = self.pass_loop(req, called, &read, &mut ctx, &mut state, &mut tally);
        let failure = tokio::select! {
            r = tokio::time::timeout(limit, work) => match r {
                Ok(r) => r.err(),
                Err(_) => Some(format!("the pass took longer than {} s", req.settings.timeout_secs)),
            },
            () = cancel.cancelled() => Some("the pass was cancelled".to_owned()),
        };
        let mut pass = SleeptimePass {
            id: req.pass_id.clone(),
            agent_id: agent.id.clone(),
            trigger: req.trigger,
            status: PassStatus::Done,
            reason: None,
            model: llm.model.clone(),
            started_at,
            ended_at: chrono::Utc::now(),
            messages_read: u32::try_from(read.len()).unwrap_or(u32::MAX),
            last_seq: read.last().map_or(last_seq, |m| m.seq),
            model_calls: tally.model_calls,
            prompt_tokens: tally.prompt_tokens,
            completion_tokens: tally.completion_tokens,
            cost_usd: None,
            changes: Vec::new(),
        };
        if let Some(reason) = failure {
            tracing::warn!(agent_id = %agent.id, %reason, "sleep-time pass wrote nothing");
            pass.status = PassStatus::Failed;
            pass.reason = Some(reason);
            self.store().record_pass(&pass).await?;
            return Ok(pass);
        }
        self.store()
            .commit_pass(&PassCommit {
                pass,
                block_writes: ctx.writes,
                passage_ops: state.passage_ops,
            })
            .await
    }

    /// The pass's steps: call the model, run its tool calls, until it finishes, stops calling
    /// tools or reaches the step limit. `Err` is why the pass must write nothing.
    async fn pass_loop(
        &self,
        req: &PassRequest,
        PassModel { llm, client }: PassModel<'_>,
        read: &[Message],
        ctx: &mut ToolContext<'_>,
        state: &mut PassState,
        tally: &mut Tally,
    ) -> std::result::Result<(), String> {
        let conversation = transcript(read);
        let mut messages = vec![
            ChatMessage::System {
                content: SLEEPTIME_SYSTEM.to_owned(),
            },
            ChatMessage::User {
                content: format!(
                    "Memory blocks:\n{}\n\nConversation since the last pass ({} messages):\n{}",
                    render_blocks(&ctx.blocks),
                    read.len(),
                    if conversation.is_empty() {
                        "(nothing new)\n".to_owned()
                    } else {
                        conversation
                    }
                ),
            },
        ];
        for _ in 0..req.settings.max_steps {
            let request = ChatRequest {
                model: llm.model_name().to_owned(),
                messages: messages.clone(),
                tools: sleeptime::specs(),
                tool_choice: ToolChoice::Auto,
                max_tokens: llm.max_tokens,
                temperature: llm.temperature,
                stream: false,
            };
            tally.model_calls += 1;
            let response = client
                .complete(&request, &|_| {})
                .await
                .map_err(|e| format!("the model call failed: {e}"))?;
            if let Some(u) = response.usage {
                tally.prompt_tokens += u.prompt_tokens;
                tally.completion_tokens += u.completion_tokens;
            }
            if let Some(allowance) = req.token_allowance
                && tally.prompt_tokens + tally.completion_tokens > allowance
            {
                return Err(
                    "the pass ran over its budget (its tokens, or what the money left buys at its model's price)"
                        .to_owned(),
                );
            }
            if response.tool_calls.is_empty() {
                return Ok(());
            }
            messages.push(ChatMessage::Assistant {
                content: response.content.clone(),
                tool_calls: response.tool_calls.clone(),
            });
            ctx.now = chrono::Utc::now();
            for call in &response.tool_calls {
                let out =
                    sleeptime::execute(ctx, state, &call.name, &call.id, &call.arguments).await;
                let envelope = match out {
                    Ok(m) => ToolReturn::ok(m, ctx.now),
                    Err(m) => ToolReturn::failed(m, ctx.now),
                };
                messages.push(ChatMessage::Tool {
                    tool_call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: envelope.to_json(),
                });
            }
            if state.finished {
                return Ok(());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_core::{MessageId, ToolCall};

    fn message(role: Role, content: &str) -> Message {
        Message {
            id: MessageId::new(),
            agent_id: AgentId::from("agent-1"),
            seq: 1,
            role,
            kind: MessageKind::Chat,
            content: content.to_owned(),
            reasoning: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_name: None,
            run_id: None,
            step_id: None,
            in_context: true,
            created_at: chrono::Utc::now(),
        }
    }

    #[test]
    fn the_transcript_keeps_what_was_said_and_the_tools_called() {
        let mut reply = message(Role::Assistant, "Noted.");
        reply.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "core_memory_append".into(),
            arguments: r#"{"label":"human","content":"moved to Porto"}"#.into(),
        });
        let text = transcript(&[
            message(Role::User, "I moved to Porto"),
            reply,
            message(Role::Tool, "{\"status\":\"OK\"}"),
        ]);
        assert_eq!(
            text,
            "user: I moved to Porto\nassistant: Noted.\n  [called core_memory_append({\"label\":\"human\",\"content\":\"moved to Porto\"})]\n"
        );
    }
}

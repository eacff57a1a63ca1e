//! The compiled context window as the model will receive it on the next call: the request the
//! agent loop builds (`engram_agent::Context`), not a re-creation of it, with token counts
//! per part — what Letta's ADE shows as the "context window" view.

use crate::rooms::Agents;
use engram_agent::ContextBreakdown;
use engram_core::{AgentId, Result, ToolCall};
use engram_providers::ChatMessage;
use serde::Serialize;

/// One message of the next request, in the order it is sent.
#[derive(Clone, Debug, PartialEq, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct ContextMessage {
    /// `system`, `user`, `assistant` or `tool`, as sent to the provider.
    pub role: String,
    /// What the part is: `system` (instructions and compiled memory), `summary` (the recursive
    /// summary of evicted messages) or `message` (an in-context message).
    pub part: String,
    /// The text sent.
    pub content: String,
    /// An assistant message's tool calls.
    pub tool_calls: Vec<ToolCall>,
    /// A tool result's call id.
    pub tool_call_id: Option<String>,
    /// A tool result's tool name.
    pub name: Option<String>,
    /// Its size in **tokens**, as the context meter counts it.
    #[ts(type = "number")]
    pub tokens: usize,
}

/// One tool schema of the next request.
#[derive(Clone, Debug, PartialEq, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct ContextTool {
    /// The tool's name.
    pub name: String,
    /// The description the model reads.
    pub description: String,
    /// The JSON Schema of its arguments.
    #[ts(type = "unknown")]
    pub parameters: serde_json::Value,
    /// Its schema's size in **tokens**.
    #[ts(type = "number")]
    pub tokens: usize,
}

/// Everything the model receives on the agent's next call, by part.
#[derive(Clone, Debug, PartialEq, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct ContextView {
    /// The model name sent to the provider (without the `provider/` prefix).
    pub model: String,
    /// Sampling temperature sent, if set.
    pub temperature: Option<f32>,
    /// Completion-token cap sent, if set.
    pub max_tokens: Option<u32>,
    /// The messages, in order: system, summary (if any), then the in-context messages.
    pub messages: Vec<ContextMessage>,
    /// The tool schemas.
    pub tools: Vec<ContextTool>,
    /// Tokens per part and the model's context window, as the meter shows them.
    pub breakdown: ContextBreakdown,
}

impl Agents<'_> {
    /// The agent's next request exactly as the loop would send it (the new user message aside),
    /// with token counts per message, per tool and per part. Errors: `not_found`.
    pub async fn context_view(self, agent: &AgentId) -> Result<ContextView> {
        let ctx = self.engram.runtime.context(agent).await?;
        let has_summary = ctx.agent.summary.is_some();
        let messages = ctx
            .request
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let part = match i {
                    0 => "system",
                    1 if has_summary => "summary",
                    _ => "message",
                };
                view_message(m, part, ctx.counter.count_message(m))
            })
            .collect();
        let tools = ctx
            .request
            .tools
            .iter()
            .map(|t| ContextTool {
                name: t.name.clone(),
                description: t.description.clone(),
                parameters: t.parameters.clone(),
                tokens: ctx.counter.count_tools(std::slice::from_ref(t)),
            })
            .collect();
        Ok(ContextView {
            model: ctx.request.model.clone(),
            temperature: ctx.request.temperature,
            max_tokens: ctx.request.max_tokens,
            messages,
            tools,
            breakdown: ctx.breakdown,
        })
    }
}

fn view_message(m: &ChatMessage, part: &str, tokens: usize) -> ContextMessage {
    let (role, content, tool_calls, tool_call_id, name) = match m {
        ChatMessage::System { content } => ("system", content, Vec::new(), None, None),
        ChatMessage::User { content } => ("user", content, Vec::new(), None, None),
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => ("assistant", content, tool_calls.clone(), None, None),
        ChatMessage::Tool {
            tool_call_id,
            name,
            content,
        } => (
            "tool",
            content,
            Vec::new(),
            Some(tool_call_id.clone()),
            Some(name.clone()),
        ),
    };
    ContextMessage {
        role: role.to_owned(),
        part: part.to_owned(),
        content: content.clone(),
        tool_calls,
        tool_call_id,
        name,
        tokens,
    }
}

impl Agents<'_> {
    /// The agent's context window as its next call would see it, by part (tokens).
    pub async fn context_breakdown(
        self,
        agent: &AgentId,
    ) -> Result<engram_agent::ContextBreakdown> {
        Ok(self.engram.runtime.context(agent).await?.breakdown)
    }
}

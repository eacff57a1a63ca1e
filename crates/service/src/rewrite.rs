//! The rest of what Letta's SDKs ask of a server, as service calls: agent tags, counts,
//! message and passage edits, and resetting an agent's context window. Every transport gets
//! the same behaviour (REST today; the UI and CLI can call the same methods).

use crate::{Engram, Notice};
use engram_core::{
    AgentId, Error, LoopStyle, Message, MessageId, Passage, PassageId, Result, Role,
};
use serde_json::json;

impl Engram {
    /// The agent's tags, in order. Errors: `not_found` for an unknown agent.
    pub fn agent_tags(&self, agent: &AgentId) -> Result<Vec<String>> {
        self.store.get_agent(agent)?;
        self.store.agent_tags(agent)
    }

    /// Replaces the agent's tags (order kept; duplicates and blank tags dropped).
    /// Errors: `not_found`.
    pub fn set_agent_tags(&self, agent: &AgentId, tags: &[String]) -> Result<()> {
        self.store.set_agent_tags(agent, tags)?;
        self.notify(Notice::AgentChanged {
            agent_id: agent.clone(),
        });
        Ok(())
    }

    /// `(messages, passages)`: how many messages the agent's recall memory holds and how many
    /// passages its archival memory holds. Errors: `not_found`.
    pub fn memory_counts(&self, agent: &AgentId) -> Result<(u64, u64)> {
        self.store.memory_counts(agent)
    }

    /// Rewrites a user, assistant or system message's text (Letta's message modify): the model
    /// sees the new text from its next step, recall search finds it. `reasoning`, when given,
    /// replaces the reasoning of an assistant message. In the classic loop an assistant's reply
    /// is the `message` argument of its `send_message` call, so that is what `content` rewrites
    /// there (the call keeps its id, so its tool result still answers it). Tool results cannot
    /// be rewritten.
    ///
    /// Errors: `not_found` (agent or message); `invalid_input` for a tool message; `conflict`
    /// while a run of the agent is in flight (an edit holds the agent's turn, the lock every
    /// run and rollback holds, so a running step never sees its context change under it).
    pub fn edit_message(
        &self,
        agent: &AgentId,
        id: &MessageId,
        content: Option<&str>,
        reasoning: Option<&str>,
    ) -> Result<Message> {
        let style = self.store.get_agent(agent)?.loop_style;
        // Held to the write, as delete and reset do: no run can start or step meanwhile.
        let turn = self
            .runtime
            .try_turn(agent)?
            .ok_or_else(|| Error::Conflict("the agent is answering; stop the run first".into()))?;
        let current = self.store.get_message(id)?;
        if current.agent_id != *agent {
            return Err(Error::not_found("message", id.as_str()));
        }
        if current.role == Role::Tool {
            return Err(Error::invalid(
                "tool results cannot be rewritten; edit a user, assistant or system message",
            ));
        }
        let mut text = current.content.clone();
        let mut calls = None;
        if let Some(new) = content {
            let speaks = current.role == Role::Assistant
                && style == LoopStyle::Classic
                && current.tool_calls.iter().any(|c| c.name == "send_message");
            if speaks {
                let mut rewritten = current.tool_calls.clone();
                for c in rewritten.iter_mut().filter(|c| c.name == "send_message") {
                    let mut args: serde_json::Value =
                        serde_json::from_str(&c.arguments).unwrap_or_else(|_| json!({}));
                    args["message"] = json!(new);
                    c.arguments = args.to_string();
                }
                calls = Some(rewritten);
            } else {
                new.clone_into(&mut text);
            }
        }
        let m = self
            .store
            .update_message_text(agent, id, &text, reasoning, calls.as_deref())?;
        drop(turn);
        self.notify(Notice::MessagesChanged {
            agent_id: agent.clone(),
        });
        // The new text lost the old vector (a trigger); its own comes in the background.
        self.spawn_backfill(agent);
        Ok(m)
    }

    /// Empties the agent's context window (Letta's reset messages). The messages stay in
    /// recall memory; the summary of the old window is dropped (and a call waiting for
    /// approval with it). Returns how many messages left the window.
    /// Errors: `not_found`; `conflict` while a run of the agent is in flight.
    pub fn reset_messages(&self, agent: &AgentId) -> Result<usize> {
        // Held to the change, so no run's steps see their context emptied under them.
        let turn = self
            .runtime
            .try_turn(agent)?
            .ok_or_else(|| Error::Conflict("the agent is answering; stop the run first".into()))?;
        let n = self.store.reset_context(agent)?;
        drop(turn);
        self.notify(Notice::MessagesChanged {
            agent_id: agent.clone(),
        });
        Ok(n)
    }

    /// Changes a passage's text and/or tags (Letta's passage modify). A new text is embedded
    /// again when the agent has an embedding model, before anything is written; text, tags
    /// and vector are written in one transaction.
    ///
    /// Errors: `not_found` (agent or passage); `invalid_input` for blank text. An embedding
    /// outage is not an error: the passage keeps its new text without a vector (a notice says
    /// so) until the backfill embeds it.
    pub async fn edit_passage(
        &self,
        agent: &AgentId,
        id: &PassageId,
        text: Option<&str>,
        tags: Option<Vec<String>>,
    ) -> Result<Passage> {
        self.store.get_agent(agent)?;
        // New text gets a new vector; if the model cannot give one now, the old vector is
        // dropped (it described the old text) and the backfill fills it in later.
        let embedding = match text {
            Some(t) if !t.trim().is_empty() => self
                .vectors_for_storing(agent, &[t.to_owned()])
                .await?
                .and_then(|mut v| v.pop()),
            _ => None,
        };
        let p =
            self.store
                .update_passage(agent, id, text, tags.as_deref(), embedding.as_deref())?;
        if embedding.is_some() {
            self.spawn_backfill(agent);
        }
        self.notify(Notice::ArchivalChanged {
            agent_id: agent.clone(),
        });
        Ok(p)
    }
}

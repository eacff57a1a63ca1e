//! Recall memory as people see and change it: paging with message-id cursors, as Letta's list
//! endpoints do, windows of the conversation for a chat that jumps (to the start, a date, a
//! search hit), searching, editing a message and resetting the context window.
//! Every page is one indexed SQL range read (see `engram_store::MessageRows::page`).

use crate::Notice;
use crate::rooms::Recall;
use engram_core::{AgentId, Error, LoopStyle, Message, MessageId, Result, Role};
use engram_store::{MessageHit, MessageQuery, MessageWindow, SeqOrder, WindowAt};
use serde_json::json;

/// The most messages one window or page may hold; larger requests are cut to it.
pub const MAX_PAGE: usize = 1000;

/// Which way a page runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// Oldest first.
    Asc,
    /// Newest first.
    #[default]
    Desc,
}

/// A page of an agent's messages, relative to cursors. `after` and `before` are message ids
/// read in the page's own order: with [`Order::Desc`], `after` means older than that message.
#[derive(Clone, Debug, Default)]
pub struct MessagePage {
    /// Only messages that come after this one in `order`.
    pub after: Option<MessageId>,
    /// Only messages that come before this one in `order`.
    pub before: Option<MessageId>,
    /// At most this many messages (at least 1).
    pub limit: usize,
    /// The order of the page.
    pub order: Order,
}

impl Recall<'_> {
    /// One page of the agent's messages (every kind, hidden ones included), in `page.order`:
    /// the page nearest the `after` cursor (or the start of that order, without one). Letta's
    /// `GET /v1/agents/{id}/messages?after=&before=&limit=&order=`.
    ///
    /// Errors: `not_found` for an unknown agent or a cursor that is not one of its messages.
    pub async fn page(self, agent: &AgentId, page: &MessagePage) -> Result<Vec<Message>> {
        let after = self.seq_of(agent, page.after.as_ref()).await?;
        let before = self.seq_of(agent, page.before.as_ref()).await?;
        // Seq bounds, both exclusive, whatever the order.
        let (lower, upper, order) = match page.order {
            Order::Asc => (after, before, SeqOrder::Asc),
            Order::Desc => (before, after, SeqOrder::Desc),
        };
        self.engram
            .backend
            .page_messages(agent, lower, upper, page.limit.max(1), order)
            .await
    }

    /// Where the cursor `id` sits in the agent's conversation. Errors: `not_found` for a
    /// message that is not one of the agent's.
    async fn seq_of(self, agent: &AgentId, id: Option<&MessageId>) -> Result<Option<i64>> {
        let Some(id) = id else { return Ok(None) };
        Ok(Some(self.get(agent, id).await?.seq))
    }

    /// Scrolling back through a chat: the `limit` messages just older than `before` (the
    /// newest ones without it), oldest first. Errors as [`page`](Self::page).
    pub async fn before(
        self,
        agent: &AgentId,
        before: Option<&MessageId>,
        limit: usize,
    ) -> Result<Vec<Message>> {
        // In newest-first order, the messages older than `before` come *after* it.
        let page = MessagePage {
            after: before.cloned(),
            before: None,
            limit,
            order: Order::Desc,
        };
        let mut messages = self.page(agent, &page).await?;
        messages.reverse();
        Ok(messages)
    }

    /// A window of at most `limit` messages (1 to [`MAX_PAGE`]) of the agent's conversation at
    /// `at` (the newest, the start, before/after/around a message, or a date), oldest first,
    /// with whether more lie on either side and the compaction dividers inside it. What the
    /// chat window pages with.
    ///
    /// Errors: `not_found` for an unknown agent or a message id that is not one of its own.
    pub async fn window(
        self,
        agent: &AgentId,
        at: &WindowAt,
        limit: usize,
    ) -> Result<MessageWindow> {
        self.engram
            .backend
            .message_window(agent, at, limit.clamp(1, MAX_PAGE))
            .await
    }

    /// One of the agent's messages. Errors: `not_found` for an unknown message or one that
    /// belongs to another agent.
    pub async fn get(self, agent: &AgentId, id: &MessageId) -> Result<Message> {
        let m = self.engram.backend.get_message(id).await?;
        if m.agent_id != *agent {
            return Err(engram_core::Error::not_found("message", id.as_str()));
        }
        Ok(m)
    }

    /// The ids of the messages in the agent's context window, oldest first (Letta's
    /// `message_ids` of an agent state). Errors: `not_found` for an unknown agent.
    pub async fn in_context_ids(self, agent: &AgentId) -> Result<Vec<MessageId>> {
        Ok(self
            .engram
            .backend
            .in_context_messages(agent)
            .await?
            .into_iter()
            .map(|m| m.id)
            .collect())
    }
}

impl Recall<'_> {
    /// Searches recall memory (every message the agent ever had) as the agent's
    /// `conversation_search` does: BM25 fused with vector similarity when the agent has an
    /// embedding model (roles and dates filter first; scores in `0..=1` as in archival
    /// search). When the model cannot embed the query the search answers by words alone at
    /// once, after an `EmbeddingsUnavailable` notice. Errors: `not_found` for the agent.
    pub async fn search(self, agent: &AgentId, query: &MessageQuery) -> Result<Vec<MessageHit>> {
        self.engram.backend.get_agent(agent).await?;
        let embedding = self.engram.query_vector(agent, &query.query).await;
        engram_retrieval::hybrid::messages(
            &*self.engram.backend,
            agent,
            query,
            embedding.as_deref(),
        )
        .await
    }

    /// Pages through the conversation: the `limit` messages before `before_seq`, oldest first.
    /// Errors: `not_found` for the agent.
    pub async fn list(
        self,
        agent: &AgentId,
        before_seq: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Message>> {
        let mut newest = self
            .engram
            .backend
            .page_messages(agent, None, before_seq, limit, SeqOrder::Desc)
            .await?;
        newest.reverse();
        Ok(newest)
    }
}

impl Recall<'_> {
    /// Rewrites a user, assistant or system message's text (Letta's message modify): the model
    /// sees the new text from its next step, recall search finds it. `reasoning`, when given,
    /// replaces the reasoning of an assistant message. In the classic loop an assistant's reply
    /// is the `message` argument of its `send_message` call, so that is what `content` rewrites
    /// there (the call keeps its id, so its tool result still answers it). Tool results cannot
    /// be rewritten.
    ///
    /// Errors: `not_found` (agent or message); `invalid_input` for a tool message; `conflict`
    /// while a run of the agent is in flight (an edit holds the agent's turn, the lock every
    /// run and rollback holds, so a running step never sees its context change under it);
    /// `agent_busy` while a run on another replica goes on past the lease wait.
    pub async fn edit(
        self,
        agent: &AgentId,
        id: &MessageId,
        content: Option<&str>,
        reasoning: Option<&str>,
    ) -> Result<Message> {
        let style = self.engram.backend.get_agent(agent).await?.loop_style;
        // Held to the write, as delete and reset do: no run can start or step meanwhile.
        let turn =
            self.engram.runtime.try_turn(agent)?.ok_or_else(|| {
                Error::Conflict("the agent is answering; stop the run first".into())
            })?;
        let current = self.get(agent, id).await?;
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
        let hold = self.engram.lease_for_change(&turn).await?;
        let m = self
            .engram
            .backend
            .update_message_text(
                Some(hold.lease()),
                agent,
                id,
                &text,
                reasoning,
                calls.as_deref(),
            )
            .await;
        hold.release().await;
        drop(turn);
        let m = m?;
        self.engram.notify(Notice::MessagesChanged {
            agent_id: agent.clone(),
        });
        // The new text lost the old vector (a trigger); its own comes in the background.
        self.engram.spawn_backfill(agent);
        Ok(m)
    }

    /// Empties the agent's context window (Letta's reset messages). The messages stay in
    /// recall memory; the summary of the old window is dropped (and a call waiting for
    /// approval with it). Returns how many messages left the window.
    /// Errors: `not_found`; `conflict` while a run of the agent is in flight here;
    /// `agent_busy` while one on another replica goes on past the lease wait.
    pub async fn reset(self, agent: &AgentId) -> Result<usize> {
        // Held to the change, so no run's steps see their context emptied under them.
        let turn =
            self.engram.runtime.try_turn(agent)?.ok_or_else(|| {
                Error::Conflict("the agent is answering; stop the run first".into())
            })?;
        let hold = self.engram.lease_for_change(&turn).await?;
        let n = self
            .engram
            .backend
            .reset_context(Some(hold.lease()), agent)
            .await;
        hold.release().await;
        drop(turn);
        let n = n?;
        self.engram.notify(Notice::MessagesChanged {
            agent_id: agent.clone(),
        });
        Ok(n)
    }
}

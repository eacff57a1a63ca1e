//! Paging through recall memory with message-id cursors, as Letta's list endpoints do, and
//! windows of the conversation for a chat that jumps (to the start, a date, a search hit).
//! Every page is one indexed SQL range read (see `engram_store::Store::page_messages`).

use crate::Engram;
use engram_core::{AgentId, Message, MessageId, Result};
use engram_store::{MessageWindow, SeqOrder, WindowAt};

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

impl Engram {
    /// One page of the agent's messages (every kind, hidden ones included), in `page.order`:
    /// the page nearest the `after` cursor (or the start of that order, without one). Letta's
    /// `GET /v1/agents/{id}/messages?after=&before=&limit=&order=`.
    ///
    /// Errors: `not_found` for an unknown agent or a cursor that is not one of its messages.
    pub fn page_messages(&self, agent: &AgentId, page: &MessagePage) -> Result<Vec<Message>> {
        let seq_of = |id: &MessageId| self.store.message_seq(agent, id);
        let after = page.after.as_ref().map(seq_of).transpose()?;
        let before = page.before.as_ref().map(seq_of).transpose()?;
        // Seq bounds, both exclusive, whatever the order.
        let (lower, upper, order) = match page.order {
            Order::Asc => (after, before, SeqOrder::Asc),
            Order::Desc => (before, after, SeqOrder::Desc),
        };
        self.store
            .page_messages(agent, lower, upper, page.limit.max(1), order)
    }

    /// Scrolling back through a chat: the `limit` messages just older than `before` (the
    /// newest ones without it), oldest first. Errors as [`page_messages`](Self::page_messages).
    pub fn messages_before(
        &self,
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
        let mut messages = self.page_messages(agent, &page)?;
        messages.reverse();
        Ok(messages)
    }

    /// A window of at most `limit` messages (1 to [`MAX_PAGE`]) of the agent's conversation at
    /// `at` (the newest, the start, before/after/around a message, or a date), oldest first,
    /// with whether more lie on either side and the compaction dividers inside it. What the
    /// chat window pages with.
    ///
    /// Errors: `not_found` for an unknown agent or a message id that is not one of its own.
    pub fn message_window(
        &self,
        agent: &AgentId,
        at: &WindowAt,
        limit: usize,
    ) -> Result<MessageWindow> {
        self.store
            .message_window(agent, at, limit.clamp(1, MAX_PAGE))
    }

    /// One of the agent's messages. Errors: `not_found` for an unknown message or one that
    /// belongs to another agent.
    pub fn get_message(&self, agent: &AgentId, id: &MessageId) -> Result<Message> {
        let m = self.store.get_message(id)?;
        if m.agent_id != *agent {
            return Err(engram_core::Error::not_found("message", id.as_str()));
        }
        Ok(m)
    }

    /// The ids of the messages in the agent's context window, oldest first (Letta's
    /// `message_ids` of an agent state). Errors: `not_found` for an unknown agent.
    pub fn in_context_message_ids(&self, agent: &AgentId) -> Result<Vec<MessageId>> {
        Ok(self
            .store
            .in_context_messages(agent)?
            .into_iter()
            .map(|m| m.id)
            .collect())
    }
}

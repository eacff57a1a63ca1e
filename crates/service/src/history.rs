//! Paging through recall memory with message-id cursors, as Letta's list endpoints do.

use crate::Engram;
use engram_core::{AgentId, Error, Message, MessageId, Result};

/// How many stored messages one backwards walk reads at a time.
const WALK_CHUNK: usize = 512;

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
    /// At most this many messages.
    pub limit: usize,
    /// The order of the page.
    pub order: Order,
}

impl Engram {
    /// One page of the agent's messages (every kind, hidden ones included), in `page.order`.
    /// The page nearest the `after` cursor is returned (or the start, without one).
    ///
    /// Errors: `not_found` for an unknown agent or a cursor that is not one of its messages.
    pub fn page_messages(&self, agent: &AgentId, page: &MessagePage) -> Result<Vec<Message>> {
        self.store.get_agent(agent)?;
        let seq_of = |id: &MessageId| -> Result<i64> {
            let m = self.store.get_message(id)?;
            if m.agent_id != *agent {
                return Err(Error::not_found("message", id.as_str()));
            }
            Ok(m.seq)
        };
        let after = page.after.as_ref().map(seq_of).transpose()?;
        let before = page.before.as_ref().map(seq_of).transpose()?;
        // Seq bounds, both exclusive, whatever the order.
        let (lower, upper) = match page.order {
            Order::Asc => (after, before),
            Order::Desc => (before, after),
        };
        let limit = page.limit.max(1);
        match page.order {
            Order::Desc => {
                let mut newest = self.store.list_messages(agent, upper, limit)?;
                newest.retain(|m| lower.is_none_or(|l| m.seq > l));
                newest.reverse();
                Ok(newest)
            }
            Order::Asc => {
                let mut range = self.walk_back(agent, lower, upper)?;
                range.truncate(limit);
                Ok(range)
            }
        }
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

    /// Every message with `lower < seq < upper`, oldest first, read backwards from `upper` in
    /// chunks (the store pages by "before"; cost is the size of the range).
    fn walk_back(
        &self,
        agent: &AgentId,
        lower: Option<i64>,
        upper: Option<i64>,
    ) -> Result<Vec<Message>> {
        let mut chunks: Vec<Vec<Message>> = Vec::new();
        let mut cursor = upper;
        loop {
            let mut chunk = self.store.list_messages(agent, cursor, WALK_CHUNK)?;
            let full = chunk.len() == WALK_CHUNK;
            let first = chunk.first().map(|m| m.seq);
            chunk.retain(|m| lower.is_none_or(|l| m.seq > l));
            let reached_lower = matches!((first, lower), (Some(f), Some(l)) if f <= l);
            chunks.push(chunk);
            match first {
                Some(f) if full && !reached_lower => cursor = Some(f),
                _ => break,
            }
        }
        Ok(chunks.into_iter().rev().flatten().collect())
    }
}

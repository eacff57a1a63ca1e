//! Windows of the conversation: a run of an agent's messages around a place a reader jumps to
//! (the newest, the start, a message, a date), with whether more lie on either side and the
//! compactions (where older messages were folded into the summary) that fall inside it. What
//! the chat window pages with; every backend reads them with [`MessageStore::message_window`]
//! and cuts them with the rules here.
//!
//! [`MessageStore::message_window`]: crate::MessageStore::message_window

use engram_core::{Message, MessageId, Timestamp};
use serde::{Deserialize, Serialize};

/// A place in the history where older messages left the context window and were folded into
/// the agent's recursive summary (MemGPT's "recursive summary"; Letta keeps only the newest).
/// One row per compaction, written in the same transaction as the eviction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct Compaction {
    /// The `seq` of the newest message folded in: the divider goes right after it.
    #[ts(type = "number")]
    pub seq: i64,
    /// The summary as it stood after this compaction (it covers everything folded so far).
    pub summary: String,
    /// How many messages this compaction took out of the context window.
    pub evicted: u32,
    /// When it happened.
    pub created_at: Timestamp,
}

/// Where a [`MessageWindow`] is taken.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[ts(export)]
pub enum WindowAt {
    /// The newest messages (what a chat opens on).
    Latest,
    /// The first messages the agent ever had.
    Start,
    /// The messages just older than this one (scrolling up).
    Before {
        /// A message of the agent.
        id: MessageId,
    },
    /// The messages just newer than this one (scrolling down after a jump).
    After {
        /// A message of the agent.
        id: MessageId,
    },
    /// This message with about half the window on either side (opening a search hit).
    Around {
        /// A message of the agent.
        id: MessageId,
    },
    /// The first message written at or after this time, with context on either side (a jump
    /// to a date). After the last message: the newest messages.
    Date {
        /// RFC 3339 time.
        at: Timestamp,
    },
}

/// A contiguous run of an agent's messages, oldest first, and what lies beyond it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct MessageWindow {
    /// The messages, oldest first (every kind, hidden loop messages included).
    pub messages: Vec<Message>,
    /// Whether older messages exist before the first one.
    pub has_older: bool,
    /// Whether newer messages exist after the last one.
    pub has_newer: bool,
    /// The message the window was taken for (`Around`, `Date`), to show highlighted.
    pub anchor: Option<MessageId>,
    /// Compactions whose divider falls inside the window (`seq` from the first message's to
    /// the last's, both included), oldest first.
    pub compactions: Vec<Compaction>,
}

impl MessageWindow {
    /// A window of `messages` (oldest first) without an anchor or compactions yet.
    pub fn of(messages: Vec<Message>, has_older: bool, has_newer: bool) -> Self {
        Self {
            messages,
            has_older,
            has_newer,
            anchor: None,
            compactions: Vec::new(),
        }
    }

    /// The window centred on one message, `limit` (at least 1) messages in all, from what was
    /// read on either side of it: `before`, up to `limit - 1` messages older than it (oldest
    /// first) and whether more lie beyond them; `after`, up to `limit` messages from it on
    /// (oldest first, it included) and whether more lie beyond. Near either end of the history
    /// the other side fills the window. The anchor is the first of `after`.
    pub fn around(
        mut before: Vec<Message>,
        more_before: bool,
        mut after: Vec<Message>,
        more_after: bool,
        limit: usize,
    ) -> Self {
        let limit = limit.max(1);
        let half = (limit - 1) / 2;
        let take_before = before
            .len()
            .min(half.max(limit.saturating_sub(after.len())));
        let take_after = after.len().min(limit - take_before);
        let has_older = more_before || take_before < before.len();
        let has_newer = more_after || take_after < after.len();
        before.drain(..before.len() - take_before);
        after.truncate(take_after);
        let anchor = after.first().map(|m| m.id.clone());
        before.extend(after);
        Self {
            messages: before,
            has_older,
            has_newer,
            anchor,
            compactions: Vec::new(),
        }
    }

    /// Cuts a page read one past `limit` (`page`, in its read order) to `limit` and says
    /// whether there was more.
    pub fn cut(mut page: Vec<Message>, limit: usize) -> (Vec<Message>, bool) {
        let more = page.len() > limit;
        page.truncate(limit);
        (page, more)
    }
}

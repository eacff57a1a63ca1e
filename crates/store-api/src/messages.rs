//! Recall memory: every message an agent ever had, in the order it was written, with a words
//! search over it.

use crate::{
    CandidateDepth, MessageQuery, MessageVector, MessageWindow, Ranker, UnembeddedMessage, WindowAt,
};
use async_trait::async_trait;
use engram_core::{AgentId, Message, MessageHit, MessageId, NewMessage, Result, Role, Timestamp};

/// Distance between the `seq` numbers of consecutive appended messages. The gap leaves room to
/// slot a message in later right after another (e.g. the repaired result of an interrupted tool
/// call) without renumbering the history.
pub const SEQ_GAP: i64 = 1024;

/// Which way a page of messages runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SeqOrder {
    /// Oldest first (ascending `seq`).
    Asc,
    /// Newest first (descending `seq`).
    #[default]
    Desc,
}

/// A words search over one agent's messages ([`MessageStore::search_messages`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MessageSearch {
    /// Free text; its words are chosen by [`query_words`](crate::query_words). Blank: the
    /// newest messages passing the filters, each with score 0. Text without letters or digits
    /// matches nothing.
    pub query: String,
    /// Only these roles; empty means user, assistant and tool (system text is searched only
    /// when [`Role::System`] is listed).
    pub roles: Vec<Role>,
    /// Only messages written at or after this time.
    pub start: Option<Timestamp>,
    /// Only messages written at or before this time.
    pub end: Option<Timestamp>,
    /// At most this many hits.
    pub limit: usize,
}

impl MessageSearch {
    /// A search for `query` with no filters, at most `limit` hits.
    pub fn new(query: impl Into<String>, limit: usize) -> Self {
        Self {
            query: query.into(),
            limit,
            ..Self::default()
        }
    }

    /// The roles searched: [`roles`](Self::roles), or user, assistant and tool when empty.
    pub fn roles(&self) -> &[Role] {
        const DEFAULT: [Role; 3] = [Role::User, Role::Assistant, Role::Tool];
        if self.roles.is_empty() {
            &DEFAULT
        } else {
            &self.roles
        }
    }
}

/// A row a words search found, with its relevance.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit<T> {
    /// The row.
    pub item: T,
    /// Relevance in `0..=1`, higher is better: the backend's full-text score as a share of the
    /// best hit's (so the best hit has 1). Comparable within one search only; 0 for every row
    /// of a blank query.
    pub score: f64,
}

impl<T> Hit<T> {
    /// Hits from rows with their raw full-text scores (higher is better), best first: each
    /// score becomes its share of the first (best) one, or 0 when that is not positive.
    pub fn from_ranked(ranked: impl IntoIterator<Item = (T, f64)>) -> Vec<Hit<T>> {
        let mut best = None;
        ranked
            .into_iter()
            .map(|(item, raw)| {
                let top = *best.get_or_insert(raw);
                let score = if top > 0.0 { raw / top } else { 0.0 };
                Hit { item, score }
            })
            .collect()
    }
}

/// Recall memory: an agent's messages, each with a `seq` that places it in the agent's history.
///
/// Guarantees, beyond each method's docs:
/// - **An append is one transaction**: every message of the batch is stored, or none is.
/// - **`seq` is strictly increasing per agent**, across every connection, process or replica:
///   an append holds the agent (the SQLite write lock, a PostgreSQL row lock on the agent) from
///   reading the last `seq` until it commits, so concurrent appends queue and each batch gets a
///   contiguous run of numbers, [`SEQ_GAP`] apart, after everything committed before it.
/// - **Ids are unique** across all agents: appending a message with an id that exists (or twice
///   in one batch) is a `Conflict` and writes nothing.
/// - **Messages go with their agent**: deleting an agent deletes its messages.
///
/// The words search matches messages holding any of the query's words in their content, their
/// reasoning or the arguments of their tool calls (stemmed: "gardening" finds "garden"), and
/// never finds hidden loop messages (heartbeats, alerts). The ranking is each engine's own —
/// BM25 over the agent's own messages on SQLite, `ts_rank` (term frequency over log length) on
/// PostgreSQL — so a message holding more of the words, or holding them more densely, comes
/// first on both, but the order of near-equal hits may differ between backends.
#[async_trait]
pub trait MessageStore: Send + Sync {
    /// Appends `msgs` after the agent's last message, in one transaction, in context, with
    /// `seq` numbers [`SEQ_GAP`] apart (the first [`SEQ_GAP`] above the last stored one, or
    /// [`SEQ_GAP`] for an agent without messages). Keeps [`NewMessage::id`] and
    /// [`NewMessage::created_at`] when given (times truncated to microseconds); mints ids and
    /// stamps the time of the write otherwise. Returns the messages as stored, in `msgs` order.
    ///
    /// Errors: `NotFound("agent")`; `Conflict` when a given id exists (nothing written).
    async fn append_messages(&self, agent: &AgentId, msgs: &[NewMessage]) -> Result<Vec<Message>>;

    /// One message, of any agent. Errors: `NotFound("message", id)`.
    async fn get_message(&self, id: &MessageId) -> Result<Message>;

    /// A page of the agent's messages with `after_seq < seq < before_seq` (each bound exclusive
    /// and optional), at most `limit`, in `order`: the page nearest `after_seq` when ascending,
    /// nearest `before_seq` when descending. To scroll back from the newest, ask `Desc` with
    /// `before_seq` the oldest `seq` seen so far; to read forward, `Asc` with `after_seq` the
    /// newest seen.
    ///
    /// Errors: `NotFound("agent")`.
    async fn page_messages(
        &self,
        agent: &AgentId,
        after_seq: Option<i64>,
        before_seq: Option<i64>,
        limit: usize,
        order: SeqOrder,
    ) -> Result<Vec<Message>>;

    /// How many messages the agent has (every kind, in context or not).
    ///
    /// Errors: `NotFound("agent")`.
    async fn count_messages(&self, agent: &AgentId) -> Result<u64>;

    /// A window of at most `limit` (at least 1) messages at `at`, oldest first, with whether
    /// more lie on either side and the compactions inside it (see [`crate::window`]'s rules).
    /// All its reads share one snapshot.
    ///
    /// Errors: `NotFound("agent")`; `NotFound("message", id)` for a cursor that is not one of
    /// the agent's messages.
    async fn message_window(
        &self,
        agent: &AgentId,
        at: &WindowAt,
        limit: usize,
    ) -> Result<MessageWindow>;

    /// Up to `q.limit` of the agent's messages matching `q`, best first (see the trait docs);
    /// for a blank query the newest first, each with score 0.
    ///
    /// Errors: `NotFound("agent")`.
    async fn search_messages(
        &self,
        agent: &AgentId,
        q: &MessageSearch,
    ) -> Result<Vec<Hit<Message>>>;

    /// The primitive of recall search: reads the candidates of `q` over the agent's whole
    /// history (in context or not; see [`Candidates`](crate::Candidates)), `depth` deep on each side, hands them
    /// to `rank` and returns the messages of the ranking it gives back, in its order, with its
    /// scores. Roles (user, assistant and tool when `q.roles` is empty), kinds and dates are
    /// filtered before the depth; hidden loop messages (heartbeats, alerts) are never
    /// candidates. The lexical side holds the messages with any of the query's words, best
    /// first, each with its neighbours (the messages just before and after it, within 30
    /// minutes, passing the filters); the vector side, with `embedding` (the query's vector from
    /// the agent's current embedding model), the cosine of the messages with a stored vector of
    /// that model. A blank query lists the newest matching messages (score 0) and text without
    /// words finds nothing without a vector, both without calling `rank`.
    ///
    /// Errors: `NotFound("agent")`; `Invalid` for an empty or non-finite query vector.
    async fn rank_messages(
        &self,
        agent: &AgentId,
        q: &MessageQuery,
        embedding: Option<&[f32]>,
        depth: CandidateDepth,
        rank: Ranker<'_>,
    ) -> Result<Vec<MessageHit>>;

    /// Up to `limit` of the agent's messages that need a vector of its current embedding
    /// model ([`embeddable_text`](crate::embeddable_text)'s candidates: user and assistant
    /// chat messages) and have none, in the order they were written, after cursor `after`
    /// (`None` from the start). Empty when the agent has no embedding model.
    ///
    /// Errors: `NotFound("agent")`.
    async fn messages_without_vectors(
        &self,
        agent: &AgentId,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<UnembeddedMessage>>;

    /// How many of the agent's messages need a vector of its current embedding model and have
    /// none (0 without a model). Errors: `NotFound("agent")`.
    async fn count_messages_without_vectors(&self, agent: &AgentId) -> Result<u64>;

    /// Stores vectors of `model` for the agent's messages in one transaction, replacing a
    /// vector of another model. A vector is stored only while the agent's embedding model is
    /// still `model` and the message still has the text it was computed from (an edit, a
    /// deleted message or a model change meanwhile wins): nothing at all when the model
    /// changed. An entry with empty text and vector marks a message with nothing to embed.
    /// Returns how many were stored.
    ///
    /// Errors: `NotFound("agent")`; `Invalid` for a non-finite vector, or an empty one for
    /// non-empty text (nothing is stored then).
    async fn fill_message_vectors(
        &self,
        agent: &AgentId,
        model: &str,
        filled: &[MessageVector],
    ) -> Result<usize>;
}

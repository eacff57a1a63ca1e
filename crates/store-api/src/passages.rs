//! Archival memory: an agent's passages (facts and documents it keeps), with tags, listed by
//! time and searched by their words.

use crate::{CandidateDepth, Hit, PassageQuery, Ranker};
use async_trait::async_trait;
use engram_core::{
    AgentId, NewPassage, Passage, PassageHit, PassageId, Result, TagMatch, Timestamp,
};
use serde::{Deserialize, Serialize};

/// Which page of an agent's passages to list ([`PassageStore::list_passages`]).
///
/// The list runs by creation time (then by insertion order for passages stored at the same
/// microsecond), oldest first when `ascending`, newest first otherwise; the cursors are
/// passages of the list (Letta's `after` / `before`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassageRange {
    /// Only passages after this one in the list's order.
    pub after: Option<PassageId>,
    /// Only passages before this one in the list's order: the `limit` nearest it.
    pub before: Option<PassageId>,
    /// At most this many passages.
    pub limit: usize,
    /// Oldest first when true, newest first otherwise.
    pub ascending: bool,
    /// Also passages a later one superseded or merged (the history of facts that changed,
    /// which an export keeps), each with its [`Supersession`](engram_core::Supersession).
    pub include_superseded: bool,
}

/// A words search over one agent's passages ([`PassageStore::search_passages`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassageSearch {
    /// Free text; its words are chosen by [`query_words`](crate::query_words). Blank: the
    /// newest passages passing the filters, each with score 0. Text without letters or digits
    /// matches nothing.
    pub query: String,
    /// Only passages carrying these tags (see `tag_match`); empty: no tag filter.
    pub tags: Vec<String>,
    /// Whether a passage needs any or all of `tags`.
    pub tag_match: TagMatch,
    /// Only passages created at or after this time.
    pub start: Option<Timestamp>,
    /// Only passages created at or before this time.
    pub end: Option<Timestamp>,
    /// At most this many hits.
    pub limit: usize,
}

impl PassageSearch {
    /// A search for `query` with no filters, at most `limit` hits.
    pub fn new(query: impl Into<String>, limit: usize) -> Self {
        Self {
            query: query.into(),
            limit,
            ..Self::default()
        }
    }
}

/// Archival memory: passages of one agent each, with tags in the order given (duplicates
/// dropped) and, when the agent has an embedding model, the text's vector (stored as given, at
/// its native dimension; searching by vector is not part of this interface yet).
///
/// Guarantees, beyond each method's docs:
/// - **An insert is one transaction**: every passage of the batch is stored, or none is.
/// - **Passages go with their agent**: deleting an agent deletes its passages.
/// - Lists, counts and searches see current passages only: a passage marked superseded (a fact
///   that changed, by the store's consolidation) is left out, unless a list asks for it
///   ([`PassageRange::include_superseded`]).
///
/// The words search matches passages holding any of the query's words (stemmed, as
/// [`MessageStore`](crate::MessageStore)'s), best first by each engine's own ranking (BM25 over
/// the agent's own passages on SQLite, `ts_rank` on PostgreSQL).
#[async_trait]
pub trait PassageStore: Send + Sync {
    /// Stores `passages` for the agent in one transaction, in order. Tags lose duplicates
    /// (first kept); given times are kept (truncated to microseconds), the others get the time
    /// of the write; ids are minted. Returns the passages as stored.
    ///
    /// Errors: `NotFound("agent")`; `Invalid` for blank text or an empty or non-finite
    /// embedding (nothing stored).
    async fn insert_passages(
        &self,
        agent: &AgentId,
        passages: &[NewPassage],
    ) -> Result<Vec<Passage>>;

    /// One passage, of any agent. Errors: `NotFound("passage", id)`.
    async fn get_passage(&self, id: &PassageId) -> Result<Passage>;

    /// A page of the agent's passages (see [`PassageRange`]), in the list's order.
    ///
    /// Errors: `NotFound("agent")`; `NotFound("passage", id)` for a cursor that is not one of
    /// the agent's passages.
    async fn list_passages(&self, agent: &AgentId, range: &PassageRange) -> Result<Vec<Passage>>;

    /// The stored vector of each of the agent's passages that has one (superseded ones too),
    /// in insertion order, at its native dimension. Errors: `NotFound("agent")`.
    async fn passage_vectors(&self, agent: &AgentId) -> Result<Vec<(PassageId, Vec<f32>)>>;

    /// Up to `limit` of the agent's passages without a stored vector (superseded ones too),
    /// oldest first: what a backfill embeds, batch by batch. Errors: `NotFound("agent")`.
    async fn passages_without_vectors(&self, agent: &AgentId, limit: usize)
    -> Result<Vec<Passage>>;

    /// How many of the agent's passages have no stored vector. Errors: `NotFound("agent")`.
    async fn count_passages_without_vectors(&self, agent: &AgentId) -> Result<u64>;

    /// Stores vectors of the embedding model `model` (a handle, `local/all-minilm-l6-v2`)
    /// computed for the agent's `(passage, the text it was computed from, vector)`, in one
    /// transaction: only where the passage still has no vector and still has that text (an
    /// edit, or another backfill, meanwhile wins), and only while `model` is still the agent's
    /// embedding model (a backfill that began before a model change never stores the old
    /// model's vectors). Returns how many were stored.
    ///
    /// Errors: `NotFound("agent")`; `Invalid` for an empty or non-finite vector (nothing is
    /// stored).
    async fn fill_passage_vectors(
        &self,
        agent: &AgentId,
        model: &str,
        filled: &[(PassageId, String, Vec<f32>)],
    ) -> Result<usize>;

    /// A page of the agent's archival memory as the window's browser reads it (see
    /// [`PassageList`]): the passages passing the list's filters from where it says, how many
    /// pass them in all, and how many of those come before the page. Paged in the database on
    /// both stores, and read in one snapshot, so the three agree.
    ///
    /// Errors: `NotFound("agent")`; `NotFound("passage", id)` for a cursor that is not one of
    /// the agent's passages.
    async fn page_passages(&self, agent: &AgentId, list: &PassageList) -> Result<PassagePage>;

    /// The passages among `ids` (the agent's) whose text holds at least one word of `query`,
    /// as the words search counts words (stop words left out, stems compared); none for a
    /// blank query or one without words. What tells a hit of a words-only search from a
    /// neighbour that came along with it. Errors: `NotFound("agent")`.
    async fn passages_with_words(
        &self,
        agent: &AgentId,
        query: &str,
        ids: &[PassageId],
    ) -> Result<Vec<PassageId>>;

    /// How many current passages the agent has. Errors: `NotFound("agent")`.
    async fn count_passages(&self, agent: &AgentId) -> Result<u64>;

    /// Deletes one of the agent's passages with its tags.
    ///
    /// Errors: `NotFound("passage", id)` when the agent (known or not) has no such passage.
    async fn delete_passage(&self, agent: &AgentId, id: &PassageId) -> Result<()>;

    /// Sets one of the agent's passages' text and/or tags (Letta's passage modify), in one
    /// transaction; `None` leaves that part as it is. A new text replaces the stored vector
    /// with `embedding` (the new text's, at its native dimension), or drops it when `None`:
    /// it described the old text. New tags keep their order, less duplicates and blank ones.
    ///
    /// Errors: `NotFound("passage", id)` when the agent has no such passage; `Invalid` for
    /// blank text or an empty or non-finite vector. Nothing changes on error.
    async fn update_passage(
        &self,
        agent: &AgentId,
        id: &PassageId,
        text: Option<&str>,
        tags: Option<&[String]>,
        embedding: Option<&[f32]>,
    ) -> Result<Passage>;

    /// Up to `q.limit` of the agent's passages matching `q`, best first (see the trait docs);
    /// for a blank query the newest first, each with score 0.
    ///
    /// Errors: `NotFound("agent")`.
    async fn search_passages(
        &self,
        agent: &AgentId,
        q: &PassageSearch,
    ) -> Result<Vec<Hit<Passage>>>;

    /// The primitive of archival search: reads the candidates of `q` (see [`Candidates`](crate::Candidates)),
    /// `depth` deep on each side, hands them to `rank` and returns the passages of the ranking
    /// it gives back, in its order, with its scores. Tag, date and superseded filters apply to
    /// both sides before the depth. The lexical side is the agent's passages holding any of the
    /// query's words, best first, each with its neighbours (the passages written just before
    /// and after it, within 30 minutes, passing the filters); the vector side, with
    /// `q.embedding`, the cosine of every passage whose vector has the query's dimension. A
    /// blank query without a vector lists the newest `q.top_k` passages (score 0) and text
    /// without words finds nothing, both without calling `rank`. A row deleted meanwhile is
    /// left out.
    ///
    /// Errors: `NotFound("agent")`; `Invalid` for an empty or non-finite query embedding.
    async fn rank_passages(
        &self,
        agent: &AgentId,
        q: &PassageQuery,
        depth: CandidateDepth,
        rank: Ranker<'_>,
    ) -> Result<Vec<PassageHit>>;

    /// The passages written around each of `ids` in the agent's archival memory: up to `reach`
    /// before and `reach` after, found as neighbours are (nearest by time, then by insertion
    /// order; each within 30 minutes of the next one in; passing `q`'s tag, date and superseded
    /// filters — its text, vector and limit are not read). One list per id, in input order,
    /// oldest first, without the passage itself; empty where there are none or the id is not
    /// one of the agent's. A reranker reads a candidate with them.
    ///
    /// Errors: `NotFound("agent")`.
    async fn passage_neighbours(
        &self,
        agent: &AgentId,
        q: &PassageQuery,
        ids: &[PassageId],
        reach: usize,
    ) -> Result<Vec<Vec<Passage>>>;
}

/// Which page of an agent's archival memory to read, and which passages count.
///
/// Filters (`search`, `tags`, `start`, `end`) decide which passages are in the list and are
/// counted in [`PassagePage::total`]; `after`, `before`, `at` and `offset` only choose where
/// in that list the page starts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
#[serde(default)]
pub struct PassageList {
    /// Only passages whose text contains this substring (case-insensitive for ASCII letters).
    #[ts(optional)]
    pub search: Option<String>,
    /// Only passages carrying these tags (see `tag_match`); empty: no tag filter.
    pub tags: Vec<String>,
    /// Whether a passage needs any or all of `tags`.
    pub tag_match: TagMatch,
    /// Only passages created at or after this time.
    #[ts(optional)]
    pub start: Option<Timestamp>,
    /// Only passages created at or before this time.
    #[ts(optional)]
    pub end: Option<Timestamp>,
    /// Only passages after this one in the list's order (a Letta cursor).
    #[ts(optional)]
    pub after: Option<PassageId>,
    /// Only passages before this one in the list's order: the `limit` nearest it.
    #[ts(optional)]
    pub before: Option<PassageId>,
    /// Start at the page (of `limit` passages, counted from the list's start) holding the
    /// first passage created at or before this time (newest first) or at or after it (oldest
    /// first): "jump to a date". Ignored with a cursor.
    #[ts(optional)]
    pub at: Option<Timestamp>,
    /// Passages to skip (after the cursor, if any).
    pub offset: usize,
    /// Maximum number of passages.
    pub limit: usize,
    /// Oldest first when true, newest first otherwise.
    pub ascending: bool,
    /// Also list passages that were superseded or merged (the history of facts that
    /// changed); by default only current passages are listed and counted.
    #[ts(as = "Option<bool>", optional)]
    pub include_superseded: bool,
}

impl PassageList {
    /// This list as the storage interface's plain range, when it is one: no filter, no
    /// offset, no date to jump to. `None` otherwise.
    pub fn as_range(&self) -> Option<PassageRange> {
        let plain = self.search.is_none()
            && self.tags.is_empty()
            && self.start.is_none()
            && self.end.is_none()
            && self.at.is_none()
            && self.offset == 0;
        plain.then(|| PassageRange {
            after: self.after.clone(),
            before: self.before.clone(),
            limit: self.limit,
            ascending: self.ascending,
            include_superseded: self.include_superseded,
        })
    }
}

/// One page of archival memory, where it sits in the list, and how many passages the list
/// holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct PassagePage {
    /// The page, in the order asked for.
    pub passages: Vec<Passage>,
    /// Passages passing the filters (all of the agent's without any).
    #[ts(type = "number")]
    pub total: u64,
    /// How many passages of the list come before the page's first one (the page's index is
    /// `offset / limit` when the page is aligned).
    #[ts(type = "number")]
    pub offset: u64,
}

/// Checks a vector before it is stored or searched with: at least one dimension, every value
/// finite. Errors: `Invalid`.
pub fn check_vector(v: &[f32]) -> Result<()> {
    if v.is_empty() {
        return Err(engram_core::Error::invalid(
            "an embedding needs at least one dimension",
        ));
    }
    if !v.iter().all(|x| x.is_finite()) {
        return Err(engram_core::Error::invalid(
            "an embedding must not contain NaN or infinity",
        ));
    }
    Ok(())
}

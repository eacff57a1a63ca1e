//! Core, archival and recall memory as people (not the agent) see and change it.

use crate::{Engram, Notice};
use engram_core::{
    AgentId, Block, BlockEdit, BlockPatch, EditId, Editor, Error, Message, NewPassage, Passage,
    PassageHit, PassageId, Result, TagMatch, Timestamp,
};
use engram_store::{MessageHit, MessageQuery, PassageList, PassagePage, PassageQuery, UndoPlan};

/// How many history entries a block keeps on show.
const HISTORY_LIMIT: usize = 200;

impl Engram {
    /// Sets a block's value by hand (recorded in the block's history as a user edit).
    /// Errors: `not_found` for an unknown agent or label, `invalid_input` when over the limit.
    pub fn set_block_value(&self, agent: &AgentId, label: &str, value: &str) -> Result<Block> {
        let patch = BlockPatch {
            value: Some(value.to_owned()),
            ..BlockPatch::default()
        };
        self.update_agent_block(agent, label, &patch)
    }

    /// Changes a block of an agent (value, limit, description, label, read-only). With
    /// `patch.version` the block must still be at that version. Errors: `not_found`;
    /// `stale_version` (the current block in `details`); `invalid_input`; `conflict`.
    pub fn update_agent_block(
        &self,
        agent: &AgentId,
        label: &str,
        patch: &BlockPatch,
    ) -> Result<Block> {
        self.update_agent_block_as(agent, label, patch, &Editor::User)
    }

    /// Like [`update_agent_block`](Self::update_agent_block), recorded in the block's history
    /// as `editor`'s edit (a user tool calling the API back edits as its tool call).
    pub fn update_agent_block_as(
        &self,
        agent: &AgentId,
        label: &str,
        patch: &BlockPatch,
        editor: &Editor,
    ) -> Result<Block> {
        let block = self.store.agent_block(agent, label)?;
        let block = self.store.update_block(&block.id, patch, editor)?;
        self.notify_block(&block.id);
        Ok(block)
    }

    /// The edit history of an agent's block, newest first.
    pub fn block_history(&self, agent: &AgentId, label: &str) -> Result<Vec<BlockEdit>> {
        let block = self.store.agent_block(agent, label)?;
        self.store.block_history(&block.id, HISTORY_LIMIT)
    }

    /// Undoes one recorded edit, keeping every edit made after it: the text the edit changed
    /// is put back where it now stands (a reverse operation; see
    /// [`engram_store::revert_value`]). The undo is itself recorded, so it can be undone in
    /// turn. With `based_on` (the block version the person was looking at) it is refused when
    /// the block changed since. Errors: `not_found`; `stale_version` with the current block in
    /// `details`; `conflict` when later edits rewrote the text this edit changed (see
    /// [`block_undo_plan`](Self::block_undo_plan) and
    /// [`restore_block_edit`](Self::restore_block_edit)); `invalid_input` when the result no
    /// longer fits the limit.
    pub fn undo_block_edit(&self, edit: &EditId, based_on: Option<u64>) -> Result<Block> {
        let block = self.store.undo_edit(edit, based_on)?;
        self.notify_block(&block.id);
        Ok(block)
    }

    /// What undoing `edit` would do now: the value after undoing just it (when it applies),
    /// the value a whole restore writes, and how many later edits a restore drops. Writes
    /// nothing. Errors: `not_found`.
    pub fn block_undo_plan(&self, edit: &EditId) -> Result<UndoPlan> {
        self.store.undo_plan(edit)
    }

    /// Restores the whole value `edit` replaced, dropping every later edit — only after the
    /// person saw what is lost ([`block_undo_plan`](Self::block_undo_plan)), so `based_on`
    /// should name the version they saw. Errors: `not_found`; `stale_version`;
    /// `invalid_input` when the old value no longer fits the limit.
    pub fn restore_block_edit(&self, edit: &EditId, based_on: Option<u64>) -> Result<Block> {
        let block = self.store.restore_edit(edit, based_on)?;
        self.notify_block(&block.id);
        Ok(block)
    }

    /// Stores a passage in the agent's archival memory and returns it at once: its words are
    /// searchable now, and when the agent has an embedding model its vectors are computed in
    /// the background, batched with other fresh passages (a search waits up to 5 s for
    /// them, then goes on by words for what is missing). An embedding outage never loses the
    /// passage: it stays without a vector (an `EmbeddingsUnavailable` notice says so) and is
    /// filled in later.
    /// Errors: `invalid_input` for empty text; `not_found` for the agent.
    pub async fn add_passage(
        &self,
        agent: &AgentId,
        text: &str,
        tags: Vec<String>,
    ) -> Result<Passage> {
        self.add_passage_at(agent, text, tags, None).await
    }

    /// Like [`add_passage`](Self::add_passage), dated `created_at` when given (Letta's
    /// backdated passages: imported notes keep their day); otherwise now.
    pub async fn add_passage_at(
        &self,
        agent: &AgentId,
        text: &str,
        tags: Vec<String>,
        created_at: Option<Timestamp>,
    ) -> Result<Passage> {
        if text.trim().is_empty() {
            return Err(Error::invalid("a passage needs text"));
        }
        let embedded = self.store.get_agent(agent)?.embedding.is_some();
        let new = NewPassage {
            text: text.to_owned(),
            tags,
            embedding: None,
            created_at,
        };
        let mut stored = self.store.insert_passages(agent, &[new])?;
        if embedded {
            self.embed_fresh(agent);
        }
        self.notify(Notice::ArchivalChanged {
            agent_id: agent.clone(),
        });
        stored
            .pop()
            .ok_or_else(|| Error::Internal("insert returned no passage".into()))
    }

    /// Lists a page of passages (see [`PassageList`]), newest first unless `ascending`.
    /// Errors: `not_found` (agent, or a cursor passage).
    pub fn list_passages(&self, agent: &AgentId, list: &PassageList) -> Result<Vec<Passage>> {
        self.store.list_passages(agent, list)
    }

    /// Deletes a passage.
    pub fn delete_passage(&self, agent: &AgentId, id: &PassageId) -> Result<()> {
        self.store.delete_passage(agent, id)?;
        self.notify(Notice::ArchivalChanged {
            agent_id: agent.clone(),
        });
        Ok(())
    }

    /// A page of passages with the number of passages passing the list's filters in all and
    /// the page's position in that list, for a pager (paged in SQL: a page costs the same at
    /// any archive size). Errors: `not_found` (agent, or a cursor passage).
    pub fn passage_page(&self, agent: &AgentId, list: &PassageList) -> Result<PassagePage> {
        self.store.passage_page(agent, list)
    }

    /// Searches archival memory as the agent's tool does (BM25, fused with vectors when the
    /// agent has an embedding model; filters before the limit). When the embedding model
    /// cannot embed the query the search answers by words alone at once, after an
    /// `EmbeddingsUnavailable` notice. With a reranker configured and on, the first
    /// candidates are reordered by it and scored by its relevance in `0..=1` (the same
    /// pipeline as the agent's tool: `engram_retrieval::search`); a reranker that fails leaves
    /// the hybrid ranking, after a `RerankerUnavailable` notice.
    pub async fn search_archival(
        &self,
        agent: &AgentId,
        query: &str,
        tags: Vec<String>,
        tag_match: TagMatch,
        range: (Option<Timestamp>, Option<Timestamp>),
        top_k: usize,
    ) -> Result<Vec<PassageHit>> {
        let q = PassageQuery {
            query: query.to_owned(),
            tags,
            tag_match,
            start: range.0,
            end: range.1,
            top_k,
            ..PassageQuery::default()
        };
        self.search_archival_by(agent, q).await
    }

    /// [`search_archival`](Self::search_archival) with every option of a [`PassageQuery`]:
    /// also `include_superseded`, which adds the passages that were superseded or merged (each
    /// carrying when, how and by what). The query's `embedding` is filled in here; `top_k` is
    /// at least 1. When the search ran by words alone (no embedding model, or it is offline),
    /// each hit's `context` says whether it holds none of the query's words and came along
    /// beside a match. Errors: `not_found` for the agent.
    pub async fn search_archival_by(
        &self,
        agent: &AgentId,
        mut q: PassageQuery,
    ) -> Result<Vec<PassageHit>> {
        self.store.get_agent(agent)?;
        self.settle_for_search(agent).await;
        q.embedding = self.query_vector(agent, &q.query).await;
        q.top_k = q.top_k.max(1);
        let reranker = self.resolver.rerankers.get();
        let mut hits =
            engram_retrieval::search(&self.store, agent, &q, reranker.as_deref()).await?;
        // By words alone, a neighbour that shares no word with the query came along as
        // context; the window shows it so instead of as a match.
        if q.embedding.is_none() && !hits.is_empty() {
            let ids: Vec<_> = hits.iter().map(|h| h.passage.id.clone()).collect();
            let with_words = self.store.passages_with_words(agent, &q.query, &ids)?;
            if !with_words.is_empty() {
                for h in &mut hits {
                    h.context = !with_words.contains(&h.passage.id);
                }
            }
        }
        Ok(hits)
    }

    /// Searches recall memory (every message the agent ever had) as the agent's
    /// `conversation_search` does: BM25 fused with vector similarity when the agent has an
    /// embedding model (roles and dates filter first; scores in `0..=1` as in archival
    /// search). When the model cannot embed the query the search answers by words alone at
    /// once, after an `EmbeddingsUnavailable` notice. Errors: `not_found` for the agent.
    pub async fn search_recall(
        &self,
        agent: &AgentId,
        query: &MessageQuery,
    ) -> Result<Vec<MessageHit>> {
        self.store.get_agent(agent)?;
        let embedding = self.query_vector(agent, &query.query).await;
        engram_retrieval::hybrid::messages(&self.store, agent, query, embedding.as_deref())
    }

    /// Pages through the conversation: the `limit` messages before `before_seq`, oldest first.
    pub fn list_messages(
        &self,
        agent: &AgentId,
        before_seq: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Message>> {
        self.store.get_agent(agent)?;
        self.store.list_messages(agent, before_seq, limit)
    }

    /// The agent's context window as its next call would see it, by part (tokens).
    pub fn context_breakdown(&self, agent: &AgentId) -> Result<engram_agent::ContextBreakdown> {
        Ok(self.runtime.context(agent)?.breakdown)
    }

    pub(crate) fn embedder_for(&self, agent: &AgentId) -> Result<Option<engram_agent::Embedder>> {
        use engram_agent::ModelResolver;
        let agent = self.store.get_agent(agent)?;
        agent
            .embedding
            .as_ref()
            .map(|cfg| self.resolver.embedder(cfg))
            .transpose()
    }
}

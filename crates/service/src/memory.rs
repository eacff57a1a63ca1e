//! Core, archival and recall memory as people (not the agent) see and change it.

use crate::{Engram, Notice};
use engram_core::{
    AgentId, Block, BlockEdit, BlockPatch, EditId, Editor, Error, Message, NewPassage, Passage,
    PassageHit, PassageId, Result, TagMatch, Timestamp,
};
use engram_store::{MessageHit, MessageQuery, PassageList, PassageQuery};
use serde::Serialize;

/// One page of archival memory and how many passages there are in all.
#[derive(Clone, Debug, PartialEq, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct PassagePage {
    /// The page, in the order asked for.
    pub passages: Vec<Passage>,
    /// Passages matching the search (all of the agent's without one).
    #[ts(type = "number")]
    pub total: u64,
}

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

    /// Undoes one recorded edit (itself recorded, so it can be undone in turn): restores the
    /// value the edit replaced. With `based_on` (the block version the person was looking at)
    /// it is refused when the block changed since, so an edit made meanwhile is never silently
    /// discarded. Errors: `not_found`; `stale_version` with the current block in `details`;
    /// `invalid_input` when the old value no longer fits the limit.
    pub fn undo_block_edit(&self, edit: &EditId, based_on: Option<u64>) -> Result<Block> {
        let block = self.store.undo_edit(edit, based_on)?;
        self.notify_block(&block.id);
        Ok(block)
    }

    /// Stores a passage in the agent's archival memory, embedded when the agent has an
    /// embedding model. An embedding outage never loses the passage: it is stored without a
    /// vector (a `EmbeddingsUnavailable` notice says so) and backfilled later.
    /// Errors: `invalid_input` for empty text; `not_found` for the agent.
    pub async fn add_passage(
        &self,
        agent: &AgentId,
        text: &str,
        tags: Vec<String>,
    ) -> Result<Passage> {
        if text.trim().is_empty() {
            return Err(Error::invalid("a passage needs text"));
        }
        self.store.get_agent(agent)?;
        let embedding = self
            .vectors_for_storing(agent, &[text.to_owned()])
            .await?
            .and_then(|mut v| v.pop());
        let new = NewPassage {
            text: text.to_owned(),
            tags,
            embedding,
            created_at: None,
        };
        let mut stored = self.store.insert_passages(agent, &[new])?;
        self.notify(Notice::ArchivalChanged {
            agent_id: agent.clone(),
        });
        stored
            .pop()
            .ok_or_else(|| Error::Internal("insert returned no passage".into()))
    }

    /// Lists passages, newest first unless `ascending`.
    pub fn list_passages(&self, agent: &AgentId, list: &PassageList) -> Result<Vec<Passage>> {
        self.store.get_agent(agent)?;
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

    /// A page of passages with the number of passages matching `list.search` in all, for a
    /// pager. Errors: `not_found`.
    pub fn passage_page(&self, agent: &AgentId, list: &PassageList) -> Result<PassagePage> {
        Ok(PassagePage {
            passages: self.list_passages(agent, list)?,
            total: self.store.count_passages(agent, list.search.as_deref())?,
        })
    }

    /// Searches archival memory as the agent's tool does (BM25, fused with vectors when the
    /// agent has an embedding model; filters before the limit). When the embedding model
    /// cannot embed the query the search answers by words alone at once, after an
    /// `EmbeddingsUnavailable` notice.
    pub async fn search_archival(
        &self,
        agent: &AgentId,
        query: &str,
        tags: Vec<String>,
        tag_match: TagMatch,
        range: (Option<Timestamp>, Option<Timestamp>),
        top_k: usize,
    ) -> Result<Vec<PassageHit>> {
        self.store.get_agent(agent)?;
        let embedding = self.query_vector(agent, query).await;
        let q = PassageQuery {
            query: query.to_owned(),
            tags,
            tag_match,
            start: range.0,
            end: range.1,
            top_k: top_k.max(1),
            embedding,
        };
        self.store.search_passages(agent, &q)
    }

    /// Searches recall memory (every message the agent ever had).
    pub fn search_recall(&self, agent: &AgentId, query: &MessageQuery) -> Result<Vec<MessageHit>> {
        self.store.get_agent(agent)?;
        self.store.search_messages(agent, query)
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

//! Archival memory as people (not the agent) see and change it: passages added, listed,
//! edited, deleted and searched. Their vectors are computed in `embeddings.rs` and indexed in
//! `index_builds.rs`; the ranking itself is the `engram_retrieval` crate's.

use crate::index_builds::VectorIndexStatus;
use crate::rooms::Archival;
use crate::{Engram, Notice};
use engram_core::{
    AgentId, Error, NewPassage, Passage, PassageHit, PassageId, Result, TagMatch, Timestamp,
};
use engram_store::{PassageList, PassagePage, PassageQuery, VectorIndexBuild};

impl Archival<'_> {
    /// Stores a passage in the agent's archival memory and returns it at once: its words are
    /// searchable now, and when the agent has an embedding model its vectors are computed in
    /// the background, batched with other fresh passages (a search waits up to 5 s for
    /// them, then goes on by words for what is missing). An embedding outage never loses the
    /// passage: it stays without a vector (an `EmbeddingsUnavailable` notice says so) and is
    /// filled in later.
    /// Errors: `invalid_input` for empty text; `not_found` for the agent.
    pub async fn insert(self, agent: &AgentId, text: &str, tags: Vec<String>) -> Result<Passage> {
        self.insert_at(agent, text, tags, None).await
    }

    /// Like [`insert`](Self::insert), dated `created_at` when given (Letta's
    /// backdated passages: imported notes keep their day); otherwise now.
    pub async fn insert_at(
        self,
        agent: &AgentId,
        text: &str,
        tags: Vec<String>,
        created_at: Option<Timestamp>,
    ) -> Result<Passage> {
        if text.trim().is_empty() {
            return Err(Error::invalid("a passage needs text"));
        }
        let embedded = self
            .engram
            .backend
            .get_agent(agent)
            .await?
            .embedding
            .is_some();
        let mut new = NewPassage {
            text: text.to_owned(),
            tags,
            embedding: None,
            created_at,
        };
        // This machine's database fills vectors in the background, batched; a shared
        // server's replicas have no such queue yet, so the vector is computed before the write.
        if embedded && self.engram.shared {
            let texts = [new.text.clone()];
            new.embedding = self
                .engram
                .vectors_for_storing(agent, &texts)
                .await?
                .and_then(|mut v| v.pop());
        }
        let mut stored = self.engram.backend.insert_passages(agent, &[new]).await?;
        if embedded && !self.engram.shared {
            self.engram.embed_fresh(agent);
        }
        self.engram.notify(Notice::ArchivalChanged {
            agent_id: agent.clone(),
        });
        stored
            .pop()
            .ok_or_else(|| Error::Internal("insert returned no passage".into()))
    }

    /// Lists a page of passages (see [`PassageList`]), newest first unless `ascending`.
    /// Errors: `not_found` (agent, or a cursor passage).
    pub async fn list(self, agent: &AgentId, list: &PassageList) -> Result<Vec<Passage>> {
        match list.as_range() {
            Some(range) => self.engram.backend.list_passages(agent, &range).await,
            // A filtered list on a shared server: a page of the interface's.
            None if self.engram.shared => Ok(self.page(agent, list).await?.passages),
            None => self.engram.store.passages().list(agent, list),
        }
    }

    /// Deletes a passage. Errors: `not_found`.
    pub async fn delete(self, agent: &AgentId, id: &PassageId) -> Result<()> {
        self.engram.backend.delete_passage(agent, id).await?;
        self.engram.notify(Notice::ArchivalChanged {
            agent_id: agent.clone(),
        });
        Ok(())
    }

    /// A page of passages with the number of passages passing the list's filters in all and
    /// the page's position in that list, for a pager (paged in SQL on both stores: a page
    /// costs about the same at any archive size).
    /// Errors: `not_found` (agent, or a cursor passage).
    pub async fn page(self, agent: &AgentId, list: &PassageList) -> Result<PassagePage> {
        self.engram.backend.page_passages(agent, list).await
    }

    /// Searches archival memory as the agent's tool does (BM25, fused with vectors when the
    /// agent has an embedding model; filters before the limit). When the embedding model
    /// cannot embed the query the search answers by words alone at once, after an
    /// `EmbeddingsUnavailable` notice. With a reranker configured and on, the first
    /// candidates are reordered by it and scored by its relevance in `0..=1` (the same
    /// pipeline as the agent's tool: `engram_retrieval::search`); a reranker that fails leaves
    /// the hybrid ranking, after a `RerankerUnavailable` notice.
    pub async fn search(
        self,
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
        self.search_by(agent, q).await
    }

    /// [`search`](Self::search) with every option of a [`PassageQuery`]:
    /// also `include_superseded`, which adds the passages that were superseded or merged (each
    /// carrying when, how and by what). The query's `embedding` is filled in here; `top_k` is
    /// at least 1. When the search ran by words alone (no embedding model, or it is offline),
    /// each hit's `context` says whether it holds none of the query's words and came along
    /// beside a match. Errors: `not_found` for the agent.
    pub async fn search_by(self, agent: &AgentId, mut q: PassageQuery) -> Result<Vec<PassageHit>> {
        self.engram.backend.get_agent(agent).await?;
        self.engram.settle_for_search(agent).await;
        q.embedding = self.engram.query_vector(agent, &q.query).await;
        q.top_k = q.top_k.max(1);
        let reranker = self.engram.resolver.rerankers.get();
        let mut hits =
            engram_retrieval::search(&*self.engram.backend, agent, &q, reranker.as_deref()).await?;
        // By words alone, a neighbour that shares no word with the query came along as
        // context; the window shows it so instead of as a match.
        if q.embedding.is_none() && !hits.is_empty() {
            let ids: Vec<_> = hits.iter().map(|h| h.passage.id.clone()).collect();
            let with_words = self
                .engram
                .backend
                .passages_with_words(agent, &q.query, &ids)
                .await?;
            if !with_words.is_empty() {
                for h in &mut hits {
                    h.context = !with_words.contains(&h.passage.id);
                }
            }
        }
        Ok(hits)
    }
}

impl Archival<'_> {
    /// Changes a passage's text and/or tags (Letta's passage modify). A new text is embedded
    /// again when the agent has an embedding model, before anything is written; text, tags
    /// and vector are written in one transaction.
    ///
    /// Errors: `not_found` (agent or passage); `invalid_input` for blank text. An embedding
    /// outage is not an error: the passage keeps its new text without a vector (a notice says
    /// so) until the backfill embeds it.
    pub async fn edit(
        self,
        agent: &AgentId,
        id: &PassageId,
        text: Option<&str>,
        tags: Option<Vec<String>>,
    ) -> Result<Passage> {
        self.engram.backend.get_agent(agent).await?;
        // New text gets a new vector; if the model cannot give one now, the old vector is
        // dropped (it described the old text) and the backfill fills it in later.
        let embedding = match text {
            Some(t) if !t.trim().is_empty() => self
                .engram
                .vectors_for_storing(agent, &[t.to_owned()])
                .await?
                .and_then(|mut v| v.pop()),
            _ => None,
        };
        let p = self
            .engram
            .backend
            .update_passage(agent, id, text, tags.as_deref(), embedding.as_deref())
            .await?;
        if embedding.is_some() {
            self.engram.spawn_backfill(agent);
        }
        self.engram.notify(Notice::ArchivalChanged {
            agent_id: agent.clone(),
        });
        Ok(p)
    }
}

impl Engram {
    /// The embedder of `agent`'s embedding model, `None` when it has none. Errors:
    /// `not_found` for the agent; a provider's configuration errors (no key, unknown model).
    pub(crate) async fn embedder_for(
        &self,
        agent: &AgentId,
    ) -> Result<Option<engram_agent::Embedder>> {
        use engram_agent::ModelResolver;
        let agent = self.backend.get_agent(agent).await?;
        agent
            .embedding
            .as_ref()
            .map(|cfg| self.resolver.embedder(cfg))
            .transpose()
    }
}

impl Archival<'_> {
    /// The agent's vector index build (see [`VectorIndexStatus`]).
    ///
    /// Errors: `not_found` for an unknown agent; storage.
    pub fn index_status(self, agent: &AgentId) -> engram_core::Result<VectorIndexStatus> {
        self.engram.store.agents().get(agent)?;
        Ok(VectorIndexStatus {
            building: self
                .index_builds()
                .into_iter()
                .find(|b| b.agent_id == agent.as_str()),
            pending: self.index_build_pending(agent),
        })
    }

    /// Vector indexes being built in this process now, one entry per agent (sorted by agent
    /// id; empty when none is): while an agent's is built, its archival search scans every
    /// vector (exact, but tens of milliseconds instead of a few at 100,000 passages).
    pub fn index_builds(self) -> Vec<VectorIndexBuild> {
        self.engram.store.vector_index_builds()
    }

    /// Whether a build of the agent's vector index was cut short by a quit (or runs in another
    /// process on the same data directory) and has not saved its graph yet: it starts again
    /// when `engram serve` or the desktop app starts ([`Archival::resume_backfills`]).
    pub fn index_build_pending(self, agent: &AgentId) -> bool {
        self.engram.store.vector_index_build_pending(agent.as_str())
    }

    /// Starts again, in the background, the vector index builds a quit cut short (see
    /// [`Store::resume_vector_index_builds`](engram_store::Store::resume_vector_index_builds)); progress arrives as
    /// [`Notice::VectorIndexBuild`]. Returns how many builds run now. Errors: storage.
    pub fn resume_index_builds(self) -> engram_core::Result<usize> {
        self.engram.store.resume_vector_index_builds()
    }
}

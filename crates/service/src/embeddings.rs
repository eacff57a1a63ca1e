//! Vectors for an agent's archival memory, whatever the state of its embedding model.
//!
//! An outage never costs data or an answer: a passage that cannot be embedded is stored
//! without a vector (and a [`Notice::EmbeddingsUnavailable`] says so), a search that cannot
//! embed its query answers by words alone at once, and the missing vectors are filled in
//! later by a backfill — in the background after the next successful embedding, or on demand
//! ([`Engram::backfill_embeddings`]) with progress as [`Notice::EmbeddingBackfill`].

use crate::{Engram, Notice};
use engram_agent::{Embedder, ModelResolver};
use engram_core::{AgentId, Result};
use engram_store::Store;
use serde::Serialize;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// Passages embedded per request while backfilling.
const BACKFILL_BATCH: usize = 64;

/// What a backfill did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct BackfillReport {
    /// Passages given a vector.
    #[ts(type = "number")]
    pub embedded: u64,
    /// Passages still without one (the model failed part way; run it again later).
    #[ts(type = "number")]
    pub remaining: u64,
}

/// What a backfill needs, detached from [`Engram`] so it can run in the background.
#[derive(Clone)]
struct Backfiller {
    store: Store,
    resolver: Arc<crate::resolve::Resolver>,
    notices: tokio::sync::broadcast::Sender<Notice>,
    running: Arc<Mutex<HashSet<AgentId>>>,
}

impl Backfiller {
    fn embedder(&self, agent: &AgentId) -> Result<Option<Embedder>> {
        let agent = self.store.get_agent(agent)?;
        agent
            .embedding
            .as_ref()
            .map(|cfg| self.resolver.embedder(cfg))
            .transpose()
    }

    /// Embeds the agent's passages that lack a vector, batch by batch, until none are left or
    /// the model fails (what is done stays done: a later run resumes from there).
    async fn run(&self, agent: &AgentId) -> Result<BackfillReport> {
        let Some(embedder) = self.embedder(agent)? else {
            return Ok(BackfillReport {
                embedded: 0,
                remaining: self.store.count_passages_without_vectors(agent)?,
            });
        };
        let total = self.store.count_passages_without_vectors(agent)?;
        let mut report = BackfillReport::default();
        loop {
            let batch = self.store.passages_without_vectors(agent, BACKFILL_BATCH)?;
            if batch.is_empty() {
                break;
            }
            let texts: Vec<String> = batch.iter().map(|p| p.text.clone()).collect();
            let vectors = match embedder.model.embed(&embedder.name, &texts).await {
                Ok(v) if v.len() == texts.len() => v,
                Ok(_) | Err(_) => {
                    let _ = self.notices.send(Notice::EmbeddingsUnavailable {
                        agent_id: agent.clone(),
                        message: "filling in missing vectors stopped: the embedding model failed; \
                                  search uses words alone for those passages until it is run again"
                            .into(),
                    });
                    break;
                }
            };
            let filled: Vec<_> = batch
                .into_iter()
                .zip(texts)
                .zip(vectors)
                .map(|((p, t), v)| (p.id, t, v))
                .collect();
            let n = self.store.fill_passage_vectors(&filled)?;
            if n == 0 {
                // Every row of the batch changed under us; they come back only if still
                // missing, so stop rather than spin.
                break;
            }
            report.embedded += n as u64;
            let _ = self.notices.send(Notice::EmbeddingBackfill {
                agent_id: agent.clone(),
                done: report.embedded,
                total,
            });
        }
        report.remaining = self.store.count_passages_without_vectors(agent)?;
        Ok(report)
    }

    /// Starts a background backfill for `agent` unless one is running or nothing is missing.
    fn spawn(&self, agent: &AgentId) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self
            .store
            .count_passages_without_vectors(agent)
            .unwrap_or(0)
            == 0
        {
            return;
        }
        if !self.lock().insert(agent.clone()) {
            return;
        }
        let this = self.clone();
        let agent = agent.clone();
        runtime.spawn(async move {
            if let Err(e) = this.run(&agent).await {
                tracing::warn!(%e, agent = %agent, "backfill stopped");
            }
            this.lock().remove(&agent);
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<AgentId>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Engram {
    fn backfiller(&self) -> Backfiller {
        Backfiller {
            store: self.store.clone(),
            resolver: self.resolver.clone(),
            notices: self.notices.clone(),
            running: self.backfills.clone(),
        }
    }

    /// Embeds every passage of the agent that has no vector yet (imports, passages stored
    /// during an embedding outage, a changed embedding model), with progress as
    /// [`Notice::EmbeddingBackfill`]. Resumable: it can stop at any point and the next run
    /// goes on from what is still missing. Errors: `not_found` for the agent.
    pub async fn backfill_embeddings(&self, agent: &AgentId) -> Result<BackfillReport> {
        self.backfiller().run(agent).await
    }

    /// Starts filling in the agent's missing vectors in the background (no-op when nothing
    /// is missing or a backfill already runs).
    pub(crate) fn spawn_backfill(&self, agent: &AgentId) {
        self.backfiller().spawn(agent);
    }

    /// Vectors for texts to be stored, or `None` (after a notice) when the agent's embedding
    /// model cannot embed them now: the caller stores the texts without vectors. After a
    /// success, missing vectors of earlier passages are filled in in the background.
    pub(crate) async fn vectors_for_storing(
        &self,
        agent: &AgentId,
        texts: &[String],
    ) -> Result<Option<Vec<Vec<f32>>>> {
        let embedder = match self.embedder_for(agent) {
            Ok(Some(e)) => e,
            Ok(None) => return Ok(None),
            Err(e) => {
                self.embeddings_unavailable(agent, &e.to_string(), true);
                return Ok(None);
            }
        };
        match embedder.model.embed(&embedder.name, texts).await {
            Ok(v) if v.len() == texts.len() => {
                self.backfiller().spawn(agent);
                Ok(Some(v))
            }
            Ok(_) => {
                self.embeddings_unavailable(agent, "the model returned too few vectors", true);
                Ok(None)
            }
            Err(e) => {
                self.embeddings_unavailable(agent, &e.to_string(), true);
                Ok(None)
            }
        }
    }

    /// The vector of a search query, or `None` when the agent has no embedding model, the
    /// query is blank, or the model fails (then a notice, and the search goes on by words).
    pub(crate) async fn query_vector(&self, agent: &AgentId, query: &str) -> Option<Vec<f32>> {
        if query.trim().is_empty() {
            return None;
        }
        let embedder = match self.embedder_for(agent) {
            Ok(Some(e)) => e,
            Ok(None) => return None,
            Err(e) => {
                self.embeddings_unavailable(agent, &e.to_string(), false);
                return None;
            }
        };
        match embedder.embed_query(query).await {
            Ok(v) => {
                self.backfiller().spawn(agent);
                Some(v)
            }
            Err(e) => {
                self.embeddings_unavailable(agent, &e.to_string(), false);
                None
            }
        }
    }

    fn embeddings_unavailable(&self, agent: &AgentId, why: &str, storing: bool) {
        let what = if storing {
            "stored without a vector (searchable by its words; the vector is filled in once the model works)"
        } else {
            "searched by words alone"
        };
        tracing::warn!(agent = %agent, why, "embedding model unavailable");
        self.notify(Notice::EmbeddingsUnavailable {
            agent_id: agent.clone(),
            message: format!("{what}: {why}"),
        });
    }
}

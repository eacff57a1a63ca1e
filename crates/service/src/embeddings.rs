//! Vectors for an agent's archival memory, whatever the state of its embedding model.
//!
//! An outage never costs data or an answer: a passage that cannot be embedded is stored
//! without a vector (and a [`Notice::EmbeddingsUnavailable`] says so), a search that cannot
//! embed its query answers by words alone at once, and the missing vectors are filled in
//! later by a backfill — in the background after the next successful embedding, after every
//! chat step (the step's messages), when a long-lived process starts
//! ([`Archival::resume_backfills`]), or on demand ([`Archival::backfill`]), with
//! progress as [`Notice::EmbeddingBackfill`].
//!
//! On a shared server (PostgreSQL) passages are embedded before they are stored; those that
//! arrive without a vector are filled in by the same backfill through the storage interface
//! (`Backfiller::run_shared`), and so are the messages' vectors. Token vectors are this
//! machine's database's only.
//!
//! Messages get vectors the same way, never during a turn: the turn commits, then its messages
//! are embedded in the background. A changed embedding model forgets the passages' vectors
//! and ignores the messages' vectors of the old model (they are never compared with the new
//! model's queries); the background backfill re-embeds both while chat goes on.

use crate::backfill_state::Backfills;
use crate::rooms::Archival;
use crate::{Engram, Notice};
use engram_agent::{Embedder, ModelResolver};
use engram_core::{AgentId, Result};
use engram_embed::LocalEmbeddings;
use engram_store::{MessageVector, Store};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Rows (passages or messages) embedded per request while backfilling.
const BACKFILL_BATCH: usize = 64;

/// How long after a run a shared server's replica starts the backfill of its messages (see
/// `Engram::backfill_after_run`).
const AFTER_RUN_DELAY: std::time::Duration = std::time::Duration::from_secs(1);

/// How the built-in model batches a backfill's texts (see `engram_embed::Batching`).
const BULK_BATCHING: engram_embed::Batching = engram_embed::Batching {
    max_rows: 2,
    attention_budget: 10_000,
};

/// A passage's word-piece vectors as stored (`engram_retrieval::late::token_codes::SHIPPED`).
fn code(tokens: &engram_embed::TokenVectors) -> Vec<u8> {
    use engram_retrieval::late::token_codes;
    token_codes::encode(token_codes::SHIPPED, &tokens.vectors)
}

/// What a backfill did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct BackfillReport {
    /// Passages and messages given a vector (a message with nothing worth embedding counts
    /// once, when it is marked so).
    #[ts(type = "number")]
    pub embedded: u64,
    /// Passages and messages still without one (the model failed part way; run it again
    /// later).
    #[ts(type = "number")]
    pub remaining: u64,
}

/// What an outage notice says happened to what was being stored.
const STORED_WITHOUT: &str = "stored without a vector (searchable by its words; the vector is filled in once the model works)";

/// Why a batch failed when the model answered with fewer vectors than texts.
const TOO_FEW: &str = "the model returned too few vectors";

/// How long a search waits for the vectors of passages just written (see
/// [`Archival::insert`]) before it goes on with what is there: words find a passage at once,
/// its vector follows within a model pass (or the model's first load, which the search's own
/// query would wait for too).
const FRESH_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Up to how many fresh passages a search waits for: more is a bulk write (an import), which
/// the search does not wait out; it finds those by their words until their vectors are in.
const FRESH_WAIT_AT_MOST: u64 = 64;

/// What a backfill needs, detached from [`Engram`] so it can run in the background.
#[derive(Clone)]
struct Backfiller {
    store: Store,
    /// The storage interface: on a shared server the passages are there, not in `store`.
    backend: Arc<dyn engram_store_api::Backend>,
    /// A shared server's replica (see [`run_shared`](Self::run_shared)).
    shared: bool,
    resolver: Arc<crate::resolve::Resolver>,
    notices: tokio::sync::broadcast::Sender<Notice>,
    state: Arc<Backfills>,
    /// [`Engram`]'s agents with an embedding outage (a failed backfill marks its agent).
    outages: Arc<Mutex<std::collections::HashSet<AgentId>>>,
}

/// How long a file may stay `parsing` untouched before a start takes it for a reading a stop
/// cut short (10 minutes): a reading alive touches its file at every MiB, and no single file
/// read whole takes this long.
pub const INTERRUPTED_READ_AFTER: chrono::TimeDelta = chrono::TimeDelta::minutes(10);

impl Backfiller {
    /// The agent's embedding model handle (`local/all-minilm-l6-v2`) and client, if it has one.
    fn embedder(&self, agent: &AgentId) -> Result<Option<(String, Embedder)>> {
        let agent = self.store.agents().get(agent)?;
        agent
            .embedding
            .as_ref()
            .map(|cfg| Ok((cfg.model.clone(), self.resolver.embedder(cfg)?)))
            .transpose()
    }

    /// Rows (passages and messages) of the agent without a vector of its current model, and,
    /// on the built-in model, passages without their token vectors.
    fn missing(&self, agent: &AgentId) -> Result<u64> {
        let tokens = match self.built_in(agent)? {
            Some((handle, _)) => self.store.passages().count_without_tokens(agent, &handle)?,
            None => 0,
        };
        Ok(self
            .store
            .passages()
            .count_without_vectors(agent)?
            .max(tokens)
            + self.store.messages().count_without_vectors(agent)?)
    }

    /// The agent's embedding model handle and the model itself when it is a built-in one
    /// (whose passages also get token vectors for late interaction; see `engram_retrieval::late`).
    fn built_in(&self, agent: &AgentId) -> Result<Option<(String, Arc<LocalEmbeddings>)>> {
        let Some(cfg) = self.store.agents().get(agent)?.embedding else {
            return Ok(None);
        };
        let (provider, name) = engram_core::agent::split_handle(&cfg.model);
        if !provider.eq_ignore_ascii_case(engram_embed::PROVIDER) || cfg.base_url.is_some() {
            return Ok(None);
        }
        // A name no built-in model has is the embedder's error to report, not this one's.
        Ok(self
            .resolver
            .local
            .get(name)
            .ok()
            .map(|model| (cfg.model.clone(), model)))
    }

    /// Marks the agent's model as failed (`why`) and says so: what is left stays without a
    /// vector, found by its words, until the next backfill.
    fn outage(&self, agent: &AgentId, why: &str) {
        self.outages
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(agent.clone());
        tracing::warn!(agent = %agent, why, "embedding model unavailable");
        let _ = self.notices.send(Notice::EmbeddingsUnavailable {
            agent_id: agent.clone(),
            message: format!("{STORED_WITHOUT}: {why}"),
        });
    }

    /// `got` when it holds one result per text asked (`asked`); otherwise the outage is told
    /// (see [`outage`](Self::outage)) and `None` says to stop.
    fn all_or_outage<T, E: std::fmt::Display>(
        &self,
        agent: &AgentId,
        asked: usize,
        got: std::result::Result<Vec<T>, E>,
    ) -> Option<Vec<T>> {
        match got {
            Ok(all) if all.len() == asked => Some(all),
            Ok(_) => {
                self.outage(agent, TOO_FEW);
                None
            }
            Err(e) => {
                self.outage(agent, &e.to_string());
                None
            }
        }
    }

    /// Embeds the agent's passages and messages that lack a vector of its current model,
    /// batch by batch, until none are left or the model fails (what is done stays done: a
    /// later run resumes from there).
    async fn run(&self, agent: &AgentId) -> Result<BackfillReport> {
        let Some((handle, embedder)) = self.embedder(agent)? else {
            return Ok(BackfillReport {
                embedded: 0,
                remaining: self.store.passages().count_without_vectors(agent)?,
            });
        };
        let total = self.missing(agent)?;
        let mut report = BackfillReport::default();
        let progress = |report: &BackfillReport| {
            let _ = self.notices.send(Notice::EmbeddingBackfill {
                agent_id: agent.clone(),
                done: report.embedded,
                total,
            });
        };
        let built_in = self.built_in(agent)?.map(|(_, m)| m);
        if self
            .passages(
                agent,
                &handle,
                &embedder,
                built_in.as_deref(),
                &mut report,
                &progress,
            )
            .await?
            && self
                .tokens(agent, &handle, built_in.as_deref(), &mut report, &progress)
                .await?
        {
            self.messages(agent, &handle, &embedder, &mut report, &progress)
                .await?;
        }
        report.remaining = self.missing(agent)?;
        Ok(report)
    }

    /// The passage part of [`run`](Self::run): on the built-in model (`built_in`), each
    /// passage's vector and token vectors come from one model pass. Returns whether to go on
    /// (the model worked and is still the agent's).
    async fn passages(
        &self,
        agent: &AgentId,
        handle: &str,
        embedder: &Embedder,
        built_in: Option<&LocalEmbeddings>,
        report: &mut BackfillReport,
        progress: &(dyn Fn(&BackfillReport) + Sync),
    ) -> Result<bool> {
        loop {
            let batch = self
                .store
                .passages()
                .without_vectors(agent, BACKFILL_BATCH)?;
            if batch.is_empty() {
                return Ok(true);
            }
            let texts: Vec<String> = batch.iter().map(|p| p.text.clone()).collect();
            let (vectors, tokens) = match built_in {
                Some(model) => {
                    let encoded = model.encode(&texts, BULK_BATCHING).await;
                    let Some(e) = self.all_or_outage(agent, texts.len(), encoded) else {
                        return Ok(false);
                    };
                    let (v, t): (Vec<_>, Vec<_>) =
                        e.into_iter().map(|e| (e.vector, e.tokens)).unzip();
                    (v, Some(t))
                }
                None => {
                    let embedded = embedder.model.embed(&embedder.name, &texts).await;
                    let Some(v) = self.all_or_outage(agent, texts.len(), embedded) else {
                        return Ok(false);
                    };
                    (v, None)
                }
            };
            if let Some(tokens) = tokens {
                let coded: Vec<_> = batch
                    .iter()
                    .zip(tokens)
                    .map(|(p, t)| (p.id.clone(), p.text.clone(), code(&t)))
                    .collect();
                self.store.passages().fill_tokens(agent, handle, &coded)?;
            }
            let filled: Vec<_> = batch
                .into_iter()
                .zip(texts)
                .zip(vectors)
                .map(|((p, t), v)| (p.id, t, v))
                .collect();
            let n = self.store.passages().fill_vectors(agent, handle, &filled)?;
            if n == 0 {
                // Every row of the batch changed under us (or the model did); they come back
                // only if still missing, so stop rather than spin.
                return Ok(self.still_model(agent, handle));
            }
            report.embedded += n as u64;
            progress(report);
        }
    }

    /// Token vectors for the built-in model's passages that have a vector but none (passages
    /// embedded before token vectors were kept, or written with a vector by the chat step).
    /// Returns whether to go on.
    async fn tokens(
        &self,
        agent: &AgentId,
        handle: &str,
        built_in: Option<&LocalEmbeddings>,
        report: &mut BackfillReport,
        progress: &(dyn Fn(&BackfillReport) + Sync),
    ) -> Result<bool> {
        let Some(model) = built_in else {
            return Ok(true);
        };
        loop {
            let batch = self
                .store
                .passages()
                .without_tokens(agent, handle, BACKFILL_BATCH)?;
            if batch.is_empty() {
                return Ok(true);
            }
            let texts: Vec<String> = batch.iter().map(|p| p.text.clone()).collect();
            let encoded = model.encode(&texts, BULK_BATCHING).await;
            let Some(encoded) = self.all_or_outage(agent, texts.len(), encoded) else {
                return Ok(false);
            };
            let coded: Vec<_> = batch
                .into_iter()
                .zip(encoded)
                .map(|(p, e)| (p.id, p.text, code(&e.tokens)))
                .collect();
            let n = self.store.passages().fill_tokens(agent, handle, &coded)?;
            if n == 0 {
                return Ok(self.still_model(agent, handle));
            }
            report.embedded += n as u64;
            progress(report);
        }
    }

    /// The message part of [`run`](Self::run) and [`run_shared`](Self::run_shared), through
    /// the storage interface: every user and assistant message without a vector of `handle`,
    /// in the order they were written.
    async fn messages(
        &self,
        agent: &AgentId,
        handle: &str,
        embedder: &Embedder,
        report: &mut BackfillReport,
        progress: &(dyn Fn(&BackfillReport) + Sync),
    ) -> Result<()> {
        let mut after = None;
        loop {
            let batch = self
                .backend
                .messages_without_vectors(agent, after, BACKFILL_BATCH)
                .await?;
            let Some(last) = batch.last() else {
                return Ok(());
            };
            after = Some(last.cursor);
            let texts: Vec<String> = batch
                .iter()
                .map(|u| engram_store_api::embeddable_text(&u.message).unwrap_or_default())
                .collect();
            let wanted: Vec<String> = texts.iter().filter(|t| !t.is_empty()).cloned().collect();
            let mut vectors = if wanted.is_empty() {
                Vec::new()
            } else {
                let embedded = embedder.model.embed(&embedder.name, &wanted).await;
                let Some(v) = self.all_or_outage(agent, wanted.len(), embedded) else {
                    return Ok(());
                };
                v
            }
            .into_iter();
            let filled: Vec<MessageVector> = batch
                .into_iter()
                .zip(texts)
                .map(|(u, text)| MessageVector {
                    id: u.message.id,
                    vector: if text.is_empty() {
                        Vec::new()
                    } else {
                        vectors.next().unwrap_or_default()
                    },
                    text,
                })
                .collect();
            let n = self
                .backend
                .fill_message_vectors(agent, handle, &filled)
                .await?;
            if n == 0 && !self.backend_model_is(agent, handle).await {
                return Ok(());
            }
            report.embedded += n as u64;
            progress(report);
        }
    }

    /// [`run`](Self::run) on a shared server's replica: the agent's passages, then its
    /// messages, without a vector, through the storage interface, batch by batch. Token
    /// vectors are kept on this machine's database only, so there are none to fill in there.
    /// Replicas that fill the same agent at once store each vector once (a fill writes only
    /// where none is stored yet, or the same again); the one whose batch was taken stops.
    async fn run_shared(&self, agent: &AgentId) -> Result<BackfillReport> {
        let mut report = BackfillReport::default();
        let Some(cfg) = self.backend.get_agent(agent).await?.embedding else {
            report.remaining = self.backend.count_passages_without_vectors(agent).await?;
            return Ok(report);
        };
        let embedder = self.resolver.embedder(&cfg)?;
        let total = self.backend.count_passages_without_vectors(agent).await?
            + self.backend.count_messages_without_vectors(agent).await?;
        let progress = |report: &BackfillReport| {
            let _ = self.notices.send(Notice::EmbeddingBackfill {
                agent_id: agent.clone(),
                done: report.embedded,
                total,
            });
        };
        let mut went_on = true;
        loop {
            let batch = self
                .backend
                .passages_without_vectors(agent, BACKFILL_BATCH)
                .await?;
            if batch.is_empty() {
                break;
            }
            let texts: Vec<String> = batch.iter().map(|p| p.text.clone()).collect();
            let embedded = embedder.model.embed(&embedder.name, &texts).await;
            let Some(vectors) = self.all_or_outage(agent, texts.len(), embedded) else {
                went_on = false;
                break;
            };
            let filled: Vec<_> = batch
                .into_iter()
                .zip(texts)
                .zip(vectors)
                .map(|((p, t), v)| (p.id, t, v))
                .collect();
            let n = self
                .backend
                .fill_passage_vectors(agent, &cfg.model, &filled)
                .await?;
            if n == 0 {
                went_on = self.backend_model_is(agent, &cfg.model).await;
                break;
            }
            report.embedded += n as u64;
            progress(&report);
        }
        if went_on {
            self.messages(agent, &cfg.model, &embedder, &mut report, &progress)
                .await?;
        }
        report.remaining = self.backend.count_passages_without_vectors(agent).await?
            + self.backend.count_messages_without_vectors(agent).await?;
        Ok(report)
    }

    /// Whether passages or messages of the agent wait for a vector on a shared server.
    async fn waiting_shared(&self, agent: &AgentId) -> Result<bool> {
        if self.backend.count_passages_without_vectors(agent).await? > 0 {
            return Ok(true);
        }
        let next = self
            .backend
            .messages_without_vectors(agent, None, 1)
            .await?;
        Ok(!next.is_empty())
    }

    /// Whether `handle` is still the agent's embedding model, read through the storage
    /// interface (`false` when it cannot be read).
    async fn backend_model_is(&self, agent: &AgentId, handle: &str) -> bool {
        self.backend
            .get_agent(agent)
            .await
            .ok()
            .and_then(|a| a.embedding)
            .is_some_and(|cfg| cfg.model == handle)
    }

    /// Whether `handle` is still the agent's embedding model.
    fn still_model(&self, agent: &AgentId, handle: &str) -> bool {
        self.store
            .agents()
            .get(agent)
            .ok()
            .and_then(|a| a.embedding)
            .is_some_and(|cfg| cfg.model == handle)
    }

    /// Starts a background backfill for `agent`; when one runs already, it runs once more
    /// when it ends. The count of what is missing is taken in the background too (it reads
    /// every message of the agent), so a chat step never waits for it.
    fn spawn(&self, agent: &AgentId) {
        self.spawn_for(agent, false);
    }

    /// [`spawn`](Self::spawn); `fresh` marks that passages were just written, for searches
    /// to wait for (see `Archival::fresh_vectors`). The mark is set and cleared under the same
    /// lock as the running set, so a backfill that ends as a write comes in never clears the
    /// mark of the write it did not see. Without a runtime nothing starts and nothing is
    /// marked.
    fn spawn_for(&self, agent: &AgentId, fresh: bool) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        {
            let mut running = self.lock();
            if fresh {
                *self
                    .state
                    .fresh
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .entry(agent.clone())
                    .or_default() += 1;
            }
            if let Some(again) = running.get_mut(agent) {
                *again = true;
                return;
            }
            running.insert(agent.clone(), false);
        }
        let this = self.clone();
        let agent = agent.clone();
        runtime.spawn(async move {
            loop {
                let done = if this.shared {
                    match this.waiting_shared(&agent).await {
                        Ok(true) => this.run_shared(&agent).await.map(drop),
                        Ok(false) => Ok(()),
                        Err(e) => Err(e),
                    }
                } else if this.missing(&agent).unwrap_or(0) > 0 {
                    this.run(&agent).await.map(drop)
                } else {
                    Ok(())
                };
                if let Err(e) = done {
                    tracing::warn!(%e, agent = %agent, "backfill stopped");
                }
                let mut running = this.lock();
                if running.get(&agent) == Some(&true) {
                    running.insert(agent.clone(), false);
                    continue;
                }
                running.remove(&agent);
                this.state
                    .fresh
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&agent);
                drop(running);
                this.state.ended.send_modify(|n| *n += 1);
                return;
            }
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<AgentId, bool>> {
        self.state.running.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Engram {
    fn backfiller(&self) -> Backfiller {
        Backfiller {
            store: self.store.clone(),
            backend: self.backend.clone(),
            shared: self.shared,
            resolver: self.resolver.clone(),
            notices: self.notices.clone(),
            state: self.backfills.clone(),
            outages: self.embedding_outages.clone(),
        }
    }

    /// Starts filling in the agent's missing vectors in the background (no-op when nothing
    /// is missing; when a backfill runs already, it goes round once more).
    pub(crate) fn spawn_backfill(&self, agent: &AgentId) {
        self.backfiller().spawn(agent);
    }

    /// After a run on a shared server: the backfill of its messages, [`AFTER_RUN_DELAY`]
    /// later, once for all the runs of the agent that end meanwhile. A busy agent's messages
    /// are then embedded a batch at a time, and its turns do not share the database with a
    /// backfill each (the desktop embeds each step's messages at once, in the same process).
    pub(crate) fn backfill_after_run(&self, agent: &AgentId) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let due = &self.backfills.due;
        if !due
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(agent.clone())
        {
            return;
        }
        let (backfiller, agent) = (self.backfiller(), agent.clone());
        tokio::spawn(async move {
            tokio::time::sleep(AFTER_RUN_DELAY).await;
            backfiller
                .state
                .due
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&agent);
            backfiller.spawn(&agent);
        });
    }

    /// Starts computing the vectors of passages just stored without them (see
    /// [`add`](crate::Archival::insert)); searches wait briefly for them
    /// ([`fresh_vectors`](crate::Archival::fresh_vectors)).
    pub(crate) fn embed_fresh(&self, agent: &AgentId) {
        if self.shared {
            return;
        }
        // Without a runtime to run it in, the vectors come with the next long-lived process.
        self.backfiller().spawn_for(agent, true);
    }

    /// [`fresh_vectors`](crate::Archival::fresh_vectors) with the wait a search allows: none for a bulk
    /// write.
    pub(crate) async fn settle_for_search(&self, agent: &AgentId) {
        let pending = self
            .backfills
            .fresh
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(agent)
            .copied();
        if pending.is_some_and(|n| n <= FRESH_WAIT_AT_MOST) {
            self.archival().fresh_vectors(agent, FRESH_WAIT).await;
        }
    }

    /// Vectors for texts to be stored, or `None` (after a notice) when the agent's embedding
    /// model cannot embed them now: the caller stores the texts without vectors, then calls
    /// [`spawn_backfill`](Self::spawn_backfill), which fills in what is still missing (token
    /// vectors, earlier passages) once the write is there to be seen.
    pub(crate) async fn vectors_for_storing(
        &self,
        agent: &AgentId,
        texts: &[String],
    ) -> Result<Option<Vec<Vec<f32>>>> {
        let embedder = match self.embedder_for(agent).await {
            Ok(Some(e)) => e,
            Ok(None) => return Ok(None),
            Err(e) => {
                self.embeddings_unavailable(agent, &e.to_string(), true);
                return Ok(None);
            }
        };
        match embedder.model.embed(&embedder.name, texts).await {
            Ok(v) if v.len() == texts.len() => Ok(Some(v)),
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
        let embedder = match self.embedder_for(agent).await {
            Ok(Some(e)) => e,
            Ok(None) => return None,
            Err(e) => {
                self.embeddings_unavailable(agent, &e.to_string(), false);
                return None;
            }
        };
        match embedder.embed_query(query).await {
            Ok(v) => {
                // Searches are frequent and counting what is missing reads every row of a
                // big archive: only the first success after an outage looks.
                if self.outage_over(agent) {
                    self.backfiller().spawn(agent);
                }
                Some(v)
            }
            Err(e) => {
                self.embeddings_unavailable(agent, &e.to_string(), false);
                None
            }
        }
    }

    /// Whether the agent's embedding model had failed since it last worked (and so rows may
    /// have been stored without vectors); clears the mark.
    fn outage_over(&self, agent: &AgentId) -> bool {
        self.embedding_outages
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(agent)
    }

    fn embeddings_unavailable(&self, agent: &AgentId, why: &str, storing: bool) {
        self.embedding_outages
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(agent.clone());
        let what = if storing {
            STORED_WITHOUT
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

impl Archival<'_> {
    /// Embeds every passage of the agent that has no vector yet (imports, passages stored
    /// during an embedding outage, a changed embedding model), with progress as
    /// [`Notice::EmbeddingBackfill`]. Resumable: it can stop at any point and the next run
    /// goes on from what is still missing. Errors: `not_found` for the agent.
    pub async fn backfill(self, agent: &AgentId) -> Result<BackfillReport> {
        let backfiller = self.engram.backfiller();
        if backfiller.shared {
            return backfiller.run_shared(agent).await;
        }
        backfiller.run(agent).await
    }

    /// Starts a background backfill for every agent with passages or messages lacking a
    /// vector of its current embedding model: a backfill cut short by a restart (or an
    /// embedding model changed just before it) goes on. For long-lived processes (`engram
    /// serve`, the desktop app), called once after opening; progress arrives as
    /// [`Notice::EmbeddingBackfill`]. Returns how many agents have one (on a shared server the
    /// agents are looked at in the background, passages only, and 0 is returned). Must be
    /// called inside a tokio runtime (otherwise nothing starts and 0 is returned). Errors:
    /// storage.
    ///
    /// Vector index builds a quit cut short start again too, on a blocking thread (reading
    /// an agent's vectors takes seconds at a million passages), with progress as
    /// [`Notice::VectorIndexBuild`].
    ///
    /// Files a stop left `parsing` (untouched for [`INTERRUPTED_READ_AFTER`]) are marked
    /// failed, their partial text and passages removed.
    pub fn resume_backfills(self) -> Result<usize> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Ok(0);
        }
        let store = self.engram.store.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = store.resume_vector_index_builds() {
                tracing::warn!(error = %e, "vector index builds not resumed");
            }
        });
        // Passages of folders read while their model was unreachable get their vectors too.
        self.engram.spawn_folder_refill();
        // A file whose reading a stop cut short says so instead of staying "parsing".
        let before = chrono::Utc::now() - INTERRUPTED_READ_AFTER;
        match self.engram.store.folders().fail_interrupted_reads(before) {
            Ok(failed) => {
                for file in &failed {
                    tracing::warn!(file = %file.name, "a file's reading was cut short by a stop; marked failed");
                }
                let folders: std::collections::BTreeSet<_> =
                    failed.iter().map(|f| f.folder_id.clone()).collect();
                for folder in &folders {
                    self.engram.notify_folder_agents(folder);
                }
            }
            Err(e) => tracing::warn!(error = %e, "files cut short by a stop not checked"),
        }
        let backfiller = self.engram.backfiller();
        if backfiller.shared {
            // Every agent on the server is looked at, in the background: each one its backfill
            // when passages or messages wait for a vector (spawned backfills count as started
            // later).
            tokio::spawn(async move {
                let agents = match backfiller.backend.list_agents().await {
                    Ok(agents) => agents,
                    Err(e) => {
                        tracing::warn!(error = %e, "embedding backfills not resumed");
                        return;
                    }
                };
                for agent in agents.into_iter().filter(|a| a.embedding.is_some()) {
                    if matches!(backfiller.waiting_shared(&agent.id).await, Ok(true)) {
                        backfiller.spawn(&agent.id);
                    }
                }
            });
            return Ok(0);
        }
        let mut started = 0;
        for agent in self.engram.store.messages().agents_with_embeddings()? {
            if backfiller.missing(&agent)? > 0 {
                backfiller.spawn(&agent);
                started += 1;
            }
        }
        Ok(started)
    }

    /// Whether a background backfill runs for the agent now.
    pub fn backfill_running(self, agent: &AgentId) -> bool {
        self.engram.backfiller().lock().contains_key(agent)
    }

    /// Waits until the vectors of the agent's passages written since its backfill last ended
    /// are stored, at most `limit` (none pending: returns at once). Returns whether they are
    /// (`false`: timed out; what is missing is still found by its words).
    pub async fn fresh_vectors(self, agent: &AgentId, limit: std::time::Duration) -> bool {
        let mut ended = self.engram.backfills.ended.subscribe();
        let pending = || {
            self.engram
                .backfills
                .fresh
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains_key(agent)
        };
        tokio::time::timeout(limit, async {
            while pending() {
                if ended.changed().await.is_err() {
                    return;
                }
            }
        })
        .await
        .is_ok()
    }
}

//! The cross-encoder as the search pipeline uses it: loaded from its weights folder on the
//! first search that asks for it, shared by every agent, dropped again after a spell of
//! idleness (like the embedding model, see [`crate::local`]), and a failure to load is
//! remembered for [`crate::local::RETRY_AFTER`] so a broken folder costs one attempt, not one
//! per search.

use crate::local::RETRY_AFTER;
use crate::rerank::CrossEncoder;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The environment variable naming a folder with a cross-encoder's weights (`config.json`,
/// `tokenizer.json`, `model.safetensors`; see [`crate::rerank`]).
pub const RERANK_MODEL_DIR_ENV: &str = "ENGRAM_RERANK_MODEL_DIR";

/// Why the reranker could not score: the folder, and what is wrong with it.
#[derive(Clone, Debug, thiserror::Error)]
#[error("the reranker in {dir} is not usable: {message}")]
pub struct RerankError {
    /// The weights folder.
    pub dir: String,
    /// What went wrong (a missing or damaged file, a failed model pass).
    pub message: String,
}

struct Slot {
    model: Option<Arc<CrossEncoder>>,
    last_used: Instant,
}

/// A cross-encoder in a weights folder, loaded lazily and unloaded after `idle`.
pub struct LocalReranker {
    dir: PathBuf,
    idle: Duration,
    slot: Arc<Mutex<Slot>>,
    loading: tokio::sync::Mutex<()>,
    failed: Mutex<Option<(Instant, RerankError)>>,
}

impl LocalReranker {
    /// A reranker over the weights in `dir`, not loaded yet.
    pub fn new(dir: PathBuf, idle: Duration) -> Self {
        Self {
            dir,
            idle,
            slot: Arc::new(Mutex::new(Slot {
                model: None,
                last_used: Instant::now(),
            })),
            loading: tokio::sync::Mutex::new(()),
            failed: Mutex::new(None),
        }
    }

    /// The weights folder.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// Whether the weights are in memory now.
    pub fn is_loaded(&self) -> bool {
        self.lock().model.is_some()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn error(&self, message: impl std::fmt::Display) -> RerankError {
        RerankError {
            dir: self.dir.display().to_string(),
            message: message.to_string(),
        }
    }

    fn touch(&self) -> Option<Arc<CrossEncoder>> {
        let mut slot = self.lock();
        slot.last_used = Instant::now();
        slot.model.clone()
    }

    async fn model(&self) -> Result<Arc<CrossEncoder>, RerankError> {
        if let Some(m) = self.touch() {
            return Ok(m);
        }
        let _guard = self.loading.lock().await;
        if let Some(m) = self.touch() {
            return Ok(m);
        }
        if let Some((at, e)) = &*self.failed.lock().unwrap_or_else(|p| p.into_inner())
            && at.elapsed() < RETRY_AFTER
        {
            return Err(e.clone());
        }
        let dir = self.dir.clone();
        let loaded = tokio::task::spawn_blocking(move || CrossEncoder::load(&dir))
            .await
            .map_err(|e| self.error(e))
            .and_then(|r| r.map_err(|e| self.error(e)));
        let model = match loaded {
            Ok(m) => Arc::new(m),
            Err(e) => {
                *self.failed.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some((Instant::now(), e.clone()));
                return Err(e);
            }
        };
        {
            let mut slot = self.lock();
            slot.model = Some(model.clone());
            slot.last_used = Instant::now();
        }
        self.watch_idle();
        tracing::info!(dir = %self.dir.display(), "loaded the reranker");
        Ok(model)
    }

    /// The relevance logit of each passage for `query`, in input order (see
    /// [`CrossEncoder::score`]). Loads the model first when needed. Errors: the folder's
    /// files are missing or damaged ([`RerankError`] names the file), or a model pass failed.
    pub async fn score(&self, query: &str, passages: &[String]) -> Result<Vec<f32>, RerankError> {
        if passages.is_empty() {
            return Ok(Vec::new());
        }
        let model = self.model().await?;
        let (query, passages) = (query.to_owned(), passages.to_vec());
        let scores = tokio::task::spawn_blocking(move || model.score(&query, &passages))
            .await
            .map_err(|e| self.error(e))?
            .map_err(|e| self.error(e))?;
        self.touch();
        Ok(scores)
    }

    /// Unloads the model once it has not been used for `idle` (checked every `idle / 4`).
    fn watch_idle(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let slot = Arc::downgrade(&self.slot);
        let idle = self.idle;
        runtime.spawn(async move {
            loop {
                tokio::time::sleep((idle / 4).max(Duration::from_millis(10))).await;
                let Some(slot) = slot.upgrade() else { return };
                let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
                if slot.model.is_none() {
                    return;
                }
                if slot.last_used.elapsed() >= idle {
                    slot.model = None;
                    tracing::info!("unloaded the idle reranker");
                    return;
                }
            }
        });
    }
}

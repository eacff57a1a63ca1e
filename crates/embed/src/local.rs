//! The built-in model behind the providers' [`EmbeddingModel`] interface: loaded on first use
//! (fetching its files first when needed), shared by every agent that uses it, and dropped
//! again after a spell of idleness so the backend stays small while nobody searches.

use crate::catalog::LocalModelSpec;
use crate::encoder::Encoder;
use crate::fetch::{self, Progress};
use async_trait::async_trait;
use engram_core::error::ProviderFault;
use engram_providers::{EmbeddingModel, ProviderError};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where the weights come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WeightsSource {
    /// A folder the user provides (offline installs): used as it is, never written to.
    Folder(PathBuf),
    /// Fetched on first use from `base_url` into `cache_dir` (the data dir's `models/<name>`),
    /// each file checked against its pinned SHA-256.
    Download {
        /// Where the verified files are kept.
        cache_dir: PathBuf,
        /// Where they come from (`{base_url}/{file}`); the model's public repository unless a
        /// test serves them.
        base_url: String,
    },
}

/// Called with download progress (bytes over all files).
pub type ProgressHook = Arc<dyn Fn(Progress) + Send + Sync>;

struct Slot {
    encoder: Option<Arc<Encoder>>,
    last_used: Instant,
}

/// A built-in embedding model, loaded lazily and unloaded after `idle`.
pub struct LocalEmbeddings {
    spec: &'static LocalModelSpec,
    source: WeightsSource,
    idle: Duration,
    progress: Option<ProgressHook>,
    slot: Arc<Mutex<Slot>>,
    /// Held while loading, so two first calls fetch and load once.
    loading: tokio::sync::Mutex<()>,
    /// The last failure to fetch or load, when it happened and how many failed in a row: calls
    /// within the back-off ([`backoff`]) get it again at once instead of trying the network or
    /// disk again, so an offline machine makes one attempt, not one per passage.
    failed: Mutex<Option<Failure>>,
}

/// A failed fetch or load, remembered for the back-off.
struct Failure {
    at: Instant,
    in_a_row: u32,
    error: ProviderError,
}

/// How long a first failure to fetch or load the model is answered from memory.
pub const RETRY_AFTER: Duration = Duration::from_secs(30);

/// The longest back-off after failures in a row: an hour (a retry by hand, [`LocalEmbeddings::unload`],
/// tries at once).
pub const RETRY_AFTER_MAX: Duration = Duration::from_secs(3600);

/// How long the `in_a_row`-th failure in a row is answered from memory: [`RETRY_AFTER`],
/// doubled for each further failure, at most [`RETRY_AFTER_MAX`].
pub fn backoff(in_a_row: u32) -> Duration {
    let doublings = in_a_row.saturating_sub(1).min(16);
    RETRY_AFTER
        .saturating_mul(1 << doublings)
        .min(RETRY_AFTER_MAX)
}

/// How long the model stays loaded after its last use unless told otherwise.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(300);

impl LocalEmbeddings {
    /// A model that is not loaded yet. `progress` hears about first-use downloads.
    pub fn new(
        spec: &'static LocalModelSpec,
        source: WeightsSource,
        idle: Duration,
        progress: Option<ProgressHook>,
    ) -> Self {
        Self {
            spec,
            source,
            idle,
            progress,
            slot: Arc::new(Mutex::new(Slot {
                encoder: None,
                last_used: Instant::now(),
            })),
            loading: tokio::sync::Mutex::new(()),
            failed: Mutex::new(None),
        }
    }

    /// Which model this is.
    pub fn spec(&self) -> &'static LocalModelSpec {
        self.spec
    }

    /// Where its weights come from.
    pub fn source(&self) -> &WeightsSource {
        &self.source
    }

    /// Whether the weights are in memory now.
    pub fn is_loaded(&self) -> bool {
        self.lock().encoder.is_some()
    }

    /// Drops the weights now (they are loaded again on the next call) and forgets an earlier
    /// failure to load them.
    pub fn unload(&self) {
        self.lock().encoder = None;
        *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn folder(&self) -> PathBuf {
        match &self.source {
            WeightsSource::Folder(dir) => dir.clone(),
            WeightsSource::Download { cache_dir, .. } => cache_dir.clone(),
        }
    }

    /// Fetches the weights if they are missing (download source only) without loading them.
    /// Errors: the download failed or a checksum did not match.
    pub async fn ensure_files(&self) -> Result<(), ProviderError> {
        let WeightsSource::Download {
            cache_dir,
            base_url,
        } = &self.source
        else {
            return Ok(());
        };
        if fetch::is_complete(self.spec, cache_dir) {
            return Ok(());
        }
        let hook = self.progress.clone();
        let report = move |p: Progress| {
            if let Some(h) = &hook {
                h(p)
            }
        };
        fetch::fetch(self.spec, base_url, cache_dir, &report)
            .await
            .map_err(|e| unusable(self.spec, e))
    }

    /// The loaded encoder, loading (and first fetching) it when needed.
    pub async fn encoder(&self) -> Result<Arc<Encoder>, ProviderError> {
        if let Some(e) = self.touch() {
            return Ok(e);
        }
        let _guard = self.loading.lock().await;
        if let Some(e) = self.touch() {
            return Ok(e);
        }
        let in_a_row = {
            let failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
            match &*failed {
                Some(f) if f.at.elapsed() < backoff(f.in_a_row) => return Err(f.error.clone()),
                Some(f) => f.in_a_row,
                None => 0,
            }
        };
        let encoder = match self.load().await {
            Ok(e) => Arc::new(e),
            Err(e) => {
                tracing::warn!(
                    model = self.spec.name,
                    error = %e,
                    retry_in_secs = backoff(in_a_row + 1).as_secs(),
                    "the built-in embedding model is not available"
                );
                *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(Failure {
                    at: Instant::now(),
                    in_a_row: in_a_row + 1,
                    error: e.clone(),
                });
                return Err(e);
            }
        };
        *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = None;
        {
            let mut slot = self.lock();
            slot.encoder = Some(encoder.clone());
            slot.last_used = Instant::now();
        }
        self.watch_idle();
        tracing::info!(
            model = self.spec.name,
            "loaded the built-in embedding model"
        );
        Ok(encoder)
    }

    /// Each text's sentence vector and word-piece vectors from one pass (see
    /// [`Encoder::encode`]), loading the model when needed; on the blocking pool, batched by
    /// `batching`. Errors: the model cannot be loaded or run.
    pub async fn encode(
        &self,
        texts: &[String],
        batching: crate::Batching,
    ) -> Result<Vec<crate::Encoded>, ProviderError> {
        let encoder = self.encoder().await?;
        let texts = texts.to_vec();
        let out = tokio::task::spawn_blocking(move || encoder.encode_with(&texts, batching))
            .await
            .map_err(|e| unusable(self.spec, e))?
            .map_err(|e| unusable(self.spec, e))?;
        self.touch();
        Ok(out)
    }

    async fn load(&self) -> Result<Encoder, ProviderError> {
        self.ensure_files().await?;
        let dir = self.folder();
        tokio::task::spawn_blocking(move || Encoder::load(&dir))
            .await
            .map_err(|e| unusable(self.spec, e))?
            .map_err(|e| unusable(self.spec, e))
    }

    fn touch(&self) -> Option<Arc<Encoder>> {
        let mut slot = self.lock();
        slot.last_used = Instant::now();
        slot.encoder.clone()
    }

    /// Unloads the model once it has not been used for `idle` (checked every `idle / 4`).
    fn watch_idle(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let slot = Arc::downgrade(&self.slot);
        let idle = self.idle;
        let name = self.spec.name;
        runtime.spawn(async move {
            loop {
                tokio::time::sleep((idle / 4).max(Duration::from_millis(10))).await;
                let Some(slot) = slot.upgrade() else { return };
                let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
                if slot.encoder.is_none() {
                    return;
                }
                if slot.last_used.elapsed() >= idle {
                    slot.encoder = None;
                    tracing::info!(model = name, "unloaded the idle embedding model");
                    return;
                }
            }
        });
    }
}

fn unusable(spec: &LocalModelSpec, e: impl std::fmt::Display) -> ProviderError {
    ProviderError::new(
        ProviderFault::NotConfigured,
        format!(
            "the built-in embedding model local/{} is not usable: {e}",
            spec.name
        ),
    )
}

#[async_trait]
impl EmbeddingModel for LocalEmbeddings {
    #[tracing::instrument(skip_all, fields(model = %model, texts = texts.len()))]
    async fn embed(&self, model: &str, texts: &[String]) -> Result<Vec<Vec<f32>>, ProviderError> {
        if !model.eq_ignore_ascii_case(self.spec.name) {
            return Err(ProviderError::new(
                ProviderFault::NotConfigured,
                format!("local/{model} is not a built-in embedding model"),
            ));
        }
        let encoder = self.encoder().await?;
        let texts = texts.to_vec();
        let vectors = tokio::task::spawn_blocking(move || encoder.embed(&texts))
            .await
            .map_err(|e| unusable(self.spec, e))?
            .map_err(|e| unusable(self.spec, e))?;
        self.touch();
        Ok(vectors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_from_half_a_minute_to_an_hour() {
        assert_eq!(backoff(1), Duration::from_secs(30));
        assert_eq!(backoff(2), Duration::from_secs(60));
        assert_eq!(backoff(5), Duration::from_secs(480));
        assert_eq!(backoff(8), RETRY_AFTER_MAX);
        assert_eq!(backoff(u32::MAX), RETRY_AFTER_MAX);
    }
}

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
    /// The last failure to fetch or load and when it happened: calls within
    /// [`RETRY_AFTER`] get it again at once instead of trying the network or disk again.
    failed: Mutex<Option<(Instant, ProviderError)>>,
}

/// How long a failure to fetch or load the model is answered from memory.
pub const RETRY_AFTER: Duration = Duration::from_secs(30);

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
        {
            let failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((at, e)) = &*failed
                && at.elapsed() < RETRY_AFTER
            {
                return Err(e.clone());
            }
        }
        let encoder = match self.load().await {
            Ok(e) => Arc::new(e),
            Err(e) => {
                *self.failed.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some((Instant::now(), e.clone()));
                return Err(e);
            }
        };
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

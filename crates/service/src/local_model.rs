//! The built-in embedding models (`local/<model>`) as the service provides them: one shared,
//! lazily loaded instance per model; weights from the user's folder when one is set (the
//! `ENGRAM_LOCAL_MODEL_DIR` environment variable or the `embedding.local_model_dir` setting),
//! else downloaded once into `<data dir>/models/<model>` with progress as a [`Notice`].

use crate::{EnvLookup, Notice};
use engram_core::error::ProviderFault;
use engram_core::{Error, Result};
use engram_embed::fetch::Progress;
use engram_embed::{LocalEmbeddings, LocalModelSpec, WeightsSource};
use engram_store::Store;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Settings key of a folder holding the built-in model's weights (offline installs).
pub const LOCAL_MODEL_DIR_SETTING: &str = "embedding.local_model_dir";

/// The environment variable that replaces the download URL of the built-in model's files
/// (`{url}/{file}`), for mirrors and tests.
pub const LOCAL_MODEL_URL_ENV: &str = "ENGRAM_LOCAL_MODEL_URL";

/// The environment variable with the seconds an idle model stays loaded (default 300).
pub const LOCAL_MODEL_IDLE_ENV: &str = "ENGRAM_LOCAL_MODEL_IDLE_SECS";

pub(crate) struct LocalModels {
    home: PathBuf,
    store: Store,
    env: EnvLookup,
    notices: tokio::sync::broadcast::Sender<Notice>,
    loaded: Mutex<HashMap<&'static str, (WeightsSource, Arc<LocalEmbeddings>)>>,
}

impl LocalModels {
    pub(crate) fn new(
        home: PathBuf,
        store: Store,
        env: EnvLookup,
        notices: tokio::sync::broadcast::Sender<Notice>,
    ) -> Self {
        Self {
            home,
            store,
            env,
            notices,
            loaded: Mutex::new(HashMap::new()),
        }
    }

    /// Where the weights of `spec` come from now.
    pub(crate) fn source(&self, spec: &LocalModelSpec) -> Result<WeightsSource> {
        let folder = (self.env)(engram_embed::MODEL_DIR_ENV)
            .or(self.store.settings().get(LOCAL_MODEL_DIR_SETTING)?)
            .filter(|d| !d.trim().is_empty());
        Ok(match folder {
            Some(dir) => WeightsSource::Folder(PathBuf::from(dir)),
            None => WeightsSource::Download {
                cache_dir: self.home.join("models").join(spec.name),
                base_url: (self.env)(LOCAL_MODEL_URL_ENV)
                    .unwrap_or_else(|| spec.base_url.to_owned()),
            },
        })
    }

    /// The shared instance of `local/<name>`. A changed weights source (a new folder setting)
    /// gets a fresh instance. Errors: `provider_not_configured` for an unknown name.
    pub(crate) fn get(&self, name: &str) -> Result<Arc<LocalEmbeddings>> {
        let spec = engram_embed::catalog::find(name).ok_or_else(|| {
            let known: Vec<String> = engram_embed::catalog::MODELS
                .iter()
                .map(|m| format!("local/{}", m.name))
                .collect();
            Error::provider(
                ProviderFault::NotConfigured,
                format!(
                    "local/{name} is not a built-in embedding model (built in: {})",
                    known.join(", ")
                ),
            )
        })?;
        let source = self.source(spec)?;
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((s, model)) = loaded.get(spec.name)
            && *s == source
        {
            return Ok(model.clone());
        }
        let idle = (self.env)(LOCAL_MODEL_IDLE_ENV)
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .map_or(engram_embed::local::DEFAULT_IDLE, Duration::from_secs_f64);
        let notices = self.notices.clone();
        let model_name = format!("local/{}", spec.name);
        let hook = Arc::new(move |p: Progress| {
            let _ = notices.send(Notice::ModelDownload {
                model: model_name.clone(),
                file: p.file.to_owned(),
                done_bytes: p.done,
                total_bytes: p.total,
            });
        });
        let model = Arc::new(LocalEmbeddings::new(spec, source.clone(), idle, Some(hook)));
        loaded.insert(spec.name, (source, model.clone()));
        Ok(model)
    }

    /// The instance of `local/<name>` if it was created, for status and tests.
    pub(crate) fn existing(&self, name: &str) -> Option<Arc<LocalEmbeddings>> {
        let loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        engram_embed::catalog::find(name)
            .and_then(|spec| loaded.get(spec.name).map(|(_, m)| m.clone()))
    }
}

/// Where a built-in model stands.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
#[ts(export)]
pub struct LocalModelStatus {
    /// The handle, e.g. `local/all-minilm-l6-v2`.
    pub model: String,
    /// The folder its weights are read from.
    pub dir: String,
    /// Whether that folder is the user's own (offline install) rather than Engram's cache.
    pub user_folder: bool,
    /// Whether all its files are there (a download is needed otherwise).
    pub present: bool,
    /// Whether it is in memory now.
    pub loaded: bool,
    /// Bytes of its files together.
    #[ts(type = "number")]
    pub bytes: u64,
}

//! The reranker of archival search as the service provides it: a cross-encoder from a weights
//! folder (the `ENGRAM_RERANK_MODEL_DIR` environment variable or the
//! [`RERANK_MODEL_DIR_SETTING`] setting), switched off by [`RERANK_SETTING`] = `off`, shared
//! by every agent and transport (the agent's tool gets it through the model resolver; the
//! service's `search_archival` through [`crate::Archival::search`]). A reranker that
//! cannot load or run leaves the search with the store's ranking and says so once per failure
//! spell as a [`Notice::RerankerUnavailable`].
//!
//! Without a cross-encoder, late interaction over the built-in embedding model reranks
//! (`engram_retrieval::late`), for agents on that model. No cross-encoder is downloaded: none is
//! published with pinned digests in a registry the tests can reach, so none has been
//! measured on the development set yet (README, Performance). A user who has one (e.g.
//! `cross-encoder/ms-marco-MiniLM-L6-v2`) points Engram at its folder.

use crate::{EnvLookup, Notice};
use engram_embed::rerank_local::{LocalReranker, RERANK_MODEL_DIR_ENV};
use engram_store::Store;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Settings key of the folder holding the reranker's weights.
pub const RERANK_MODEL_DIR_SETTING: &str = "search.rerank_model_dir";

/// Settings key that switches the reranker off (`off`) or on (anything else, the default
/// when a weights folder is set).
pub const RERANK_SETTING: &str = "search.rerank";

/// Where the reranker stands, for settings screens and the CLI.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
#[ts(export)]
pub struct RerankerStatus {
    /// Whether archival search reranks now (on, and a weights folder is set).
    pub active: bool,
    /// Whether the user left it on ([`RERANK_SETTING`] is not `off`).
    pub enabled: bool,
    /// The weights folder, if one is set.
    pub dir: Option<String>,
    /// Whether the folder comes from the `ENGRAM_RERANK_MODEL_DIR` environment variable,
    /// which overrides the stored setting (setting a folder then changes nothing until the
    /// variable is unset).
    pub dir_from_env: bool,
    /// Whether the weights are in memory now.
    pub loaded: bool,
    /// Whether late interaction reranks instead (on, and no cross-encoder folder set).
    pub late_interaction: bool,
    /// Why the last search could not rerank with this folder (the weights failed to load or
    /// a model pass failed), if it could not; searches then keep the store's ranking. Cleared
    /// by the next successful rerank or a change of folder.
    pub error: Option<String>,
}

/// The last failure of the reranker: its folder and what went wrong.
type Failure = Arc<Mutex<Option<(PathBuf, String)>>>;

pub(crate) struct Rerankers {
    store: Store,
    env: EnvLookup,
    notices: tokio::sync::broadcast::Sender<Notice>,
    current: Mutex<Option<Arc<LocalReranker>>>,
    local: Arc<crate::local_model::LocalModels>,
    failure: Failure,
}

impl Rerankers {
    pub(crate) fn new(
        store: Store,
        env: EnvLookup,
        notices: tokio::sync::broadcast::Sender<Notice>,
        local: Arc<crate::local_model::LocalModels>,
    ) -> Self {
        Self {
            store,
            env,
            notices,
            current: Mutex::new(None),
            local,
            failure: Arc::default(),
        }
    }

    fn dir(&self) -> Option<PathBuf> {
        (self.env)(RERANK_MODEL_DIR_ENV)
            .or_else(|| {
                self.store
                    .settings()
                    .get(RERANK_MODEL_DIR_SETTING)
                    .ok()
                    .flatten()
            })
            .filter(|d| !d.trim().is_empty())
            .map(PathBuf::from)
    }

    fn enabled(&self) -> bool {
        !matches!(
            self.store
                .settings()
                .get(RERANK_SETTING)
                .ok()
                .flatten()
                .as_deref(),
            Some("off")
        )
    }

    /// The reranker archival search uses now: none when switched off; the cross-encoder
    /// when a weights folder is set (a new folder gets a new instance); otherwise late
    /// interaction over the built-in embedding model (see `engram_retrieval::late`).
    pub(crate) fn get(&self) -> Option<Arc<dyn engram_retrieval::Reranker>> {
        if !self.enabled() {
            return None;
        }
        let Some(dir) = self.dir() else {
            let local = self.local.clone();
            return Some(Arc::new(engram_retrieval::LateInteraction::new(
                self.store.clone(),
                Arc::new(move |name| local.existing(name)),
            )));
        };
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        let model = match &*current {
            Some(m) if m.dir() == dir => m.clone(),
            _ => {
                let idle = (self.env)(crate::LOCAL_MODEL_IDLE_ENV)
                    .and_then(|s| s.trim().parse::<f64>().ok())
                    .filter(|s| s.is_finite() && *s > 0.0)
                    .map_or(
                        engram_embed::local::DEFAULT_IDLE,
                        std::time::Duration::from_secs_f64,
                    );
                let m = Arc::new(LocalReranker::new(dir, idle));
                *current = Some(m.clone());
                m
            }
        };
        // Failures become a notice and the status's error; a success clears the error.
        let (notices, failure) = (self.notices.clone(), self.failure.clone());
        let dir = model.dir().to_owned();
        let outcome: engram_retrieval::rerank::Outcome = Arc::new(move |agent, error| {
            *failure.lock().unwrap_or_else(|p| p.into_inner()) =
                error.map(|e| (dir.clone(), e.to_string()));
            if let Some(e) = error {
                let _ = notices.send(Notice::RerankerUnavailable {
                    agent_id: agent.clone(),
                    message: format!("searched without reranking: {e}"),
                });
            }
        });
        Some(Arc::new(engram_retrieval::CrossEncoderReranker::new(
            model, outcome,
        )))
    }

    pub(crate) fn status(&self) -> RerankerStatus {
        let dir = self.dir();
        let loaded = self
            .current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_some_and(|m| Some(m.dir()) == dir.as_deref() && m.is_loaded());
        let error = self
            .failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .filter(|(at, _)| Some(at.as_path()) == dir.as_deref())
            .map(|(_, e)| e.clone());
        RerankerStatus {
            active: self.enabled() && dir.is_some(),
            late_interaction: self.enabled() && dir.is_none(),
            enabled: self.enabled(),
            dir: dir.map(|d| d.display().to_string()),
            dir_from_env: (self.env)(RERANK_MODEL_DIR_ENV).is_some_and(|d| !d.trim().is_empty()),
            loaded,
            error,
        }
    }
}

//! The registry of catalogue downloads running now and of the last failures, shared by every
//! transport (the downloads themselves are `model_pull`'s). Kept apart so the service's
//! facade can hold it without depending on the download code.

use crate::EnvLookup;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// A download in progress.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct PullProgress {
    /// Bytes present so far.
    #[ts(type = "number")]
    pub done_bytes: u64,
    /// Bytes of the whole file, once known.
    #[ts(type = "number | null")]
    pub total_bytes: Option<u64>,
}

/// Downloads running now, by model name: how to stop each, and how far it came.
pub(crate) type Running = HashMap<String, (CancellationToken, PullProgress)>;

/// The downloads running now and the last failures, shared by every transport.
pub(crate) struct Pulls {
    /// The environment (for the mirror's address).
    pub(crate) env: EnvLookup,
    running: Mutex<Running>,
    failed: Mutex<HashMap<String, String>>,
}

impl Pulls {
    pub(crate) fn new(env: EnvLookup) -> Arc<Self> {
        Arc::new(Self {
            env,
            running: Mutex::new(HashMap::new()),
            failed: Mutex::new(HashMap::new()),
        })
    }

    pub(crate) fn running(&self) -> std::sync::MutexGuard<'_, Running> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn failed(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.failed.lock().unwrap_or_else(|p| p.into_inner())
    }
}

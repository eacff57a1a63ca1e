//! The folder watches a process runs (state only, so the engine can hold it without
//! depending on the watching code in `folder_watch`).

use engram_core::FolderId;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// The watches this process runs, by folder.
#[derive(Default)]
pub(crate) struct Watchers {
    running: Mutex<HashMap<FolderId, Running>>,
    /// Whether the supervisor runs (started once per process).
    pub(crate) supervised: AtomicBool,
}

/// One folder's watch task.
pub(crate) struct Running {
    /// The directory it watches.
    pub(crate) path: String,
    /// When it was started.
    pub(crate) started: Instant,
    /// Stops it.
    pub(crate) task: tokio::task::AbortHandle,
}

impl Watchers {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<FolderId, Running>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stops the folder's watch in this process, if it runs one.
    pub(crate) fn stop(&self, folder: &FolderId) {
        if let Some(r) = self.lock().remove(folder) {
            r.task.abort();
        }
    }
}

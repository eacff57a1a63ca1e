//! Watching a folder's directory on disk. A folder linked to a directory (the link is stored,
//! so it survives a restart) is kept in step by long-lived processes — the desktop app and
//! `engram serve`, which call [`Folders::resume_watches`] when they open: the whole
//! directory once, then each path the OS reports changed (debounced by
//! `notify-debouncer-full`; reads — Engram's own included — are not changes). A directory
//! that vanishes leaves the folder as it was, marked [`WatchState::Missing`]; watching
//! resumes when it is back. A supervisor goes over the links
//! every few seconds, so links made or removed by another process (the CLI) are picked up too.

use crate::Engram;
use crate::folder_sync::{SyncReport, name_in};
use crate::folder_watchers::Running;
use crate::rooms::Folders;
use engram_core::{Error, FolderId, FolderWatch, Result, WatchState};
use notify_debouncer_full::notify::{self, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, NoCache, new_debouncer_opt};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Weak;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How long a path must stay quiet before its change is taken (a file being written or
/// copied fires many events).
const DEBOUNCE: Duration = Duration::from_millis(300);
/// How often the supervisor compares the running watches with the stored links.
const SUPERVISE_EVERY: Duration = Duration::from_secs(2);
/// How long a watch that stopped waits before it is started again (its directory back, or
/// the OS able to watch it again).
const RESTART_AFTER: Duration = Duration::from_secs(5);
/// Past this many changed paths in one batch, the whole directory is gone through instead.
const FULL_SYNC_PATHS: usize = 500;

impl Engram {
    fn supervise_watches(&self) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let links = match self.store.folders().watches() {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the folders' directory links");
                return;
            }
        };
        let mut running = self.watchers.lock();
        running.retain(|id, r| {
            let linked = links.iter().any(|l| &l.folder_id == id && l.path == r.path);
            if !linked {
                r.task.abort();
            }
            linked
        });
        for link in links {
            let root = PathBuf::from(&link.path);
            if let Some(r) = running.get(&link.folder_id) {
                let alive = !r.task.is_finished();
                if alive && root.is_dir() {
                    continue;
                }
                if alive {
                    // Gone without an event reaching us (a network drive unplugged).
                    r.task.abort();
                } else if r.started.elapsed() < RESTART_AFTER {
                    continue;
                }
                running.remove(&link.folder_id);
            }
            if !root.is_dir() {
                if link.state != WatchState::Missing {
                    let why = gone(&root);
                    let _ = self.store.folders().set_watch_state(
                        &link.folder_id,
                        WatchState::Missing,
                        Some(&why),
                        None,
                    );
                    self.notify(crate::Notice::FolderChanged {
                        folder_id: link.folder_id.clone(),
                    });
                }
                // Remembered as stopped, so the directory's return is looked for each tick.
                let task = tokio::spawn(async {}).abort_handle();
                running.insert(
                    link.folder_id.clone(),
                    Running {
                        path: link.path,
                        started: Instant::now()
                            .checked_sub(RESTART_AFTER)
                            .unwrap_or_else(Instant::now),
                        task,
                    },
                );
                continue;
            }
            let task =
                tokio::spawn(watch(self.me.clone(), link.folder_id.clone(), root)).abort_handle();
            running.insert(
                link.folder_id,
                Running {
                    path: link.path,
                    started: Instant::now(),
                    task,
                },
            );
        }
    }

    fn set_state(&self, folder: &FolderId, state: WatchState, error: Option<&str>, synced: bool) {
        let synced_at = synced.then(chrono::Utc::now);
        if let Err(e) = self
            .store
            .folders()
            .set_watch_state(folder, state, error, synced_at)
        {
            tracing::warn!(folder = %folder, error = %e, "cannot record the watch's state");
        }
        self.notify(crate::Notice::FolderChanged {
            folder_id: folder.clone(),
        });
    }
}

impl Folders<'_> {
    /// Links a folder to the directory `dir` (resolved to an absolute path without symbolic
    /// links) and, inside a tokio runtime, starts keeping the folder in step with it in this
    /// process. A folder has at most one directory; linking another replaces it. Files already
    /// in the folder that are not in the directory are deleted by the first sync.
    ///
    /// Errors: `not_found` for the folder; `invalid` when `dir` is not a directory, or holds or
    /// sits inside Engram's data directory (the database would watch itself).
    pub fn watch(self, folder: &FolderId, dir: &Path) -> Result<FolderWatch> {
        let watch = self.link_dir(folder, dir)?;
        self.resume_watches();
        self.engram.supervise_watches();
        Ok(watch)
    }

    /// Stores a folder's link to `dir` without starting a watch (what a short-lived process
    /// such as the CLI does: the desktop app or `engram serve` picks the link up). Errors as
    /// [`Folders::watch`].
    pub fn link_dir(self, folder: &FolderId, dir: &Path) -> Result<FolderWatch> {
        self.engram.store.folders().get(folder)?;
        let root = std::fs::canonicalize(dir)
            .map_err(|e| Error::invalid(format!("cannot watch {}: {e}", dir.display())))?;
        if !root.is_dir() {
            return Err(Error::invalid(format!(
                "cannot watch {}: not a directory",
                root.display()
            )));
        }
        let home = std::fs::canonicalize(self.engram.home())
            .unwrap_or_else(|_| self.engram.home().to_owned());
        if root.starts_with(&home) || home.starts_with(&root) {
            return Err(Error::invalid(format!(
                "cannot watch {}: it holds Engram's own data ({})",
                root.display(),
                home.display()
            )));
        }
        let path = root
            .to_str()
            .ok_or_else(|| Error::invalid(format!("{}: not UTF-8", root.display())))?;
        self.engram.watchers.stop(folder);
        self.engram.store.folders().link_dir(folder, path)
    }

    /// Removes a folder's link to its directory and stops watching it; the files stay.
    /// Returns whether it had one. Errors: `not_found` for the folder.
    pub fn unwatch(self, folder: &FolderId) -> Result<bool> {
        self.engram.store.folders().get(folder)?;
        self.engram.watchers.stop(folder);
        let had = self.engram.store.folders().unlink_dir(folder)?;
        self.engram.notify(crate::Notice::FolderChanged {
            folder_id: folder.clone(),
        });
        Ok(had)
    }

    /// Every folder's link to a directory, with what the watching process last found.
    pub fn watches(self) -> Result<Vec<FolderWatch>> {
        self.engram.store.folders().watches()
    }

    /// Brings a linked folder in step with its directory once, now (what `engram folder
    /// watch` does before a long-lived process takes over). Errors: `not_found` for the
    /// folder; `invalid` when it has no link or its directory is gone (then marked missing).
    pub async fn sync_watched(self, folder: &FolderId) -> Result<SyncReport> {
        let link = self.engram.store.folders().watch(folder)?.ok_or_else(|| {
            Error::invalid("the folder is not linked to a directory (engram folder watch)")
        })?;
        let root = PathBuf::from(&link.path);
        if !root.is_dir() {
            let why = gone(&root);
            self.engram.store.folders().set_watch_state(
                folder,
                WatchState::Missing,
                Some(&why),
                None,
            )?;
            return Err(Error::invalid(why));
        }
        let report = self.engram.sync_dir_path(folder, &root, "").await?;
        let state = match link.state {
            WatchState::Missing => WatchState::Linked,
            s => s,
        };
        self.engram.store.folders().set_watch_state(
            folder,
            state,
            None,
            Some(chrono::Utc::now()),
        )?;
        Ok(report)
    }

    /// Starts (once per process, inside a tokio runtime) the supervisor that keeps every
    /// linked folder watched: it starts a watch for each stored link, stops those unlinked,
    /// and restarts those whose directory came back. For long-lived processes; a no-op
    /// outside a runtime.
    pub fn resume_watches(self) {
        if tokio::runtime::Handle::try_current().is_err()
            || self.engram.watchers.supervised.swap(true, Ordering::SeqCst)
        {
            return;
        }
        let weak = self.engram.me.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(SUPERVISE_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(engram) = weak.upgrade() else { break };
                engram.supervise_watches();
            }
        });
    }
}

fn gone(root: &Path) -> String {
    format!(
        "the directory {} is gone or unreadable: the folder keeps its files, and watching resumes when it is back",
        root.display()
    )
}

/// One folder's watch: the OS's events for `root`, debounced, the whole directory once, then
/// each changed path. Ends when the directory goes, the folder is deleted, or Engram closes.
async fn watch(engram: Weak<Engram>, folder: FolderId, root: PathBuf) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<DebounceEventResult>();
    // No file-id cache: it would walk the tree (following symbolic links out of it) only to
    // pair the two halves of a rename, and both of its paths are gone through anyway.
    let debouncer = new_debouncer_opt::<_, notify::RecommendedWatcher, _>(
        DEBOUNCE,
        None,
        move |res: DebounceEventResult| {
            let _ = tx.send(res);
        },
        NoCache,
        notify::Config::default(),
    );
    let started = debouncer.and_then(|mut d| {
        d.watch(&root, RecursiveMode::Recursive)?;
        Ok(d)
    });
    // Held for as long as the watch runs: dropping it stops the OS watch.
    let _debouncer = match started {
        Ok(d) => d,
        Err(e) => {
            if let Some(engram) = engram.upgrade() {
                let why = format!("cannot watch {}: {e}", root.display());
                engram.set_state(&folder, WatchState::Missing, Some(&why), false);
            }
            return;
        }
    };
    let mut full = true;
    let mut paths = BTreeSet::new();
    loop {
        let Some(engram) = engram.upgrade() else {
            return;
        };
        if !root.is_dir() {
            engram.set_state(&folder, WatchState::Missing, Some(&gone(&root)), false);
            return;
        }
        if full || paths.len() > FULL_SYNC_PATHS || paths.contains("") {
            engram.set_state(&folder, WatchState::Syncing, None, false);
            paths = BTreeSet::from([String::new()]);
        }
        for prefix in outermost(&paths) {
            match engram.sync_dir_path(&folder, &root, &prefix).await {
                Ok(_) => {}
                Err(Error::NotFound { .. }) => return,
                Err(e) => {
                    tracing::warn!(folder = %folder, path = %prefix, error = %e, "cannot sync")
                }
            }
        }
        engram.set_state(&folder, WatchState::Watching, None, true);
        drop(engram);
        (full, paths) = (false, BTreeSet::new());
        // Batches naming only left-out paths (a swap file) change nothing: wait for more.
        while !full && paths.is_empty() {
            let Some(first) = rx.recv().await else { return };
            let mut batch = vec![first];
            while let Ok(more) = rx.try_recv() {
                batch.push(more);
            }
            for res in batch {
                match res {
                    Ok(events) => {
                        // The OS dropped events (its queue overflowed): go through it all.
                        full |= events.iter().any(|e| e.need_rescan());
                        paths.extend(
                            events
                                .into_iter()
                                // A file opened or read (each sync reads what it syncs): no
                                // change.
                                .filter(|e| !e.kind.is_access())
                                .flat_map(|e| e.event.paths)
                                .filter_map(|p| name_in(&root, &p)),
                        )
                    }
                    // Events were lost (a queue overflow): only going through it all is safe.
                    Err(errors) => {
                        let error = errors.first().map(ToString::to_string).unwrap_or_default();
                        tracing::warn!(folder = %folder, %error, "watch events lost; syncing all");
                        full = true;
                    }
                }
            }
        }
    }
}

/// The paths of `set` that are not under another path of it (sorted, so a parent comes
/// before its children).
fn outermost(set: &BTreeSet<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in set {
        let covered = out.iter().any(|o| {
            o.is_empty() || (p.starts_with(o.as_str()) && p.as_bytes().get(o.len()) == Some(&b'/'))
        });
        if !covered {
            out.push(p.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_directory_covers_its_files() {
        let set: BTreeSet<String> = ["a", "a/b.md", "ab.md", "c/d/e.txt", "c/d"]
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(outermost(&set), vec!["a", "ab.md", "c/d"]);
        let all: BTreeSet<String> = ["", "x"].into_iter().map(String::from).collect();
        assert_eq!(outermost(&all), vec![""]);
    }
}

//! Downloading catalogue models ([`crate::model_catalogue`]) into `<data dir>/models/llm/`
//! (private to the user) through the verified path of `engram_download`, then registering
//! them as `engram model add` does. One download per model at a time; each can be cancelled
//! (its `.part` file stays, and the next pull resumes it). Progress goes to the caller and,
//! about four times a second, to every window as [`Notice::ChatModelPull`].

use crate::model_catalogue::{self, CatalogueModel, HUGGING_FACE, LLM_MIRROR_ENV};
use crate::notices::PullState;
use crate::pulls::{PullProgress, Pulls};
use crate::rooms::Models;
use crate::{Engram, LocalChatModel, Notice};
use engram_core::error::ProviderFault;
use engram_core::{Error, Result};
use engram_download::{DownloadError, Expected, Target};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How often a download's progress is announced to the windows.
const NOTICE_EVERY: Duration = Duration::from_millis(250);

/// A catalogue model and where it stands on this computer.
#[derive(Clone, Debug, PartialEq, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct CatalogueEntry {
    /// The model.
    pub model: CatalogueModel,
    /// Its handle, `local/<name>`.
    pub handle: String,
    /// Whether it is registered (usable as an agent's model).
    pub registered: bool,
    /// Whether its verified file is in Engram's models folder.
    pub downloaded: bool,
    /// Bytes of an unfinished download kept for a resume (0 when none).
    #[ts(type = "number")]
    pub partial_bytes: u64,
    /// The download running now, if any.
    pub pulling: Option<PullProgress>,
    /// Why the last download in this session failed, until the next one starts.
    pub error: Option<String>,
}

/// Ends a download's entry in the registry however the download ends.
struct Entry<'a> {
    pulls: &'a Pulls,
    name: String,
}

impl Drop for Entry<'_> {
    fn drop(&mut self) {
        self.pulls.running().remove(&self.name);
    }
}

/// Where catalogue files come from: the mirror named by [`LLM_MIRROR_ENV`], else Hugging Face.
fn host(pulls: &Pulls) -> String {
    (pulls.env)(LLM_MIRROR_ENV)
        .filter(|h| !h.trim().is_empty())
        .unwrap_or_else(|| HUGGING_FACE.to_owned())
}

fn unknown(name: &str) -> Error {
    let known: Vec<String> = model_catalogue::catalogue()
        .into_iter()
        .map(|m| m.name)
        .collect();
    Error::invalid(format!(
        "{name} is not in the catalogue of built-in models (it has: {}); a GGUF file of your own is added with `engram model add FILE`",
        known.join(", ")
    ))
}

fn from_download(model: &CatalogueModel, e: DownloadError) -> Error {
    let what = &model.title;
    match e {
        DownloadError::Cancelled { .. } => Error::Cancelled,
        DownloadError::Io { path, message } => {
            Error::Storage(format!("cannot write {path}: {message}"))
        }
        DownloadError::Transfer { url, message } => Error::provider(
            ProviderFault::Unreachable,
            format!(
                "could not download {what} from {url}: {message}; what arrived is kept, and pulling it again resumes from there"
            ),
        ),
        DownloadError::Checksum { got, expected, .. } => Error::provider(
            ProviderFault::BadResponse,
            format!(
                "the downloaded {what} is damaged or not the expected file (its SHA-256 is {got}, expected {expected}); it was deleted — pull it again"
            ),
        ),
        DownloadError::NoDigest { url } => Error::provider(
            ProviderFault::BadResponse,
            format!(
                "{url} states no SHA-256 for {what} (no X-Linked-Etag header), so the file cannot be checked; refused"
            ),
        ),
    }
}

impl Engram {
    async fn pull_now(
        &self,
        model: &CatalogueModel,
        on_progress: &(dyn Fn(u64, Option<u64>) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<LocalChatModel> {
        let dir = self.models().dir();
        let dest = dir.join(&model.file);
        if !dest.is_file() {
            engram_download::private_dir(&dir)
                .await
                .map_err(|e| from_download(model, e))?;
            let target = Target {
                url: model.url(&host(&self.pulls)),
                dest: dest.clone(),
                bytes: model.pinned.then_some(model.bytes),
                sha256: model
                    .sha256
                    .clone()
                    .map_or(Expected::Served, Expected::Pinned),
            };
            let client = engram_download::client().map_err(|e| from_download(model, e))?;
            let last = Mutex::new(None::<Instant>);
            let report = |done: u64, total: Option<u64>| {
                on_progress(done, total);
                if let Some((_, p)) = self.pulls.running().get_mut(&model.name) {
                    *p = PullProgress {
                        done_bytes: done,
                        total_bytes: total,
                    };
                }
                let mut last = last.lock().unwrap_or_else(|p| p.into_inner());
                if last.is_none_or(|t| t.elapsed() >= NOTICE_EVERY) {
                    *last = Some(Instant::now());
                    self.notify(Notice::ChatModelPull {
                        name: model.name.clone(),
                        done_bytes: done,
                        total_bytes: total,
                        state: PullState::Running,
                        message: None,
                    });
                }
            };
            tracing::info!(model = %model.name, url = %target.url, "downloading a built-in model");
            engram_download::download(&client, &target, &report, cancel)
                .await
                .map_err(|e| from_download(model, e))?;
        }
        let registered = self
            .models()
            .list_local()?
            .into_iter()
            .find(|m| m.name == model.name && std::path::Path::new(&m.path) == dest);
        match registered {
            Some(m) => Ok(m),
            None => self.models().add_local(&dest, None),
        }
    }
}

impl Models<'_> {
    /// Engram's folder for downloaded chat models: `<data dir>/models/llm`.
    pub fn dir(self) -> PathBuf {
        self.engram.home.join("models").join("llm")
    }

    /// The catalogue of recommended models with where each stands here: registered,
    /// downloaded, a resumable part, a download running, the last failure.
    pub fn catalogue(self) -> Result<Vec<CatalogueEntry>> {
        let registered = self.list_local()?;
        let dir = self.dir();
        let running = self.engram.pulls.running();
        let failed = self.engram.pulls.failed();
        Ok(model_catalogue::catalogue()
            .into_iter()
            .map(|model| {
                let dest = dir.join(&model.file);
                CatalogueEntry {
                    handle: format!("local/{}", model.name),
                    registered: registered.iter().any(|r| r.name == model.name),
                    downloaded: dest.is_file(),
                    partial_bytes: std::fs::metadata(engram_download::part_path(&dest))
                        .map_or(0, |m| m.len()),
                    pulling: running.get(&model.name).map(|(_, p)| p.clone()),
                    error: failed.get(&model.name).cloned(),
                    model,
                }
            })
            .collect())
    }

    /// Downloads the catalogue model `name` (`local/` optional) into
    /// [`dir`](Self::dir), checks its SHA-256 (pinned, or as the server
    /// states it), and registers it as `local/<name>`. Progress goes to `on_progress`
    /// (bytes present, total when known) and to the windows as [`Notice::ChatModelPull`]. A
    /// file already downloaded is registered without a download; an unfinished one resumes.
    ///
    /// Errors: `invalid_input` for a name not in the catalogue; `conflict` while the same
    /// model downloads; `cancelled` after [`cancel_pull`](Self::cancel_pull)
    /// (the part stays); `provider_unreachable` for a broken transfer (the part stays);
    /// `provider_bad_response` for a damaged file (deleted) or one without a digest to
    /// check; `storage` when the folder cannot be written.
    pub async fn pull(
        self,
        name: &str,
        on_progress: &(dyn Fn(u64, Option<u64>) + Send + Sync),
    ) -> Result<LocalChatModel> {
        let model = model_catalogue::find(name).ok_or_else(|| unknown(name))?;
        let cancel = CancellationToken::new();
        {
            let mut running = self.engram.pulls.running();
            if running.contains_key(&model.name) {
                return Err(Error::Conflict(format!(
                    "{} is already downloading",
                    model.title
                )));
            }
            let start = PullProgress {
                done_bytes: 0,
                total_bytes: model.pinned.then_some(model.bytes),
            };
            running.insert(model.name.clone(), (cancel.clone(), start));
        }
        let entry = Entry {
            pulls: &self.engram.pulls,
            name: model.name.clone(),
        };
        self.engram.pulls.failed().remove(&model.name);
        let result = self.engram.pull_now(&model, on_progress, &cancel).await;
        let (state, message) = match &result {
            Ok(_) => (PullState::Done, None),
            Err(Error::Cancelled) => (PullState::Cancelled, None),
            Err(e) => {
                self.engram
                    .pulls
                    .failed()
                    .insert(model.name.clone(), e.to_string());
                (PullState::Failed, Some(e.to_string()))
            }
        };
        let (done_bytes, total_bytes) = match &result {
            Ok(m) => (m.bytes, Some(m.bytes)),
            Err(_) => self
                .engram
                .pulls
                .running()
                .get(&model.name)
                .map_or((0, None), |(_, p)| (p.done_bytes, p.total_bytes)),
        };
        // Out of the registry before the last notice: a window that reads the catalogue on
        // it must not see the download still running.
        drop(entry);
        self.engram.notify(Notice::ChatModelPull {
            name: model.name.clone(),
            done_bytes,
            total_bytes,
            state,
            message,
        });
        result
    }

    /// Starts [`pull`](Self::pull) in the background (for the window, which
    /// follows it through [`Notice::ChatModelPull`]). Errors: as `pull_model`'s checks before
    /// the download (`invalid_input`, `conflict`).
    pub fn start_pull(self, name: &str) -> Result<()> {
        let model = model_catalogue::find(name).ok_or_else(|| unknown(name))?;
        if self.engram.pulls.running().contains_key(&model.name) {
            return Err(Error::Conflict(format!(
                "{} is already downloading",
                model.title
            )));
        }
        let engram = self.engram.handle()?;
        tokio::spawn(async move {
            if let Err(e) = engram.models().pull(&model.name, &|_, _| {}).await {
                tracing::info!(model = %model.name, error = %e, "built-in model download ended");
            }
        });
        Ok(())
    }

    /// Stops the download of catalogue model `name`, keeping what arrived for a resume.
    /// `false` when none was running.
    pub fn cancel_pull(self, name: &str) -> bool {
        let Some(model) = model_catalogue::find(name) else {
            return false;
        };
        match self.engram.pulls.running().get(&model.name) {
            Some((cancel, _)) => {
                cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Deletes the downloaded file of catalogue model `name` (and any unfinished part) from
    /// Engram's models folder and forgets its registration when it points there; a
    /// registration of the user's own file elsewhere is left alone. Errors: `invalid_input`
    /// for a name not in the catalogue; `conflict` while it downloads; `storage` when the
    /// file cannot be deleted.
    pub async fn delete_downloaded(self, name: &str) -> Result<()> {
        let model = model_catalogue::find(name).ok_or_else(|| unknown(name))?;
        if self.engram.pulls.running().contains_key(&model.name) {
            return Err(Error::Conflict(format!(
                "{} is downloading; cancel it first",
                model.title
            )));
        }
        let dest = self.dir().join(&model.file);
        let ours = self
            .list_local()?
            .into_iter()
            .any(|m| m.name == model.name && std::path::Path::new(&m.path) == dest);
        if ours {
            self.remove_local(&model.name).await?;
        }
        for path in [engram_download::part_path(&dest), dest] {
            match tokio::fs::remove_file(&path).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(Error::Storage(format!(
                        "cannot delete {}: {e}",
                        path.display()
                    )));
                }
            }
        }
        self.engram.pulls.failed().remove(&model.name);
        Ok(())
    }
}

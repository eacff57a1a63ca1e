//! Adding files to a folder: each file is stored, read (`engram_documents`, on a blocking
//! thread), cut into passages and embedded with the folder's model, its status moving
//! `pending → parsing → embedding → completed`, or to `error` with the reason. One file
//! failing never stops the others, and an unchanged file (same name, same SHA-256) is left
//! as it is.

use crate::Engram;
use crate::resolve::Resolver;
use crate::rooms::Folders;
use engram_core::{Error, FileStatus, FolderFile, FolderId, Provenance, Result};
use engram_documents::Source;
use engram_store::{FileUpload, NewChunk, ParsedFile, Store, Upserted};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::{Component, Path};

/// Passages embedded per request.
const EMBED_BATCH: usize = 32;

/// What happened to one file given to a folder.
#[derive(Clone, Debug, PartialEq, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct FileAdded {
    /// Its name in the folder (or the path given, when it was skipped).
    pub name: String,
    /// The file as stored now (its `status`, and `error` when it could not be read); `None`
    /// when it was skipped before reaching the folder.
    pub file: Option<FolderFile>,
    /// The same bytes were already there: nothing was done.
    pub unchanged: bool,
    /// Why it was not added (a symbolic link, an unreadable directory entry).
    pub skipped: Option<String>,
    /// What a person should know about how it was read ("not UTF-8: read as Windows-1252",
    /// "searchable by words; vectors missing: …").
    pub notes: Vec<String>,
}

/// Checks a file's name in a folder: a relative `/`-separated path whose parts are neither
/// empty, `.` nor `..` (backslashes count as separators). Returns it normalised.
///
/// Errors: `invalid` for an absolute path or one that climbs out of the folder.
pub fn check_file_name(name: &str) -> Result<String> {
    let unified = name.trim().replace('\\', "/");
    if unified.is_empty() {
        return Err(Error::invalid("a file needs a name"));
    }
    // `/x` here, `C:/x` on Windows.
    if unified.starts_with('/') || unified.chars().nth(1) == Some(':') {
        return Err(Error::invalid(format!(
            "'{name}' is an absolute path; a file's name is a path inside its folder"
        )));
    }
    let parts: Vec<&str> = unified.split('/').filter(|p| !p.is_empty()).collect();
    if parts.iter().any(|p| *p == ".." || *p == ".") {
        return Err(Error::invalid(format!(
            "'{name}' climbs out of the folder ('..' or '.'); name files by a path inside it"
        )));
    }
    Ok(parts.join("/"))
}

fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// How a file on disk came to be read.
#[derive(Clone, Copy)]
pub(crate) enum Listed {
    /// A person named this path: read as named, through a link if it is one.
    ByPerson,
    /// A directory walk that does not follow links found it as a regular file: read only if
    /// it still is that file.
    ByWalk,
}

impl Engram {
    fn file_reads(
        &self,
    ) -> std::sync::MutexGuard<
        '_,
        std::collections::HashMap<(FolderId, String), tokio_util::sync::CancellationToken>,
    > {
        self.file_reads.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads, cuts and embeds a file [`Folders::add_file`] stored as changed.
    async fn read_file(
        &self,
        folder: &engram_core::Folder,
        file: FolderFile,
        name: String,
        bytes: Vec<u8>,
    ) -> Result<FileAdded> {
        self.store
            .folders()
            .set_file_status(&file.id, FileStatus::Parsing)?;
        let read_name = name.clone();
        let parsed =
            tokio::task::spawn_blocking(move || engram_documents::parse(&read_name, &bytes))
                .await
                .map_err(|e| Error::Internal(format!("the reader stopped: {e}")))?;
        let doc = match parsed {
            Ok(doc) => doc,
            Err(e) => {
                let failed = self.store.folders().fail_file(&file.id, &e.to_string())?;
                return Ok(failed_added(name, failed));
            }
        };
        let notes = doc.notes.clone();
        let stored = ParsedFile {
            lines: doc.lines,
            page_starts: doc.page_starts,
            chunks: doc.chunks.into_iter().map(stored_chunk).collect(),
            text: doc.text,
        };
        let next = if folder.embedding.is_some() {
            FileStatus::Embedding
        } else {
            FileStatus::Completed
        };
        self.store
            .folders()
            .store_parsed_file(&file.id, &stored, next)?;
        self.embed_and_complete(folder, file, name, notes).await
    }

    /// Embeds a read file's folder (its passages without vectors, in batches) and marks the
    /// file completed; a model that fails leaves it searchable by words, with a note.
    pub(crate) async fn embed_and_complete(
        &self,
        folder: &engram_core::Folder,
        file: FolderFile,
        name: String,
        mut notes: Vec<String>,
    ) -> Result<FileAdded> {
        if let Some(cfg) = &folder.embedding
            && let Err(e) = self.embed_folder(&folder.id, cfg).await
        {
            notes.push(format!("searchable by words; vectors missing: {e}"));
        }
        let done = self
            .store
            .folders()
            .set_file_status(&file.id, FileStatus::Completed)?;
        for agent_id in self
            .store
            .folders()
            .agents_of(&folder.id)
            .unwrap_or_default()
        {
            self.notify(crate::Notice::AgentChanged { agent_id });
        }
        Ok(FileAdded {
            name,
            file: Some(done),
            unchanged: false,
            skipped: None,
            notes,
        })
    }

    /// Runs `read` (the reading of `file`, named `name` in `folder`) so that a person may
    /// cancel it ([`Folders::cancel_read`]): the reading stops at its next await (a parse on
    /// its blocking thread finishes unseen) and the file goes, with whatever was stored of it.
    pub(crate) async fn cancellable(
        &self,
        folder: &engram_core::Folder,
        file: &FolderFile,
        name: String,
        read: impl std::future::Future<Output = Result<FileAdded>>,
    ) -> Result<FileAdded> {
        let key = (folder.id.clone(), name.clone());
        let token = tokio_util::sync::CancellationToken::new();
        self.file_reads().insert(key.clone(), token.clone());
        let read = tokio::select! {
            biased;
            () = token.cancelled() => None,
            r = read => Some(r),
        };
        self.file_reads().remove(&key);
        match read {
            Some(r) => r,
            None => {
                self.store.folders().delete_file(&file.id)?;
                for agent_id in self
                    .store
                    .folders()
                    .agents_of(&folder.id)
                    .unwrap_or_default()
                {
                    self.notify(crate::Notice::AgentChanged { agent_id });
                }
                Ok(FileAdded {
                    name,
                    file: None,
                    unchanged: false,
                    skipped: Some(
                        "cancelled while it was being read: it is not in the folder".into(),
                    ),
                    notes: Vec::new(),
                })
            }
        }
    }

    /// Starts [`Folders::refill_vectors`] in the background (inside a tokio runtime).
    pub(crate) fn spawn_folder_refill(&self) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let (store, resolver) = (self.store.clone(), self.resolver.clone());
        tokio::spawn(async move {
            if let Err(e) = refill_folders(&store, &resolver).await {
                tracing::warn!(error = %e, "folder vectors not refilled");
            }
        });
    }

    /// Embeds the folder's passages that have no vector, with `cfg`'s model.
    async fn embed_folder(
        &self,
        folder: &FolderId,
        cfg: &engram_core::EmbeddingConfig,
    ) -> Result<usize> {
        embed_folder(&self.store, &self.resolver, folder, cfg).await
    }

    /// Reads one file from disk and adds it: whole up to 64 MiB, as a stream when it is a
    /// bigger text file; a file that cannot be read is stored as failed. A file a walk found
    /// is read only if it is still the regular file the walk listed (see [`Listed`]).
    pub(crate) async fn add_disk_file(
        &self,
        folder: &FolderId,
        name: &str,
        path: &Path,
        listed: Listed,
    ) -> Result<FileAdded> {
        let read = engram_documents::read_or_stream(name, path, matches!(listed, Listed::ByWalk));
        match read {
            Ok(Source::Bytes(bytes)) => self.folders().add_file(folder, name, bytes).await,
            Ok(Source::Stream { file, kind, size }) => {
                self.add_streamed_file(folder, name, file, kind, size).await
            }
            Err(e) => {
                let name = check_file_name(name)?;
                let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                let upload = FileUpload {
                    name: name.clone(),
                    mime: engram_documents::Kind::detect(&name, &[]).mime().to_owned(),
                    size,
                    sha256: String::new(),
                };
                let file = match self.store.folders().upsert_file(folder, &upload)? {
                    Upserted::Changed(f) | Upserted::Unchanged(f) => f,
                };
                let failed = self.store.folders().fail_file(&file.id, &e.to_string())?;
                Ok(FileAdded {
                    name,
                    file: Some(failed),
                    unchanged: false,
                    skipped: None,
                    notes: Vec::new(),
                })
            }
        }
    }
}

impl Folders<'_> {
    /// Adds (or re-indexes) one file from its bytes, waiting until it is read and embedded.
    /// A file that cannot be read is stored as failed with the reason (not an error here).
    ///
    /// Errors: `not_found` for the folder; `invalid` for a bad name (see
    /// [`check_file_name`]); storage errors.
    pub async fn add_file(
        self,
        folder: &FolderId,
        name: &str,
        bytes: Vec<u8>,
    ) -> Result<FileAdded> {
        let name = check_file_name(name)?;
        let folder = self.engram.store.folders().get(folder)?;
        let upload = FileUpload {
            name: name.clone(),
            mime: engram_documents::Kind::detect(&name, &bytes)
                .mime()
                .to_owned(),
            size: bytes.len() as u64,
            sha256: sha256_hex(&bytes),
        };
        let file = match self
            .engram
            .store
            .folders()
            .upsert_file(&folder.id, &upload)?
        {
            Upserted::Unchanged(file) => {
                return Ok(FileAdded {
                    name,
                    file: Some(file),
                    unchanged: true,
                    skipped: None,
                    notes: Vec::new(),
                });
            }
            Upserted::Changed(file) => file,
        };
        let read = self
            .engram
            .read_file(&folder, file.clone(), name.clone(), bytes);
        self.engram.cancellable(&folder, &file, name, read).await
    }

    /// Stops reading the file `name` of the folder, if it is being read now (see
    /// [`Folders::add_file`], which then answers that it was cancelled and leaves the file
    /// out of the folder, an earlier version included). Returns whether it was being read.
    pub fn cancel_read(self, folder: &FolderId, name: &str) -> bool {
        let Ok(name) = check_file_name(name) else {
            return false;
        };
        match self.engram.file_reads().get(&(folder.clone(), name)) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Fills in the vectors every folder's passages lack: files read while the folder's
    /// embedding model was unreachable, or cut short by a quit. Until then those passages are
    /// found by words alone. A folder whose model still fails is left for the next time (and
    /// logged); the others go on. Returns how many passages got their vector.
    ///
    /// Also started in the background when a long-lived process opens
    /// ([`Archival::resume_backfills`](crate::Archival::resume_backfills)) and after the built-in embedding model is retried by
    /// hand. Errors: storage.
    pub async fn refill_vectors(self) -> Result<usize> {
        refill_folders(&self.engram.store, &self.engram.resolver).await
    }

    /// Adds files and directories from disk: a file under its own name, a directory's files
    /// under their paths inside it (hidden entries left out). Symbolic links are never
    /// followed (they are reported as skipped), so a link out of the folder or a loop cannot
    /// be walked. Files over the size limit or that cannot be read are stored as failed with
    /// the reason. Returns one entry per file, in walk order.
    ///
    /// Errors: `not_found` for the folder; storage errors.
    pub async fn add_paths(
        self,
        folder: &FolderId,
        paths: &[std::path::PathBuf],
    ) -> Result<Vec<FileAdded>> {
        self.engram.store.folders().get(folder)?;
        let mut out = Vec::new();
        for path in paths {
            let meta = match std::fs::symlink_metadata(path) {
                Ok(m) => m,
                Err(e) => {
                    out.push(skipped(path, format!("cannot open it: {e}")));
                    continue;
                }
            };
            if meta.file_type().is_symlink() {
                out.push(skipped(path, "a symbolic link: not followed".into()));
            } else if meta.is_dir() {
                let walk = walkdir::WalkDir::new(path)
                    .follow_links(false)
                    .sort_by_file_name()
                    .into_iter()
                    .filter_entry(|e| {
                        e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.')
                    });
                for entry in walk {
                    let entry = match entry {
                        Ok(e) => e,
                        Err(e) => {
                            let at = e
                                .path()
                                .map(Path::to_path_buf)
                                .unwrap_or_else(|| path.clone());
                            out.push(skipped(&at, format!("cannot read it: {e}")));
                            continue;
                        }
                    };
                    if entry.file_type().is_symlink() {
                        out.push(skipped(
                            entry.path(),
                            "a symbolic link: not followed".into(),
                        ));
                    } else if entry.file_type().is_file() {
                        let name = relative_name(path, entry.path());
                        out.push(
                            self.engram
                                .add_disk_file(folder, &name, entry.path(), Listed::ByWalk)
                                .await?,
                        );
                    }
                }
            } else {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                out.push(
                    self.engram
                        .add_disk_file(folder, &name, path, Listed::ByPerson)
                        .await?,
                );
            }
        }
        Ok(out)
    }
}

/// A file that could not be read, as stored (failed, with the reason).
pub(crate) fn failed_added(name: String, failed: FolderFile) -> FileAdded {
    FileAdded {
        name,
        file: Some(failed),
        unchanged: false,
        skipped: None,
        notes: Vec::new(),
    }
}

fn skipped(path: &Path, why: String) -> FileAdded {
    FileAdded {
        name: path.display().to_string(),
        file: None,
        unchanged: false,
        skipped: Some(why),
        notes: Vec::new(),
    }
}

/// `entry`'s path inside `root`, `/`-separated.
fn relative_name(root: &Path, entry: &Path) -> String {
    entry
        .strip_prefix(root)
        .unwrap_or(entry)
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// See [`Folders::refill_vectors`].
async fn refill_folders(store: &Store, resolver: &Resolver) -> Result<usize> {
    let mut filled = 0;
    for folder in store.folders().list()? {
        let Some(cfg) = &folder.embedding else {
            continue;
        };
        if store
            .folders()
            .chunks_without_vectors(&folder.id, 1)?
            .is_empty()
        {
            continue;
        }
        match embed_folder(store, resolver, &folder.id, cfg).await {
            Ok(n) => filled += n,
            Err(e) => {
                tracing::warn!(folder = %folder.name, error = %e, "folder vectors still missing");
            }
        }
    }
    Ok(filled)
}

/// Embeds the folder's passages that have no vector, with `cfg`'s model, in batches of
/// [`EMBED_BATCH`]; returns how many got one.
async fn embed_folder(
    store: &Store,
    resolver: &Resolver,
    folder: &FolderId,
    cfg: &engram_core::EmbeddingConfig,
) -> Result<usize> {
    use engram_agent::ModelResolver;
    let embedder = resolver.embedder(cfg)?;
    let mut filled_total = 0;
    loop {
        let batch = store
            .folders()
            .chunks_without_vectors(folder, EMBED_BATCH)?;
        if batch.is_empty() {
            return Ok(filled_total);
        }
        let texts: Vec<String> = batch.iter().map(|c| c.text.clone()).collect();
        let vectors = embedder
            .model
            .embed(&embedder.name, &texts)
            .await
            .map_err(|e| Error::Invalid(e.to_string()))?;
        if vectors.len() != texts.len() {
            return Err(Error::Internal(
                "the embedding model returned a vector count unlike the passages'".into(),
            ));
        }
        let filled: Vec<_> = batch
            .into_iter()
            .zip(vectors)
            .map(|(c, v)| (c.pk, c.text, v))
            .collect();
        let n = store.folders().fill_chunk_vectors(&cfg.model, &filled)?;
        if n == 0 {
            // Every passage changed under us (a re-index): they come back if still missing.
            return Ok(filled_total);
        }
        filled_total += n;
    }
}

/// A passage of a read document as the store keeps it, with where it came from.
pub(crate) fn stored_chunk(c: engram_documents::Chunk) -> NewChunk {
    NewChunk {
        text: c.text,
        provenance: Provenance {
            page: c.page,
            heading: c.heading,
            line_start: c.line_start,
            line_end: c.line_end,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_inside_the_folder() {
        assert_eq!(check_file_name("notes/a.md").unwrap(), "notes/a.md");
        assert_eq!(check_file_name("notes\\b.md").unwrap(), "notes/b.md");
        for bad in [
            "../etc/passwd",
            "a/../../b",
            "/etc/passwd",
            "./a",
            "C:\\x",
            "",
        ] {
            assert!(check_file_name(bad).is_err(), "{bad}");
        }
    }
}

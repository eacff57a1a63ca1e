//! Folders of documents an agent reads: the folder, its files, the passages ("chunks") cut from
//! each file with where they came from, and what each agent has open.
//!
//! Letta's terms: a *folder* (once called a *source*) holds *files*; attaching a folder to an
//! agent gives it the file tools; each agent keeps a *file state* (open or not, and which
//! lines it sees). Units: sizes are **bytes**, windows and provenance are **lines** (1-based,
//! inclusive) of the text extracted from the file, pages are 1-based.

use crate::{EmbeddingConfig, FileId, FolderId, Timestamp};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// A folder of files that agents can be given to read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct Folder {
    /// `source-<uuid>`.
    pub id: FolderId,
    /// Unique among folders.
    pub name: String,
    /// What the folder holds, for people.
    pub description: String,
    /// Guidance for the agents it is attached to (shown beside its files in the context).
    pub instructions: String,
    /// The model its passages are embedded with; `None`: searched by words alone.
    pub embedding: Option<EmbeddingConfig>,
    /// When it was made.
    pub created_at: Timestamp,
    /// When its name, description or instructions last changed.
    pub updated_at: Timestamp,
}

/// What a new folder is made of.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct NewFolder {
    /// Unique among folders; not empty.
    pub name: String,
    /// What it holds.
    #[serde(default)]
    pub description: String,
    /// Guidance for the agents it is attached to.
    #[serde(default)]
    pub instructions: String,
    /// The model its passages are embedded with (`None`: words alone).
    #[serde(default)]
    pub embedding: Option<EmbeddingConfig>,
}

/// Where a file is in its processing, in Letta's words (`processing_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    /// Stored, not read yet.
    Pending,
    /// Its text is being extracted and cut into passages.
    Parsing,
    /// Its passages are searchable by words and are being embedded.
    Embedding,
    /// Done: searchable by words and (with a model) by meaning.
    Completed,
    /// It could not be read; [`FolderFile::error`] says why.
    Error,
}

impl FileStatus {
    /// The stored and wire name (`pending`, `parsing`, `embedding`, `completed`, `error`).
    pub fn as_str(self) -> &'static str {
        match self {
            FileStatus::Pending => "pending",
            FileStatus::Parsing => "parsing",
            FileStatus::Embedding => "embedding",
            FileStatus::Completed => "completed",
            FileStatus::Error => "error",
        }
    }

    /// Parses a stored name; `None` for anything else.
    pub fn parse(s: &str) -> Option<FileStatus> {
        Some(match s {
            "pending" => FileStatus::Pending,
            "parsing" => FileStatus::Parsing,
            "embedding" => FileStatus::Embedding,
            "completed" => FileStatus::Completed,
            "error" => FileStatus::Error,
            _ => return None,
        })
    }
}

/// One file of a folder, without its text (see `FolderRows::file_text`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct FolderFile {
    /// `file-<uuid>`.
    pub id: FileId,
    /// The folder it is in.
    pub folder_id: FolderId,
    /// Its name, unique in the folder: a path relative to the folder root, `/`-separated
    /// (`notes/2024.md`).
    pub name: String,
    /// Its media type as recognised (`application/pdf`, `text/markdown`, …).
    pub mime: String,
    /// Its size in **bytes** as uploaded.
    #[ts(type = "number")]
    pub size: u64,
    /// SHA-256 of its bytes, lower-case hex: an unchanged re-upload is recognised by it.
    pub sha256: String,
    /// Where its processing is.
    pub status: FileStatus,
    /// Why it failed (with [`FileStatus::Error`]).
    pub error: Option<String>,
    /// Pages of a paged document (PDF); `None` for the others.
    pub pages: Option<u32>,
    /// Lines of its extracted text.
    pub lines: u32,
    /// Passages cut from it.
    pub chunks: u32,
    /// When it was first added.
    pub created_at: Timestamp,
    /// When it was last (re)indexed or its status changed.
    pub updated_at: Timestamp,
}

/// Where a passage of a file came from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// The page (1-based) of a paged document.
    pub page: Option<u32>,
    /// The heading the passage sits under (Markdown, HTML).
    pub heading: Option<String>,
    /// Its first line in the extracted text (1-based).
    pub line_start: u32,
    /// Its last line (inclusive).
    pub line_end: u32,
}

impl Provenance {
    /// How results cite the passage: `name:p12` for a page of a paged document, else
    /// `name:L40-52` (or `name:L40` for one line).
    pub fn cite(&self, file_name: &str) -> String {
        match self.page {
            Some(page) => format!("{file_name}:p{page}"),
            None if self.line_end > self.line_start => {
                format!("{file_name}:L{}-{}", self.line_start, self.line_end)
            }
            None => format!("{file_name}:L{}", self.line_start),
        }
    }
}

/// A passage cut from a file, as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileChunk {
    /// The file it came from.
    pub file_id: FileId,
    /// Its position among the file's passages (0-based).
    pub seq: u32,
    /// Its text.
    pub text: String,
    /// Where in the file it is.
    pub provenance: Provenance,
}

/// A passage found by a search of folders.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChunkHit {
    /// The file's folder.
    pub folder_id: FolderId,
    /// The file.
    pub file_id: FileId,
    /// The file's name.
    pub file_name: String,
    /// The passage's text.
    pub text: String,
    /// Where in the file it is.
    pub provenance: Provenance,
    /// Relevance in `0..=1` (lexical share of the best hit, fused with cosine similarity).
    pub score: f64,
}

impl ChunkHit {
    /// The citation of the hit (see [`Provenance::cite`]).
    pub fn citation(&self) -> String {
        self.provenance.cite(&self.file_name)
    }
}

/// One file as an agent sees it: whether it is open and which lines it shows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct AgentFile {
    /// The file.
    pub file_id: FileId,
    /// Its name.
    pub file_name: String,
    /// Its folder.
    pub folder_id: FolderId,
    /// Whether its window is in the agent's context.
    pub is_open: bool,
    /// The first line shown (1-based), when open.
    pub offset: u32,
    /// How many lines are shown, when open.
    pub length: u32,
    /// When the agent last opened or searched it.
    pub last_accessed_at: Option<Timestamp>,
}

/// A folder's link to a directory on this computer, which a long-lived process (the desktop
/// app, `engram serve`) keeps the folder in step with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct FolderWatch {
    /// The folder kept in step.
    pub folder_id: FolderId,
    /// The directory, absolute, as resolved when it was linked (symbolic links resolved).
    pub path: String,
    /// What the process watching it last found.
    pub state: WatchState,
    /// Why the directory cannot be watched now (with [`WatchState::Missing`]).
    pub error: Option<String>,
    /// When the folder last matched the directory (`None` before the first sync).
    pub synced_at: Option<Timestamp>,
}

/// Where a watched folder stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
pub enum WatchState {
    /// Linked; no process has gone through the directory yet.
    Linked,
    /// The directory is being gone through and the folder brought in step.
    Syncing,
    /// In step; changes are picked up as they happen.
    Watching,
    /// The directory is gone or unreadable: the folder keeps its files, and watching resumes
    /// when the directory is back.
    Missing,
}

impl WatchState {
    /// The stored and wire name (`linked`, `syncing`, `watching`, `missing`).
    pub fn as_str(self) -> &'static str {
        match self {
            WatchState::Linked => "linked",
            WatchState::Syncing => "syncing",
            WatchState::Watching => "watching",
            WatchState::Missing => "missing",
        }
    }

    /// Parses a stored name; `None` for anything else.
    pub fn parse(s: &str) -> Option<WatchState> {
        Some(match s {
            "linked" => WatchState::Linked,
            "syncing" => WatchState::Syncing,
            "watching" => WatchState::Watching,
            "missing" => WatchState::Missing,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citations_name_the_page_or_the_lines() {
        let mut p = Provenance {
            page: Some(12),
            heading: None,
            line_start: 40,
            line_end: 52,
        };
        assert_eq!(p.cite("a.pdf"), "a.pdf:p12");
        p.page = None;
        assert_eq!(p.cite("a.md"), "a.md:L40-52");
        p.line_end = 40;
        assert_eq!(p.cite("a.md"), "a.md:L40");
    }

    #[test]
    fn statuses_round_trip() {
        for s in [
            FileStatus::Pending,
            FileStatus::Parsing,
            FileStatus::Embedding,
            FileStatus::Completed,
            FileStatus::Error,
        ] {
            assert_eq!(FileStatus::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
    }
}

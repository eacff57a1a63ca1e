//! An agent's folders as its runtime reads them: the files of the folders attached to it, the
//! windows it has open on them (compiled into its context window), their text a part at a
//! time, and the ranked search over their passages. Writing folders and files (uploads,
//! parsing, watching a directory) is the SQLite store's own for now, so only it implements
//! this trait; a server on PostgreSQL has no folders yet, and its agents no file tools.

use crate::{CandidateDepth, Ranker};
use async_trait::async_trait;
use engram_core::{AgentFile, AgentId, ChunkHit, FileId, Folder, FolderFile, Result};

/// One open file as compiled into an agent's context window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileWindow {
    /// The file.
    pub file_id: FileId,
    /// How the agent names it: `folder/file`.
    pub name: String,
    /// The first line shown (1-based).
    pub offset: u32,
    /// The last line shown (inclusive; `offset - 1` when the file is empty).
    pub last: u32,
    /// Lines in the whole file.
    pub lines: u32,
    /// The shown lines, each as `<number>: <text>`, joined by `\n`.
    pub text: String,
}

/// A stretch of a file's text: the whole text of a file read whole (part 0), or one piece of
/// a file read as a stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextPart {
    /// Its first line (1-based).
    pub first_line: u32,
    /// Its text, lines joined by `\n`.
    pub text: String,
}

/// The folders of agents, as their runtime reads them (see the module docs).
#[async_trait]
pub trait FolderStore: Send + Sync {
    /// The folders attached to the agent, by name. Errors: `NotFound("agent")`.
    async fn agent_folders(&self, agent: &AgentId) -> Result<Vec<Folder>>;

    /// Every file of the folders attached to the agent, with its state of each (closed and
    /// never accessed when it has none), by folder then name; `file_name` is `folder/file`.
    /// Errors: `NotFound("agent")`.
    async fn agent_files(&self, agent: &AgentId) -> Result<Vec<AgentFile>>;

    /// The file of an attached folder the agent calls `name`: `folder/file`, or `file` alone
    /// when exactly one attached folder has a file of that name; `None` when none does.
    /// Errors: `NotFound("agent")`; `Invalid` when `name` alone is in two folders.
    async fn agent_file(&self, agent: &AgentId, name: &str) -> Result<Option<FolderFile>>;

    /// One file. Errors: `NotFound("file")`.
    async fn folder_file(&self, id: &FileId) -> Result<FolderFile>;

    /// Opens `file` for the agent showing `length` lines from line `offset` (1-based), marks
    /// it just used, and closes the least recently used other open files until at most
    /// `max_open` are open, in one transaction. Returns the ids of the files it closed.
    /// Errors: `NotFound("agent" | "file")`; `Invalid` when the file's folder is not attached.
    async fn open_file(
        &self,
        agent: &AgentId,
        file: &FileId,
        offset: u32,
        length: u32,
        max_open: usize,
    ) -> Result<Vec<FileId>>;

    /// Closes all the agent's files; returns how many were open. Errors: `NotFound("agent")`.
    async fn close_all_files(&self, agent: &AgentId) -> Result<usize>;

    /// The agent's open files as its context window shows them, least recently used first
    /// (files not read yet are left out). Errors: `NotFound("agent")`.
    async fn open_file_windows(&self, agent: &AgentId) -> Result<Vec<FileWindow>>;

    /// Part `idx` (from 0) of a file's text: the whole text of a file read whole is part 0;
    /// a file read as a stream has pieces of about 1 MiB. `None` past the last part, or while
    /// the file has not been read. Errors: `NotFound("file")`.
    async fn file_text_part(&self, id: &FileId, idx: u32) -> Result<Option<TextPart>>;

    /// The first line (1-based) of each page of a file (empty when it is not paged).
    /// Errors: `NotFound("file")`.
    async fn file_page_starts(&self, id: &FileId) -> Result<Vec<u32>>;

    /// The primitive of the search over the passages of the folders attached to the agent:
    /// reads candidates by words for `query` and by cosine for `embedding` (the query's vector
    /// and the handle of the model that made it: only passages embedded by that model take
    /// part), `depth` deep on each side, hands them to `rank` and returns the passages of its
    /// ranking, in order. A blank query, or one without words, has no words side.
    /// Errors: `NotFound("agent")`.
    async fn rank_agent_files(
        &self,
        agent: &AgentId,
        query: &str,
        embedding: Option<(&str, &[f32])>,
        depth: CandidateDepth,
        rank: Ranker<'_>,
    ) -> Result<Vec<ChunkHit>>;
}

//! Folder commands: folders of documents, the files in them, which agents read them, and the
//! files an agent has open. Files arrive as bytes (base64 in the JSON) from the window's file
//! picker or a drop, and are read and embedded before the command answers.

use super::{Access, AppCall, Caller};
use crate::{Engram, FileAdded};
use base64::Engine as _;
use engram_core::{
    AgentAccess, AgentFile, AgentId, Error, FileId, Folder, FolderFile, FolderId, FolderWatch,
    NewFolder, Result,
};
use serde::Deserialize;
use std::sync::Arc;
use ts_rs::TS;

/// `list_folders`: every folder, by name.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ListFoldersArgs {}

impl AppCall for ListFoldersArgs {
    const NAME: &'static str = "list_folders";
    type Output = Vec<Folder>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Vec<Folder>> {
        e.folders().list()
    }
}

/// `create_folder`: a new folder (its passages embedded with the default embedding model).
/// Errors: `invalid_input` for an empty or taken name.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct CreateFolderArgs {
    name: String,
    #[serde(default)]
    #[ts(optional)]
    description: Option<String>,
}

impl AppCall for CreateFolderArgs {
    const NAME: &'static str = "create_folder";
    type Output = Folder;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Folder> {
        e.folders().create(NewFolder {
            name: self.name,
            description: self.description.unwrap_or_default(),
            ..NewFolder::default()
        })
    }
}

/// `delete_folder`: a folder with its files and passages; agents reading it are detached.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct DeleteFolderArgs {
    folder_id: FolderId,
}

impl AppCall for DeleteFolderArgs {
    const NAME: &'static str = "delete_folder";
    type Output = ();
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<()> {
        e.folders().delete(&self.folder_id)
    }
}

/// `folder_files`: a folder's files with their processing status, pages and passages.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct FolderFilesArgs {
    folder_id: FolderId,
}

impl AppCall for FolderFilesArgs {
    const NAME: &'static str = "folder_files";
    type Output = Vec<FolderFile>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Vec<FolderFile>> {
        e.folders().files(&self.folder_id)
    }
}

/// `upload_folder_file`: adds one file (or re-reads a changed one) from its bytes, base64
/// encoded, and answers once it is read and embedded. A file that cannot be read is stored as
/// failed with its reason, not refused. Errors: `invalid_input` for a bad name or data that is
/// not base64; `not_found` for the folder.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct UploadFolderFileArgs {
    folder_id: FolderId,
    /// Its name in the folder; a relative path (`notes/a.md`) keeps a dropped folder's layout.
    file_name: String,
    /// The file's bytes, base64 (standard alphabet, padded).
    data_base64: String,
}

impl AppCall for UploadFolderFileArgs {
    const NAME: &'static str = "upload_folder_file";
    type Output = FileAdded;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<FileAdded> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(self.data_base64.as_bytes())
            .map_err(|err| Error::invalid(format!("{}: not base64: {err}", self.file_name)))?;
        e.folders()
            .add_file(&self.folder_id, &self.file_name, bytes)
            .await
    }
}

/// `delete_folder_file`: removes a file with its passages; agents that had it open close it.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct DeleteFolderFileArgs {
    file_id: FileId,
}

impl AppCall for DeleteFolderFileArgs {
    const NAME: &'static str = "delete_folder_file";
    type Output = ();
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<()> {
        e.folders().delete_file(&self.file_id)
    }
}

/// `attach_folder`: gives an agent a folder to read (and with it the three file tools).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct AttachFolderArgs {
    agent_id: AgentId,
    folder_id: FolderId,
}

impl AppCall for AttachFolderArgs {
    const NAME: &'static str = "attach_folder";
    type Output = ();
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<()> {
        e.folders().attach(&self.agent_id, &self.folder_id)
    }
}

/// `detach_folder`: takes a folder away from an agent; its files close.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct DetachFolderArgs {
    agent_id: AgentId,
    folder_id: FolderId,
}

impl AppCall for DetachFolderArgs {
    const NAME: &'static str = "detach_folder";
    type Output = ();
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<()> {
        e.folders().detach(&self.agent_id, &self.folder_id)
    }
}

/// `agent_folders`: the folders an agent reads.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct AgentFoldersArgs {
    agent_id: AgentId,
}

impl AppCall for AgentFoldersArgs {
    const NAME: &'static str = "agent_folders";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = Vec<Folder>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Vec<Folder>> {
        e.folders().of_agent(&self.agent_id)
    }
}

/// `agent_files`: every file of an agent's folders, whether it is open and which lines show.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct AgentFilesArgs {
    agent_id: AgentId,
}

impl AppCall for AgentFilesArgs {
    const NAME: &'static str = "agent_files";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = Vec<AgentFile>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Vec<AgentFile>> {
        e.folders().files_of_agent(&self.agent_id)
    }
}

/// `open_agent_file`: opens a file for the agent by hand, as its `open_files` tool would
/// (`length` lines from line `offset`, 1-based; defaults: from the top, the usual window).
/// Answers the files closed to stay within the open-file limit.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct OpenAgentFileArgs {
    agent_id: AgentId,
    file_id: FileId,
    #[serde(default)]
    #[ts(optional)]
    offset: Option<u32>,
    #[serde(default)]
    #[ts(optional)]
    length: Option<u32>,
}

impl AppCall for OpenAgentFileArgs {
    const NAME: &'static str = "open_agent_file";
    const ACCESS: Access = Access::Agent(AgentAccess::Write);
    type Output = Vec<FileId>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Vec<FileId>> {
        e.folders()
            .open_file(&self.agent_id, &self.file_id, self.offset, self.length)
    }
}

/// `close_agent_file`: closes a file for the agent; `false` when it was not open.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct CloseAgentFileArgs {
    agent_id: AgentId,
    file_id: FileId,
}

impl AppCall for CloseAgentFileArgs {
    const NAME: &'static str = "close_agent_file";
    const ACCESS: Access = Access::Agent(AgentAccess::Write);
    type Output = bool;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<bool> {
        e.folders().close_file(&self.agent_id, &self.file_id)
    }
}

/// `folder_file_text`: the text read from a file (its lines are what citations count), or
/// `null` when none was read (a file that failed, or is still being read). A file read as a
/// stream (over 64 MiB) gives its first 8 MiB, with a note after them.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct FolderFileTextArgs {
    file_id: FileId,
}

impl AppCall for FolderFileTextArgs {
    const NAME: &'static str = "folder_file_text";
    type Output = Option<String>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Option<String>> {
        e.folders().file_text(&self.file_id)
    }
}

/// `folder_watches`: every folder's link to a directory on disk, with what the watching
/// process last found (`linked`, `syncing`, `watching`, `missing` with the reason).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct FolderWatchesArgs {}

impl AppCall for FolderWatchesArgs {
    const NAME: &'static str = "folder_watches";
    type Output = Vec<FolderWatch>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Vec<FolderWatch>> {
        e.folders().watches()
    }
}

/// `watch_folder`: links a folder to a directory on this computer (a path typed or picked)
/// and keeps it in step while the app runs: files added, changed and deleted there follow.
/// Files of the folder not in the directory are removed by the first sync. Errors:
/// `invalid_input` when the path is not a directory or holds Engram's data; `not_found`.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct WatchFolderArgs {
    folder_id: FolderId,
    /// The directory, absolute (`~` is not expanded).
    path: String,
}

impl AppCall for WatchFolderArgs {
    const NAME: &'static str = "watch_folder";
    type Output = FolderWatch;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<FolderWatch> {
        e.folders()
            .watch(&self.folder_id, std::path::Path::new(self.path.trim()))
    }
}

/// `pick_watch_dir` (desktop only, answered by the shell): asks for the directory in the
/// native folder dialog and links the folder to it as `watch_folder` does; `null` when the
/// user cancelled. Errors as `watch_folder`.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct PickWatchDirArgs {
    /// The folder to link.
    pub folder_id: FolderId,
}

/// `unwatch_folder`: stops keeping a folder in step with its directory; its files stay.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct UnwatchFolderArgs {
    folder_id: FolderId,
}

impl AppCall for UnwatchFolderArgs {
    const NAME: &'static str = "unwatch_folder";
    type Output = bool;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<bool> {
        e.folders().unwatch(&self.folder_id)
    }
}

/// `cancel_folder_file`: stops reading a file being added (its `upload_folder_file` call then
/// answers that it was cancelled, and the file is not in the folder). Returns whether it was
/// being read.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct CancelFolderFileArgs {
    folder_id: FolderId,
    /// Its name in the folder, as given to `upload_folder_file`.
    file_name: String,
}

impl AppCall for CancelFolderFileArgs {
    const NAME: &'static str = "cancel_folder_file";
    type Output = bool;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<bool> {
        Ok(e.folders().cancel_read(&self.folder_id, &self.file_name))
    }
}

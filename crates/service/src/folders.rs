//! Folders of documents: making them, attaching them to agents (which gives the agents the
//! file tools), and each agent's open files. Adding files is in `folder_ingest`.

use crate::rooms::Folders;
use crate::{Engram, Notice};
use engram_core::{
    AgentFile, AgentId, Error, FileChunk, FileId, Folder, FolderFile, FolderId, NewFolder, Result,
};
use engram_store::FolderPatch;

/// The most text [`Folders::file_text`] gives of a file read as a stream (over 64 MiB), in
/// **bytes** (8 MiB): a window's or a REST client's worth of it. A file read whole is given
/// whole, as before streams.
pub const MAX_SHOWN_TEXT_BYTES: usize = 8 << 20;

impl Engram {
    pub(crate) fn notify_folder_agents(&self, folder: &FolderId) {
        for agent_id in self.store.folders().agents_of(folder).unwrap_or_default() {
            self.notify(Notice::AgentChanged { agent_id });
        }
    }
}

impl Folders<'_> {
    /// Creates a folder. Without an embedding model in `new`, the folder gets the default one
    /// new agents get (`default_embedding`); a model named `none` (as that setting spells it)
    /// means none: the folder is searched by words alone.
    /// Errors: `invalid` for an empty name; `conflict` for a name in use.
    pub fn create(self, mut new: NewFolder) -> Result<Folder> {
        match &new.embedding {
            None => new.embedding = self.engram.models().default_embedding()?,
            Some(cfg) if cfg.model.trim().eq_ignore_ascii_case("none") => new.embedding = None,
            Some(_) => {}
        }
        self.engram.store.folders().create(&new)
    }

    /// Every folder, oldest first.
    pub fn list(self) -> Result<Vec<Folder>> {
        self.engram.store.folders().list()
    }

    /// The folder `id`. Errors: `not_found`.
    pub fn get(self, id: &FolderId) -> Result<Folder> {
        self.engram.store.folders().get(id)
    }

    /// The folder named or with the id `name_or_id`. Errors: `not_found`.
    pub fn find(self, name_or_id: &str) -> Result<Folder> {
        if let Some(f) = self.engram.store.folders().by_name(name_or_id)? {
            return Ok(f);
        }
        self.engram
            .store
            .folders()
            .get(&FolderId::from(name_or_id))
            .map_err(|_| Error::not_found("folder", name_or_id))
    }

    /// Renames a folder or changes its description or instructions. Errors: `not_found`,
    /// `invalid`, `conflict`.
    pub fn update(self, id: &FolderId, patch: &FolderPatch) -> Result<Folder> {
        let folder = self.engram.store.folders().update(id, patch)?;
        self.engram.notify_folder_agents(id);
        Ok(folder)
    }

    /// Deletes a folder, its files and passages; its agents lose it (and the file tools when
    /// it was their last folder). Errors: `not_found`.
    pub fn delete(self, id: &FolderId) -> Result<()> {
        let agents = self.engram.store.folders().agents_of(id)?;
        self.engram.watchers.stop(id);
        self.engram.store.folders().delete(id)?;
        for agent_id in agents {
            self.engram.notify(Notice::AgentChanged { agent_id });
        }
        Ok(())
    }

    /// A folder's files by name. Errors: `not_found`.
    pub fn files(self, id: &FolderId) -> Result<Vec<FolderFile>> {
        self.engram.store.folders().list_files(id)
    }

    /// The file `id`. Errors: `not_found`.
    pub fn file(self, id: &FileId) -> Result<FolderFile> {
        self.engram.store.folders().get_file(id)
    }

    /// A file's extracted text (`None` while it has not been read): all of it for a file read
    /// whole; for one read as a stream (over 64 MiB), at most [`MAX_SHOWN_TEXT_BYTES`],
    /// stopping at a line end, then a blank line and a bracketed note saying how much more
    /// there is, so lines keep their numbers. Errors: `not_found`.
    pub fn file_text(self, id: &FileId) -> Result<Option<String>> {
        let folders = self.engram.store.folders();
        let streamed = folders.get_file(id)?.size > engram_documents::MAX_FILE_BYTES;
        let max = if streamed {
            MAX_SHOWN_TEXT_BYTES
        } else {
            usize::MAX
        };
        let Some((mut text, more)) = folders.file_text_head(id, max)? else {
            return Ok(None);
        };
        if more {
            let file = folders.get_file(id)?;
            let shown = text.lines().count();
            text.push_str(&format!(
                "\n\n[… {shown} of {} lines shown ({} MiB of text at most); an agent reads \
                 the rest with open_files and grep_files]",
                file.lines,
                MAX_SHOWN_TEXT_BYTES >> 20
            ));
        }
        Ok(Some(text))
    }

    /// Deletes one file with its passages and every agent's state of it. Errors: `not_found`.
    pub fn delete_file(self, id: &FileId) -> Result<()> {
        let file = self.engram.store.folders().get_file(id)?;
        self.engram.store.folders().delete_file(id)?;
        self.engram.notify_folder_agents(&file.folder_id);
        Ok(())
    }

    /// A folder's passages, by file name then position, `limit` from `offset`, each with its
    /// file's name. Errors: `not_found`.
    pub fn passages(
        self,
        id: &FolderId,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<(String, FileChunk)>> {
        self.engram.store.folders().list_chunks(id, limit, offset)
    }

    /// The agents a folder is attached to. Errors: `not_found`.
    pub fn agents(self, id: &FolderId) -> Result<Vec<AgentId>> {
        self.engram.store.folders().agents_of(id)
    }

    /// Attaches a folder to an agent, which gets the file tools (`open_files`, `grep_files`,
    /// `semantic_search_files`). Errors: `not_found`.
    pub fn attach(self, agent: &AgentId, folder: &FolderId) -> Result<()> {
        self.engram.store.folders().attach(agent, folder)?;
        self.engram.notify(Notice::AgentChanged {
            agent_id: agent.clone(),
        });
        Ok(())
    }

    /// Detaches a folder: the agent's files of it close, and without another folder the
    /// agent loses the file tools. Errors: `not_found`.
    pub fn detach(self, agent: &AgentId, folder: &FolderId) -> Result<()> {
        self.engram.store.folders().detach(agent, folder)?;
        self.engram.notify(Notice::AgentChanged {
            agent_id: agent.clone(),
        });
        Ok(())
    }

    /// The folders attached to an agent. Errors: `not_found`.
    pub fn of_agent(self, agent: &AgentId) -> Result<Vec<Folder>> {
        self.engram.store.folders().of_agent(agent)
    }

    /// Every file of the agent's folders with whether it is open and which lines it shows.
    /// Errors: `not_found`.
    pub fn files_of_agent(self, agent: &AgentId) -> Result<Vec<AgentFile>> {
        self.engram.store.folders().files_of_agent(agent)
    }

    /// Opens a file for an agent by hand, as `open_files` would: `length` lines (at most
    /// [`engram_agent::tools::MAX_WINDOW_LINES`]) from line `offset` (1-based). Returns the
    /// files closed to stay within [`engram_agent::tools::MAX_OPEN_FILES`].
    /// Errors: `not_found`; `invalid` when the file's folder is not attached.
    pub fn open_file(
        self,
        agent: &AgentId,
        file: &FileId,
        offset: Option<u32>,
        length: Option<u32>,
    ) -> Result<Vec<FileId>> {
        use engram_agent::tools::{DEFAULT_WINDOW_LINES, MAX_OPEN_FILES, MAX_WINDOW_LINES};
        let length = length
            .unwrap_or(DEFAULT_WINDOW_LINES)
            .clamp(1, MAX_WINDOW_LINES);
        let closed = self.engram.store.folders().open_file(
            agent,
            file,
            offset.unwrap_or(1).max(1),
            length,
            MAX_OPEN_FILES,
        )?;
        self.engram.notify(Notice::AgentChanged {
            agent_id: agent.clone(),
        });
        Ok(closed)
    }

    /// Closes one of an agent's files; `false` when it was not open. Errors: `not_found`.
    pub fn close_file(self, agent: &AgentId, file: &FileId) -> Result<bool> {
        let closed = self.engram.store.folders().close_file(agent, file)?;
        self.engram.notify(Notice::AgentChanged {
            agent_id: agent.clone(),
        });
        Ok(closed)
    }

    /// Closes all of an agent's files; how many were open. Errors: `not_found`.
    pub fn close_all_files(self, agent: &AgentId) -> Result<usize> {
        let n = self.engram.store.folders().close_all_files(agent)?;
        self.engram.notify(Notice::AgentChanged {
            agent_id: agent.clone(),
        });
        Ok(n)
    }
}

//! App-wide notices: "this agent's memory changed", whatever changed it.
//!
//! A chat in the desktop window, a `letta-client` script on the REST API and an import all go
//! through the service layer, so the service is where changes are announced. Transports
//! subscribe and forward (Tauri `emit`, SSE on `/app/notices`) so every open window refreshes
//! what it shows. Notices say *what* changed, not the new data: listeners re-read what they
//! display.

use engram_core::AgentId;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

/// How many notices a slow listener may fall behind before it misses some (it then sees
/// `Lagged` and should re-read everything).
const BACKLOG: usize = 256;

/// What changed. Serialized tagged by `type`, e.g. `{"type":"memory_changed","agent_id":"agent-…"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Notice {
    /// Agents were created, deleted or imported.
    AgentsChanged,
    /// An agent's settings changed (name, model, tools…).
    AgentChanged {
        /// The agent.
        agent_id: AgentId,
    },
    /// One of the agent's blocks changed (by the agent, a person or another agent sharing it).
    MemoryChanged {
        /// The agent.
        agent_id: AgentId,
    },
    /// Messages were added to the agent's history.
    MessagesChanged {
        /// The agent.
        agent_id: AgentId,
    },
    /// Passages were added to or removed from the agent's archival memory.
    ArchivalChanged {
        /// The agent.
        agent_id: AgentId,
    },
    /// A sleep-time pass of the agent ended (ran, failed or was skipped over budget), or
    /// some of its changes were undone; its record holds the details.
    SleeptimePass {
        /// The agent.
        agent_id: AgentId,
        /// The pass.
        pass_id: engram_core::PassId,
        /// How it stands.
        status: engram_core::PassStatus,
        /// Why it failed or was skipped.
        reason: Option<String>,
    },
    /// Tools were added, changed or deleted.
    ToolsChanged,
    /// MCP servers were added, removed, accepted or deactivated.
    McpServersChanged,
    /// A folder's files or its link to a directory changed outside a call that returns them
    /// (a watched directory changed).
    FolderChanged {
        /// The folder.
        folder_id: engram_core::FolderId,
    },
    /// A memory client's write started or stopped waiting for the user's approval (in this
    /// process; the window also polls for those asked by another process's memory server).
    ClientWritesChanged,
    /// An MCP server could not be used (down, crashed, too slow); it is restarted on next use.
    McpServerFailed {
        /// The server.
        server_id: engram_core::McpServerId,
        /// Its name.
        server: String,
        /// What went wrong, naming the server.
        message: String,
    },
    /// Progress of the first-use download of a built-in embedding model's weights (bytes over
    /// all its files; `done_bytes == total_bytes` when the last file is verified).
    ModelDownload {
        /// The model handle, e.g. `local/all-minilm-l6-v2`.
        model: String,
        /// The file being fetched.
        file: String,
        /// Bytes present so far.
        #[ts(type = "number")]
        done_bytes: u64,
        /// Bytes of all files.
        #[ts(type = "number")]
        total_bytes: u64,
    },
    /// Progress of downloading a catalogue chat model (`Models::pull`): about four
    /// times a second while bytes arrive, and once when it ends (done, cancelled, failed).
    ChatModelPull {
        /// The model's name (its handle is `local/<name>`).
        name: String,
        /// Bytes present so far.
        #[ts(type = "number")]
        done_bytes: u64,
        /// Bytes of the whole file, once known.
        #[ts(type = "number | null")]
        total_bytes: Option<u64>,
        /// Where it stands.
        state: PullState,
        /// Why it failed, for people.
        message: Option<String>,
    },
    /// The agent's embedding model could not be used: passages were stored without a vector
    /// (to be backfilled) or a search answered by words alone. `message` says why and what to do.
    EmbeddingsUnavailable {
        /// The agent.
        agent_id: AgentId,
        /// Why, for people.
        message: String,
    },
    /// The reranker of archival search could not be loaded or run: the search answered with
    /// the store's hybrid ranking. `message` names the weights folder and what is wrong.
    RerankerUnavailable {
        /// The agent whose memory was searched.
        agent_id: AgentId,
        /// Why, for people.
        message: String,
    },
    /// Progress of filling in missing vectors of an agent's passages and messages.
    EmbeddingBackfill {
        /// The agent.
        agent_id: AgentId,
        /// Rows embedded so far in this backfill.
        #[ts(type = "number")]
        done: u64,
        /// Rows that had no vector when it started.
        #[ts(type = "number")]
        total: u64,
    },
    /// Progress of building the agent's vector index (an HNSW graph over its archival
    /// passages' vectors) in the background: sent when a build starts, about twice a second
    /// while it runs and once more with `finished` set when it is done, failed or was stopped.
    /// Meanwhile archival search is exact but slower (it scans every vector). The current
    /// state is also answered by [`Archival::index_builds`](crate::Archival::index_builds), for a window opened mid-build.
    VectorIndexBuild {
        /// The agent.
        agent_id: AgentId,
        /// Passage vectors in the graph so far.
        #[ts(type = "number")]
        done: u64,
        /// Passage vectors to put in it.
        #[ts(type = "number")]
        total: u64,
        /// The build is over (the graph is in use from the next search, or it stopped).
        finished: bool,
    },
    /// A line of progress while Engram sets up a Python for tools
    /// (`Tools::set_up_python`).
    PythonSetup {
        /// What the setup (or pip) just said.
        line: String,
    },
}

/// Where a download stands, in a [`Notice::ChatModelPull`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
#[serde(rename_all = "snake_case")]
pub enum PullState {
    /// Bytes are arriving.
    Running,
    /// Verified, in place and registered.
    Done,
    /// Stopped by the user; the bytes so far are kept for a resume.
    Cancelled,
    /// Failed; `message` says why (a damaged file was deleted; a broken transfer resumes).
    Failed,
}

/// The sending side, owned by [`Engram`].
pub(crate) fn channel() -> broadcast::Sender<Notice> {
    broadcast::channel(BACKLOG).0
}

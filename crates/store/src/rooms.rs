//! The store's rooms: [`Store`]'s reads and writes grouped by what a storage backend must
//! provide (agents, blocks, messages, passages, runs, folders, tools, settings, sleep-time,
//! client writes), so a caller writes `store.passages().insert(…)`. These are the seams of the
//! storage interface (`engram_store_api`): a second backend implements the same groups. A room
//! is a borrowed `Copy` view of the store; its calls live in the files named on each room.

use crate::Store;

/// Agents: their rows, lists and counts, tags, system-prompt cache, provider addresses.
/// From [`Store::agents`]; its calls are in `agent_list.rs`, `agents.rs`, `base_urls.rs`,
/// `rewrite.rs`.
#[derive(Clone, Copy)]
pub struct AgentRows<'s> {
    pub(crate) store: &'s Store,
}

/// Core memory: blocks, attachments, versioned edits as operations, history and undo, sharing.
/// From [`Store::blocks`]; its calls are in `block_list.rs`, `block_ops.rs`, `blocks.rs`,
/// `sharing.rs`, `undo.rs`.
#[derive(Clone, Copy)]
pub struct BlockRows<'s> {
    pub(crate) store: &'s Store,
}

/// Recall memory: messages appended, paged, windowed, searched, vectors, rollback and repair.
/// From [`Store::messages`]; its calls are in `message_pages.rs`, `message_vectors.rs`,
/// `messages.rs`, `repair.rs`, `rewrite.rs`, `rollback.rs`.
#[derive(Clone, Copy)]
pub struct MessageRows<'s> {
    pub(crate) store: &'s Store,
}

/// Archival memory: passages, their lists and pages, vectors, token vectors, words and neighbours.
/// From [`Store::passages`]; its calls are in `passage_list.rs`, `passage_neighbours.rs`,
/// `passage_tokens.rs`, `passage_vectors.rs`, `passage_words.rs`, `passages.rs`, `rewrite.rs`,
/// `term_stats.rs`.
#[derive(Clone, Copy)]
pub struct PassageRows<'s> {
    pub(crate) store: &'s Store,
}

/// Runs: steps committed, records, edits made, approvals waiting.
/// From [`Store::runs`]; its calls are in `approvals.rs`, `runs.rs`, `steps.rs`.
#[derive(Clone, Copy)]
pub struct RunRows<'s> {
    pub(crate) store: &'s Store,
}

/// Folders: files and their text, chunks and vectors, agents' open files, watched directories.
/// From [`Store::folders`]; its calls are in `file_chunks.rs`, `file_pieces.rs`, `file_state.rs`, `folder_files.rs`,
/// `folder_watches.rs`, `folders.rs`.
#[derive(Clone, Copy)]
pub struct FolderRows<'s> {
    pub(crate) store: &'s Store,
}

/// Tools and MCP servers: custom tools, trust, MCP servers and their tools, tools waiting to be attached.
/// From [`Store::tools`]; its calls are in `mcp.rs`, `mcp_pending.rs`, `tools.rs`.
#[derive(Clone, Copy)]
pub struct ToolRows<'s> {
    pub(crate) store: &'s Store,
}

/// Settings: providers, key-value settings, model prices and usage, context windows, calibration, endpoints.
/// From [`Store::settings`]; its calls are in `calibration.rs`, `endpoints.rs`, `model_windows.rs`,
/// `prices.rs`, `settings.rs`.
#[derive(Clone, Copy)]
pub struct SettingRows<'s> {
    pub(crate) store: &'s Store,
}

/// Sleep-time: settings, budgets, passes and their changes.
/// From [`Store::sleeptime`]; its calls are in `pass_commit.rs`, `sleeptime.rs`.
#[derive(Clone, Copy)]
pub struct SleeptimeRows<'s> {
    pub(crate) store: &'s Store,
}

/// MCP memory clients' writes waiting for approval.
/// From [`Store::client_writes`]; its calls are in `client_writes.rs`.
#[derive(Clone, Copy)]
pub struct ClientWriteRows<'s> {
    pub(crate) store: &'s Store,
}

/// A shared server's users: accounts, token hashes, who may use which agent.
/// From [`Store::users`]; its calls are in `users.rs`.
#[derive(Clone, Copy)]
pub struct UserRows<'s> {
    pub(crate) store: &'s Store,
}

impl Store {
    /// Agents: see [`AgentRows`].
    pub fn agents(&self) -> AgentRows<'_> {
        AgentRows { store: self }
    }

    /// Core memory: see [`BlockRows`].
    pub fn blocks(&self) -> BlockRows<'_> {
        BlockRows { store: self }
    }

    /// Recall memory: see [`MessageRows`].
    pub fn messages(&self) -> MessageRows<'_> {
        MessageRows { store: self }
    }

    /// Archival memory: see [`PassageRows`].
    pub fn passages(&self) -> PassageRows<'_> {
        PassageRows { store: self }
    }

    /// Runs: see [`RunRows`].
    pub fn runs(&self) -> RunRows<'_> {
        RunRows { store: self }
    }

    /// Folders: see [`FolderRows`].
    pub fn folders(&self) -> FolderRows<'_> {
        FolderRows { store: self }
    }

    /// Tools and MCP servers: see [`ToolRows`].
    pub fn tools(&self) -> ToolRows<'_> {
        ToolRows { store: self }
    }

    /// Settings: see [`SettingRows`].
    pub fn settings(&self) -> SettingRows<'_> {
        SettingRows { store: self }
    }

    /// Sleep-time: see [`SleeptimeRows`].
    pub fn sleeptime(&self) -> SleeptimeRows<'_> {
        SleeptimeRows { store: self }
    }

    /// A shared server's users: see [`UserRows`].
    pub fn users(&self) -> UserRows<'_> {
        UserRows { store: self }
    }

    /// MCP memory clients' writes waiting for approval.: see [`ClientWriteRows`].
    pub fn client_writes(&self) -> ClientWriteRows<'_> {
        ClientWriteRows { store: self }
    }
}

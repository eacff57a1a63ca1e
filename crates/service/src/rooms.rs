//! The engine's rooms: [`Engram`]'s calls grouped by concern, so a caller writes
//! `engram.archival().search(…)` and a reader finds a concern's calls together. A room is a
//! borrowed view of the engine (no state of its own, free to make); its calls live in the
//! files named on each room, beside the code they use. Rooms are `Copy` and their calls take
//! the room by value, so a call's future holds the engine's borrow, not the temporary room's:
//! `let sent = engram.runs().send_message(…);` can be kept and awaited later.

use crate::Engram;

/// Agents: create, list, change, delete, tags, templates, their context window.
/// From [`Engram::agents`]; its calls are in `agents.rs`, `context_view.rs`, `model_check.rs`,
/// `templates.rs`.
#[derive(Clone, Copy)]
pub struct Agents<'e> {
    pub(crate) engram: &'e Engram,
}

/// Core memory: blocks, their edits, history and undo, shared blocks.
/// From [`Engram::blocks`]; its calls are in `blocks.rs`.
#[derive(Clone, Copy)]
pub struct Blocks<'e> {
    pub(crate) engram: &'e Engram,
}

/// Archival memory: passages, search, and the vectors behind it.
/// From [`Engram::archival`]; its calls are in `archival.rs`, `embeddings.rs`.
#[derive(Clone, Copy)]
pub struct Archival<'e> {
    pub(crate) engram: &'e Engram,
}

/// Recall memory: an agent's message history, paged, searched and edited.
/// From [`Engram::recall`]; its calls are in `recall.rs`, `turns.rs`.
#[derive(Clone, Copy)]
pub struct Recall<'e> {
    pub(crate) engram: &'e Engram,
}

/// Runs: sending messages, streaming, approvals, cancelling, regenerating.
/// From [`Engram::runs`]; its calls are in `approval.rs`, `chat.rs`, `turns.rs`.
#[derive(Clone, Copy)]
pub struct Runs<'e> {
    pub(crate) engram: &'e Engram,
}

/// Tools: custom tools, attaching them, rules, sandbox, approval, trust, their Python.
/// From [`Engram::tools`]; its calls are in `approval.rs`, `tools.rs`, `trust.rs`.
#[derive(Clone, Copy)]
pub struct Tools<'e> {
    pub(crate) engram: &'e Engram,
}

/// MCP servers Engram connects to, and their tools.
/// From [`Engram::mcp`]; its calls are in `mcp_import.rs`, `mcp_servers.rs`.
#[derive(Clone, Copy)]
pub struct Mcp<'e> {
    pub(crate) engram: &'e Engram,
}

/// Engram as an MCP memory server: clients, their access, writes waiting for approval.
/// From [`Engram::memory_server`]; its calls are in `mcp_memory/approvals.rs`,
/// `mcp_memory/clients.rs`, `mcp_memory/files.rs`, `mcp_memory/paste.rs`, `mcp_memory/search.rs`,
/// `mcp_memory/seen.rs`, `mcp_memory/watch.rs`.
#[derive(Clone, Copy)]
pub struct MemoryServer<'e> {
    pub(crate) engram: &'e Engram,
}

/// Where agents may send data (endpoints) and the local REST API's token.
/// From [`Engram::trust`]; its calls are in `api_token.rs`, `trust.rs`.
#[derive(Clone, Copy)]
pub struct Trust<'e> {
    pub(crate) engram: &'e Engram,
}

/// Model providers: their keys (in the keychain), tests, local servers found.
/// From [`Engram::providers`]; its calls are in `providers.rs`.
#[derive(Clone, Copy)]
pub struct Providers<'e> {
    pub(crate) engram: &'e Engram,
}

/// Chat and embedding models: defaults, context windows, checks, the built-in models, prices.
/// From [`Engram::models`]; its calls are in `built_in_models.rs`, `model_check.rs`,
/// `model_pull.rs`, `models.rs`, `prices.rs`.
#[derive(Clone, Copy)]
pub struct Models<'e> {
    pub(crate) engram: &'e Engram,
}

/// Folders of files agents read: files, their reading, watching a directory, open files.
/// From [`Engram::folders`]; its calls are in `folder_ingest.rs`, `folder_watch.rs`, `folders.rs`.
#[derive(Clone, Copy)]
pub struct Folders<'e> {
    pub(crate) engram: &'e Engram,
}

/// Agent Files (.af) and other exports: import, export, duplicate.
/// From [`Engram::agent_files`]; its calls are in `agentfile.rs`, `export.rs`.
#[derive(Clone, Copy)]
pub struct AgentFiles<'e> {
    pub(crate) engram: &'e Engram,
}

/// Sleep-time passes: settings, budgets, running, undoing.
/// From [`Engram::sleeptime`]; its calls are in `sleeptime_api.rs`.
#[derive(Clone, Copy)]
pub struct Sleeptime<'e> {
    pub(crate) engram: &'e Engram,
}

/// A shared server's users: accounts, their tokens, who may use which agent.
/// From [`Engram::users`]; its calls are in `users.rs`.
#[derive(Clone, Copy)]
pub struct Users<'e> {
    pub(crate) engram: &'e Engram,
}

impl Engram {
    /// Agents: see [`Agents`].
    pub fn agents(&self) -> Agents<'_> {
        Agents { engram: self }
    }

    /// Core memory: see [`Blocks`].
    pub fn blocks(&self) -> Blocks<'_> {
        Blocks { engram: self }
    }

    /// Archival memory: see [`Archival`].
    pub fn archival(&self) -> Archival<'_> {
        Archival { engram: self }
    }

    /// Recall memory: see [`Recall`].
    pub fn recall(&self) -> Recall<'_> {
        Recall { engram: self }
    }

    /// Runs: see [`Runs`].
    pub fn runs(&self) -> Runs<'_> {
        Runs { engram: self }
    }

    /// Tools: see [`Tools`].
    pub fn tools(&self) -> Tools<'_> {
        Tools { engram: self }
    }

    /// MCP servers Engram connects to, and their tools: see [`Mcp`].
    pub fn mcp(&self) -> Mcp<'_> {
        Mcp { engram: self }
    }

    /// Engram as an MCP memory server: see [`MemoryServer`].
    pub fn memory_server(&self) -> MemoryServer<'_> {
        MemoryServer { engram: self }
    }

    /// Where agents may send data (endpoints) and the local REST API's token: see [`Trust`].
    pub fn trust(&self) -> Trust<'_> {
        Trust { engram: self }
    }

    /// Model providers: see [`Providers`].
    pub fn providers(&self) -> Providers<'_> {
        Providers { engram: self }
    }

    /// Chat and embedding models: see [`Models`].
    pub fn models(&self) -> Models<'_> {
        Models { engram: self }
    }

    /// Folders of files agents read: see [`Folders`].
    pub fn folders(&self) -> Folders<'_> {
        Folders { engram: self }
    }

    /// Agent Files (.af) and other exports: see [`AgentFiles`].
    pub fn agent_files(&self) -> AgentFiles<'_> {
        AgentFiles { engram: self }
    }

    /// Sleep-time passes: see [`Sleeptime`].
    pub fn sleeptime(&self) -> Sleeptime<'_> {
        Sleeptime { engram: self }
    }

    /// A shared server's users: see [`Users`].
    pub fn users(&self) -> Users<'_> {
        Users { engram: self }
    }
}

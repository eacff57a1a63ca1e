//! Engram's memory for other AI tools: the service side of `engram mcp serve`.
//!
//! An MCP client (a coding agent, an editor assistant) sees the core memory of the agents it was
//! given as files in the shape of Anthropic's memory tool: each block is `/memories/<label>.md`
//! (with several agents `/memories/<agent>/<label>.md`), changed with the same versioned block
//! operations an agent's own memory tools use ([`engram_core::BlockOp`]), so limits and
//! uniqueness are checked the same way and an agent's edit made meanwhile is kept. Every write is
//! recorded in the block's history with the client's name as its author
//! ([`Editor::Client`](engram_core::Editor)) and can be undone like any edit. Archival memory is
//! searched through the agent's own search pipeline and recall memory as `conversation_search`
//! does.
//!
//! Each client holds a [`MemoryClient`]: its name and, per agent, whether it may write.
//! Transports (stdio, streamable HTTP) only parse arguments and hand back the text.

#[cfg(test)]
mod approval_tests;
mod approvals;
mod clients;
mod error;
mod files;
mod paste;
mod paths;
mod search;
mod seen;
#[cfg(test)]
mod tests;
mod view;
mod watch;

pub use approvals::DEFAULT_APPROVAL_TIMEOUT;
pub use clients::{Access, ClientEdit, ConfiguredClient};
pub use error::MemoryError;
pub use files::MemoryCommand;
pub use paste::{Launch, PasteFor, SERVER_NAME, config as paste_config, engram_program};
pub use paths::{ROOT as MEMORY_ROOT, file_path};
pub use search::{ConversationQuery, MemoryQuery};
pub use seen::ClientSeen;
pub use view::ViewRange;
pub use watch::{MemoryChange, MemoryFile, MemorySnapshot};

use engram_core::AgentId;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One agent a client may see, and whether it may change that agent's memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryGrant {
    /// The agent.
    pub agent_id: AgentId,
    /// Its directory under `/memories` when a client sees several agents (its name, or its id
    /// when the name cannot be a path segment or is shared).
    pub dir: String,
    /// Whether the client may write (create, edit, delete, rename, add passages).
    pub write: bool,
    /// Whether its writes wait for the user's approval in the window before they apply.
    #[serde(default)]
    pub approve: bool,
}

/// A connected client of the memory server: who it is (the author of its writes) and what it
/// may touch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryClient {
    /// The name its writes are recorded under, e.g. `claude-code`.
    pub name: String,
    /// The agents it sees, in the order given; never empty.
    pub grants: Vec<MemoryGrant>,
    /// How long a write waiting for the user's approval waits before it is withdrawn.
    #[serde(skip)]
    pub approval_timeout: Duration,
}

impl MemoryClient {
    /// The same client under another name (a stdio client that introduced itself).
    pub fn renamed(&self, name: &str) -> Self {
        Self {
            name: name.to_owned(),
            ..self.clone()
        }
    }

    /// Whether the files sit in one directory per agent.
    pub(crate) fn per_agent_dirs(&self) -> bool {
        self.grants.len() > 1
    }
}

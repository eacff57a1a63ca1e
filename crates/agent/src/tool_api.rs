//! Engram's own API for a running user tool.
//!
//! Letta's tutorials write tools that call the server back (`from letta_client import Letta`,
//! then `client.agents.blocks.retrieve(…)` / `.modify(…)` on `http://localhost:8283`). Engram
//! serves such calls through a door opened for one tool call: a [`ToolApi`] (implemented by the
//! REST crate) opens a Unix socket whose every request acts for that call's agent only, the
//! sandbox bridges it to `127.0.0.1:8283` inside the tool's room, and the door closes when the
//! [`ToolApiGrant`] is dropped at the end of the call. No token and no TCP port is involved, so
//! the API stays closed to other programs, also while the desktop's REST switch is off.

use engram_core::AgentId;
use std::fmt;
use std::path::PathBuf;

/// The port code inside a tool's room reaches Engram's API on (Letta's default, which the
/// tutorials' tool bodies name: `http://localhost:8283`).
pub const TOOL_API_PORT: u16 = 8283;

/// Who the API requests of one tool call act for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolScope {
    /// The agent whose tool is running; requests may reach only this agent's routes.
    pub agent_id: AgentId,
    /// The tool call; block edits made through the door are recorded as this call's.
    pub tool_call_id: String,
}

/// An open door into Engram's API for one tool call (see the module docs). Dropping it closes
/// the door: the socket stops accepting and its file is removed.
pub struct ToolApiGrant {
    /// The host's Unix socket, for the sandbox bridge.
    pub socket: PathBuf,
    close: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl ToolApiGrant {
    /// A grant for `socket` that runs `close` when dropped.
    pub fn new(socket: PathBuf, close: impl FnOnce() + Send + Sync + 'static) -> Self {
        Self {
            socket,
            close: Some(Box::new(close)),
        }
    }
}

impl Drop for ToolApiGrant {
    fn drop(&mut self) {
        if let Some(close) = self.close.take() {
            close();
        }
    }
}

impl fmt::Debug for ToolApiGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolApiGrant")
            .field("socket", &self.socket)
            .finish_non_exhaustive()
    }
}

/// Opens Engram's API to one tool call. Implemented by the REST crate and installed by each
/// transport that runs agents (`Engram::set_tool_api`); without one, tools that call the API
/// back get no route to it (their connection is refused and the tool's error says so).
pub trait ToolApi: Send + Sync {
    /// Opens a door for `scope`; must be called inside a tokio runtime.
    ///
    /// Errors: [`ToolApiError`], whose message the tool's `Failed` result carries.
    fn open(&self, scope: ToolScope) -> Result<ToolApiGrant, ToolApiError>;
}

/// Why Engram's API could not be opened to a tool call.
#[derive(Debug, thiserror::Error)]
pub enum ToolApiError {
    /// Engram is shutting down (the service behind the API is gone).
    #[error("Engram is shutting down; its API is closed")]
    ShuttingDown,
    /// The call's socket could not be created.
    #[error("cannot open Engram's API for the tool ({}): {source}", path.display())]
    Socket {
        /// Where the socket was to be.
        path: std::path::PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
}

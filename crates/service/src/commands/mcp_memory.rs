//! Settings commands for Engram as an MCP memory server: the clients and their recent writes
//! (undone with `undo_block_edit`), and the configuration block a client pastes.

use super::{AppCall, Caller};
use crate::Engram;
use crate::mcp_memory::{
    ClientEdit, ClientSeen, ConfiguredClient, Launch, PasteFor, engram_program,
};
use engram_core::{AgentId, Result};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use ts_rs::TS;

/// How many recent client writes the Settings screen shows.
const RECENT_EDITS: usize = 50;

/// The memory server's clients as Settings shows them.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct McpMemoryClients {
    /// The clients configured for the HTTP transport (`engram mcp client add`).
    pub configured: Vec<ConfiguredClient>,
    /// Every client the memory server served, most recently seen first.
    pub seen: Vec<ClientSeen>,
    /// The newest writes by any client (HTTP or stdio), newest first.
    pub recent_edits: Vec<ClientEdit>,
}

/// `mcp_memory_clients`: the configured clients and the newest writes clients made.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct McpMemoryClientsArgs {}

impl AppCall for McpMemoryClientsArgs {
    const NAME: &'static str = "mcp_memory_clients";
    type Output = McpMemoryClients;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<McpMemoryClients> {
        Ok(McpMemoryClients {
            configured: e.memory_clients()?,
            seen: e.memory_clients_seen()?,
            recent_edits: e.client_edits(RECENT_EDITS)?,
        })
    }
}

/// `mcp_memory_config`: the block `client` reads to launch `engram mcp serve` over stdio for
/// one agent, read-write.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct McpMemoryConfigArgs {
    /// The agent whose memory to serve.
    pub agent_id: AgentId,
    /// Which client's format.
    pub client: PasteFor,
}

impl AppCall for McpMemoryConfigArgs {
    const NAME: &'static str = "mcp_memory_config";
    type Output = String;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<String> {
        let launch = Launch {
            agents: vec![self.agent_id.as_str().to_owned()],
            ..Launch::default()
        };
        e.memory_server_config(self.client, &engram_program(), &launch)
    }
}

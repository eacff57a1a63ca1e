//! Settings commands for Engram as an MCP memory server: the clients and their recent writes
//! (undone with `undo_block_edit`), what each may do, the configuration block a client
//! pastes, and the clients' writes waiting for the user's approval.

use super::{AppCall, Caller};
use crate::Engram;
use crate::mcp_memory::{
    Access, ClientEdit, ClientSeen, ConfiguredClient, Launch, PasteFor, engram_program,
};
use engram_core::{AgentId, ClientWriteId, ClientWriteOutcome, PendingClientWrite, Result};
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
            configured: e.memory_server().clients()?,
            seen: e.memory_server().clients_seen()?,
            recent_edits: e.memory_server().client_edits(RECENT_EDITS)?,
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
    /// Whether the client's writes wait for the user's approval (`--approve-writes`).
    #[serde(default)]
    #[ts(optional)]
    pub approve_writes: Option<bool>,
}

impl AppCall for McpMemoryConfigArgs {
    const NAME: &'static str = "mcp_memory_config";
    type Output = String;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<String> {
        let launch = Launch {
            agents: vec![self.agent_id.as_str().to_owned()],
            approve_writes: self.approve_writes.unwrap_or(false),
            ..Launch::default()
        };
        e.memory_server()
            .config(self.client, &engram_program(), &launch)
    }
}

/// `set_memory_client_access`: what a configured client may do (its token is kept). Absent
/// per-agent lists are kept as they are.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct SetMemoryClientAccessArgs {
    /// The client's name.
    pub name: String,
    /// It may only read.
    pub read_only: bool,
    /// Its writes wait for the user's approval, whatever agent.
    pub approve_writes: bool,
    /// Agents whose memory it may only read.
    #[serde(default)]
    #[ts(optional)]
    pub read_only_agents: Option<Vec<AgentId>>,
    /// Agents whose memory it changes only with the user's approval.
    #[serde(default)]
    #[ts(optional)]
    pub approve_agents: Option<Vec<AgentId>>,
}

impl AppCall for SetMemoryClientAccessArgs {
    const NAME: &'static str = "set_memory_client_access";
    type Output = ConfiguredClient;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<ConfiguredClient> {
        let current = e
            .memory_server()
            .clients()?
            .into_iter()
            .find(|c| c.name == self.name)
            .ok_or_else(|| engram_core::Error::not_found("MCP memory client", &self.name))?
            .access();
        let ids = |v: Vec<AgentId>| v.into_iter().map(|a| a.as_str().to_owned()).collect();
        let access = Access {
            read_only: self.read_only,
            approve_writes: self.approve_writes,
            read_only_agents: self.read_only_agents.map_or(current.read_only_agents, ids),
            approve_agents: self.approve_agents.map_or(current.approve_agents, ids),
        };
        e.memory_server().set_client_access(&self.name, &access)
    }
}

/// `pending_client_writes`: memory clients' writes waiting for the user's approval, oldest
/// first.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct PendingClientWritesArgs {}

impl AppCall for PendingClientWritesArgs {
    const NAME: &'static str = "pending_client_writes";
    type Output = Vec<PendingClientWrite>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Vec<PendingClientWrite>> {
        e.memory_server().pending_writes()
    }
}

/// `decide_client_write`: approve (the write applies now, to memory as it is now) or deny a
/// client's write waiting for approval.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct DecideClientWriteArgs {
    /// The write.
    pub id: ClientWriteId,
    /// Apply it.
    pub approve: bool,
    /// Why not (the client reads it on a denial).
    #[serde(default)]
    #[ts(optional)]
    pub reason: Option<String>,
}

impl AppCall for DecideClientWriteArgs {
    const NAME: &'static str = "decide_client_write";
    type Output = ClientWriteOutcome;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<ClientWriteOutcome> {
        e.memory_server()
            .decide_write(&self.id, self.approve, self.reason.as_deref())
            .await
    }
}

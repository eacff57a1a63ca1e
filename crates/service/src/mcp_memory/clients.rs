//! Who may use the memory server: the agents it serves, looked up by id or name, and the
//! configured HTTP clients (name and access in the settings, bearer token in the secret store),
//! plus the recent writes of every client for the Settings screen.

use super::paths::agent_dirs;
use super::{DEFAULT_APPROVAL_TIMEOUT, MemoryClient, MemoryGrant};
use crate::Engram;
use crate::rooms::MemoryServer;
use engram_core::{AgentId, EditId, Editor, Error, Result, Timestamp};
use rand::RngCore;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

/// The settings key holding the configured clients (JSON list of [`ConfiguredClient`]).
const CLIENTS_SETTING: &str = "mcp_memory_clients";
/// The secret-store name of a client's token: this prefix and the client's name.
const TOKEN_SECRET_PREFIX: &str = "mcp-memory-client:";

/// An HTTP client of the memory server, as configured (`engram mcp client add`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct ConfiguredClient {
    /// Its name: the author of its writes. Letters, digits, `-`, `_` and `.`.
    pub name: String,
    /// It may only read, whatever agent.
    pub read_only: bool,
    /// Agents whose memory it may only read (the others it may also change).
    #[serde(default)]
    pub read_only_agents: Vec<AgentId>,
    /// Its writes wait for the user's approval in the window, whatever agent.
    #[serde(default)]
    pub approve_writes: bool,
    /// Agents whose memory it changes only with the user's approval.
    #[serde(default)]
    pub approve_agents: Vec<AgentId>,
}

/// What a client may do, as the CLI and Settings give it: agents by id or name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// It may only read, whatever agent.
    pub read_only: bool,
    /// Agents it may only read.
    pub read_only_agents: Vec<String>,
    /// Its writes wait for the user's approval, whatever agent.
    pub approve_writes: bool,
    /// Agents whose memory it changes only with the user's approval.
    pub approve_agents: Vec<String>,
}

impl ConfiguredClient {
    /// Its access with agents by id.
    pub fn access(&self) -> Access {
        let ids = |v: &[AgentId]| v.iter().map(|a| a.as_str().to_owned()).collect();
        Access {
            read_only: self.read_only,
            read_only_agents: ids(&self.read_only_agents),
            approve_writes: self.approve_writes,
            approve_agents: ids(&self.approve_agents),
        }
    }
}

/// One recent write by a client, for the Settings screen.
#[derive(Clone, Debug, PartialEq, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct ClientEdit {
    /// The client's name.
    pub client: String,
    /// The edit (undo it with `undo_block_edit`).
    pub edit_id: EditId,
    /// The block's label now.
    pub label: String,
    /// The agents the block is attached to.
    pub agent_ids: Vec<AgentId>,
    /// The value before and after.
    pub old_value: String,
    /// The value after.
    pub new_value: String,
    /// When.
    pub created_at: Timestamp,
    /// Whether it has been undone.
    pub undone: bool,
}

fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "client name '{name}': use 1 to 64 letters, digits, '-', '_' or '.'"
        )))
    }
}

fn new_token() -> SecretString {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    SecretString::from(format!("engram-mcp-{hex}"))
}

impl Engram {
    fn agent_ids(&self, agents: &[String]) -> Result<Vec<AgentId>> {
        agents
            .iter()
            .map(|a| self.memory_server().agent(a).map(|(id, _)| id))
            .collect()
    }

    fn save_memory_clients(&self, clients: &[ConfiguredClient]) -> Result<()> {
        let json = serde_json::to_string(clients).map_err(|e| Error::Internal(e.to_string()))?;
        self.store.settings().set(CLIENTS_SETTING, &json)
    }
}

impl MemoryServer<'_> {
    /// An agent by id, or else by name. Errors: `not_found`; `conflict` when several agents
    /// share the name (give the id).
    pub fn agent(self, reference: &str) -> Result<(AgentId, String)> {
        if let Ok(a) = self.engram.store.agents().get(&AgentId::from(reference)) {
            return Ok((a.id, a.name));
        }
        let mut named: Vec<_> = self
            .engram
            .store
            .agents()
            .list()?
            .into_iter()
            .filter(|a| a.name == reference)
            .collect();
        match named.len() {
            0 => Err(Error::not_found("agent", reference)),
            1 => {
                let a = named.remove(0);
                Ok((a.id, a.name))
            }
            n => Err(Error::Conflict(format!(
                "{n} agents are named '{reference}'; give its id instead"
            ))),
        }
    }

    /// A client of the memory server over `agents` (ids or names, at least one), writing
    /// unless `access` makes it read-only (for all agents or some), its writes waiting for the
    /// user's approval where `access` says so. Writes wait [`DEFAULT_APPROVAL_TIMEOUT`]
    /// (set `approval_timeout` on the result to change it).
    ///
    /// Errors: `invalid_input` without agents; `not_found`/`conflict` from
    /// [`agent`](Self::agent).
    pub fn client(self, name: &str, agents: &[String], access: &Access) -> Result<MemoryClient> {
        if agents.is_empty() {
            return Err(Error::invalid(
                "name at least one agent to serve (--agent ID_OR_NAME)",
            ));
        }
        let found = agents
            .iter()
            .map(|a| self.agent(a))
            .collect::<Result<Vec<_>>>()?;
        let read_only_ids = self.engram.agent_ids(&access.read_only_agents)?;
        let approve_ids = self.engram.agent_ids(&access.approve_agents)?;
        let dirs = agent_dirs(&found);
        let grants = found
            .into_iter()
            .zip(dirs)
            .map(|((agent_id, _), dir)| MemoryGrant {
                write: !access.read_only && !read_only_ids.contains(&agent_id),
                approve: access.approve_writes || approve_ids.contains(&agent_id),
                agent_id,
                dir,
            })
            .collect();
        Ok(MemoryClient {
            name: name.to_owned(),
            grants,
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
        })
    }

    /// The configured HTTP clients, in the order they were added.
    pub fn clients(self) -> Result<Vec<ConfiguredClient>> {
        match self.engram.store.settings().get(CLIENTS_SETTING)? {
            None => Ok(Vec::new()),
            Some(json) => serde_json::from_str(&json)
                .map_err(|e| Error::Internal(format!("the stored MCP memory clients: {e}"))),
        }
    }

    /// Adds (or reconfigures) an HTTP client and returns its bearer token: the existing one, or
    /// a new random one stored in the secret store. `access` names agents by id or name.
    ///
    /// Errors: `invalid_input` for a bad name; `not_found` for an agent; `secrets`.
    pub fn add_client(
        self,
        name: &str,
        access: &Access,
    ) -> Result<(ConfiguredClient, SecretString)> {
        check_name(name)?;
        let client = ConfiguredClient {
            name: name.to_owned(),
            read_only: access.read_only,
            read_only_agents: self.engram.agent_ids(&access.read_only_agents)?,
            approve_writes: access.approve_writes,
            approve_agents: self.engram.agent_ids(&access.approve_agents)?,
        };
        let secret = format!("{TOKEN_SECRET_PREFIX}{name}");
        let token = match self.engram.secrets.get(&secret)? {
            Some(t) if !t.expose_secret().is_empty() => t,
            _ => {
                let t = new_token();
                self.engram.secrets.set(&secret, &t)?;
                t
            }
        };
        let mut clients = self.clients()?;
        clients.retain(|c| c.name != name);
        clients.push(client.clone());
        self.engram.save_memory_clients(&clients)?;
        Ok((client, token))
    }

    /// Changes what a configured client may do, keeping its token: read-only, and whether its
    /// writes wait for the user's approval, for every agent and per agent (`access` names
    /// agents by id or name). The server reads it when it starts.
    /// Errors: `not_found` for the client or an agent.
    pub fn set_client_access(self, name: &str, access: &Access) -> Result<ConfiguredClient> {
        let read_only_agents = self.engram.agent_ids(&access.read_only_agents)?;
        let approve_agents = self.engram.agent_ids(&access.approve_agents)?;
        let mut clients = self.clients()?;
        let client = clients
            .iter_mut()
            .find(|c| c.name == name)
            .ok_or_else(|| Error::not_found("MCP memory client", name))?;
        client.read_only = access.read_only;
        client.approve_writes = access.approve_writes;
        client.read_only_agents = read_only_agents;
        client.approve_agents = approve_agents;
        let changed = client.clone();
        self.engram.save_memory_clients(&clients)?;
        Ok(changed)
    }

    /// Removes a client and its token. Errors: `not_found`; `secrets`.
    pub fn remove_client(self, name: &str) -> Result<()> {
        let mut clients = self.clients()?;
        let before = clients.len();
        clients.retain(|c| c.name != name);
        if clients.len() == before {
            return Err(Error::not_found("MCP memory client", name));
        }
        self.engram
            .secrets
            .delete(&format!("{TOKEN_SECRET_PREFIX}{name}"))?;
        self.engram.save_memory_clients(&clients)
    }

    /// Every configured client with its token and its access to `agents` (ids or names), for
    /// the HTTP transport to check bearer tokens against. A client whose token is missing from
    /// the secret store (a reset keychain, a session-only store) gets a new one, as the REST
    /// API's token is made on first use. Errors: as [`client`](Self::client);
    /// `secrets`.
    pub fn client_tokens(self, agents: &[String]) -> Result<Vec<(MemoryClient, SecretString)>> {
        let mut out = Vec::new();
        for c in self.clients()? {
            let secret = format!("{TOKEN_SECRET_PREFIX}{}", c.name);
            let token = match self.engram.secrets.get(&secret)? {
                Some(t) if !t.expose_secret().is_empty() => t,
                _ => {
                    let t = new_token();
                    self.engram.secrets.set(&secret, &t)?;
                    t
                }
            };
            out.push((self.client(&c.name, agents, &c.access())?, token));
        }
        Ok(out)
    }

    /// The newest writes made by MCP clients, newest first, at most `limit`.
    /// Errors: `storage`.
    pub fn client_edits(self, limit: usize) -> Result<Vec<ClientEdit>> {
        let mut out = Vec::new();
        for edit in self.engram.store.blocks().client_edits(limit)? {
            let Editor::Client { name } = &edit.editor else {
                continue;
            };
            let label = self
                .engram
                .store
                .blocks()
                .get(&edit.block_id)
                .map(|b| b.label)
                .unwrap_or_default();
            out.push(ClientEdit {
                client: name.clone(),
                edit_id: edit.id.clone(),
                label,
                agent_ids: self.engram.store.blocks().agents_of(&edit.block_id)?,
                old_value: edit.old_value,
                new_value: edit.new_value,
                created_at: edit.created_at,
                undone: self.engram.store.blocks().edit_undone(&edit.id)?,
            });
        }
        Ok(out)
    }
}

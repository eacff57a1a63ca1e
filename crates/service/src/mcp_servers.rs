//! The Mcp room's calls: MCP servers added, checked, switched on and off, and their tools.

use crate::mcp::{
    ADDED_BY_USER, check_new, env_secret, inactive_line, spec_of, to_error, token_secret, tool_of,
    url_secret,
};
use crate::rooms::Mcp;
use crate::{Engram, Notice};
use engram_core::{
    Error, McpServer, McpServerId, McpTransport, NewMcpServer, NewMcpTransport, Result, Tool,
};
use engram_mcp::url_secrets;
use engram_secrets::SecretStore;
use secrecy::SecretString;

impl Engram {
    /// Stores a server (secrets first, so a stored row never lacks them).
    pub(crate) fn store_mcp_server(
        &self,
        new: NewMcpServer,
        active: bool,
        source: &str,
    ) -> Result<McpServer> {
        let transport = check_new(&new)?;
        if self.store.tools().find_mcp_server(&new.name).is_ok() {
            return Err(Error::Conflict(format!(
                "an MCP server named '{}' already exists",
                new.name
            )));
        }
        let now = chrono::Utc::now();
        let server = McpServer {
            id: McpServerId::new(),
            name: new.name.clone(),
            transport,
            active,
            source: source.to_owned(),
            created_at: now,
            updated_at: now,
        };
        if let (
            NewMcpTransport::StreamableHttp { url, .. },
            McpTransport::StreamableHttp {
                url_secret: true, ..
            },
        ) = (&new.transport, &server.transport)
        {
            self.secrets
                .set(&url_secret(&server.id), &SecretString::from(url.clone()))?;
        }
        match &new.transport {
            NewMcpTransport::Stdio { env, .. } if !env.is_empty() => {
                let json =
                    serde_json::to_string(env).map_err(|e| Error::Internal(e.to_string()))?;
                self.secrets
                    .set(&env_secret(&server.id), &SecretString::from(json))?;
            }
            NewMcpTransport::StreamableHttp {
                token: Some(token), ..
            } => {
                self.secrets.set(
                    &token_secret(&server.id),
                    &SecretString::from(token.clone()),
                )?;
            }
            _ => {}
        }
        let stored = self
            .store
            .tools()
            .insert_mcp_server(&server)
            .inspect_err(|_| {
                self.forget_secrets(&server.id);
            })?;
        self.notify(Notice::McpServersChanged);
        Ok(stored)
    }

    fn forget_secrets(&self, id: &McpServerId) {
        let _ = self.secrets.delete(&env_secret(id));
        let _ = self.secrets.delete(&token_secret(id));
        let _ = self.secrets.delete(&url_secret(id));
    }

    /// Moves credentials that an older Engram stored inside MCP server URLs (`user:pass@`,
    /// `?api_key=…`) to the keychain; the stored URL then shows them as `***`. Run at open.
    /// A keychain or database failure is logged and leaves that server as it was.
    pub(crate) fn secure_mcp_urls(&self) {
        let Ok(servers) = self.store.tools().list_mcp_servers() else {
            return;
        };
        for s in servers {
            let McpTransport::StreamableHttp {
                url,
                has_token,
                url_secret: false,
            } = &s.transport
            else {
                continue;
            };
            let (shown, true) = url_secrets::hide(url) else {
                continue;
            };
            let moved = self
                .secrets
                .set(&url_secret(&s.id), &SecretString::from(url.clone()))
                .and_then(|()| {
                    self.store.tools().set_mcp_server_transport(
                        &s.id,
                        &McpTransport::StreamableHttp {
                            url: shown,
                            has_token: *has_token,
                            url_secret: true,
                        },
                    )
                });
            if let Err(e) = moved {
                tracing::warn!(server = %s.name, "the credentials in the MCP server's URL stay in the database: {e}");
            }
        }
    }

    /// Why an MCP tool cannot run now (its server is inactive or gone), if it cannot.
    pub(crate) fn mcp_unavailable_reason(&self, tool: &Tool) -> Option<String> {
        let source = tool.mcp.as_ref()?;
        match self
            .store
            .tools()
            .find_mcp_server(source.server_id.as_str())
        {
            Ok(s) if s.active => None,
            Ok(s) => Some(inactive_line(&s)),
            Err(_) => Some(format!("MCP server '{}' was removed", source.server_name)),
        }
    }
}

impl Mcp<'_> {
    /// Every configured MCP server, by name. Errors: `storage`.
    pub fn list(self) -> Result<Vec<McpServer>> {
        self.engram.store.tools().list_mcp_servers()
    }

    /// One server by id or name. Errors: `not_found`.
    pub fn get(self, id_or_name: &str) -> Result<McpServer> {
        self.engram.store.tools().find_mcp_server(id_or_name)
    }

    /// Adds a server the user configured (active at once; nothing is started until it is
    /// used). Its environment values and bearer token go to the keychain.
    ///
    /// Errors: `invalid_input` (name, command, URL); `conflict` when the name is taken;
    /// `secrets` when the keychain fails.
    pub fn add_server(self, new: NewMcpServer) -> Result<McpServer> {
        self.engram.store_mcp_server(new, true, ADDED_BY_USER)
    }

    /// Removes a server: stops it, deletes its tools (detaching them from every agent) and
    /// its secrets. Errors: `not_found`.
    pub async fn remove(self, id_or_name: &str) -> Result<()> {
        let server = self.engram.store.tools().find_mcp_server(id_or_name)?;
        self.engram.mcp.forget(server.id.as_str()).await;
        self.engram.store.tools().delete_mcp_server(&server.id)?;
        self.engram.forget_secrets(&server.id);
        self.engram.notify(Notice::McpServersChanged);
        self.engram.notify(Notice::ToolsChanged);
        self.engram.notify(Notice::AgentsChanged);
        Ok(())
    }

    /// Accepts a server that came from a file (it may then be started and called), or
    /// deactivates one. Returns it. Accepting a server from an agent file attaches to each
    /// imported agent the server's tools the file gave it — only those, under their Engram
    /// names (`<server>__<tool>`), with the file's tool rules (e.g. `requires_approval`)
    /// renamed to match — without contacting the server (the next listing refreshes them).
    /// Errors: `not_found`.
    pub async fn set_active(self, id_or_name: &str, active: bool) -> Result<McpServer> {
        let server = self.engram.store.tools().find_mcp_server(id_or_name)?;
        if !active {
            self.engram.mcp.forget(server.id.as_str()).await;
        }
        let s = self
            .engram
            .store
            .tools()
            .set_mcp_server_active(&server.id, active)?;
        if active {
            self.engram.attach_pending_tools(&s)?;
        }
        self.engram.notify(Notice::McpServersChanged);
        self.engram.notify(Notice::ToolsChanged);
        Ok(s)
    }

    /// The server's tools as stored (from the last listing), without contacting it.
    /// Errors: `not_found`.
    pub fn stored_tools(self, id_or_name: &str) -> Result<Vec<Tool>> {
        let server = self.engram.store.tools().find_mcp_server(id_or_name)?;
        Ok(self
            .engram
            .store
            .tools()
            .mcp_server_tools(&server.id)?
            .into_iter()
            .map(|t| self.engram.with_availability(t))
            .collect())
    }

    /// Connects to the server (starting it if needed), lists its tools and stores them as
    /// Engram tools named `<server>__<tool>` (tools it no longer offers are removed and
    /// detached). Returns them; attach one with [`Tools::attach`](crate::Tools::attach).
    ///
    /// Errors: `not_found`; `invalid_input` for an inactive server; `unreachable` or `timeout`
    /// (naming the server) when it cannot be used; `conflict` when a tool name is taken.
    pub async fn list_tools(self, id_or_name: &str) -> Result<Vec<Tool>> {
        let server = self.engram.store.tools().find_mcp_server(id_or_name)?;
        if !server.active {
            return Err(Error::invalid(inactive_line(&server)));
        }
        let spec = {
            let secrets = self.engram.secrets.clone();
            let s = server.clone();
            tokio::task::spawn_blocking(move || spec_of(&*secrets, &s))
                .await
                .map_err(|e| Error::Internal(e.to_string()))??
        };
        let remote = self.engram.mcp.list_tools(&spec).await.map_err(|e| {
            self.engram.notify(Notice::McpServerFailed {
                server_id: server.id.clone(),
                server: server.name.clone(),
                message: e.to_string(),
            });
            to_error(&e)
        })?;
        let tools: Vec<Tool> = remote.iter().map(|r| tool_of(&server, r)).collect();
        let stored = self
            .engram
            .store
            .tools()
            .sync_mcp_tools(&server.id, &tools)?;
        self.engram.notify(Notice::ToolsChanged);
        Ok(stored
            .into_iter()
            .map(|t| self.engram.with_availability(t))
            .collect())
    }

    /// Whether a stdio server's process (or an HTTP server's session) is open now.
    pub async fn connected(self, id_or_name: &str) -> Result<bool> {
        let server = self.engram.store.tools().find_mcp_server(id_or_name)?;
        Ok(self.engram.mcp.is_connected(server.id.as_str()).await)
    }
}

//! MCP servers: adding, listing, testing, accepting and removing them, listing their tools
//! (stored as tools agents attach like any other), and calling those tools for the loop.
//!
//! A server runs with the user's rights (a stdio server is a program started as the user), so
//! only the user adds one: the CLI, the window or the authenticated REST API. Servers that
//! arrive in an agent file or a pasted `mcpServers` block are stored inactive, and neither
//! started nor called until the user accepts them. Secrets — a stdio server's environment
//! values, an HTTP server's bearer token — are kept in the OS keychain, never in the database,
//! logs or exports.

use crate::{Engram, Notice};
use engram_agent::{McpCall, McpCallError, McpCaller};
use engram_core::error::ProviderFault;
use engram_core::{
    AgentId, Error, McpServer, McpServerId, McpToolSource, McpTransport, NewMcpServer,
    NewMcpTransport, Result, Tool, ToolId, ToolLanguage, ToolOrigin,
};
use engram_mcp::hub::{Launch, ServerSpec};
use engram_mcp::{Hub, McpError, RemoteTool, names, url_secrets};
use engram_secrets::SecretStore;
use engram_store::Store;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::broadcast;

/// `source` of servers the user added.
pub const ADDED_BY_USER: &str = "you";

/// The keychain name of a server's bearer token.
fn token_secret(id: &McpServerId) -> String {
    format!("mcp-server:{id}:token")
}

/// The keychain name of an HTTP server's full URL, when the URL as given carried credentials
/// (the stored URL shows them as `***`).
fn url_secret(id: &McpServerId) -> String {
    format!("mcp-server:{id}:url")
}

/// The keychain name of a stdio server's environment (a JSON object of strings).
fn env_secret(id: &McpServerId) -> String {
    format!("mcp-server:{id}:env")
}

/// Checks a server to be added, returning the stored transport (names only).
/// Errors: `invalid_input` saying what is wrong.
pub(crate) fn check_new(new: &NewMcpServer) -> Result<McpTransport> {
    if !names::valid_server_name(&new.name) {
        return Err(Error::invalid(format!(
            "'{}' cannot name an MCP server: use 1–{} letters, digits and '_', starting with a letter, without '__' (its tools are named <server>__<tool>)",
            new.name,
            names::MAX_SERVER_NAME
        )));
    }
    match &new.transport {
        NewMcpTransport::Stdio { command, args, env } => {
            if command.trim().is_empty() {
                return Err(Error::invalid("a stdio MCP server needs a command"));
            }
            if command.contains('\0') || args.iter().any(|a| a.contains('\0')) {
                return Err(Error::invalid(
                    "the command and its arguments cannot contain NUL",
                ));
            }
            for (k, v) in env {
                if k.is_empty() || k.contains(['=', '\0']) || v.contains('\0') {
                    return Err(Error::invalid(format!(
                        "'{k}' cannot be an environment variable name (no '=', not empty)"
                    )));
                }
            }
            Ok(McpTransport::Stdio {
                command: command.clone(),
                args: args.clone(),
                env_keys: env.keys().cloned().collect(),
            })
        }
        NewMcpTransport::StreamableHttp { url, token } => {
            let parsed = url::Url::parse(url)
                .map_err(|e| Error::invalid(format!("'{url}' is not a URL: {e}")))?;
            if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
                return Err(Error::invalid(format!(
                    "'{url}' is not an http(s) URL of an MCP server"
                )));
            }
            if token.as_deref().is_some_and(|t| t.trim().is_empty()) {
                return Err(Error::invalid(
                    "the bearer token is empty; leave it out instead",
                ));
            }
            // Credentials written into the URL go to the keychain with it; the stored, shown
            // and exported URL has them as `***`.
            let (shown, url_secret) = url_secrets::hide(url);
            Ok(McpTransport::StreamableHttp {
                url: shown,
                has_token: token.is_some(),
                url_secret,
            })
        }
    }
}

/// Reads a server's secrets and builds what the hub needs. Blocking (keychain).
fn spec_of(secrets: &dyn SecretStore, server: &McpServer) -> Result<ServerSpec> {
    let launch = match &server.transport {
        McpTransport::Stdio {
            command,
            args,
            env_keys,
        } => {
            // A server without environment values has nothing in the keychain to read.
            let stored = if env_keys.is_empty() {
                None
            } else {
                secrets.get(&env_secret(&server.id))?
            };
            let env: BTreeMap<String, String> = match stored {
                Some(s) => serde_json::from_str(s.expose_secret()).unwrap_or_default(),
                None => BTreeMap::new(),
            };
            Launch::Stdio {
                command: command.clone(),
                args: args.clone(),
                env: env.into_iter().collect(),
            }
        }
        McpTransport::StreamableHttp {
            url,
            has_token,
            url_secret: hidden,
        } => Launch::Http {
            url: if *hidden {
                secrets
                    .get(&url_secret(&server.id))?
                    .map(|s| s.expose_secret().to_owned())
                    .ok_or_else(|| {
                        Error::invalid(format!(
                            "the credentials of MCP server '{}' are missing from the keychain; remove the server and add it again",
                            server.name
                        ))
                    })?
            } else {
                url.clone()
            },
            bearer: if *has_token {
                secrets
                    .get(&token_secret(&server.id))?
                    .map(|s| s.expose_secret().to_owned())
            } else {
                None
            },
        },
    };
    Ok(ServerSpec {
        id: server.id.to_string(),
        name: server.name.clone(),
        launch,
    })
}

/// The Engram error for a server that could not be used (`unreachable`, `timeout` or
/// `bad_request`, with the hub's message naming the server).
fn to_error(e: &McpError) -> Error {
    let fault = match e {
        McpError::Timeout { .. } => ProviderFault::Timeout,
        McpError::Refused { .. } => ProviderFault::BadRequest,
        McpError::Start { .. } | McpError::Lost { .. } => ProviderFault::Unreachable,
    };
    Error::provider(fault, e.to_string())
}

/// The line a call of an inactive server's tool gets.
fn inactive_line(server: &McpServer) -> String {
    format!(
        "MCP server '{name}' is not active: it came from {source} and awaits the user's approval \
         (Settings → MCP servers, or `engram mcp accept {name}`).",
        name = server.name,
        source = server.source,
    )
}

/// A server's tool as an Engram tool (name per [`names::tool_name`]).
pub(crate) fn tool_of(server: &McpServer, remote: &RemoteTool) -> Tool {
    let name = names::tool_name(&server.name, &remote.name);
    let description = if remote.description.trim().is_empty() {
        format!("Tool '{}' of MCP server '{}'.", remote.name, server.name)
    } else {
        remote.description.clone()
    };
    let mut parameters = remote.input_schema.clone();
    if !parameters.is_object() {
        parameters = json!({"type": "object", "properties": {}});
    }
    let now = chrono::Utc::now();
    Tool {
        id: ToolId::new(),
        name: name.clone(),
        description: description.clone(),
        json_schema: json!({"name": name, "description": description, "parameters": parameters}),
        source_code: None,
        language: ToolLanguage::Mcp,
        return_char_limit: engram_core::DEFAULT_RETURN_CHAR_LIMIT,
        tags: vec!["mcp".into(), format!("mcp:{}", server.name)],
        network: false,
        allow_unsandboxed: false,
        available: true,
        unavailable_reason: None,
        origin: ToolOrigin::User,
        trusted_hash: None,
        source_hash: None,
        trusted: true,
        mcp: Some(McpToolSource {
            server_id: server.id.clone(),
            server_name: server.name.clone(),
            tool_name: remote.name.clone(),
        }),
        created_at: now,
        updated_at: now,
    }
}

/// Calls MCP tools for the agent loop (see [`McpCaller`]); failures are announced as notices.
pub(crate) struct McpBridge {
    pub(crate) store: Store,
    pub(crate) secrets: Arc<dyn SecretStore>,
    pub(crate) hub: Arc<Hub>,
    pub(crate) notices: broadcast::Sender<Notice>,
}

impl McpBridge {
    /// The spec of an active server, read off the async runtime (keychain calls block).
    async fn spec(&self, server_id: &McpServerId) -> std::result::Result<ServerSpec, McpCallError> {
        let store = self.store.clone();
        let secrets = self.secrets.clone();
        let id = server_id.clone();
        tokio::task::spawn_blocking(move || {
            let server = store
                .find_mcp_server(id.as_str())
                .map_err(|e| McpCallError::Unusable(format!("MCP server {id}: {e}")))?;
            if !server.active {
                return Err(McpCallError::Unusable(inactive_line(&server)));
            }
            spec_of(&*secrets, &server).map_err(|e| {
                McpCallError::Unusable(format!("MCP server '{}' cannot be used: {e}", server.name))
            })
        })
        .await
        .map_err(|e| McpCallError::Server(format!("MCP call failed: {e}")))?
    }

    async fn call_inner(
        &self,
        agent: &AgentId,
        source: &McpToolSource,
        arguments: Map<String, Value>,
    ) -> std::result::Result<String, McpCallError> {
        let spec = self.spec(&source.server_id).await?;
        match self
            .hub
            .call_tool(&spec, &source.tool_name, arguments)
            .await
        {
            Ok(out) if out.is_error => Err(McpCallError::ToolFailed {
                server: spec.name.clone(),
                tool: source.tool_name.clone(),
                text: out.text,
            }),
            Ok(out) => Ok(out.text),
            Err(e) => {
                tracing::warn!(agent = %agent, server = %spec.name, "MCP call failed: {e}");
                let _ = self.notices.send(Notice::McpServerFailed {
                    server_id: source.server_id.clone(),
                    server: spec.name.clone(),
                    message: e.to_string(),
                });
                Err(McpCallError::Server(e.to_string()))
            }
        }
    }
}

impl McpCaller for McpBridge {
    fn call<'a>(
        &'a self,
        agent: &'a AgentId,
        source: &'a McpToolSource,
        arguments: Map<String, Value>,
    ) -> McpCall<'a> {
        Box::pin(self.call_inner(agent, source, arguments))
    }
}

impl Engram {
    /// Every configured MCP server, by name. Errors: `storage`.
    pub fn list_mcp_servers(&self) -> Result<Vec<McpServer>> {
        self.store.list_mcp_servers()
    }

    /// One server by id or name. Errors: `not_found`.
    pub fn get_mcp_server(&self, id_or_name: &str) -> Result<McpServer> {
        self.store.find_mcp_server(id_or_name)
    }

    /// Adds a server the user configured (active at once; nothing is started until it is
    /// used). Its environment values and bearer token go to the keychain.
    ///
    /// Errors: `invalid_input` (name, command, URL); `conflict` when the name is taken;
    /// `secrets` when the keychain fails.
    pub fn add_mcp_server(&self, new: NewMcpServer) -> Result<McpServer> {
        self.store_mcp_server(new, true, ADDED_BY_USER)
    }

    /// Stores a server (secrets first, so a stored row never lacks them).
    pub(crate) fn store_mcp_server(
        &self,
        new: NewMcpServer,
        active: bool,
        source: &str,
    ) -> Result<McpServer> {
        let transport = check_new(&new)?;
        if self.store.find_mcp_server(&new.name).is_ok() {
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
        let stored = self.store.insert_mcp_server(&server).inspect_err(|_| {
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
        let Ok(servers) = self.store.list_mcp_servers() else {
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
                    self.store.set_mcp_server_transport(
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

    /// Removes a server: stops it, deletes its tools (detaching them from every agent) and
    /// its secrets. Errors: `not_found`.
    pub async fn remove_mcp_server(&self, id_or_name: &str) -> Result<()> {
        let server = self.store.find_mcp_server(id_or_name)?;
        self.mcp.forget(server.id.as_str()).await;
        self.store.delete_mcp_server(&server.id)?;
        self.forget_secrets(&server.id);
        self.notify(Notice::McpServersChanged);
        self.notify(Notice::ToolsChanged);
        self.notify(Notice::AgentsChanged);
        Ok(())
    }

    /// Accepts a server that came from a file (it may then be started and called), or
    /// deactivates one. Returns it. Accepting a server from an agent file attaches to each
    /// imported agent the server's tools the file gave it — only those, under their Engram
    /// names (`<server>__<tool>`), with the file's tool rules (e.g. `requires_approval`)
    /// renamed to match — without contacting the server (the next listing refreshes them).
    /// Errors: `not_found`.
    pub async fn set_mcp_server_active(&self, id_or_name: &str, active: bool) -> Result<McpServer> {
        let server = self.store.find_mcp_server(id_or_name)?;
        if !active {
            self.mcp.forget(server.id.as_str()).await;
        }
        let s = self.store.set_mcp_server_active(&server.id, active)?;
        if active {
            self.attach_pending_tools(&s)?;
        }
        self.notify(Notice::McpServersChanged);
        self.notify(Notice::ToolsChanged);
        Ok(s)
    }

    /// The server's tools as stored (from the last listing), without contacting it.
    /// Errors: `not_found`.
    pub fn stored_mcp_tools(&self, id_or_name: &str) -> Result<Vec<Tool>> {
        let server = self.store.find_mcp_server(id_or_name)?;
        Ok(self
            .store
            .mcp_server_tools(&server.id)?
            .into_iter()
            .map(|t| self.with_availability(t))
            .collect())
    }

    /// Connects to the server (starting it if needed), lists its tools and stores them as
    /// Engram tools named `<server>__<tool>` (tools it no longer offers are removed and
    /// detached). Returns them; attach one with [`Engram::attach_tool`].
    ///
    /// Errors: `not_found`; `invalid_input` for an inactive server; `unreachable` or `timeout`
    /// (naming the server) when it cannot be used; `conflict` when a tool name is taken.
    pub async fn list_mcp_tools(&self, id_or_name: &str) -> Result<Vec<Tool>> {
        let server = self.store.find_mcp_server(id_or_name)?;
        if !server.active {
            return Err(Error::invalid(inactive_line(&server)));
        }
        let spec = {
            let secrets = self.secrets.clone();
            let s = server.clone();
            tokio::task::spawn_blocking(move || spec_of(&*secrets, &s))
                .await
                .map_err(|e| Error::Internal(e.to_string()))??
        };
        let remote = self.mcp.list_tools(&spec).await.map_err(|e| {
            self.notify(Notice::McpServerFailed {
                server_id: server.id.clone(),
                server: server.name.clone(),
                message: e.to_string(),
            });
            to_error(&e)
        })?;
        let tools: Vec<Tool> = remote.iter().map(|r| tool_of(&server, r)).collect();
        let stored = self.store.sync_mcp_tools(&server.id, &tools)?;
        self.notify(Notice::ToolsChanged);
        Ok(stored
            .into_iter()
            .map(|t| self.with_availability(t))
            .collect())
    }

    /// Whether a stdio server's process (or an HTTP server's session) is open now.
    pub async fn mcp_server_connected(&self, id_or_name: &str) -> Result<bool> {
        let server = self.store.find_mcp_server(id_or_name)?;
        Ok(self.mcp.is_connected(server.id.as_str()).await)
    }

    /// Why an MCP tool cannot run now (its server is inactive or gone), if it cannot.
    pub(crate) fn mcp_unavailable_reason(&self, tool: &Tool) -> Option<String> {
        let source = tool.mcp.as_ref()?;
        match self.store.find_mcp_server(source.server_id.as_str()) {
            Ok(s) if s.active => None,
            Ok(s) => Some(inactive_line(&s)),
            Err(_) => Some(format!("MCP server '{}' was removed", source.server_name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(name: &str, command: &str) -> NewMcpServer {
        NewMcpServer {
            name: name.into(),
            transport: NewMcpTransport::Stdio {
                command: command.into(),
                args: vec![],
                env: BTreeMap::from([("KEY".to_owned(), "value".to_owned())]),
            },
        }
    }

    fn http(url: &str, token: Option<&str>) -> NewMcpServer {
        NewMcpServer {
            name: "web".into(),
            transport: NewMcpTransport::StreamableHttp {
                url: url.into(),
                token: token.map(str::to_owned),
            },
        }
    }

    #[test]
    fn servers_to_add_are_checked_and_stored_without_secrets() {
        assert_eq!(
            check_new(&stdio("files", "npx")).unwrap(),
            McpTransport::Stdio {
                command: "npx".into(),
                args: vec![],
                env_keys: vec!["KEY".into()]
            }
        );
        assert_eq!(
            check_new(&http("https://example.com/mcp", Some("t"))).unwrap(),
            McpTransport::StreamableHttp {
                url: "https://example.com/mcp".into(),
                has_token: true,
                url_secret: false,
            }
        );
        // Credentials in the URL are not stored with it.
        assert_eq!(
            check_new(&http(
                "https://me:pw1234@example.com/mcp?token=abcd&x=1",
                None
            ))
            .unwrap(),
            McpTransport::StreamableHttp {
                url: "https://***@example.com/mcp?token=***&x=1".into(),
                has_token: false,
                url_secret: true,
            }
        );
        for bad in [
            stdio("a__b", "npx"),
            stdio("files", " "),
            http("ftp://example.com/mcp", None),
            http("not a url", None),
            http("https://example.com/mcp", Some(" ")),
        ] {
            let e = check_new(&bad).unwrap_err();
            assert!(matches!(e, Error::Invalid(_)), "{bad:?}: {e:?}");
        }
    }

    #[test]
    fn a_remote_tool_becomes_an_mcp_tool_named_after_its_server() {
        let now = chrono::Utc::now();
        let server = McpServer {
            id: McpServerId::new(),
            name: "web".into(),
            transport: McpTransport::StreamableHttp {
                url: "http://127.0.0.1:1/mcp".into(),
                has_token: false,
                url_secret: false,
            },
            active: true,
            source: ADDED_BY_USER.into(),
            created_at: now,
            updated_at: now,
        };
        let remote = RemoteTool {
            name: "get-page".into(),
            description: String::new(),
            input_schema: json!({"type": "object", "properties": {"url": {"type": "string"}}}),
        };
        let t = tool_of(&server, &remote);
        assert!(t.name.starts_with("web__get_page_"), "{}", t.name);
        assert_eq!(t.language, ToolLanguage::Mcp);
        assert!(t.is_trusted());
        assert_eq!(
            t.json_schema["parameters"]["properties"]["url"]["type"],
            "string"
        );
        assert_eq!(t.description, "Tool 'get-page' of MCP server 'web'.");
        assert_eq!(t.mcp.unwrap().tool_name, "get-page");
    }
}

//! MCP servers: adding, listing, testing, accepting and removing them, listing their tools
//! (stored as tools agents attach like any other), and calling those tools for the loop.
//!
//! A server runs with the user's rights (a stdio server is a program started as the user), so
//! only the user adds one: the CLI, the window or the authenticated REST API. Servers that
//! arrive in an agent file or a pasted `mcpServers` block are stored inactive, and neither
//! started nor called until the user accepts them. Secrets — a stdio server's environment
//! values, an HTTP server's bearer token — are kept in the OS keychain, never in the database,
//! logs or exports.

use crate::Notice;
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
use secrecy::ExposeSecret;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::broadcast;

/// `source` of servers the user added.
pub const ADDED_BY_USER: &str = "you";

/// The keychain name of a server's bearer token.
pub(crate) fn token_secret(id: &McpServerId) -> String {
    format!("mcp-server:{id}:token")
}

/// The keychain name of an HTTP server's full URL, when the URL as given carried credentials
/// (the stored URL shows them as `***`).
pub(crate) fn url_secret(id: &McpServerId) -> String {
    format!("mcp-server:{id}:url")
}

/// The keychain name of a stdio server's environment (a JSON object of strings).
pub(crate) fn env_secret(id: &McpServerId) -> String {
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
pub(crate) fn spec_of(secrets: &dyn SecretStore, server: &McpServer) -> Result<ServerSpec> {
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
pub(crate) fn to_error(e: &McpError) -> Error {
    let fault = match e {
        McpError::Timeout { .. } => ProviderFault::Timeout,
        McpError::Refused { .. } => ProviderFault::BadRequest,
        McpError::Start { .. } | McpError::Lost { .. } => ProviderFault::Unreachable,
    };
    Error::provider(fault, e.to_string())
}

/// The line a call of an inactive server's tool gets.
pub(crate) fn inactive_line(server: &McpServer) -> String {
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
                .tools()
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

//! MCP servers as data: how Engram reaches a Model Context Protocol server, and which server
//! and remote tool an Engram tool stands for.
//!
//! Secrets never live here: a stdio server's environment values and an HTTP server's bearer
//! token are kept in the OS keychain; these types carry only the variable names and whether a
//! token is set.

use crate::{McpServerId, Timestamp};
use serde::{Deserialize, Serialize};

/// How a server is reached, as stored (no secrets).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum McpTransport {
    /// A program Engram starts, speaking MCP on stdin/stdout. It runs with the user's rights.
    Stdio {
        /// The program (looked up on `PATH`), e.g. `npx`.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Names of the environment variables set for it (values are in the keychain).
        env_keys: Vec<String>,
    },
    /// A streamable-HTTP endpoint.
    StreamableHttp {
        /// The endpoint URL, e.g. `https://example.com/mcp`.
        url: String,
        /// Whether a bearer token is stored for it (in the keychain).
        has_token: bool,
        /// Whether the URL as given carried credentials (user name and password, or a query
        /// parameter such as `api_key` or `token`): then the full URL is in the keychain and
        /// `url` shows them as `***` (see `engram_mcp::url_secrets`).
        #[serde(default)]
        url_secret: bool,
    },
}

/// A configured MCP server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct McpServer {
    /// `mcp_server-<uuid>`.
    pub id: McpServerId,
    /// Unique name; the prefix of its tools' names (`<name>__<tool>`, see `engram_mcp::names`).
    pub name: String,
    /// How it is reached.
    pub transport: McpTransport,
    /// Whether Engram may start or call it. Servers the user adds are active; servers from an
    /// imported agent file or config stay inactive until the user accepts them.
    pub active: bool,
    /// Where the config came from: `you`, or the file it was imported from.
    pub source: String,
    /// When it was added.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

/// How to reach a server being added, with its secrets (which go to the keychain).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum NewMcpTransport {
    /// See [`McpTransport::Stdio`].
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        #[serde(default)]
        args: Vec<String>,
        /// Environment variables for it (`NAME` → value; values may be secrets).
        #[serde(default)]
        env: std::collections::BTreeMap<String, String>,
    },
    /// See [`McpTransport::StreamableHttp`].
    StreamableHttp {
        /// The endpoint URL (`http` or `https`).
        url: String,
        /// A bearer token sent to this server only.
        #[serde(default)]
        token: Option<String>,
    },
}

/// `url` without its query, fragment and user info, which may hold credentials (`?api_key=`,
/// `user:pass@`): what a debug print may show.
fn without_credentials(url: &str) -> String {
    let base = url.split(['?', '#']).next().unwrap_or_default();
    let Some((scheme, rest)) = base.split_once("://") else {
        return base.to_owned();
    };
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    format!("{scheme}://{host}/{path}")
}

impl std::fmt::Debug for NewMcpTransport {
    // Environment values, tokens and credentials in a URL are secrets: never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stdio { command, args, env } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .finish(),
            Self::StreamableHttp { url, token } => f
                .debug_struct("StreamableHttp")
                .field("url", &without_credentials(url))
                .field("token", &token.as_ref().map(|_| "<redacted>"))
                .finish(),
        }
    }
}

/// A server to add.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct NewMcpServer {
    /// Its name: letters, digits and `_`, starting with a letter, without `__`, ≤ 32 characters.
    pub name: String,
    /// How to reach it.
    pub transport: NewMcpTransport,
}

/// Which server and remote tool an Engram tool stands for (set on MCP tools only).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct McpToolSource {
    /// The server.
    pub server_id: McpServerId,
    /// The server's name (as when the tool was listed).
    pub server_name: String,
    /// The tool's name on the server (may differ from the Engram tool name).
    pub tool_name: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_debug_print_shows_no_credentials_of_the_url() {
        let t = NewMcpTransport::StreamableHttp {
            url: "https://bob:hunter22@example.com/mcp?api_key=s3cret#x".into(),
            token: Some("tok-9".into()),
        };
        let shown = format!("{t:?}");
        for secret in ["bob", "hunter22", "s3cret", "tok-9"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("https://example.com/mcp"), "{shown}");
    }
}

//! MCP servers from elsewhere: the `mcpServers` block Claude Desktop, Jan and Cursor write
//! (`{"mcpServers": {"name": {"command", "args", "env"} | {"url", "headers"}}}`), and the
//! `mcp_servers` of a Letta agent file. Both are stored *inactive*: nothing is started or
//! called until the user accepts the server.

use crate::rooms::Mcp;
use crate::{Engram, Notice};
use engram_core::{Error, McpServer, NewMcpServer, NewMcpTransport, Result};
use engram_mcp::{RemoteTool, names, url_secrets};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Reads an `mcpServers` block (with or without the `{"mcpServers": …}` wrapper) into servers
/// to add, names made valid with [`names::server_name_from`]. An `Authorization: Bearer …`
/// header becomes the server's token; other headers are not supported and refused.
///
/// Errors: `invalid_input` naming the entry that cannot be read (not JSON, neither `command`
/// nor `url`, an SSE-only server).
pub fn parse_mcp_servers_block(text: &str) -> Result<Vec<NewMcpServer>> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| Error::invalid(format!("the MCP config is not JSON: {e}")))?;
    let map = v
        .get("mcpServers")
        .or_else(|| v.get("mcp_servers"))
        .unwrap_or(&v)
        .as_object()
        .ok_or_else(|| Error::invalid("expected {\"mcpServers\": {\"name\": {…}}}"))?;
    map.iter()
        .map(|(key, entry)| server_from_entry(key, entry))
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn string_map(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// Refuses environment variables that change which code a program loads or fetches (`PATH`,
/// `LD_*`, `NODE_OPTIONS`, `npm_config_*`, `PYTHON*`, …) in a pasted config: the accept screen
/// shows variable names only, so such a value could hide what the server really runs. A person
/// who wants one sets it with `engram mcp add`.
fn refuse_loader_vars(key: &str, env: &BTreeMap<String, String>) -> Result<()> {
    const EXACT: &[&str] = &[
        "PATH",
        "NODE_OPTIONS",
        "NODE_PATH",
        "BASH_ENV",
        "ENV",
        "PERL5OPT",
    ];
    const PREFIXES: &[&str] = &[
        "LD_",
        "DYLD_",
        "NPM_CONFIG_",
        "PYTHON",
        "PIP_",
        "UV_",
        "RUBY",
    ];
    for name in env.keys() {
        let upper = name.to_ascii_uppercase();
        if EXACT.contains(&upper.as_str()) || PREFIXES.iter().any(|p| upper.starts_with(p)) {
            return Err(Error::invalid(format!(
                "MCP server '{key}': the environment variable '{name}' changes which code the \
                 server loads; if you trust it, add the server yourself with `engram mcp add`"
            )));
        }
    }
    Ok(())
}

fn server_from_entry(key: &str, entry: &Value) -> Result<NewMcpServer> {
    let bad = |what: &str| Error::invalid(format!("MCP server '{key}': {what}"));
    let name = names::server_name_from(key);
    let kind = entry["type"].as_str().unwrap_or_default();
    if kind == "sse" {
        return Err(bad(
            "SSE-only servers are not supported; use the server's streamable-HTTP URL",
        ));
    }
    if let Some(command) = entry["command"].as_str() {
        let env = string_map(&entry["env"]);
        refuse_loader_vars(key, &env)?;
        return Ok(NewMcpServer {
            name,
            transport: NewMcpTransport::Stdio {
                command: command.to_owned(),
                args: strings(&entry["args"]),
                env,
            },
        });
    }
    let url = entry["url"]
        .as_str()
        .or_else(|| entry["serverUrl"].as_str())
        .ok_or_else(|| bad("neither `command` nor `url`"))?;
    let mut token = None;
    for (header, value) in string_map(&entry["headers"]) {
        match (
            header.eq_ignore_ascii_case("authorization"),
            value.strip_prefix("Bearer "),
        ) {
            (true, Some(t)) => token = Some(t.trim().to_owned()),
            _ => {
                return Err(bad(&format!(
                    "header '{header}' is not supported (only `Authorization: Bearer …`)"
                )));
            }
        }
    }
    Ok(NewMcpServer {
        name,
        transport: NewMcpTransport::StreamableHttp {
            url: url.to_owned(),
            token,
        },
    })
}

/// A Letta agent file's MCP server entry (`server_name`, `server_type`, `server_url` or
/// `stdio_config`/`command`), without tokens (files never carry them to us as trusted).
pub(crate) fn server_from_agent_file(v: &Value) -> Option<NewMcpServer> {
    let name = names::server_name_from(v["server_name"].as_str().or(v["name"].as_str())?);
    let stdio = if v["stdio_config"].is_object() {
        &v["stdio_config"]
    } else {
        v
    };
    let transport = match stdio["command"].as_str() {
        Some(command) => NewMcpTransport::Stdio {
            command: command.to_owned(),
            args: strings(&stdio["args"]),
            // A file's environment values are never taken (like tokens): the accept screen shows
            // only names, so a value could hide what the server really loads or fetches.
            env: BTreeMap::new(),
        },
        None => {
            if v["server_type"].as_str() == Some("sse") || v["type"].as_str() == Some("sse") {
                return None;
            }
            NewMcpTransport::StreamableHttp {
                url: v["server_url"].as_str().or(v["url"].as_str())?.to_owned(),
                token: None,
            }
        }
    };
    Some(NewMcpServer { name, transport })
}

/// A file's MCP server entry as Engram may keep it with the agent (and export again): every
/// value that can be a secret — credentials in `server_url`/`url`, environment values, tokens
/// and headers — replaced by `***`. The server Engram stores from the entry is made from the
/// original (its credentials go to the keychain, see `crate::mcp`).
pub(crate) fn entry_without_secrets(entry: &Value) -> Value {
    let mut v = entry.clone();
    hide_secrets(&mut v);
    if let Some(stdio) = v.get_mut("stdio_config") {
        hide_secrets(stdio);
    }
    v
}

fn hide_secrets(v: &mut Value) {
    let Some(map) = v.as_object_mut() else {
        return;
    };
    for key in ["server_url", "url", "serverUrl"] {
        if let Some(Value::String(u)) = map.get_mut(key) {
            *u = url_secrets::hide(u).0;
        }
    }
    for key in ["env", "headers", "custom_headers"] {
        if let Some(Value::Object(m)) = map.get_mut(key) {
            for value in m.values_mut() {
                *value = Value::String(url_secrets::HIDDEN.into());
            }
        }
    }
    for key in ["token", "auth_token", "auth_header"] {
        if let Some(value) = map.get_mut(key).filter(|v| !v.is_null()) {
            *value = Value::String(url_secrets::HIDDEN.into());
        }
    }
}

impl Engram {
    /// Attaches the tools imported agents used from `server` (see
    /// [`set_active`](crate::Mcp::set_active)).
    pub(crate) fn attach_pending_tools(&self, server: &McpServer) -> Result<()> {
        let pending = self.store.tools().pending_mcp_tools(&server.id)?;
        if pending.is_empty() {
            return Ok(());
        }
        let tools: Vec<_> = pending
            .into_iter()
            .map(|p| {
                // Files carry Letta's `{name, description, parameters}`; a bare object schema
                // is taken as the parameters.
                let schema = &p.json_schema;
                let input_schema = match schema.get("parameters") {
                    Some(params) => params.clone(),
                    None if schema.get("type").is_some() => schema.clone(),
                    None => json!({"type": "object", "properties": {}}),
                };
                let remote = RemoteTool {
                    name: p.tool_name.clone(),
                    description: p.description.clone(),
                    input_schema,
                };
                let tool = crate::mcp::tool_of(server, &remote);
                (p, tool)
            })
            .collect();
        let done = self
            .store
            .tools()
            .attach_pending_mcp_tools(&server.id, &tools)?;
        for name in &done.name_taken {
            tracing::warn!(server = %server.name, tool = %name, "not attached: another tool has its name");
        }
        for (agent, _) in &done.attached {
            self.notify(Notice::AgentChanged {
                agent_id: agent.clone(),
            });
        }
        if !done.attached.is_empty() {
            self.notify(Notice::AgentsChanged);
        }
        Ok(())
    }

    /// Stores one server inactive under a free name.
    pub(crate) fn store_inactive(&self, mut s: NewMcpServer, source: &str) -> Result<McpServer> {
        let base = s.name.clone();
        let mut n = 1;
        while self.store.tools().find_mcp_server(&s.name).is_ok() {
            n += 1;
            let suffix = format!("_{n}");
            let keep = base.len().min(names::MAX_SERVER_NAME - suffix.len());
            s.name = format!("{}{suffix}", &base[..keep]);
        }
        self.store_mcp_server(s, false, source)
    }
}

impl Mcp<'_> {
    /// Stores the servers of an `mcpServers` block (see [`parse_mcp_servers_block`]) as
    /// *inactive*, recording `source` (e.g. the file's name) as where they came from; the user
    /// accepts each with [`Mcp::set_active`]. A name already taken gets `_2`,
    /// `_3`…. Returns the stored servers.
    ///
    /// Errors: `invalid_input` for an unreadable block or entry (nothing is stored then).
    pub fn import(self, text: &str, source: &str) -> Result<Vec<McpServer>> {
        let servers = parse_mcp_servers_block(text)?;
        for s in &servers {
            crate::mcp::check_new(s)?;
        }
        servers
            .into_iter()
            .map(|s| self.engram.store_inactive(s, source))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_desktop_blocks_are_read() {
        let servers = parse_mcp_servers_block(
            r#"{"mcpServers": {
                "brave-search": {"command": "npx", "args": ["-y", "@mcp/brave"], "env": {"BRAVE_API_KEY": "k"}},
                "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer t0k"}}
            }}"#,
        )
        .unwrap();
        assert_eq!(servers[0].name, "brave_search");
        assert!(matches!(
            &servers[0].transport,
            NewMcpTransport::Stdio { command, args, env }
                if command == "npx" && args.len() == 2 && env["BRAVE_API_KEY"] == "k"
        ));
        assert!(matches!(
            &servers[1].transport,
            NewMcpTransport::StreamableHttp { url, token: Some(t) }
                if url == "https://example.com/mcp" && t == "t0k"
        ));
    }

    #[test]
    fn a_pasted_config_may_not_change_what_the_server_loads() {
        for var in [
            "NODE_OPTIONS",
            "npm_config_registry",
            "LD_PRELOAD",
            "PATH",
            "PYTHONPATH",
        ] {
            let text = format!(
                r#"{{"mcpServers": {{"fs": {{"command": "npx", "env": {{"{var}": "x"}}}}}}}}"#
            );
            let e = parse_mcp_servers_block(&text).unwrap_err();
            assert!(e.to_string().contains(var), "{var}: {e}");
        }
    }

    #[test]
    fn an_agent_files_server_brings_no_environment_values() {
        let server = server_from_agent_file(&serde_json::json!({
            "server_name": "fs",
            "stdio_config": {"command": "npx", "args": ["srv"], "env": {"npm_config_registry": "https://evil.example/"}}
        }))
        .unwrap();
        assert!(matches!(
            &server.transport,
            NewMcpTransport::Stdio { command, env, .. } if command == "npx" && env.is_empty()
        ));
    }

    #[test]
    fn unreadable_entries_are_refused_by_name() {
        let e = parse_mcp_servers_block(
            r#"{"mcpServers": {"x": {"type": "sse", "url": "http://h/sse"}}}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("'x'"), "{e}");
        let e = parse_mcp_servers_block(r#"{"mcpServers": {"y": {}}}"#).unwrap_err();
        assert!(e.to_string().contains("neither"), "{e}");
        assert!(parse_mcp_servers_block("not json").is_err());
    }
}

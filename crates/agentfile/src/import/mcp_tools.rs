//! Which tools of the file's MCP servers each agent uses (`external_mcp` tools whose
//! `metadata_.mcp` names a server), so they can be attached once the user accepts the server.

use crate::model::ToolAf;
use serde_json::Value;

/// A tool of one of the file's MCP servers that an agent of the file uses.
#[derive(Clone, Debug, PartialEq)]
pub struct FileMcpTool {
    /// Index of the agent in the conversion's `bundle.agents`.
    pub agent: usize,
    /// The server as the file names it: `server_name` of its `mcp_servers` entry.
    pub server: String,
    /// The server's own name for the tool (`metadata_.mcp.tool_name`, else the tool's name).
    pub tool_name: String,
    /// The tool's name in the file, which its tool rules use.
    pub file_name: String,
    /// Its description as the file gives it (empty when none).
    pub description: String,
    /// Its JSON schema as the file gives it (`Null` when none).
    pub json_schema: Value,
}

/// The MCP tools of agent `agent` among `tools`; `servers` are the file's `mcp_servers`
/// entries, to resolve a tool that names its server by id only.
pub(super) fn of_agent(agent: usize, tools: &[&ToolAf], servers: &[Value]) -> Vec<FileMcpTool> {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    tools
        .iter()
        .filter(|t| t.tool_type.as_deref() == Some("external_mcp"))
        .filter_map(|t| {
            let mcp = t.extra.get("metadata_")?.get("mcp")?;
            let server = text(mcp, "server_name").or_else(|| {
                let id = text(mcp, "server_id")?;
                servers
                    .iter()
                    .find(|s| text(s, "id").as_deref() == Some(id.as_str()))
                    .and_then(|s| text(s, "server_name").or_else(|| text(s, "name")))
            })?;
            Some(FileMcpTool {
                agent,
                server,
                tool_name: text(mcp, "tool_name").unwrap_or_else(|| t.name.clone()),
                file_name: t.name.clone(),
                description: t.description.clone().unwrap_or_default(),
                json_schema: t.json_schema.clone().unwrap_or(Value::Null),
            })
        })
        .collect()
}

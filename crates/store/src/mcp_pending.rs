//! Tools of an imported agent file's MCP servers that its agents used, kept while the server
//! waits inactive (rows of `mcp_pending_tools`) and attached when the user accepts the server.

use crate::rooms::ToolRows;
use crate::sql::{DbResult, to_json};
use crate::tools::{self, rename_rule};
use engram_core::{AgentId, McpServerId, Result, Tool, ToolRule};
use rusqlite::{OptionalExtension, params};
use serde_json::Value;

/// A tool an imported agent used from a server that is not accepted yet.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingMcpTool {
    /// The imported agent.
    pub agent_id: AgentId,
    /// The server's own name for the tool.
    pub tool_name: String,
    /// The tool's name in the file, which the agent's tool rules (e.g. `requires_approval`)
    /// name until it is attached under its Engram name.
    pub file_name: String,
    /// Its description as the file gave it.
    pub description: String,
    /// Its JSON schema as the file gave it.
    pub json_schema: Value,
}

/// What accepting a server attached.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AttachedMcpTools {
    /// `(agent, tool name)` pairs attached.
    pub attached: Vec<(AgentId, String)>,
    /// Tool names not attached because another tool (not this server's) has the name.
    pub name_taken: Vec<String>,
}

impl ToolRows<'_> {
    /// Records tools an imported agent used from `server` (kept until the server is accepted
    /// or removed). Errors: `Storage` (unknown server or agent included).
    pub fn add_pending_mcp_tools(
        self,
        server: &McpServerId,
        tools: &[PendingMcpTool],
    ) -> Result<()> {
        self.store.write(|tx| {
            for t in tools {
                tx.prepare_cached(
                    "INSERT OR REPLACE INTO mcp_pending_tools
                     (server_id, agent_id, tool_name, file_name, description, json_schema)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .db()?
                .execute(params![
                    server.as_str(),
                    t.agent_id.as_str(),
                    t.tool_name,
                    t.file_name,
                    t.description,
                    to_json(&t.json_schema)?
                ])
                .db()?;
            }
            Ok(())
        })
    }

    /// The tools waiting for `server` to be accepted, by agent and name. Errors: `Storage`.
    pub fn pending_mcp_tools(self, server: &McpServerId) -> Result<Vec<PendingMcpTool>> {
        self.store.read(|c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT agent_id, tool_name, file_name, description, json_schema
                     FROM mcp_pending_tools WHERE server_id = ?1 ORDER BY agent_id, tool_name",
                )
                .db()?;
            let rows = stmt
                .query_map([server.as_str()], |r| {
                    Ok(PendingMcpTool {
                        agent_id: AgentId::from(r.get::<_, String>(0)?),
                        tool_name: r.get(1)?,
                        file_name: r.get(2)?,
                        description: r.get(3)?,
                        json_schema: serde_json::from_str(&r.get::<_, String>(4)?)
                            .unwrap_or(Value::Null),
                    })
                })
                .db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// Attaches the tools waiting for `server`, in one transaction: each `(pending, tool)`
    /// stores `tool` (a tool row of the server; a row the server already has is kept), adds
    /// it to the pending agent's tools, and renames the agent's tool rules from the file's
    /// name to the tool's; then the server's pending rows are dropped. A name that belongs to
    /// another tool is left out (reported in `name_taken`). Errors: `Storage`.
    pub fn attach_pending_mcp_tools(
        self,
        server: &McpServerId,
        tools: &[(PendingMcpTool, Tool)],
    ) -> Result<AttachedMcpTools> {
        self.store.write(|tx| {
            let mut out = AttachedMcpTools::default();
            for (pending, tool) in tools {
                match tools::load_by(tx, "name", &tool.name)? {
                    Some(t) if t.mcp.as_ref().is_some_and(|m| &m.server_id == server) => {}
                    Some(_) => {
                        out.name_taken.push(tool.name.clone());
                        continue;
                    }
                    None => {
                        tools::upsert(tx, tool)?;
                    }
                }
                let row: Option<(String, String)> = tx
                    .prepare_cached("SELECT tools, tool_rules FROM agents WHERE id = ?1")
                    .db()?
                    .query_row([pending.agent_id.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
                    .db()?;
                let Some((names, rules)) = row else { continue };
                let mut names: Vec<String> = serde_json::from_str(&names).unwrap_or_default();
                let mut rules: Vec<ToolRule> = serde_json::from_str(&rules).unwrap_or_default();
                if !names.contains(&tool.name) {
                    names.push(tool.name.clone());
                }
                if pending.file_name != tool.name {
                    for r in &mut rules {
                        rename_rule(r, &pending.file_name, &tool.name);
                    }
                }
                tx.prepare_cached("UPDATE agents SET tools = ?2, tool_rules = ?3 WHERE id = ?1")
                    .db()?
                    .execute(params![
                        pending.agent_id.as_str(),
                        to_json(&names)?,
                        to_json(&rules)?
                    ])
                    .db()?;
                out.attached
                    .push((pending.agent_id.clone(), tool.name.clone()));
            }
            tx.execute(
                "DELETE FROM mcp_pending_tools WHERE server_id = ?1",
                [server.as_str()],
            )
            .db()?;
            Ok(out)
        })
    }
}

//! MCP servers: rows of `mcp_servers` (no secrets), and the tools each server offers, kept as
//! rows of `tools` (language `mcp`) so agents attach them by name like any tool.

use crate::rooms::ToolRows;
use crate::sql::{self, DbResult, json, to_json, ts};
use crate::tools::{self, rewrite_agent_refs};
use engram_core::{Error, McpServer, McpServerId, Result, Tool};
use rusqlite::{Connection, OptionalExtension, Row, params};

const COLS: &str = "id, name, transport, active, source, created_at, updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<McpServer> {
    Ok(McpServer {
        id: McpServerId::from(r.get::<_, String>(0)?),
        name: r.get(1)?,
        transport: json(r, 2)?,
        active: r.get(3)?,
        source: r.get(4)?,
        created_at: ts(r, 5)?,
        updated_at: ts(r, 6)?,
    })
}

fn load(conn: &Connection, column: &str, key: &str) -> Result<Option<McpServer>> {
    conn.prepare_cached(&format!(
        "SELECT {COLS} FROM mcp_servers WHERE {column} = ?1"
    ))
    .db()?
    .query_row([key], from_row)
    .optional()
    .db()
}

/// The ids of the tool rows of `server`, with their names.
fn server_tools(conn: &Connection, server: &McpServerId) -> Result<Vec<(String, String)>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, name FROM tools WHERE language = 'mcp' AND json_extract(mcp, '$.server_id') = ?1",
        )
        .db()?;
    let rows = stmt
        .query_map([server.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
        .db()?;
    rows.collect::<rusqlite::Result<_>>().db()
}

impl ToolRows<'_> {
    /// Adds a server. Returns it as stored. Errors: `Conflict` when the name is taken.
    pub fn insert_mcp_server(self, server: &McpServer) -> Result<McpServer> {
        self.store.write(|tx| {
            if load(tx, "name", &server.name)?.is_some() {
                return Err(Error::Conflict(format!(
                    "an MCP server named '{}' already exists",
                    server.name
                )));
            }
            let mut s = server.clone();
            s.created_at = sql::truncate(s.created_at);
            s.updated_at = s.created_at;
            tx.execute(
                &format!("INSERT INTO mcp_servers ({COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
                params![
                    s.id.as_str(),
                    s.name,
                    to_json(&s.transport)?,
                    s.active,
                    s.source,
                    sql::micros(s.created_at),
                    sql::micros(s.updated_at)
                ],
            )
            .db()?;
            Ok(s)
        })
    }

    /// Every server, by name. Errors: `Storage`.
    pub fn list_mcp_servers(self) -> Result<Vec<McpServer>> {
        self.store.read(|c| {
            let mut stmt = c
                .prepare_cached(&format!("SELECT {COLS} FROM mcp_servers ORDER BY name"))
                .db()?;
            let rows = stmt.query_map([], from_row).db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// One server by id or name. Errors: `NotFound("MCP server")`.
    pub fn find_mcp_server(self, id_or_name: &str) -> Result<McpServer> {
        self.store
            .read(|c| match load(c, "id", id_or_name)? {
                Some(s) => Ok(Some(s)),
                None => load(c, "name", id_or_name),
            })?
            .ok_or_else(|| Error::not_found("MCP server", id_or_name))
    }

    /// Makes a server active (the user accepted it) or inactive. Returns it.
    /// Errors: `NotFound("MCP server")`.
    pub fn set_mcp_server_active(self, id: &McpServerId, active: bool) -> Result<McpServer> {
        self.store.write(|tx| {
            let n = tx
                .execute(
                    "UPDATE mcp_servers SET active = ?2, updated_at = ?3 WHERE id = ?1",
                    params![id.as_str(), active, sql::micros(sql::now())],
                )
                .db()?;
            if n == 0 {
                return Err(Error::not_found("MCP server", id.as_str()));
            }
            load(tx, "id", id.as_str())?.ok_or_else(|| Error::not_found("MCP server", id.as_str()))
        })
    }

    /// Replaces how a server is reached (e.g. its URL with the credentials moved to the
    /// keychain). Errors: `NotFound("MCP server")`.
    pub fn set_mcp_server_transport(
        self,
        id: &McpServerId,
        transport: &engram_core::McpTransport,
    ) -> Result<()> {
        self.store.write(|tx| {
            let n = tx
                .execute(
                    "UPDATE mcp_servers SET transport = ?2, updated_at = ?3 WHERE id = ?1",
                    params![id.as_str(), to_json(transport)?, sql::micros(sql::now())],
                )
                .db()?;
            if n == 0 {
                return Err(Error::not_found("MCP server", id.as_str()));
            }
            Ok(())
        })
    }

    /// Removes a server and its tools, detaching them from every agent, in one transaction.
    /// Errors: `NotFound("MCP server")`.
    pub fn delete_mcp_server(self, id: &McpServerId) -> Result<()> {
        self.store.write(|tx| {
            if load(tx, "id", id.as_str())?.is_none() {
                return Err(Error::not_found("MCP server", id.as_str()));
            }
            for (tool_id, name) in server_tools(tx, id)? {
                tx.execute("DELETE FROM tools WHERE id = ?1", [tool_id])
                    .db()?;
                rewrite_agent_refs(tx, &name, None)?;
            }
            tx.execute("DELETE FROM mcp_servers WHERE id = ?1", [id.as_str()])
                .db()?;
            Ok(())
        })
    }

    /// The stored tools of a server, by name. Errors: `Storage`.
    pub fn mcp_server_tools(self, id: &McpServerId) -> Result<Vec<Tool>> {
        self.store.read(|c| {
            let mut out = Vec::new();
            for (tool_id, _) in server_tools(c, id)? {
                if let Some(t) = tools::load_by(c, "id", &tool_id)? {
                    out.push(t);
                }
            }
            out.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(out)
        })
    }

    /// Replaces the stored tools of `server` with `listed` (as the server listed them just
    /// now), in one transaction: new tools are added, changed ones updated (id kept), and tools
    /// the server no longer offers are removed and detached from agents. Returns the stored
    /// tools. Errors: `Conflict` when a name belongs to a tool that is not this server's.
    pub fn sync_mcp_tools(self, server: &McpServerId, listed: &[Tool]) -> Result<Vec<Tool>> {
        self.store.write(|tx| {
            let before = server_tools(tx, server)?;
            for t in listed {
                if let Some(other) = tools::load_by(tx, "name", &t.name)? {
                    let ours = other.mcp.as_ref().is_some_and(|m| &m.server_id == server);
                    if !ours {
                        return Err(Error::Conflict(format!(
                            "the MCP tool name '{}' is taken by another tool; rename that tool",
                            t.name
                        )));
                    }
                }
                tools::upsert(tx, t)?;
            }
            for (tool_id, name) in before {
                if !listed.iter().any(|t| t.name == name) {
                    tx.execute("DELETE FROM tools WHERE id = ?1", [tool_id])
                        .db()?;
                    rewrite_agent_refs(tx, &name, None)?;
                }
            }
            Ok(())
        })?;
        self.mcp_server_tools(server)
    }
}

//! User tools: rows of `tools`, unique by name. Agents refer to tools by name (their `tools`
//! list and `tool_rules`), so renaming or deleting a tool rewrites those lists in the same
//! transaction.

use crate::rooms::ToolRows;
use crate::sql::{self, DbResult, json, to_json, ts};
use engram_core::{Error, Result, Tool, ToolId, ToolLanguage};
use rusqlite::{Connection, OptionalExtension, Row, params};

const TOOL_COLS: &str = "id, name, description, json_schema, source_code, language, \
                         return_char_limit, tags, created_at, updated_at, network, \
                         allow_unsandboxed, origin, trusted_hash, mcp";

fn tool_from_row(r: &Row<'_>) -> rusqlite::Result<Tool> {
    Ok(Tool {
        id: ToolId::from(r.get::<_, String>(0)?),
        name: r.get(1)?,
        description: r.get(2)?,
        json_schema: json(r, 3)?,
        source_code: r.get(4)?,
        language: match r.get::<_, String>(5)?.as_str() {
            "builtin" => ToolLanguage::Builtin,
            "mcp" => ToolLanguage::Mcp,
            _ => ToolLanguage::Python,
        },
        return_char_limit: sql::uint(r, 6)? as usize,
        tags: json(r, 7)?,
        network: r.get(10)?,
        allow_unsandboxed: r.get(11)?,
        // Availability depends on the machine, not the row; the service fills it in.
        available: true,
        unavailable_reason: None,
        origin: json(r, 12)?,
        trusted_hash: r.get(13)?,
        source_hash: None,
        trusted: false,
        mcp: r
            .get::<_, Option<String>>(14)?
            .and_then(|j| serde_json::from_str(&j).ok()),
        created_at: ts(r, 8)?,
        updated_at: ts(r, 9)?,
    }
    .with_trust_computed())
}

pub(crate) fn load_by(conn: &Connection, column: &str, key: &str) -> Result<Option<Tool>> {
    conn.prepare_cached(&format!(
        "SELECT {TOOL_COLS} FROM tools WHERE {column} = ?1"
    ))
    .db()?
    .query_row([key], tool_from_row)
    .optional()
    .db()
}

/// Inserts or replaces the row of `tool.name` (keeping the existing id and `created_at`), with
/// the origin and trusted hash `tool` carries. Only for tools the user wrote: imports go
/// through [`crate::import`], which never replaces a row.
pub(crate) fn upsert(conn: &Connection, tool: &Tool) -> Result<Tool> {
    let now = sql::now();
    let mut t = tool.clone();
    t.updated_at = now;
    match load_by(conn, "name", &t.name)? {
        Some(old) => {
            t.id = old.id;
            t.created_at = old.created_at;
        }
        None => t.created_at = sql::truncate(t.created_at.min(now)),
    }
    conn.prepare_cached(&format!(
        "INSERT INTO tools ({TOOL_COLS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
         ON CONFLICT (name) DO UPDATE SET description = excluded.description,
             json_schema = excluded.json_schema, source_code = excluded.source_code,
             language = excluded.language, return_char_limit = excluded.return_char_limit,
             tags = excluded.tags, updated_at = excluded.updated_at,
             network = excluded.network, allow_unsandboxed = excluded.allow_unsandboxed,
             origin = excluded.origin, trusted_hash = excluded.trusted_hash,
             mcp = excluded.mcp"
    ))
    .db()?
    .execute(params![
        t.id.as_str(),
        t.name,
        t.description,
        to_json(&t.json_schema)?,
        t.source_code,
        t.language.as_str(),
        sql::sat(t.return_char_limit),
        to_json(&t.tags)?,
        sql::micros(t.created_at),
        sql::micros(t.updated_at),
        t.network,
        t.allow_unsandboxed,
        to_json(&t.origin)?,
        t.trusted_hash,
        t.mcp.as_ref().map(to_json).transpose()?,
    ])
    .db()?;
    Ok(t.with_trust_computed())
}

/// Rewrites every agent's `tools` list and `tool_rules` with `rename(name)`; `None` drops the
/// name (and the rules about it).
pub(crate) fn rewrite_agent_refs(conn: &Connection, old: &str, new: Option<&str>) -> Result<()> {
    let rows: Vec<(String, String, String)> = {
        let mut stmt = conn
            .prepare_cached("SELECT id, tools, tool_rules FROM agents")
            .db()?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .db()?;
        rows.collect::<rusqlite::Result<_>>().db()?
    };
    for (id, tools, rules) in rows {
        let mut names: Vec<String> = serde_json::from_str(&tools).unwrap_or_default();
        let mut rules: Vec<engram_core::ToolRule> =
            serde_json::from_str(&rules).unwrap_or_default();
        if !engram_core::tool::rewrite_tool_refs(&mut names, &mut rules, old, new) {
            continue;
        }
        conn.prepare_cached("UPDATE agents SET tools = ?2, tool_rules = ?3 WHERE id = ?1")
            .db()?
            .execute(params![id, to_json(&names)?, to_json(&rules)?])
            .db()?;
    }
    Ok(())
}

pub(crate) fn rename_rule(rule: &mut engram_core::ToolRule, old: &str, new: &str) {
    rule.rename_tools(|n| (n == old).then(|| new.to_owned()));
}

impl ToolRows<'_> {
    /// Creates the tool, or replaces the one with the same name (id and `created_at` kept).
    /// Returns it as stored. Errors: `Storage`.
    pub fn upsert(self, tool: &Tool) -> Result<Tool> {
        self.store.write(|tx| upsert(tx, tool))
    }

    /// Replaces the tool `id` with `tool` (its name may change: agents that had the old name
    /// get the new one, in their tool lists and rules). Errors: `NotFound("tool")`;
    /// `Conflict` when another tool has the new name.
    pub fn replace(self, id: &ToolId, tool: &Tool) -> Result<Tool> {
        self.store.write(|tx| {
            let old = load_by(tx, "id", id.as_str())?
                .ok_or_else(|| Error::not_found("tool", id.as_str()))?;
            if old.name != tool.name {
                if load_by(tx, "name", &tool.name)?.is_some() {
                    return Err(Error::Conflict(format!(
                        "a tool named '{}' already exists",
                        tool.name
                    )));
                }
                tx.execute(
                    "UPDATE tools SET name = ?2 WHERE id = ?1",
                    params![id.as_str(), tool.name],
                )
                .db()?;
                rewrite_agent_refs(tx, &old.name, Some(&tool.name))?;
            }
            upsert(tx, tool)
        })
    }

    /// Trusts the tool's current source: stores `expected_hash` as the trusted hash when it is
    /// the SHA-256 of the source now stored (so the user trusts exactly the code they were
    /// shown). Returns the tool. Errors: `NotFound("tool")`; `Invalid` for a tool without
    /// source; `Conflict` naming the current hash when the source changed since it was shown.
    pub fn trust(self, id: &ToolId, expected_hash: &str) -> Result<Tool> {
        self.store.write(|tx| {
            let tool = load_by(tx, "id", id.as_str())?
                .ok_or_else(|| Error::not_found("tool", id.as_str()))?;
            let Some(current) = tool.source_hash.clone() else {
                return Err(Error::invalid(format!(
                    "tool '{}' has no source code to trust",
                    tool.name
                )));
            };
            if !current.eq_ignore_ascii_case(expected_hash.trim()) {
                return Err(Error::Conflict(format!(
                    "the source of tool '{}' is not the one you reviewed (its SHA-256 is now \
                     {current}); review it again before trusting it",
                    tool.name
                )));
            }
            tx.execute(
                "UPDATE tools SET trusted_hash = ?2 WHERE id = ?1",
                params![id.as_str(), current],
            )
            .db()?;
            load_by(tx, "id", id.as_str())?.ok_or_else(|| Error::not_found("tool", id.as_str()))
        })
    }

    /// Withdraws trust from a tool: it stops running until trusted again. Returns the tool.
    /// Errors: `NotFound("tool")`.
    pub fn untrust(self, id: &ToolId) -> Result<Tool> {
        self.store.write(|tx| {
            let n = tx
                .execute(
                    "UPDATE tools SET trusted_hash = NULL WHERE id = ?1",
                    [id.as_str()],
                )
                .db()?;
            if n == 0 {
                return Err(Error::not_found("tool", id.as_str()));
            }
            load_by(tx, "id", id.as_str())?.ok_or_else(|| Error::not_found("tool", id.as_str()))
        })
    }

    /// One tool by id. Errors: `NotFound("tool")`.
    pub fn get(self, id: &ToolId) -> Result<Tool> {
        self.store
            .read(|c| load_by(c, "id", id.as_str()))?
            .ok_or_else(|| Error::not_found("tool", id.as_str()))
    }

    /// One tool by name, if there is one.
    pub fn by_name(self, name: &str) -> Result<Option<Tool>> {
        self.store.read(|c| load_by(c, "name", name))
    }

    /// Every user tool, by name.
    pub fn list(self) -> Result<Vec<Tool>> {
        self.store.read(|c| {
            let mut stmt = c
                .prepare_cached(&format!("SELECT {TOOL_COLS} FROM tools ORDER BY name"))
                .db()?;
            let rows = stmt.query_map([], tool_from_row).db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// The user tools among `names` (names without a row are skipped), in `names` order.
    pub fn named(self, names: &[String]) -> Result<Vec<Tool>> {
        self.store.read(|c| {
            let mut out = Vec::new();
            for n in names {
                if let Some(t) = load_by(c, "name", n)? {
                    out.push(t);
                }
            }
            Ok(out)
        })
    }

    /// Deletes the tool and detaches it from every agent (its rules go too), in one
    /// transaction. Errors: `NotFound("tool")`.
    pub fn delete(self, id: &ToolId) -> Result<()> {
        self.store.write(|tx| {
            let old = load_by(tx, "id", id.as_str())?
                .ok_or_else(|| Error::not_found("tool", id.as_str()))?;
            tx.execute("DELETE FROM tools WHERE id = ?1", [id.as_str()])
                .db()?;
            rewrite_agent_refs(tx, &old.name, None)
        })
    }
}

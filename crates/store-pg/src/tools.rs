//! User tools on PostgreSQL: rows unique by name, and the agents' references to them rewritten
//! in the same transaction when a tool is renamed or deleted (the rule is
//! [`engram_core::tool::rewrite_tool_refs`]; the agents it changes are locked `FOR NO KEY
//! UPDATE`, as any change of an agent's settings).

use crate::PgStore;
use crate::rows::{self, Cached};
use crate::tx::{TxError, TxResult, transaction};
use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_core::tool::rewrite_tool_refs;
use engram_core::{Error, Result, Tool, ToolId, ToolLanguage, ToolRule};
use engram_store_api::ToolStore;
use serde_json::Value;
use tokio_postgres::Row;

const TOOL_COLS: &str = "id, name, description, json_schema, source_code, language, \
                         return_char_limit, tags, created_at, updated_at, network, \
                         allow_unsandboxed, origin, trusted_hash, mcp";

fn tool_from_row(r: &Row) -> TxResult<Tool> {
    let mcp: Option<Value> = r.try_get(14)?;
    Ok(Tool {
        id: ToolId::from(r.try_get::<_, String>(0)?),
        name: r.try_get(1)?,
        description: r.try_get(2)?,
        json_schema: r.try_get(3)?,
        source_code: r.try_get(4)?,
        language: match r.try_get::<_, &str>(5)? {
            "builtin" => ToolLanguage::Builtin,
            "mcp" => ToolLanguage::Mcp,
            _ => ToolLanguage::Python,
        },
        return_char_limit: usize::try_from(rows::uint(r, 6)?).unwrap_or(usize::MAX),
        tags: rows::from_json(r, 7, "tool tags")?,
        created_at: r.try_get(8)?,
        updated_at: r.try_get(9)?,
        network: r.try_get(10)?,
        allow_unsandboxed: r.try_get(11)?,
        // Whether it can run depends on the machine, not the row; the service fills it in.
        available: true,
        unavailable_reason: None,
        origin: rows::from_json(r, 12, "tool origin")?,
        trusted_hash: r.try_get(13)?,
        source_hash: None,
        trusted: false,
        // A source this build cannot read is no source: the tool is then not an MCP tool.
        mcp: mcp.and_then(|v| serde_json::from_value(v).ok()),
    }
    .with_trust_computed())
}

pub(crate) async fn load_by(
    c: &impl GenericClient,
    column: &str,
    key: &str,
) -> TxResult<Option<Tool>> {
    c.one_opt(
        &format!("SELECT {TOOL_COLS} FROM tools WHERE {column} = $1"),
        &[&key],
    )
    .await?
    .as_ref()
    .map(tool_from_row)
    .transpose()
}

async fn load_id(c: &impl GenericClient, id: &ToolId) -> TxResult<Tool> {
    load_by(c, "id", id.as_str())
        .await?
        .ok_or_else(|| Error::not_found("tool", id.as_str()).into())
}

/// Inserts or replaces the row of `tool.name`, keeping an existing row's id and `created_at`.
pub(crate) async fn upsert(c: &impl GenericClient, tool: &Tool) -> TxResult<Tool> {
    let now = rows::now();
    let mut t = tool.clone();
    t.updated_at = now;
    match load_by(c, "name", &t.name).await? {
        Some(old) => {
            t.id = old.id;
            t.created_at = old.created_at;
        }
        None => t.created_at = rows::truncate(t.created_at.min(now)),
    }
    c.exec(
        &format!(
            "INSERT INTO tools ({TOOL_COLS})
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
             ON CONFLICT (name) DO UPDATE SET description = excluded.description,
                 json_schema = excluded.json_schema, source_code = excluded.source_code,
                 language = excluded.language, return_char_limit = excluded.return_char_limit,
                 tags = excluded.tags, updated_at = excluded.updated_at,
                 network = excluded.network, allow_unsandboxed = excluded.allow_unsandboxed,
                 origin = excluded.origin, trusted_hash = excluded.trusted_hash,
                 mcp = excluded.mcp"
        ),
        &[
            &t.id.as_str(),
            &t.name,
            &t.description,
            &t.json_schema,
            &t.source_code,
            &t.language.as_str(),
            &i64::try_from(t.return_char_limit).unwrap_or(i64::MAX),
            &rows::to_json(&t.tags)?,
            &t.created_at,
            &t.updated_at,
            &t.network,
            &t.allow_unsandboxed,
            &rows::to_json(&t.origin)?,
            &t.trusted_hash,
            &t.mcp.as_ref().map(rows::to_json).transpose()?,
        ],
    )
    .await?;
    Ok(t.with_trust_computed())
}

/// Rewrites the tool lists and rules of every agent that names `old` (see the module docs).
async fn rewrite_agent_refs(c: &impl GenericClient, old: &str, new: Option<&str>) -> TxResult<()> {
    // A superset in SQL (the name, quoted as JSON, anywhere in the rules); exact in Rust.
    let quoted = serde_json::to_string(old).map_err(|e| Error::Internal(e.to_string()))?;
    let found = c
        .rows(
            "SELECT id, tools, tool_rules FROM agents
             WHERE tools @> jsonb_build_array($1::text)
                OR strpos(tool_rules::text, $2) > 0
             ORDER BY id
             FOR NO KEY UPDATE",
            &[&old, &quoted],
        )
        .await?;
    for r in &found {
        let id: String = r.try_get(0)?;
        let mut names: Vec<String> = rows::from_json(r, 1, "agent tools")?;
        let mut rules: Vec<ToolRule> = rows::from_json(r, 2, "tool rules")?;
        if rewrite_tool_refs(&mut names, &mut rules, old, new) {
            c.exec(
                "UPDATE agents SET tools = $2, tool_rules = $3 WHERE id = $1",
                &[&id, &rows::to_json(&names)?, &rows::to_json(&rules)?],
            )
            .await?;
        }
    }
    Ok(())
}

#[async_trait]
impl ToolStore for PgStore {
    async fn upsert_tool(&self, tool: &Tool) -> Result<Tool> {
        transaction!(self, |tx| { upsert(&tx, tool).await? })
    }

    async fn replace_tool(&self, id: &ToolId, tool: &Tool) -> Result<Tool> {
        transaction!(self, |tx| {
            let old = load_id(&tx, id).await?;
            if old.name != tool.name {
                if load_by(&tx, "name", &tool.name).await?.is_some() {
                    return Err(Error::Conflict(format!(
                        "a tool named '{}' already exists",
                        tool.name
                    ))
                    .into());
                }
                tx.exec(
                    "UPDATE tools SET name = $2 WHERE id = $1",
                    &[&id.as_str(), &tool.name],
                )
                .await?;
                rewrite_agent_refs(&tx, &old.name, Some(&tool.name)).await?;
            }
            upsert(&tx, tool).await?
        })
    }

    async fn trust_tool(&self, id: &ToolId, expected_hash: &str) -> Result<Tool> {
        transaction!(self, |tx| {
            let tool = load_id(&tx, id).await?;
            let Some(current) = tool.source_hash.clone() else {
                return Err(Error::invalid(format!(
                    "tool '{}' has no source code to trust",
                    tool.name
                ))
                .into());
            };
            if !current.eq_ignore_ascii_case(expected_hash.trim()) {
                return Err(Error::Conflict(format!(
                    "the source of tool '{}' is not the one you reviewed (its SHA-256 is now \
                     {current}); review it again before trusting it",
                    tool.name
                ))
                .into());
            }
            tx.exec(
                "UPDATE tools SET trusted_hash = $2 WHERE id = $1",
                &[&id.as_str(), &current],
            )
            .await?;
            load_id(&tx, id).await?
        })
    }

    async fn untrust_tool(&self, id: &ToolId) -> Result<Tool> {
        transaction!(self, |tx| {
            let n = tx
                .exec(
                    "UPDATE tools SET trusted_hash = NULL WHERE id = $1",
                    &[&id.as_str()],
                )
                .await?;
            if n == 0 {
                return Err(Error::not_found("tool", id.as_str()).into());
            }
            load_id(&tx, id).await?
        })
    }

    async fn get_tool(&self, id: &ToolId) -> Result<Tool> {
        let c = self.client().await?;
        Ok(load_id(&c, id).await?)
    }

    async fn tool_by_name(&self, name: &str) -> Result<Option<Tool>> {
        let c = self.client().await?;
        Ok(load_by(&c, "name", name).await?)
    }

    async fn list_tools(&self) -> Result<Vec<Tool>> {
        let c = self.client().await?;
        let found = c
            .rows(
                &format!("SELECT {TOOL_COLS} FROM tools ORDER BY name COLLATE \"C\""),
                &[],
            )
            .await
            .map_err(TxError::from)?;
        Ok(rows::all(&found, tool_from_row)?)
    }

    async fn tools_named(&self, names: &[String]) -> Result<Vec<Tool>> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let c = self.client().await?;
        let found = c
            .rows(
                &format!("SELECT {TOOL_COLS} FROM tools WHERE name = ANY($1)"),
                &[&names],
            )
            .await
            .map_err(TxError::from)?;
        let tools = rows::all(&found, tool_from_row)?;
        // In the order asked, as the SQLite store gives them (a name asked twice, twice).
        Ok(names
            .iter()
            .filter_map(|n| tools.iter().find(|t| &t.name == n).cloned())
            .collect())
    }

    async fn delete_tool(&self, id: &ToolId) -> Result<()> {
        transaction!(self, |tx| {
            let old = load_id(&tx, id).await?;
            tx.exec("DELETE FROM tools WHERE id = $1", &[&id.as_str()])
                .await?;
            rewrite_agent_refs(&tx, &old.name, None).await?;
        })
    }
}

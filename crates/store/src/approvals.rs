//! Tool calls waiting for a person (Letta's `requires_approval` rule): one row per paused
//! agent, written and deleted only inside step commits (see `StepCommit::approval`),
//! so the call and the row that says it waits are stored together.

use crate::rooms::RunRows;
use crate::sql::{self, DbResult, json, ts};
use engram_core::{
    AgentId, Error, McpToolSource, MessageId, PendingApproval, Result, RunId, StepId, ToolCall,
};
use engram_store_api::ApprovalWrite;
use rusqlite::{Connection, OptionalExtension, params};

/// The agent's pending approval, if any.
pub(crate) fn get(conn: &Connection, agent: &AgentId) -> Result<Option<PendingApproval>> {
    conn.prepare_cached(
        "SELECT agent_id, run_id, step_id, message_id, tool_call, requested_at
         FROM pending_approvals WHERE agent_id = ?1",
    )
    .db()?
    .query_row([agent.as_str()], |r| {
        Ok(PendingApproval {
            agent_id: AgentId::from(r.get::<_, String>(0)?),
            run_id: RunId::from(r.get::<_, String>(1)?),
            step_id: StepId::from(r.get::<_, String>(2)?),
            message_id: MessageId::from(r.get::<_, String>(3)?),
            tool_call: json::<ToolCall>(r, 4)?,
            requested_at: ts(r, 5)?,
            server: None,
        })
    })
    .optional()
    .db()?
    .map(|mut p| {
        p.server = server_of(conn, &p.tool_call.name)?;
        Ok(p)
    })
    .transpose()
}

/// The MCP server tool `name` comes from (`None` for built-in and Python tools, or a tool that
/// is gone).
fn server_of(conn: &Connection, name: &str) -> Result<Option<String>> {
    let mcp: Option<Option<String>> = conn
        .prepare_cached("SELECT mcp FROM tools WHERE name = ?1")
        .db()?
        .query_row([name], |r| r.get(0))
        .optional()
        .db()?;
    Ok(mcp
        .flatten()
        .and_then(|j| serde_json::from_str::<McpToolSource>(&j).ok())
        .map(|s| s.server_name))
}

fn insert(conn: &Connection, p: &PendingApproval) -> Result<()> {
    let call = serde_json::to_string(&p.tool_call)
        .map_err(|e| Error::Internal(format!("tool call: {e}")))?;
    let n = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO pending_approvals
             (agent_id, run_id, step_id, message_id, tool_call, requested_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .db()?
        .execute(params![
            p.agent_id.as_str(),
            p.run_id.as_str(),
            p.step_id.as_str(),
            p.message_id.as_str(),
            call,
            sql::micros(p.requested_at),
        ])
        .db()?;
    if n == 0 {
        return Err(Error::Conflict(format!(
            "the agent already has a tool call waiting for approval; decide it first (asked: '{}')",
            p.tool_call.name
        )));
    }
    Ok(())
}

/// Applies a step's [`ApprovalWrite`] inside its transaction. `Resolve` fails with `NotFound`
/// when nothing is pending (a second window decided first), so a call is never answered twice.
pub(crate) fn apply(conn: &Connection, agent: &AgentId, w: &ApprovalWrite) -> Result<()> {
    match w {
        ApprovalWrite::Keep => Ok(()),
        ApprovalWrite::Request(p) => insert(conn, p),
        ApprovalWrite::Resolve(next) => {
            let n = conn
                .prepare_cached("DELETE FROM pending_approvals WHERE agent_id = ?1")
                .db()?
                .execute([agent.as_str()])
                .db()?;
            if n == 0 {
                return Err(Error::not_found("pending approval", agent.as_str()));
            }
            next.as_ref().map_or(Ok(()), |p| insert(conn, p))
        }
    }
}

impl RunRows<'_> {
    /// The tool call the agent's paused run waits on, if any (see [`ApprovalWrite`]).
    /// Errors: `NotFound("agent")`.
    pub fn pending_approval(self, agent: &AgentId) -> Result<Option<PendingApproval>> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            get(c, agent)
        })
    }

    /// Forgets the agent's pending approval without answering the call (the message that made
    /// it left the context, e.g. after a reset); the next repair answers it as interrupted.
    /// Returns whether one was pending. Errors: `NotFound("agent")`.
    pub fn drop_pending_approval(self, agent: &AgentId) -> Result<bool> {
        self.store.write(|tx| {
            sql::ensure_agent(tx, agent)?;
            let n = tx
                .prepare_cached("DELETE FROM pending_approvals WHERE agent_id = ?1")
                .db()?
                .execute([agent.as_str()])
                .db()?;
            Ok(n > 0)
        })
    }
}

//! Endpoints that wait for the user: base URLs an imported agent file asked for, stored apart
//! from the agent's settings (so nothing uses them) until the user accepts or dismisses them.

use crate::agents;
use crate::rooms::SettingRows;
use crate::sql::{DbResult, ts};
use engram_core::{Agent, AgentId, EndpointKind, PendingEndpoint, Result};
use engram_store_api::{no_embedding_model_for_endpoint, no_pending_endpoint};
use rusqlite::{OptionalExtension, Row, params};

fn kind_from(s: &str) -> EndpointKind {
    if s == "embedding" {
        EndpointKind::Embedding
    } else {
        EndpointKind::Llm
    }
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<PendingEndpoint> {
    Ok(PendingEndpoint {
        agent_id: AgentId::from(r.get::<_, String>(0)?),
        kind: kind_from(&r.get::<_, String>(1)?),
        base_url: r.get(2)?,
        source: r.get(3)?,
        created_at: ts(r, 4)?,
    })
}

const COLS: &str = "agent_id, kind, base_url, source, created_at";

impl SettingRows<'_> {
    /// The endpoints of `agent` waiting for approval (chat model first). Errors: `Storage`.
    pub fn pending_endpoints(self, agent: &AgentId) -> Result<Vec<PendingEndpoint>> {
        self.store.read(|c| {
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {COLS} FROM pending_endpoints WHERE agent_id = ?1 ORDER BY kind DESC"
                ))
                .db()?;
            let rows = stmt.query_map([agent.as_str()], from_row).db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// Accepts the pending endpoint of `kind`: in one transaction its base URL becomes the
    /// agent's (`llm.base_url` or `embedding.base_url`) and the pending row goes. Returns the
    /// agent (its `updated_at` unchanged). Errors: `NotFound("pending endpoint")`; `Invalid` when an embedding endpoint
    /// waits but the agent has no embedding model.
    pub fn accept_endpoint(self, agent: &AgentId, kind: EndpointKind) -> Result<Agent> {
        self.store.write(|tx| {
            let pending = tx
                .prepare_cached(&format!(
                    "SELECT {COLS} FROM pending_endpoints WHERE agent_id = ?1 AND kind = ?2"
                ))
                .db()?
                .query_row(params![agent.as_str(), kind.as_str()], from_row)
                .optional()
                .db()?
                .ok_or_else(|| no_pending_endpoint(agent, kind))?;
            let mut a = agents::load(tx, agent)?;
            match kind {
                EndpointKind::Llm => a.llm.base_url = Some(pending.base_url),
                EndpointKind::Embedding => match a.embedding.as_mut() {
                    Some(e) => e.base_url = Some(pending.base_url),
                    None => return Err(no_embedding_model_for_endpoint()),
                },
            }
            // Accepting completes the import (the file's own setting): `updated_at` is kept,
            // so an accepted round trip gives back the agent as exported.
            agents::save(tx, &a, false)?;
            tx.execute(
                "DELETE FROM pending_endpoints WHERE agent_id = ?1 AND kind = ?2",
                params![agent.as_str(), kind.as_str()],
            )
            .db()?;
            Ok(a)
        })
    }

    /// Drops the pending endpoint of `kind` without using it. Errors:
    /// `NotFound("pending endpoint")`.
    pub fn dismiss_endpoint(self, agent: &AgentId, kind: EndpointKind) -> Result<()> {
        self.store.write(|tx| {
            let n = tx
                .execute(
                    "DELETE FROM pending_endpoints WHERE agent_id = ?1 AND kind = ?2",
                    params![agent.as_str(), kind.as_str()],
                )
                .db()?;
            if n == 0 {
                return Err(no_pending_endpoint(agent, kind));
            }
            Ok(())
        })
    }
}

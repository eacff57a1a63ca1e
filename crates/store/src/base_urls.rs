//! Every base URL the database holds — providers', agents' chat and embedding models', and
//! endpoints waiting for approval — read and rewritten together. Versions before base URLs were
//! checked stored whatever was typed, credentials included (`https://user:pass@host/v1`,
//! `…?api_key=…`); the service takes those out when it opens a database, and the rewrite
//! overwrites the old text in the file rather than leaving it in free pages.

use crate::rooms::AgentRows;
use crate::sql::DbResult;
use engram_core::{AgentId, EndpointKind, Result};
use rusqlite::params;

/// Where a stored base URL lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BaseUrlOwner {
    /// A provider's settings, by provider name.
    Provider(String),
    /// An agent's chat model (`llm.base_url`).
    AgentLlm(AgentId),
    /// An agent's embedding model (`embedding.base_url`).
    AgentEmbedding(AgentId),
    /// An endpoint an imported agent file asked for, waiting for the user.
    Pending(AgentId, EndpointKind),
}

/// One stored base URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredBaseUrl {
    /// Where it is stored.
    pub owner: BaseUrlOwner,
    /// The URL as stored.
    pub url: String,
}

/// A rewrite of one stored base URL: `to` replaces `from`; `None` removes it (a provider or an
/// agent then uses its default server; a pending endpoint is dismissed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaseUrlRewrite {
    /// Where it is stored.
    pub owner: BaseUrlOwner,
    /// The URL as it was read; a row that holds anything else now is left alone.
    pub from: String,
    /// The new URL.
    pub to: Option<String>,
}

impl AgentRows<'_> {
    /// Every stored base URL: one row per provider, agent model and pending endpoint that has
    /// one. Errors: `Storage`.
    pub fn stored_base_urls(self) -> Result<Vec<StoredBaseUrl>> {
        self.store.read(|c| {
            let mut stmt = c
                .prepare(
                    "SELECT 'provider', name, base_url FROM providers WHERE base_url IS NOT NULL
                     UNION ALL
                     SELECT 'llm', id, json_extract(llm, '$.base_url') FROM agents
                      WHERE json_extract(llm, '$.base_url') IS NOT NULL
                     UNION ALL
                     SELECT 'embedding', id, json_extract(embedding, '$.base_url') FROM agents
                      WHERE json_extract(embedding, '$.base_url') IS NOT NULL
                     UNION ALL
                     SELECT 'pending:' || kind, agent_id, base_url FROM pending_endpoints",
                )
                .db()?;
            let rows = stmt
                .query_map([], |r| {
                    let (what, id, url): (String, String, String) =
                        (r.get(0)?, r.get(1)?, r.get(2)?);
                    let owner = match what.as_str() {
                        "provider" => BaseUrlOwner::Provider(id),
                        "llm" => BaseUrlOwner::AgentLlm(id.into()),
                        "embedding" => BaseUrlOwner::AgentEmbedding(id.into()),
                        "pending:embedding" => {
                            BaseUrlOwner::Pending(id.into(), EndpointKind::Embedding)
                        }
                        _ => BaseUrlOwner::Pending(id.into(), EndpointKind::Llm),
                    };
                    Ok(StoredBaseUrl { owner, url })
                })
                .db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// Applies `rewrites` in one transaction and returns how many rows changed. The old text
    /// is overwritten in the database file (SQLite's `secure_delete` for this write) and the
    /// write-ahead log is emptied afterwards, so a credential taken out of a URL leaves no copy
    /// on disk (unless another process holds the log open: then it goes at the next
    /// checkpoint). Errors: `Storage`.
    pub fn rewrite_base_urls(self, rewrites: &[BaseUrlRewrite]) -> Result<usize> {
        if rewrites.is_empty() {
            return Ok(0);
        }
        let changed = {
            let mut conn = self.store.lock();
            conn.pragma_update(None, "secure_delete", true).db()?;
            let result = (|| -> Result<usize> {
                let tx = conn.transaction().db()?;
                let mut changed = 0;
                for r in rewrites {
                    changed += match &r.owner {
                        BaseUrlOwner::Provider(name) => tx
                            .execute(
                                "UPDATE providers SET base_url = ?3 WHERE name = ?1 AND base_url = ?2",
                                params![name, r.from, r.to],
                            )
                            .db()?,
                        BaseUrlOwner::AgentLlm(id) | BaseUrlOwner::AgentEmbedding(id) => {
                            let column = match r.owner {
                                BaseUrlOwner::AgentLlm(_) => "llm",
                                _ => "embedding",
                            };
                            tx.execute(
                                &format!(
                                    "UPDATE agents SET {column} = json_set({column}, '$.base_url', ?3)
                                      WHERE id = ?1 AND json_extract({column}, '$.base_url') = ?2"
                                ),
                                params![id.as_str(), r.from, r.to],
                            )
                            .db()?
                        }
                        BaseUrlOwner::Pending(id, kind) => {
                            let kind = kind.as_str();
                            match &r.to {
                                Some(to) => tx.execute(
                                    "UPDATE pending_endpoints SET base_url = ?4
                                      WHERE agent_id = ?1 AND kind = ?2 AND base_url = ?3",
                                    params![id.as_str(), kind, r.from, to],
                                ),
                                None => tx.execute(
                                    "DELETE FROM pending_endpoints
                                      WHERE agent_id = ?1 AND kind = ?2 AND base_url = ?3",
                                    params![id.as_str(), kind, r.from],
                                ),
                            }
                            .db()?
                        }
                    };
                }
                tx.commit().db()?;
                Ok(changed)
            })();
            conn.pragma_update(None, "secure_delete", false).db()?;
            result?
        };
        self.store.checkpoint()?;
        Ok(changed)
    }
}

//! Archival and recall memory for a client: `search_memory` through the agent's own archival
//! search ([`Archival::search`](crate::Archival::search): BM25 fused with vectors, reranked when configured),
//! `add_memory`, and `search_conversation` as the agent's `conversation_search`.

use super::{MemoryClient, MemoryError, MemoryGrant};
use crate::rooms::MemoryServer;
use chrono::{DateTime, NaiveDate, Utc};
use engram_core::{Role, TagMatch};
use engram_store::MessageQuery;
use serde::Deserialize;
use serde_json::json;

/// Results when the client does not say how many.
const DEFAULT_LIMIT: usize = 5;
/// Never more than this many results.
const MAX_LIMIT: usize = 50;
/// Long messages are cut in results.
const MAX_MESSAGE_CHARS: usize = 1_000;

/// `search_memory`'s arguments.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryQuery {
    /// What to look for (words and meaning).
    pub query: String,
    /// Only passages with any of these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Only passages from this date or time on (ISO 8601).
    #[serde(default)]
    pub start: Option<String>,
    /// Only passages up to this date or time (ISO 8601; a date includes its whole day).
    #[serde(default)]
    pub end: Option<String>,
    /// How many results (default 5, at most 50).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Which agent's memory (its directory name); all the client's agents when absent.
    #[serde(default)]
    pub agent: Option<String>,
}

/// `search_conversation`'s arguments.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversationQuery {
    /// What to look for.
    pub query: String,
    /// Only these roles: `user`, `assistant`, `tool`.
    #[serde(default)]
    pub roles: Vec<String>,
    /// From this date or time on (ISO 8601).
    #[serde(default)]
    pub start: Option<String>,
    /// Up to this date or time (ISO 8601).
    #[serde(default)]
    pub end: Option<String>,
    /// How many results (default 5, at most 50).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Which agent's conversation; all the client's agents when absent.
    #[serde(default)]
    pub agent: Option<String>,
}

fn parse_time(
    name: &str,
    text: Option<&str>,
    end_of_day: bool,
) -> Result<Option<DateTime<Utc>>, MemoryError> {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(Some(t.to_utc()));
    }
    let day = NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|_| {
        MemoryError::Arguments(format!(
            "'{name}' must be an ISO 8601 date or time like 2026-11-21 or 2026-11-21T14:00:00Z, not '{text}'"
        ))
    })?;
    let time = if end_of_day {
        day.and_hms_micro_opt(23, 59, 59, 999_999)
    } else {
        day.and_hms_opt(0, 0, 0)
    };
    Ok(time.map(|t| t.and_utc()))
}

fn limit(given: Option<usize>) -> usize {
    given.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT)
}

/// The grants a search covers: the named agent, or all of them.
fn grants<'c>(
    client: &'c MemoryClient,
    agent: Option<&str>,
) -> Result<Vec<&'c MemoryGrant>, MemoryError> {
    match agent {
        None => Ok(client.grants.iter().collect()),
        Some(name) => client
            .grants
            .iter()
            .find(|g| g.dir == name || g.agent_id.as_str() == name)
            .map(|g| vec![g])
            .ok_or_else(|| {
                MemoryError::Arguments(format!(
                    "no agent '{name}' here; use one of: {}",
                    dirs(client)
                ))
            }),
    }
}

fn dirs(client: &MemoryClient) -> String {
    client
        .grants
        .iter()
        .map(|g| g.dir.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl MemoryServer<'_> {
    /// `search_memory`: the client's agents' archival memory, best first, as a JSON list of
    /// `{id, timestamp, text, tags, score}` (plus `agent` with several agents).
    ///
    /// Errors: [`MemoryError::Arguments`] for a bad date or agent; `Engine` for storage.
    pub async fn search(
        self,
        client: &MemoryClient,
        q: &MemoryQuery,
    ) -> Result<String, MemoryError> {
        let range = (
            parse_time("start", q.start.as_deref(), false)?,
            parse_time("end", q.end.as_deref(), true)?,
        );
        let top_k = limit(q.limit);
        let mut hits = Vec::new();
        for grant in grants(client, q.agent.as_deref())? {
            let found = self
                .engram
                .archival()
                .search(
                    &grant.agent_id,
                    &q.query,
                    q.tags.clone(),
                    TagMatch::Any,
                    range,
                    top_k,
                )
                .await?;
            hits.extend(found.into_iter().map(|h| (grant, h)));
        }
        hits.sort_by(|a, b| b.1.score.total_cmp(&a.1.score));
        hits.truncate(top_k);
        let several = client.per_agent_dirs();
        let list: Vec<_> = hits
            .iter()
            .map(|(g, h)| {
                let mut v = json!({
                    "id": h.passage.id.as_str(),
                    "timestamp": h.passage.created_at.to_rfc3339(),
                    "text": h.passage.text,
                    "tags": h.passage.tags,
                    "score": h.score,
                });
                if several {
                    v["agent"] = json!(g.dir);
                }
                v
            })
            .collect();
        Ok(serde_json::Value::Array(list).to_string())
    }

    /// `add_memory`: stores a passage in an agent's archival memory (embedded when the agent
    /// has an embedding model). With several agents, `agent` says which.
    ///
    /// Errors: [`MemoryError::ReadOnly`]; [`MemoryError::Arguments`] for empty text or a
    /// missing or unknown agent; `Engine` for storage.
    pub async fn add_memory(
        self,
        client: &MemoryClient,
        text: &str,
        tags: Vec<String>,
        agent: Option<&str>,
    ) -> Result<String, MemoryError> {
        if text.trim().is_empty() {
            return Err(MemoryError::Arguments(
                "'text' is empty; nothing to save".into(),
            ));
        }
        let grant = match (agent, client.grants.as_slice()) {
            (None, [only]) => only,
            (None, _) => {
                return Err(MemoryError::Arguments(format!(
                    "say which agent's memory with 'agent': one of {}",
                    dirs(client)
                )));
            }
            (Some(name), _) => grants(client, Some(name))?[0],
        };
        if !grant.write {
            return Err(MemoryError::ReadOnly {
                client: client.name.clone(),
                agent: grant.dir.clone(),
            });
        }
        if grant.approve {
            return self
                .engram
                .ask_to_add_memory(client, grant, text, tags, agent)
                .await;
        }
        let passage = self
            .engram
            .archival()
            .insert(&grant.agent_id, text, tags)
            .await?;
        Ok(format!(
            "Saved to archival memory as {}.",
            passage.id.as_str()
        ))
    }

    /// `search_conversation`: the client's agents' past messages, best first, as a JSON list of
    /// `{timestamp, role, content}` (plus `agent` with several agents).
    ///
    /// Errors: [`MemoryError::Arguments`] for a bad role, date or agent; `Engine`.
    pub async fn search_conversation(
        self,
        client: &MemoryClient,
        q: &ConversationQuery,
    ) -> Result<String, MemoryError> {
        let roles = q
            .roles
            .iter()
            .map(|r| match r.as_str() {
                "user" => Ok(Role::User),
                "assistant" => Ok(Role::Assistant),
                "tool" => Ok(Role::Tool),
                other => Err(MemoryError::Arguments(format!(
                    "unknown role '{other}'; use user, assistant or tool"
                ))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let query = MessageQuery {
            query: q.query.clone(),
            roles,
            start: parse_time("start", q.start.as_deref(), false)?,
            end: parse_time("end", q.end.as_deref(), true)?,
            limit: limit(q.limit),
        };
        let mut hits = Vec::new();
        for grant in grants(client, q.agent.as_deref())? {
            let found = self.engram.recall().search(&grant.agent_id, &query).await?;
            hits.extend(found.into_iter().map(|h| (grant, h)));
        }
        hits.sort_by(|a, b| b.1.score.total_cmp(&a.1.score));
        hits.truncate(query.limit);
        let several = client.per_agent_dirs();
        let list: Vec<_> = hits
            .iter()
            .map(|(g, h)| {
                let m = &h.message;
                let content: String = m.content.chars().take(MAX_MESSAGE_CHARS).collect();
                let mut v = json!({
                    "timestamp": m.created_at.to_rfc3339(),
                    "role": m.role.as_str(),
                    "content": content,
                });
                if several {
                    v["agent"] = json!(g.dir);
                }
                v
            })
            .collect();
        Ok(serde_json::Value::Array(list).to_string())
    }
}

//! Archival memory: `/v1/agents/{id}/archival-memory` list, create, search, delete, and the
//! state of its vector index.

use super::{shared::agent_id, shared::deleted};
use crate::config::AppState;
use crate::errors::{ApiError, ApiResult};
use crate::json::Body;
use crate::shapes;
use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use engram_core::{PassageId, TagMatch, Timestamp};
use engram_service::{PassageList, PassageQuery};
use serde::Deserialize;
use serde_json::Value;

/// How many passages a list answers when the caller does not say (Letta's default).
const DEFAULT_LIST_LIMIT: usize = 100;

fn unprocessable(detail: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_input", detail)
}

fn number(name: &str, v: &str) -> ApiResult<usize> {
    v.parse()
        .map_err(|_| unprocessable(format!("{name} must be a whole number ≥ 0, got '{v}'")))
}

fn boolean(name: &str, v: &str) -> ApiResult<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(unprocessable(format!(
            "{name} must be true or false, got '{v}'"
        ))),
    }
}

/// The list's query: Letta's `after`, `before`, `limit`, `search`, `ascending` (0.1.x) or
/// `order=asc|desc` (1.x; default oldest first), plus Engram's `offset`, `tags` (repeatable),
/// `tag_match_mode=any|all`, `start_datetime`, `end_datetime` and `include_superseded` (also
/// list passages that were replaced; by default only current ones). Every filter runs in SQL.
fn list_query(raw: Option<&str>) -> ApiResult<PassageList> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw.unwrap_or_default())
        .map_err(|e| ApiError::bad_request(format!("bad query string: {e}")))?;
    let mut q = PassageList {
        limit: DEFAULT_LIST_LIMIT,
        ascending: true,
        ..PassageList::default()
    };
    let mut order = None;
    for (k, v) in pairs {
        match k.as_str() {
            "after" => q.after = Some(PassageId::from(v)),
            "before" => q.before = Some(PassageId::from(v)),
            "limit" => q.limit = number(&k, &v)?,
            "offset" => q.offset = number(&k, &v)?,
            "search" => q.search = Some(v),
            "ascending" => q.ascending = boolean(&k, &v)?,
            "order" => {
                order = Some(match v.to_ascii_lowercase().as_str() {
                    "asc" => true,
                    "desc" => false,
                    _ => {
                        return Err(unprocessable(format!(
                            "order must be asc or desc, got '{v}'"
                        )));
                    }
                })
            }
            "tags" | "tags[]" => q.tags.push(v),
            "tag_match_mode" => {
                q.tag_match = match v.as_str() {
                    "any" => TagMatch::Any,
                    "all" => TagMatch::All,
                    _ => {
                        return Err(unprocessable(format!(
                            "tag_match_mode must be any or all, got '{v}'"
                        )));
                    }
                }
            }
            "start_datetime" => q.start = Some(parse_time(&k, &v)?),
            "end_datetime" => q.end = Some(parse_time(&k, &v)?),
            "include_superseded" => q.include_superseded = boolean(&k, &v)?,
            _ => {}
        }
    }
    // `order` is the newer spelling; it wins when a client sends both.
    if let Some(asc) = order {
        q.ascending = asc;
    }
    if let (Some(start), Some(end)) = (q.start, q.end)
        && start > end
    {
        return Err(unprocessable("start_datetime is after end_datetime"));
    }
    Ok(q)
}

/// `GET …/archival-memory`: a page of passages, oldest first unless `ascending=false` or
/// `order=desc`, paged in SQL by cursor (`after`/`before` a passage id) or `offset`. An
/// unknown cursor id is 404.
pub async fn list(
    State(s): State<AppState>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Vec<Value>>> {
    let q = list_query(raw.as_deref())?;
    let passages = s.engram.archival().list(&agent_id(id), &q).await?;
    Ok(Json(passages.iter().map(shapes::passage).collect()))
}

/// Letta's `CreateArchivalMemory` (`created_at` backdates the passage).
#[derive(Deserialize)]
pub struct PassageIn {
    text: String,
    #[serde(default)]
    tags: Option<Vec<String>>,
    #[serde(default)]
    created_at: Option<Timestamp>,
}

/// `POST …/archival-memory`: answers a list holding the new passage, as Letta does.
pub async fn create(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Body(p): Body<PassageIn>,
) -> ApiResult<Json<Vec<Value>>> {
    let passage = s
        .engram
        .archival()
        .insert_at(
            &agent_id(id),
            &p.text,
            p.tags.unwrap_or_default(),
            p.created_at,
        )
        .await?;
    Ok(Json(vec![shapes::passage(&passage)]))
}

/// The search parameters; `tags` may repeat (`tags=a&tags=b`), so the query is read as pairs.
#[derive(Default)]
struct SearchQuery {
    query: String,
    tags: Vec<String>,
    tag_match: TagMatch,
    top_k: Option<usize>,
    start: Option<Timestamp>,
    end: Option<Timestamp>,
    include_superseded: bool,
}

fn parse_time(name: &str, v: &str) -> ApiResult<Timestamp> {
    chrono::DateTime::parse_from_rfc3339(v)
        .map(|t| t.to_utc())
        .or_else(|_| {
            chrono::NaiveDateTime::parse_from_str(v, "%Y-%m-%dT%H:%M:%S%.f").map(|t| t.and_utc())
        })
        .map_err(|_| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_input",
                format!("{name} must be an ISO 8601 date-time, got '{v}'"),
            )
        })
}

fn search_query(raw: Option<&str>) -> ApiResult<SearchQuery> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw.unwrap_or_default())
        .map_err(|e| ApiError::bad_request(format!("bad query string: {e}")))?;
    let mut q = SearchQuery::default();
    let mut has_query = false;
    for (k, v) in pairs {
        match k.as_str() {
            "query" => {
                q.query = v;
                has_query = true;
            }
            "tags" | "tags[]" => q.tags.push(v),
            "tag_match_mode" => {
                q.tag_match = if v == "all" {
                    TagMatch::All
                } else {
                    TagMatch::Any
                }
            }
            "top_k" => {
                q.top_k = Some(v.parse().map_err(|_| {
                    ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "invalid_input",
                        "top_k must be a number",
                    )
                })?)
            }
            "start_datetime" => q.start = Some(parse_time(&k, &v)?),
            "end_datetime" => q.end = Some(parse_time(&k, &v)?),
            "include_superseded" => q.include_superseded = boolean(&k, &v)?,
            _ => {}
        }
    }
    if !has_query {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_input",
            "query is required",
        ));
    }
    Ok(q)
}

/// `GET …/archival-memory/search`: as the agent's `archival_memory_search` tool searches
/// (current passages; with `include_superseded=true` also replaced ones, which carry
/// `superseded`); answers `{results: [{id, content, timestamp, tags}], count}`.
pub async fn search(
    State(s): State<AppState>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let q = search_query(raw.as_deref())?;
    let query = PassageQuery {
        query: q.query,
        tags: q.tags,
        tag_match: q.tag_match,
        start: q.start,
        end: q.end,
        top_k: q.top_k.unwrap_or(10),
        include_superseded: q.include_superseded,
        ..PassageQuery::default()
    };
    let hits = s.engram.archival().search_by(&agent_id(id), query).await?;
    Ok(Json(shapes::search_results(&hits)))
}

/// `DELETE …/archival-memory/{memory_id}`.
pub async fn delete(
    State(s): State<AppState>,
    Path((id, passage)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    s.engram
        .archival()
        .delete(&agent_id(id), &PassageId::from(passage))
        .await?;
    Ok(deleted())
}

/// `GET /v1/agents/{agent_id}/archival-memory/index` (Engram's own): the agent's vector index
/// build, `{"building": {agent_id, done, total, seconds, finished} | null, "pending": bool}`
/// (counts are passage vectors). While `building` is set, archival search is exact but slower.
pub async fn index_status(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<engram_service::VectorIndexStatus>> {
    Ok(Json(s.engram.archival().index_status(&agent_id(id))?))
}

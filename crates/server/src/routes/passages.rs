//! Archival memory: `/v1/agents/{id}/archival-memory` list, create, search, delete.

use super::{agent_id, deleted};
use crate::AppState;
use crate::errors::{ApiError, ApiResult};
use crate::json::{Body, Params};
use crate::paging::{Cursor, page};
use crate::shapes;
use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use engram_core::{PassageId, TagMatch, Timestamp};
use engram_store::PassageList;
use serde::Deserialize;
use serde_json::Value;

/// Query of the list: cursors plus `search` (substring) and `ascending` (default true).
#[derive(Deserialize)]
pub struct ListQuery {
    #[serde(flatten)]
    cursor: Cursor,
    search: Option<String>,
}

/// `GET …/archival-memory`: passages oldest first (unless `ascending=false`), paged by id.
pub async fn list(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Params(q): Params<ListQuery>,
) -> ApiResult<Json<Vec<Value>>> {
    let all = s.engram.list_passages(
        &agent_id(id),
        &PassageList {
            search: q.search.clone(),
            offset: 0,
            limit: usize::MAX,
            ascending: true,
        },
    )?;
    let passages = page(all, |p| p.id.as_str(), &q.cursor, false, 100);
    Ok(Json(passages.iter().map(shapes::passage).collect()))
}

/// Letta's `CreateArchivalMemory`.
#[derive(Deserialize)]
pub struct PassageIn {
    text: String,
    #[serde(default)]
    tags: Option<Vec<String>>,
}

/// `POST …/archival-memory`: answers a list holding the new passage, as Letta does.
pub async fn create(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Body(p): Body<PassageIn>,
) -> ApiResult<Json<Vec<Value>>> {
    let passage = s
        .engram
        .add_passage(&agent_id(id), &p.text, p.tags.unwrap_or_default())
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

/// `GET …/archival-memory/search`: as the agent's `archival_memory_search` tool searches;
/// answers `{results: [{id, content, timestamp, tags}], count}`.
pub async fn search(
    State(s): State<AppState>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let q = search_query(raw.as_deref())?;
    let hits = s
        .engram
        .search_archival(
            &agent_id(id),
            &q.query,
            q.tags,
            q.tag_match,
            (q.start, q.end),
            q.top_k.unwrap_or(10),
        )
        .await?;
    Ok(Json(shapes::search_results(&hits)))
}

/// `DELETE …/archival-memory/{memory_id}`.
pub async fn delete(
    State(s): State<AppState>,
    Path((id, passage)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    s.engram
        .delete_passage(&agent_id(id), &PassageId::from(passage))?;
    Ok(deleted())
}

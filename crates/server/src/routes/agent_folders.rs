//! An agent's folders and files: `/v1/agents/{id}/folders` (and `/sources`) list, attach and
//! detach; `/v1/agents/{id}/files` with `is_open`, and opening and closing files by hand.

use super::agent_state;
use super::shared::agent_id;
use crate::config::AppState;
use crate::errors::{ApiError, ApiResult};
use crate::folder_shapes;
use axum::Json;
use axum::extract::{Path, RawQuery, State};
use engram_core::{FileId, FolderId};
use serde_json::{Value, json};

/// Files an agent's file list answers when the caller does not say.
const DEFAULT_LIMIT: usize = 100;

/// `GET /v1/agents/{agent_id}/folders`: the folders attached to it (`limit`, `after`: the
/// 1.x SDK pages on until a page comes back empty).
pub async fn list(
    State(s): State<AppState>,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<Json<Value>> {
    let folders = s.engram.folders().of_agent(&agent_id(id))?;
    let folders = super::folders::page(folders, q.as_deref(), |f| f.id.to_string())?;
    Ok(Json(folders.iter().map(folder_shapes::folder).collect()))
}

/// `PATCH /v1/agents/{agent_id}/folders/attach/{folder_id}`: attaches it (the agent gets the
/// file tools); answers the agent.
pub async fn attach(
    State(s): State<AppState>,
    Path((agent, folder)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let agent = agent_id(agent);
    s.engram.folders().attach(&agent, &FolderId::from(folder))?;
    agent_state::render(&s.engram, &s.engram.agents().get(&agent).await?).await
}

/// `PATCH /v1/agents/{agent_id}/folders/detach/{folder_id}`: detaches it (its files close);
/// answers the agent.
pub async fn detach(
    State(s): State<AppState>,
    Path((agent, folder)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let agent = agent_id(agent);
    s.engram.folders().detach(&agent, &FolderId::from(folder))?;
    agent_state::render(&s.engram, &s.engram.agents().get(&agent).await?).await
}

/// `GET /v1/agents/{agent_id}/files`: every file of its folders with `is_open` and the open
/// window's lines, as `{files, next_cursor, has_more}` (`limit`, `cursor` or `after`,
/// `is_open=true|false`).
pub async fn files(
    State(s): State<AppState>,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<Json<Value>> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(q.as_deref().unwrap_or(""))
        .map_err(|e| ApiError::bad_request(format!("bad query string: {e}")))?;
    let mut limit = DEFAULT_LIMIT;
    let mut after = None;
    let mut open = None;
    for (k, v) in pairs {
        match k.as_str() {
            "limit" => {
                limit = v
                    .parse()
                    .map_err(|_| ApiError::bad_request(format!("limit must be a number: {v}")))?
            }
            "cursor" | "after" => after = Some(v),
            "is_open" => open = Some(v == "true"),
            _ => {}
        }
    }
    let all: Vec<_> = s
        .engram
        .folders()
        .files_of_agent(&agent_id(id))?
        .into_iter()
        .filter(|f| open.is_none_or(|o| f.is_open == o))
        .collect();
    let start = after
        .and_then(|a| all.iter().position(|f| f.file_id.as_str() == a))
        .map_or(0, |p| p + 1);
    let page: Vec<_> = all.iter().skip(start).take(limit).collect();
    let has_more = start + page.len() < all.len();
    Ok(Json(json!({
        "files": page.iter().map(|f| folder_shapes::agent_file(f)).collect::<Vec<_>>(),
        "next_cursor": if has_more { page.last().map(|f| f.file_id.to_string()) } else { None },
        "has_more": has_more,
    })))
}

/// `PATCH /v1/agents/{agent_id}/files/{file_id}/open`: opens it at the start (Engram's
/// `offset` and `length` query parameters move the window); answers the names of the files
/// closed to stay within the limit.
pub async fn open(
    State(s): State<AppState>,
    Path((agent, file)): Path<(String, String)>,
    RawQuery(q): RawQuery,
) -> ApiResult<Json<Value>> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(q.as_deref().unwrap_or(""))
        .map_err(|e| ApiError::bad_request(format!("bad query string: {e}")))?;
    let number = |key: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.parse::<u32>().ok())
    };
    let agent = agent_id(agent);
    let before = s.engram.folders().files_of_agent(&agent)?;
    let closed = s.engram.folders().open_file(
        &agent,
        &FileId::from(file),
        number("offset"),
        number("length"),
    )?;
    let names: Vec<&str> = closed
        .iter()
        .filter_map(|id| before.iter().find(|f| &f.file_id == id))
        .map(|f| f.file_name.as_str())
        .collect();
    Ok(Json(json!(names)))
}

/// `PATCH /v1/agents/{agent_id}/files/{file_id}/close`.
pub async fn close(
    State(s): State<AppState>,
    Path((agent, file)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let closed = s
        .engram
        .folders()
        .close_file(&agent_id(agent), &FileId::from(file))?;
    Ok(Json(json!({"closed": closed})))
}

/// `PATCH /v1/agents/{agent_id}/files/close-all`: answers the names of the files it closed.
pub async fn close_all(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let agent = agent_id(id);
    let open: Vec<String> = s
        .engram
        .folders()
        .files_of_agent(&agent)?
        .into_iter()
        .filter(|f| f.is_open)
        .map(|f| f.file_name)
        .collect();
    s.engram.folders().close_all_files(&agent)?;
    Ok(Json(json!(open)))
}

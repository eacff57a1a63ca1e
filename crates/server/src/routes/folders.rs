//! Folders: `/v1/folders/…` (and the older `/v1/sources/…` names) — create, list, count,
//! retrieve, modify, delete, upload a file, list files and passages, the agents a folder is
//! attached to.

use super::shared::deleted;
use crate::config::AppState;
use crate::errors::{ApiError, ApiResult};
use crate::folder_shapes;
use crate::json::Body;
use axum::Json;
use axum::extract::{Multipart, Path, RawQuery, State};
use engram_core::{EmbeddingConfig, FileId, Folder, FolderId, NewFolder};
use engram_service::FolderPatch;
use serde::Deserialize;
use serde_json::{Value, json};

/// Files or passages a list answers when the caller does not say (Letta's default).
const DEFAULT_LIMIT: usize = 100;

/// A folder as clients send it; `embedding` is a model handle, `embedding_config` Letta's
/// object (its `handle`, or its endpoint type and model). `metadata` and
/// `embedding_chunk_size` are accepted and not kept.
#[derive(Deserialize)]
pub struct FolderIn {
    name: Option<String>,
    description: Option<String>,
    instructions: Option<String>,
    embedding: Option<String>,
    embedding_config: Option<Value>,
}

impl FolderIn {
    fn embedding(&self) -> Option<EmbeddingConfig> {
        if let Some(handle) = &self.embedding {
            return Some(EmbeddingConfig {
                model: handle.clone(),
                base_url: None,
            });
        }
        let cfg = self.embedding_config.as_ref()?;
        let model = match cfg["handle"].as_str() {
            Some(h) => h.to_owned(),
            None => format!(
                "{}/{}",
                cfg["embedding_endpoint_type"].as_str().unwrap_or("openai"),
                cfg["embedding_model"].as_str()?
            ),
        };
        Some(EmbeddingConfig {
            model,
            base_url: cfg["embedding_endpoint"].as_str().map(str::to_owned),
        })
    }
}

fn folder_id(raw: String) -> FolderId {
    FolderId::from(raw)
}

fn query(raw: Option<&str>) -> ApiResult<Vec<(String, String)>> {
    serde_urlencoded::from_str(raw.unwrap_or_default())
        .map_err(|e| ApiError::bad_request(format!("bad query string: {e}")))
}

/// `limit` and `offset`-like paging of a list: `limit`, and `after` (an id in the list) or
/// Engram's `offset`.
pub(super) fn page<T>(
    items: Vec<T>,
    raw: Option<&str>,
    id: impl Fn(&T) -> String,
) -> ApiResult<Vec<T>> {
    let mut limit = DEFAULT_LIMIT;
    let mut skip = 0;
    for (k, v) in query(raw)? {
        match k.as_str() {
            "limit" => {
                limit = v
                    .parse()
                    .map_err(|_| ApiError::bad_request(format!("limit must be a number: {v}")))?
            }
            "offset" => {
                skip = v
                    .parse()
                    .map_err(|_| ApiError::bad_request(format!("offset must be a number: {v}")))?
            }
            "after" => skip = items.iter().position(|i| id(i) == v).map_or(0, |p| p + 1),
            _ => {}
        }
    }
    Ok(items.into_iter().skip(skip).take(limit).collect())
}

/// `POST /v1/folders/`: creates a folder (embedded with the given model, else the default).
pub async fn create(
    State(s): State<AppState>,
    Body(req): Body<FolderIn>,
) -> ApiResult<Json<Value>> {
    let name = req
        .name
        .clone()
        .ok_or_else(|| ApiError::bad_request("a folder needs a name"))?;
    let folder = s.engram.folders().create(NewFolder {
        name,
        description: req.description.clone().unwrap_or_default(),
        instructions: req.instructions.clone().unwrap_or_default(),
        embedding: req.embedding(),
    })?;
    Ok(Json(folder_shapes::folder(&folder)))
}

/// `GET /v1/folders/`: every folder, oldest first (`limit`, `after`).
pub async fn list(State(s): State<AppState>, RawQuery(q): RawQuery) -> ApiResult<Json<Value>> {
    let folders = page(s.engram.folders().list()?, q.as_deref(), |f: &Folder| {
        f.id.to_string()
    })?;
    Ok(Json(folders.iter().map(folder_shapes::folder).collect()))
}

/// `GET /v1/folders/count`: how many folders there are.
pub async fn count(State(s): State<AppState>) -> ApiResult<Json<Value>> {
    Ok(Json(json!(s.engram.folders().list()?.len())))
}

/// `GET /v1/folders/name/{name}`: the id of the folder with that name.
pub async fn id_by_name(
    State(s): State<AppState>,
    Path(name): Path<String>,
) -> ApiResult<Json<Value>> {
    let folder = s.engram.folders().find(&name)?;
    Ok(Json(json!(folder.id)))
}

/// `GET /v1/folders/{folder_id}`.
pub async fn retrieve(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    Ok(Json(folder_shapes::folder(
        &s.engram.folders().get(&folder_id(id))?,
    )))
}

/// `PATCH /v1/folders/{folder_id}`: name, description, instructions.
pub async fn modify(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Body(req): Body<FolderIn>,
) -> ApiResult<Json<Value>> {
    let patch = FolderPatch {
        name: req.name,
        description: req.description,
        instructions: req.instructions,
    };
    let folder = s.engram.folders().update(&folder_id(id), &patch)?;
    Ok(Json(folder_shapes::folder(&folder)))
}

/// `DELETE /v1/folders/{folder_id}`: the folder with its files and passages.
pub async fn delete(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    s.engram.folders().delete(&folder_id(id))?;
    Ok(deleted())
}

/// `POST /v1/folders/{folder_id}/upload`: the multipart field `file` (its name, or the query's
/// `name`), read before the answer: `processing_status` is `completed`, or `error` with
/// `error_message`. An unchanged file (same name, same bytes) is answered as it is.
pub async fn upload(
    State(s): State<AppState>,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
    mut form: Multipart,
) -> ApiResult<Json<Value>> {
    let mut name = query(q.as_deref())?
        .into_iter()
        .find(|(k, _)| k == "name")
        .map(|(_, v)| v);
    let mut bytes = None;
    while let Some(field) = form
        .next_field()
        .await
        .map_err(|e| multipart_error("bad multipart body", &e))?
    {
        if field.name() == Some("file") {
            if name.is_none() {
                name = field.file_name().map(str::to_owned);
            }
            bytes = Some(
                field
                    .bytes()
                    .await
                    .map_err(|e| multipart_error("cannot read the file", &e))?,
            );
        }
    }
    let bytes = bytes.ok_or_else(|| ApiError::bad_request("the form has no `file` field"))?;
    let name = name.ok_or_else(|| ApiError::bad_request("the file has no name"))?;
    let added = s
        .engram
        .folders()
        .add_file(&folder_id(id), &name, bytes.to_vec())
        .await?;
    let file = added
        .file
        .ok_or_else(|| ApiError::bad_request("the file was not added"))?;
    Ok(Json(folder_shapes::file(&file, None)))
}

/// A multipart failure as an answer: 413 when the body ran over the upload limit (a body
/// sent without its length is cut there), 400 for a malformed form.
fn multipart_error(what: &str, e: &axum::extract::multipart::MultipartError) -> ApiError {
    if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(
            e.status(),
            "payload_too_large",
            format!("{what}: the upload is over this route's body limit"),
        )
    } else {
        ApiError::bad_request(format!("{what}: {e}"))
    }
}

/// `GET /v1/folders/{folder_id}/files`: its files by name (`limit`, `after`,
/// `include_content=true` for the extracted text).
pub async fn files(
    State(s): State<AppState>,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<Json<Value>> {
    let content = query(q.as_deref())?
        .iter()
        .any(|(k, v)| k == "include_content" && v == "true");
    let files = page(
        s.engram.folders().files(&folder_id(id))?,
        q.as_deref(),
        |f| f.id.to_string(),
    )?;
    let mut out = Vec::with_capacity(files.len());
    for f in &files {
        let text = if content {
            s.engram.folders().file_text(&f.id)?
        } else {
            None
        };
        out.push(folder_shapes::file(f, text.as_deref()));
    }
    Ok(Json(Value::Array(out)))
}

/// `GET /v1/folders/{folder_id}/files/{file_id}`: one file, with its text when
/// `include_content=true` (a streamed file's first 8 MiB, then a note: `Folders::file_text`).
pub async fn file(
    State(s): State<AppState>,
    Path((folder, file)): Path<(String, String)>,
    RawQuery(q): RawQuery,
) -> ApiResult<Json<Value>> {
    let f = s.engram.folders().file(&FileId::from(file))?;
    if f.folder_id.as_str() != folder {
        return Err(ApiError::not_found("file not found in this folder"));
    }
    let content = query(q.as_deref())?
        .iter()
        .any(|(k, v)| k == "include_content" && v == "true");
    let text = if content {
        s.engram.folders().file_text(&f.id)?
    } else {
        None
    };
    Ok(Json(folder_shapes::file(&f, text.as_deref())))
}

/// `DELETE /v1/folders/{folder_id}/{file_id}`: one file with its passages.
pub async fn delete_file(
    State(s): State<AppState>,
    Path((folder, file)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let f = s.engram.folders().file(&FileId::from(file))?;
    if f.folder_id.as_str() != folder {
        return Err(ApiError::not_found("file not found in this folder"));
    }
    s.engram.folders().delete_file(&f.id)?;
    Ok(deleted())
}

/// `GET /v1/folders/{folder_id}/passages`: its passages by file and position, each with
/// `metadata` saying where it came from (`limit`, Engram's `offset`).
pub async fn passages(
    State(s): State<AppState>,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> ApiResult<Json<Value>> {
    let folder = s.engram.folders().get(&folder_id(id))?;
    let mut limit = DEFAULT_LIMIT;
    let mut offset = 0;
    for (k, v) in query(q.as_deref())? {
        match k.as_str() {
            "limit" => limit = v.parse().unwrap_or(DEFAULT_LIMIT),
            "offset" => offset = v.parse().unwrap_or(0),
            _ => {}
        }
    }
    let rows = s.engram.folders().passages(&folder.id, limit, offset)?;
    Ok(Json(
        rows.iter()
            .map(|(name, c)| folder_shapes::passage(&folder, name, c))
            .collect(),
    ))
}

/// `GET /v1/folders/{folder_id}/agents`: the ids of the agents it is attached to.
pub async fn agents(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    Ok(Json(json!(s.engram.folders().agents(&folder_id(id))?)))
}

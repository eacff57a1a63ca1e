//! Agent Files: `GET /v1/agents/{id}/export` and `POST /v1/agents/import` (multipart `file`).

use super::shared::agent_id;
use crate::config::AppState;
use crate::errors::{ApiError, ApiResult};
use axum::Json;
use axum::extract::{Multipart, Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// `GET /v1/agents/{agent_id}/export`: the agent as an Agent File (JSON).
pub async fn export(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult<Response> {
    let bytes = s.engram.agent_files().export(&[agent_id(id)]).await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], bytes).into_response())
}

/// `POST /v1/agents/import`: imports the Agent File in the multipart field `file`; answers
/// `{agent_ids, warnings, inactive, report}` (`inactive`: Engram's list of parts kept but not
/// active, `[{agent, agent_name, kind, name, reason}]`; `report`: Engram's `ImportReport`, with
/// what waits for the user's review; Letta's SDKs ignore both).
pub async fn import(State(s): State<AppState>, mut form: Multipart) -> ApiResult<Json<Value>> {
    let mut file = None;
    let mut file_name = None;
    while let Some(field) = form
        .next_field()
        .await
        .map_err(|e| ApiError::bad_request(format!("bad multipart body: {e}")))?
    {
        if field.name() == Some("file") {
            file_name = field.file_name().map(str::to_owned);
            let bytes = field
                .bytes()
                .await
                .map_err(|e| ApiError::bad_request(format!("cannot read the file: {e}")))?;
            file = Some(bytes);
        }
    }
    let bytes = file.ok_or_else(|| ApiError::bad_request("the form has no `file` field"))?;
    // The file's tools are stored untrusted and its endpoints pending, as for every import.
    let report = s
        .engram
        .agent_files()
        .import_named(
            &bytes,
            file_name.as_deref().unwrap_or(engram_service::UNNAMED_FILE),
        )
        .await?;
    Ok(Json(json!({
        "agent_ids": report.agents,
        "warnings": report.warnings,
        "inactive": report.inactive,
        "report": report,
    })))
}

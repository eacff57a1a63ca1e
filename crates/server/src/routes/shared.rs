//! Small pieces every route uses: the agent id of a path, Letta's answer to a delete, the JSON
//! 404 of an unknown path.

use crate::errors::ApiError;

/// Letta's 404 for paths no route serves.
pub(crate) async fn not_found() -> ApiError {
    ApiError::not_found("Not Found")
}

/// The agent id of a path, as the engine's id type.
pub(crate) fn agent_id(raw: String) -> engram_core::AgentId {
    engram_core::AgentId::from(raw)
}

/// Letta's answer to deletes: `null` with 200.
pub(crate) fn deleted() -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::Value::Null)
}

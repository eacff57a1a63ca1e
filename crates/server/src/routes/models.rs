//! `GET /v1/models` and `GET /v1/models/embedding`: the models Engram knows without asking a
//! server (built-in ones, and those agents use), as Letta's `LLMConfig` and `EmbeddingConfig`.
//! A provider's full list is the window's model picker's job (`/app`), which asks the server.

use crate::config::AppState;
use crate::errors::ApiResult;
use crate::shapes;
use axum::Json;
use axum::extract::State;
use serde_json::Value;

/// `GET /v1/models/`: chat models as Letta `LLMConfig`s, built-in ones first.
pub async fn chat(State(s): State<AppState>) -> ApiResult<Json<Vec<Value>>> {
    let known = s.engram.models().known_chat().await?;
    Ok(Json(known.iter().map(shapes::known_llm_config).collect()))
}

/// `GET /v1/models/embedding`: embedding models as Letta `EmbeddingConfig`s, the built-in
/// encoder first.
pub async fn embedding(State(s): State<AppState>) -> ApiResult<Json<Vec<Value>>> {
    let known = s.engram.models().known_embedding().await?;
    Ok(Json(
        known.iter().map(shapes::known_embedding_config).collect(),
    ))
}

//! Core memory of one agent (`/v1/agents/{id}/core-memory…`) and standalone blocks
//! (`/v1/blocks`).

use super::{agent_state, shared::agent_id, shared::deleted};
use crate::access::Principal;
use crate::config::AppState;
use crate::errors::{ApiError, ApiResult};
use crate::json::{Body, Params};
use crate::paging::{Cursor, page};
use crate::shapes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use engram_core::{BlockId, BlockPatch, Editor, NewBlock};
use engram_service::BlockList;
use engram_service::ToolScope;
use serde::Deserialize;
use serde_json::Value;

/// Letta's `BlockUpdate` (the fields Engram has).
#[derive(Debug, Deserialize)]
pub struct BlockPatchIn {
    value: Option<String>,
    limit: Option<usize>,
    label: Option<String>,
    description: Option<String>,
    read_only: Option<bool>,
    /// Engram's addition: the block version this change is based on; a stale one gets 409 with
    /// the current block. Absent (as Letta's SDK sends it): last writer wins.
    version: Option<u64>,
}

impl From<BlockPatchIn> for BlockPatch {
    fn from(p: BlockPatchIn) -> Self {
        BlockPatch {
            value: p.value,
            limit: p.limit,
            label: p.label,
            description: p.description,
            read_only: p.read_only,
            version: p.version,
        }
    }
}

/// Letta's `CreateBlock`: the body of `POST /v1/blocks/` and an entry of an agent's
/// `memory_blocks`.
#[derive(Debug, Deserialize)]
pub struct BlockIn {
    label: String,
    #[serde(default)]
    value: String,
    limit: Option<usize>,
    description: Option<String>,
    #[serde(default)]
    read_only: bool,
}

impl From<BlockIn> for NewBlock {
    fn from(b: BlockIn) -> Self {
        NewBlock {
            label: b.label,
            value: b.value,
            limit: b.limit,
            description: b.description,
            read_only: b.read_only,
        }
    }
}

/// Query of the block lists.
#[derive(Deserialize)]
pub struct BlockQuery {
    #[serde(flatten)]
    cursor: Cursor,
    label: Option<String>,
}

fn id_of(b: &Value) -> &str {
    b["id"].as_str().unwrap_or_default()
}

/// `GET …/core-memory`: Letta's `Memory` (`blocks`, `prompt_template`).
pub async fn core_memory(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let state = s.engram.agents().get(&agent_id(id)).await?;
    Ok(Json(shapes::memory(state.agent.loop_style, &state.blocks)))
}

/// `GET …/core-memory/blocks`: the agent's blocks in compile order.
pub async fn agent_list(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Params(q): Params<BlockQuery>,
) -> ApiResult<Json<Vec<Value>>> {
    let blocks = s.engram.blocks().of_agent(&agent_id(id)).await?;
    let blocks = blocks.iter().map(shapes::block).collect();
    Ok(Json(page(blocks, id_of, &q.cursor, false, usize::MAX)))
}

/// The label a core-memory URL names. 0.1.x SDKs put a label into the URL unescaped, and
/// their HTTP client folds the `//` of a label with a leading slash (`/note_directory`), so
/// the server sees `note_directory`: when no block has the label as read but one has it with
/// the leading slash, that one is meant (an exact match always wins).
async fn label_in_url(s: &AppState, agent: &engram_core::AgentId, label: String) -> String {
    if label.starts_with('/') || s.engram.blocks().by_label(agent, &label).await.is_ok() {
        return label;
    }
    let slashed = format!("/{label}");
    if s.engram.blocks().by_label(agent, &slashed).await.is_ok() {
        slashed
    } else {
        label
    }
}

/// `GET …/core-memory/blocks/{label}`; the label may be a path (`system/human/family`).
pub async fn agent_retrieve(
    State(s): State<AppState>,
    Path((id, label)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let id = agent_id(id);
    let label = label_in_url(&s, &id, label).await;
    let block = s.engram.blocks().by_label(&id, &label).await?;
    Ok(Json(shapes::block(&block)))
}

/// `PATCH …/core-memory/blocks/{label}`: a hand edit, recorded in the block's history.
/// Through a tool's door (`tool_api`) the edit is recorded as that tool call's.
pub async fn agent_modify(
    State(s): State<AppState>,
    Path((id, label)): Path<(String, String)>,
    scope: Option<Extension<ToolScope>>,
    Body(patch): Body<BlockPatchIn>,
) -> ApiResult<Json<Value>> {
    let id = agent_id(id);
    let label = label_in_url(&s, &id, label).await;
    let patch: BlockPatch = patch.into();
    let editor = match scope {
        Some(Extension(scope)) => {
            // A tool edits like the memory tools do: values only, never a read-only block.
            if patch.limit.is_some()
                || patch.read_only.is_some()
                || patch.label.is_some()
                || patch.description.is_some()
            {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    "a tool may change a block's value only; its label, limit, description and read-only flag are the user's",
                ));
            }
            if s.engram.blocks().by_label(&id, &label).await?.read_only {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    format!("the '{label}' block is read-only; a tool cannot edit it"),
                ));
            }
            Editor::Agent {
                agent_id: scope.agent_id,
                tool_call_id: Some(scope.tool_call_id),
            }
        }
        None => Editor::User,
    };
    let block = s
        .engram
        .blocks()
        .update_by_label_as(&id, &label, &patch, &editor)
        .await?;
    Ok(Json(shapes::block(&block)))
}

/// `PATCH …/core-memory/blocks/attach/{block_id}`: answers the agent.
pub async fn attach(
    State(s): State<AppState>,
    Path((id, block)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let state = s
        .engram
        .blocks()
        .attach(&agent_id(id), &BlockId::from(block))
        .await?;
    agent_state::render(&s.engram, &state).await
}

/// `PATCH …/core-memory/blocks/detach/{block_id}`: answers the agent.
pub async fn detach(
    State(s): State<AppState>,
    Path((id, block)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let state = s
        .engram
        .blocks()
        .detach(&agent_id(id), &BlockId::from(block))
        .await?;
    agent_state::render(&s.engram, &state).await
}

/// How many blocks `GET /v1/blocks/` answers when the caller does not say.
const DEFAULT_BLOCK_LIMIT: usize = 50;

/// `GET /v1/blocks/`: every block, optionally by `label`, oldest first unless `order=desc`,
/// paged in SQL.
pub async fn list(
    State(s): State<AppState>,
    Params(q): Params<BlockQuery>,
) -> ApiResult<Json<Vec<Value>>> {
    let list = BlockList {
        label: q.label.clone(),
        after: q.cursor.after.clone().map(BlockId::from),
        before: q.cursor.before.clone().map(BlockId::from),
        limit: q.cursor.limit.unwrap_or(DEFAULT_BLOCK_LIMIT),
        ascending: !q.cursor.descending(false),
    };
    let blocks = s.engram.blocks().page(&list).await?;
    Ok(Json(blocks.iter().map(shapes::block).collect()))
}

/// `POST /v1/blocks/`.
pub async fn create(
    State(s): State<AppState>,
    principal: Option<Extension<Principal>>,
    Body(b): Body<BlockIn>,
) -> ApiResult<Json<Value>> {
    let block = s.engram.blocks().create(&NewBlock::from(b)).await?;
    if let Some(user) = principal.as_ref().and_then(|Extension(p)| p.user())
        && let Err(e) = s.engram.users().make_block_owner(&block.id, &user.id).await
    {
        // Not left behind as the administrator's alone.
        let _ = s.engram.blocks().delete(&block.id).await;
        return Err(e.into());
    }
    Ok(Json(shapes::block(&block)))
}

/// `GET /v1/blocks/{block_id}`.
pub async fn retrieve(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    Ok(Json(shapes::block(
        &s.engram.blocks().get(&BlockId::from(id)).await?,
    )))
}

/// `PATCH /v1/blocks/{block_id}`: every agent the block is attached to sees the change.
pub async fn modify(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Body(patch): Body<BlockPatchIn>,
) -> ApiResult<Json<Value>> {
    let block = s
        .engram
        .blocks()
        .update(&BlockId::from(id), &patch.into())
        .await?;
    Ok(Json(shapes::block(&block)))
}

/// `DELETE /v1/blocks/{block_id}`.
pub async fn delete(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    s.engram.blocks().delete(&BlockId::from(id)).await?;
    Ok(deleted())
}

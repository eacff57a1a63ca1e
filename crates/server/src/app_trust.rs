//! `/app/…` commands for the user's trust decisions (DESIGN.md §8b): trusting a tool's
//! reviewed source, and an agent's endpoints (read, set, accept or dismiss what an imported
//! file asked for). Same names and arguments as the desktop shell's commands.

use crate::AppState;
use crate::app::{AppResult, Args, done};
use axum::Router;
use axum::extract::State;
use axum::routing::post;
use engram_core::{AgentId, EndpointKind};
use serde::{Deserialize, Serialize};

/// The routes, merged into [`crate::app::routes`].
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/app/trust_tool", post(trust_tool))
        .route("/app/untrust_tool", post(untrust_tool))
        .route("/app/agent_endpoints", post(agent_endpoints))
        .route("/app/set_agent_base_url", post(set_agent_base_url))
        .route("/app/accept_endpoint", post(accept_endpoint))
        .route("/app/dismiss_endpoint", post(dismiss_endpoint))
}

#[derive(Deserialize)]
struct TrustArg {
    /// Tool id or name.
    tool: String,
    /// The SHA-256 of the source the user reviewed.
    expected_hash: String,
}

#[derive(Deserialize)]
struct ToolArg {
    tool: String,
}

#[derive(Deserialize)]
struct AgentArg {
    agent_id: AgentId,
}

#[derive(Deserialize)]
struct BaseUrlArg {
    agent_id: AgentId,
    kind: EndpointKind,
    #[serde(default)]
    base_url: Option<String>,
}

#[derive(Deserialize)]
struct KindArg {
    agent_id: AgentId,
    #[serde(default)]
    kind: Option<EndpointKind>,
}

async fn trust_tool(
    State(s): State<AppState>,
    Args(a): Args<TrustArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.trust_tool(&a.tool, &a.expected_hash))
}

async fn untrust_tool(
    State(s): State<AppState>,
    Args(a): Args<ToolArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.untrust_tool(&a.tool))
}

async fn agent_endpoints(
    State(s): State<AppState>,
    Args(a): Args<AgentArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.agent_endpoints(&a.agent_id))
}

async fn set_agent_base_url(
    State(s): State<AppState>,
    Args(a): Args<BaseUrlArg>,
) -> AppResult<impl Serialize> {
    done(
        s.engram
            .set_agent_base_url(&a.agent_id, a.kind, a.base_url.as_deref()),
    )
}

async fn accept_endpoint(
    State(s): State<AppState>,
    Args(a): Args<KindArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.accept_endpoint(&a.agent_id, a.kind))
}

async fn dismiss_endpoint(
    State(s): State<AppState>,
    Args(a): Args<KindArg>,
) -> AppResult<impl Serialize> {
    let kind = a.kind.unwrap_or(EndpointKind::Llm);
    done(s.engram.dismiss_endpoint(&a.agent_id, kind))
}

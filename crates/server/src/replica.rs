//! What a replica of a shared server (agents on PostgreSQL) serves: the routes whose calls all
//! go through the storage interface. Every other route answers 501 `not_available`, so a
//! client is never answered from a replica's own database, which holds none of the agents.
//! The list grows as the service's calls move onto the interface (`docs/postgres.md`).

use crate::config::AppState;
use crate::errors::ApiError;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// `(route pattern, methods)` a replica serves; patterns as `routes/mod.rs` registers them.
const SERVED: &[(&str, &[Method])] = &[
    ("/healthz", &[Method::GET]),
    ("/v1/health", &[Method::GET]),
    ("/v1/health/", &[Method::GET]),
    ("/v1/models", &[Method::GET]),
    ("/v1/models/", &[Method::GET]),
    ("/v1/models/embedding", &[Method::GET]),
    ("/v1/models/embedding/", &[Method::GET]),
    ("/v1/agents", &[Method::GET, Method::POST]),
    ("/v1/agents/", &[Method::GET, Method::POST]),
    ("/v1/agents/count", &[Method::GET]),
    ("/v1/agents/{agent_id}/messages/count", &[Method::GET]),
    (
        "/v1/agents/{agent_id}/archival-memory/count",
        &[Method::GET],
    ),
    ("/v1/blocks/count", &[Method::GET]),
    ("/v1/groups", &[Method::GET, Method::POST]),
    ("/v1/groups/", &[Method::GET, Method::POST]),
    (
        "/v1/groups/{group_id}",
        &[Method::GET, Method::PATCH, Method::DELETE],
    ),
    (
        "/v1/agents/{agent_id}",
        &[Method::GET, Method::PATCH, Method::DELETE],
    ),
    (
        "/v1/agents/{agent_id}/messages",
        &[Method::GET, Method::POST],
    ),
    ("/v1/agents/{agent_id}/messages/stream", &[Method::POST]),
    ("/v1/agents/{agent_id}/export", &[Method::GET]),
    ("/v1/agents/import", &[Method::POST]),
    ("/v1/agents/{agent_id}/messages/cancel", &[Method::POST]),
    ("/v1/agents/{agent_id}/reset-messages", &[Method::PATCH]),
    (
        "/v1/agents/{agent_id}/messages/{message_id}",
        &[Method::PATCH],
    ),
    ("/v1/agents/{agent_id}/core-memory", &[Method::GET]),
    ("/v1/agents/{agent_id}/core-memory/blocks", &[Method::GET]),
    (
        "/v1/agents/{agent_id}/core-memory/blocks/{*label}",
        &[Method::GET, Method::PATCH],
    ),
    (
        "/v1/agents/{agent_id}/core-memory/blocks/attach/{block_id}",
        &[Method::PATCH],
    ),
    (
        "/v1/agents/{agent_id}/core-memory/blocks/detach/{block_id}",
        &[Method::PATCH],
    ),
    (
        "/v1/agents/{agent_id}/archival-memory",
        &[Method::GET, Method::POST],
    ),
    (
        "/v1/agents/{agent_id}/archival-memory/search",
        &[Method::GET],
    ),
    (
        "/v1/agents/{agent_id}/archival-memory/{memory_id}",
        &[Method::DELETE, Method::PATCH],
    ),
    ("/v1/tools", &[Method::GET, Method::POST, Method::PUT]),
    ("/v1/tools/", &[Method::GET, Method::POST, Method::PUT]),
    (
        "/v1/tools/{tool_id}",
        &[Method::GET, Method::PATCH, Method::DELETE],
    ),
    ("/v1/agents/{agent_id}/tools", &[Method::GET]),
    (
        "/v1/agents/{agent_id}/tools/attach/{tool_id}",
        &[Method::PATCH],
    ),
    (
        "/v1/agents/{agent_id}/tools/detach/{tool_id}",
        &[Method::PATCH],
    ),
    ("/v1/blocks", &[Method::GET, Method::POST]),
    ("/v1/blocks/", &[Method::GET, Method::POST]),
    (
        "/v1/blocks/{block_id}",
        &[Method::GET, Method::PATCH, Method::DELETE],
    ),
];

/// The window's commands (`POST /app/{command}`) a replica answers: those whose calls all go
/// through the storage interface, enough for the chat window on a shared server.
const COMMANDS: &[&str] = &[
    "app_info",
    "list_agents",
    "get_agent",
    "create_agent",
    "update_agent",
    "delete_agent",
    "clone_agent",
    "list_templates",
    "check_model",
    "agent_model_problem",
    "agents_without_model",
    "use_model_for",
    "list_blocks",
    "create_agent_block",
    "shared_blocks",
    "update_block",
    "block_history",
    "block_undo_plan",
    "undo_block_edit",
    "restore_block_edit",
    "attach_block",
    "detach_block",
    "delete_block",
    "search_archival",
    "list_passages",
    "add_passage",
    "edit_passage",
    "delete_passage",
    "search_recall",
    "context_window",
    "context_view",
    "list_messages",
    "message_window",
    "send_message",
    "regenerate",
    "regenerate_preview",
    "edit_and_resend",
    "rollback_preview",
    "delete_message",
    "reset_messages",
    "run_edits",
    "cancel_run",
    "run_records",
    "export_agent",
    "export_agents",
    "import_agent_file",
    "agent_endpoints",
    "accept_endpoint",
    "dismiss_endpoint",
    "set_agent_base_url",
    "pending_approval",
    "agent_tools",
    "list_tools",
    "upsert_tool",
    "delete_tool",
    "attach_tool",
    "detach_tool",
    "try_tool",
    "trust_tool",
    "untrust_tool",
    "set_tool_approval",
    "resolve_approval",
    "sleeptime_settings",
    "set_sleeptime_settings",
    "sleeptime_passes",
    "run_sleeptime_pass",
    "undo_sleeptime_change",
    "undo_sleeptime_pass",
    "sleeptime_budget",
    "set_sleeptime_budget",
    "chat_models",
    "get_default_model",
    // The replica's own setting, kept in its data directory like its providers.
    "set_default_model",
    "list_providers",
    // The model settings people make in the window, in the database for every replica.
    "model_windows",
    "set_model_window",
    "model_prices",
    "set_model_price",
    "delete_model_price",
    "usage_cost",
];

/// Whether a replica serves `method` on the route `pattern` (for `/app/{command}`, the
/// command at `path`).
pub(crate) fn serves(pattern: &str, method: &Method, path: &str) -> bool {
    match pattern {
        "/app/notices" => method == Method::GET,
        "/app/attach_run" => method == Method::POST,
        "/app/{command}" => {
            method == Method::POST
                && path
                    .strip_prefix("/app/")
                    .is_some_and(|c| COMMANDS.contains(&c))
        }
        _ => SERVED
            .iter()
            .any(|(p, methods)| *p == pattern && methods.contains(method)),
    }
}

/// Lets through what [`SERVED`] lists, on a shared server; refuses the rest with 501.
/// Elsewhere (the desktop's own database) everything passes.
pub(crate) async fn check(State(s): State<AppState>, req: Request, next: Next) -> Response {
    if !s.engram.is_shared() {
        return next.run(req).await;
    }
    let Some(pattern) = req.extensions().get::<MatchedPath>().cloned() else {
        // Not a route (the UI's files, unknown paths): answered as anywhere.
        return next.run(req).await;
    };
    if serves(pattern.as_str(), req.method(), req.uri().path()) {
        return next.run(req).await;
    }
    ApiError::new(
        StatusCode::NOT_IMPLEMENTED,
        "not_available",
        format!(
            "{} {} is not available on a shared server yet",
            req.method(),
            pattern.as_str()
        ),
    )
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_pattern_is_a_route_the_server_registers() {
        let source = include_str!("routes/mod.rs");
        for (pattern, _) in SERVED {
            let quoted = format!("\"{pattern}\"");
            assert!(source.contains(&quoted), "{pattern} is not registered");
        }
    }

    #[test]
    fn only_listed_methods_and_commands_pass() {
        let path = "/v1/agents/agent-1";
        assert!(serves("/v1/agents/{agent_id}", &Method::GET, path));
        assert!(!serves("/v1/agents/{agent_id}", &Method::PUT, path));
        assert!(!serves("/v1/mcp-servers", &Method::GET, "/v1/mcp-servers"));
        let command = "/app/{command}";
        assert!(serves(command, &Method::POST, "/app/list_agents"));
        assert!(!serves(command, &Method::POST, "/app/list_mcp_servers"));
        assert!(serves("/app/notices", &Method::GET, "/app/notices"));
    }

    #[test]
    fn every_served_command_exists() {
        for name in COMMANDS {
            assert!(
                engram_service::commands::find(name).is_some(),
                "{name} is not a command"
            );
        }
    }
}

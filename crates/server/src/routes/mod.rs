//! Letta's `/v1` routes, one module per resource. List routes answer with and without the
//! trailing slash, as FastAPI's redirects make both work against Letta.

mod agent_folders;
mod agent_state;
mod agents;
mod blocks;
mod edits;
mod folders;
mod groups;
mod mcp;
pub(crate) mod messages;
mod models;
mod passages;
mod shared;
mod tools;
mod transfer;

pub(crate) use shared::not_found;

use crate::config::AppState;
use axum::Router;
use axum::routing::{get, patch};

/// Folders under both of Letta's names (`folders`, and `sources` from before the rename), and
/// an agent's folders and files.
fn folder_routes() -> Router<AppState> {
    let mut r = Router::new();
    for kind in ["folders", "sources"] {
        let root = get(folders::list).post(folders::create);
        r = r
            .route(&format!("/v1/{kind}"), root.clone())
            .route(&format!("/v1/{kind}/"), root)
            .route(&format!("/v1/{kind}/count"), get(folders::count))
            .route(
                &format!("/v1/{kind}/name/{{name}}"),
                get(folders::id_by_name),
            )
            .route(
                &format!("/v1/{kind}/{{folder_id}}"),
                get(folders::retrieve)
                    .patch(folders::modify)
                    .delete(folders::delete),
            )
            .route(
                &format!("/v1/{kind}/{{folder_id}}/files"),
                get(folders::files),
            )
            .route(
                &format!("/v1/{kind}/{{folder_id}}/files/{{file_id}}"),
                get(folders::file),
            )
            .route(
                &format!("/v1/{kind}/{{folder_id}}/{{file_id}}"),
                axum::routing::delete(folders::delete_file),
            )
            .route(
                &format!("/v1/{kind}/{{folder_id}}/passages"),
                get(folders::passages),
            )
            .route(
                &format!("/v1/{kind}/{{folder_id}}/agents"),
                get(folders::agents),
            )
            .route(
                &format!("/v1/agents/{{agent_id}}/{kind}"),
                get(agent_folders::list),
            )
            .route(
                &format!("/v1/agents/{{agent_id}}/{kind}/attach/{{folder_id}}"),
                patch(agent_folders::attach),
            )
            .route(
                &format!("/v1/agents/{{agent_id}}/{kind}/detach/{{folder_id}}"),
                patch(agent_folders::detach),
            );
    }
    r.route("/v1/agents/{agent_id}/files", get(agent_folders::files))
        .route(
            "/v1/agents/{agent_id}/files/close-all",
            patch(agent_folders::close_all),
        )
        .route(
            "/v1/agents/{agent_id}/files/{file_id}/open",
            patch(agent_folders::open),
        )
        .route(
            "/v1/agents/{agent_id}/files/{file_id}/close",
            patch(agent_folders::close),
        )
}

/// The routes that upload a file into a folder (Letta's current and older names), which take
/// bodies up to the upload limit (see `ServerConfig::upload_limit`).
pub(crate) fn uploads() -> Router<AppState> {
    ["folders", "sources"]
        .into_iter()
        .fold(Router::new(), |r, kind| {
            r.route(
                &format!("/v1/{kind}/{{folder_id}}/upload"),
                axum::routing::post(folders::upload),
            )
        })
}

/// Every other `/v1` route.
pub(crate) fn all() -> Router<AppState> {
    let agents_root = get(agents::list).post(agents::create);
    let blocks_root = get(blocks::list).post(blocks::create);
    let tools_root = get(tools::list).post(tools::upsert).put(tools::upsert);
    let health = get(tools::health);
    let mcp_root = get(mcp::list).post(mcp::create);
    folder_routes()
        .route("/v1/health", health.clone())
        .route("/healthz", get(tools::healthz))
        .route("/v1/models", get(models::chat))
        .route("/v1/models/", get(models::chat))
        .route("/v1/models/embedding", get(models::embedding))
        .route("/v1/models/embedding/", get(models::embedding))
        .route("/v1/health/", health)
        .route("/v1/groups", get(groups::list).post(groups::create))
        .route("/v1/groups/", get(groups::list).post(groups::create))
        .route(
            "/v1/groups/{group_id}",
            get(groups::retrieve)
                .patch(groups::modify)
                .delete(groups::delete),
        )
        .route("/v1/agents", agents_root.clone())
        .route("/v1/agents/", agents_root)
        .route(
            "/v1/agents/{agent_id}",
            get(agents::retrieve)
                .patch(agents::modify)
                .delete(agents::delete),
        )
        .route("/v1/agents/import", axum::routing::post(transfer::import))
        .route("/v1/agents/count", get(agents::count))
        .route(
            "/v1/agents/messages/search",
            axum::routing::post(edits::search_v01),
        )
        .route("/v1/messages/search", axum::routing::post(edits::search_v1))
        .route(
            "/v1/agents/{agent_id}/messages/{message_id}",
            patch(edits::modify_message),
        )
        .route(
            "/v1/agents/{agent_id}/messages/count",
            get(edits::count_messages),
        )
        .route(
            "/v1/agents/{agent_id}/reset-messages",
            patch(edits::reset_messages),
        )
        .route(
            "/v1/agents/{agent_id}/archival-memory/count",
            get(edits::count_passages),
        )
        .route("/v1/blocks/count", get(edits::count_blocks))
        .route("/v1/agents/{agent_id}/export", get(transfer::export))
        .route("/v1/agents/{agent_id}/tools", get(tools::for_agent))
        .route(
            "/v1/agents/{agent_id}/tools/attach/{tool_id}",
            patch(tools::attach),
        )
        .route(
            "/v1/agents/{agent_id}/tools/detach/{tool_id}",
            patch(tools::detach),
        )
        .route(
            "/v1/agents/{agent_id}/messages",
            get(messages::list).post(messages::create),
        )
        .route(
            "/v1/agents/{agent_id}/messages/stream",
            axum::routing::post(messages::stream),
        )
        .route(
            "/v1/agents/{agent_id}/messages/cancel",
            axum::routing::post(messages::cancel),
        )
        .route(
            "/v1/agents/{agent_id}/core-memory",
            get(blocks::core_memory),
        )
        .route(
            "/v1/agents/{agent_id}/core-memory/blocks",
            get(blocks::agent_list),
        )
        .route(
            // A catch-all, since path-like labels (`system/human/family`) reach us unescaped:
            // both SDK generations put the label into the URL as it is.
            "/v1/agents/{agent_id}/core-memory/blocks/{*label}",
            get(blocks::agent_retrieve).patch(blocks::agent_modify),
        )
        .route(
            "/v1/agents/{agent_id}/core-memory/blocks/attach/{block_id}",
            patch(blocks::attach),
        )
        .route(
            "/v1/agents/{agent_id}/core-memory/blocks/detach/{block_id}",
            patch(blocks::detach),
        )
        .route(
            "/v1/agents/{agent_id}/archival-memory",
            get(passages::list).post(passages::create),
        )
        .route(
            "/v1/agents/{agent_id}/archival-memory/search",
            get(passages::search),
        )
        .route(
            "/v1/agents/{agent_id}/archival-memory/index",
            get(passages::index_status),
        )
        .route(
            "/v1/agents/{agent_id}/archival-memory/{memory_id}",
            axum::routing::delete(passages::delete).patch(edits::modify_passage),
        )
        .route("/v1/blocks", blocks_root.clone())
        .route("/v1/blocks/", blocks_root)
        .route(
            "/v1/blocks/{block_id}",
            get(blocks::retrieve)
                .patch(blocks::modify)
                .delete(blocks::delete),
        )
        .route("/v1/mcp-servers", mcp_root.clone())
        .route("/v1/mcp-servers/", mcp_root)
        .route(
            "/v1/mcp-servers/{mcp_server_id}",
            get(mcp::retrieve).delete(mcp::delete),
        )
        .route("/v1/mcp-servers/{mcp_server_id}/tools", get(mcp::tools))
        .route(
            "/v1/mcp-servers/{mcp_server_id}/refresh",
            axum::routing::post(mcp::tools),
        )
        .route(
            "/v1/tools/mcp/servers",
            get(mcp::list_v01).put(mcp::create_v01),
        )
        .route(
            "/v1/tools/mcp/servers/{name}",
            axum::routing::delete(mcp::delete_v01),
        )
        .route("/v1/tools/mcp/servers/{name}/tools", get(mcp::tools_v01))
        .route(
            "/v1/tools/mcp/servers/{name}/{tool}",
            axum::routing::post(mcp::add_tool_v01),
        )
        .route("/v1/tools", tools_root.clone())
        .route("/v1/tools/", tools_root)
        .route(
            "/v1/tools/{tool_id}",
            get(tools::retrieve)
                .patch(tools::modify)
                .delete(tools::delete),
        )
}

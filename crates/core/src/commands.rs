//! The UI's commands, listed once: each UI command is defined in one place.
//!
//! Both transports of the window answer these names with the same arguments: the desktop
//! shell as Tauri commands (its build script makes an `allow-<name>` permission of each), and
//! `engram serve` as `POST /app/<name>`. What must follow the list is generated from it or
//! checked against it: the shell's permissions (build script) and capability file, and the
//! service's definitions of the commands (`engram_service::commands`: arguments, result and
//! answer of each, from which the `/app` dispatch, the shell's invoke handler and the UI's
//! `Commands` types follow) — see `tests/it/commands.rs`.
//!
//! Plain data with no dependencies, so the shell's build script includes this file as is.

/// How a command answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandKind {
    /// A request and one result.
    Call,
    /// Starts a run and streams its events (a Tauri channel, or Server-Sent Events), ending
    /// after `done`.
    Run,
    /// Joins a run in flight and streams its events; answers `false`/`null` when none runs.
    Attach,
    /// Desktop only: goes through a native dialog (the browser build has its own way).
    Dialog,
}

/// One command of the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppCommand {
    /// Its name: the Tauri command and the `/app/<name>` route.
    pub name: &'static str,
    /// How it answers.
    pub kind: CommandKind,
    /// Whether `engram serve` answers it at `POST /app/<name>` (some only make sense in the
    /// desktop app, e.g. switching on the REST API it embeds).
    pub http: bool,
}

impl AppCommand {
    const fn new(name: &'static str, kind: CommandKind) -> Self {
        Self {
            name,
            kind,
            http: !matches!(kind, CommandKind::Dialog),
        }
    }

    const fn desktop_only(name: &'static str, kind: CommandKind) -> Self {
        Self {
            name,
            kind,
            http: false,
        }
    }
}

/// Every command the window may call, in the order the shell registers them.
pub const APP_COMMANDS: &[AppCommand] = &[
    AppCommand::new("app_info", CommandKind::Call),
    AppCommand::desktop_only("set_rest_api", CommandKind::Call),
    AppCommand::desktop_only("connect_server", CommandKind::Call),
    AppCommand::desktop_only("disconnect_server", CommandKind::Call),
    AppCommand::desktop_only("server_connection", CommandKind::Call),
    AppCommand::new("list_providers", CommandKind::Call),
    AppCommand::new("set_provider", CommandKind::Call),
    AppCommand::new("delete_provider", CommandKind::Call),
    AppCommand::new("test_provider", CommandKind::Call),
    AppCommand::new("detect_local_providers", CommandKind::Call),
    AppCommand::new("list_local_models", CommandKind::Call),
    AppCommand::new("add_local_model", CommandKind::Call),
    AppCommand::new("remove_local_model", CommandKind::Call),
    AppCommand::new("model_catalogue", CommandKind::Call),
    AppCommand::new("pull_model", CommandKind::Call),
    AppCommand::new("cancel_model_pull", CommandKind::Call),
    AppCommand::new("delete_downloaded_model", CommandKind::Call),
    AppCommand::new("retry_embedding_model", CommandKind::Call),
    AppCommand::new("get_default_model", CommandKind::Call),
    AppCommand::new("set_default_model", CommandKind::Call),
    AppCommand::new("list_agents", CommandKind::Call),
    AppCommand::new("get_agent", CommandKind::Call),
    AppCommand::new("create_agent", CommandKind::Call),
    AppCommand::new("update_agent", CommandKind::Call),
    AppCommand::new("clone_agent", CommandKind::Call),
    AppCommand::new("delete_agent", CommandKind::Call),
    AppCommand::new("check_model", CommandKind::Call),
    AppCommand::new("agent_model_problem", CommandKind::Call),
    AppCommand::new("agents_without_model", CommandKind::Call),
    AppCommand::new("use_model_for", CommandKind::Call),
    AppCommand::new("list_messages", CommandKind::Call),
    AppCommand::new("send_message", CommandKind::Run),
    AppCommand::new("cancel_run", CommandKind::Call),
    AppCommand::new("pending_approval", CommandKind::Call),
    AppCommand::new("resolve_approval", CommandKind::Run),
    AppCommand::new("set_tool_approval", CommandKind::Call),
    AppCommand::new("list_blocks", CommandKind::Call),
    AppCommand::new("update_block", CommandKind::Call),
    AppCommand::new("block_history", CommandKind::Call),
    AppCommand::new("undo_block_edit", CommandKind::Call),
    AppCommand::new("list_passages", CommandKind::Call),
    AppCommand::new("search_archival", CommandKind::Call),
    AppCommand::new("add_passage", CommandKind::Call),
    AppCommand::new("delete_passage", CommandKind::Call),
    AppCommand::new("edit_passage", CommandKind::Call),
    AppCommand::new("search_recall", CommandKind::Call),
    AppCommand::new("sleeptime_settings", CommandKind::Call),
    AppCommand::new("set_sleeptime_settings", CommandKind::Call),
    AppCommand::new("sleeptime_passes", CommandKind::Call),
    AppCommand::new("run_sleeptime_pass", CommandKind::Call),
    AppCommand::new("undo_sleeptime_change", CommandKind::Call),
    AppCommand::new("undo_sleeptime_pass", CommandKind::Call),
    AppCommand::new("sleeptime_budget", CommandKind::Call),
    AppCommand::new("set_sleeptime_budget", CommandKind::Call),
    AppCommand::new("context_window", CommandKind::Call),
    AppCommand::new("export_agent", CommandKind::Call),
    AppCommand::new("import_agent_file", CommandKind::Call),
    AppCommand::new("list_templates", CommandKind::Call),
    AppCommand::new("list_tools", CommandKind::Call),
    AppCommand::new("agent_tools", CommandKind::Call),
    AppCommand::new("upsert_tool", CommandKind::Call),
    AppCommand::new("delete_tool", CommandKind::Call),
    AppCommand::new("attach_tool", CommandKind::Call),
    AppCommand::new("detach_tool", CommandKind::Call),
    AppCommand::new("try_tool", CommandKind::Call),
    AppCommand::new("trust_tool", CommandKind::Call),
    AppCommand::new("untrust_tool", CommandKind::Call),
    AppCommand::new("agent_endpoints", CommandKind::Call),
    AppCommand::new("set_agent_base_url", CommandKind::Call),
    AppCommand::new("accept_endpoint", CommandKind::Call),
    AppCommand::new("dismiss_endpoint", CommandKind::Call),
    AppCommand::new("tool_python", CommandKind::Call),
    AppCommand::new("set_up_tool_python", CommandKind::Call),
    AppCommand::new("message_window", CommandKind::Call),
    AppCommand::new("attach_run", CommandKind::Attach),
    AppCommand::new("create_agent_block", CommandKind::Call),
    AppCommand::new("shared_blocks", CommandKind::Call),
    AppCommand::new("attach_block", CommandKind::Call),
    AppCommand::new("detach_block", CommandKind::Call),
    AppCommand::new("delete_block", CommandKind::Call),
    AppCommand::new("block_undo_plan", CommandKind::Call),
    AppCommand::new("restore_block_edit", CommandKind::Call),
    AppCommand::new("context_view", CommandKind::Call),
    AppCommand::new("chat_models", CommandKind::Call),
    AppCommand::new("model_windows", CommandKind::Call),
    AppCommand::new("set_model_window", CommandKind::Call),
    AppCommand::new("regenerate_preview", CommandKind::Call),
    AppCommand::new("rollback_preview", CommandKind::Call),
    AppCommand::new("regenerate", CommandKind::Run),
    AppCommand::new("edit_and_resend", CommandKind::Run),
    AppCommand::new("delete_message", CommandKind::Call),
    AppCommand::new("reset_messages", CommandKind::Call),
    AppCommand::new("run_records", CommandKind::Call),
    AppCommand::new("run_edits", CommandKind::Call),
    AppCommand::new("model_prices", CommandKind::Call),
    AppCommand::new("set_model_price", CommandKind::Call),
    AppCommand::new("delete_model_price", CommandKind::Call),
    AppCommand::new("usage_cost", CommandKind::Call),
    AppCommand::new("export_agents", CommandKind::Call),
    AppCommand::new("export_to_file", CommandKind::Dialog),
    AppCommand::new("import_from_file", CommandKind::Dialog),
    AppCommand::new("list_mcp_servers", CommandKind::Call),
    AppCommand::new("add_mcp_server", CommandKind::Call),
    AppCommand::new("remove_mcp_server", CommandKind::Call),
    AppCommand::new("set_mcp_server_active", CommandKind::Call),
    AppCommand::new("import_mcp_servers", CommandKind::Call),
    AppCommand::new("list_mcp_tools", CommandKind::Call),
    AppCommand::new("stored_mcp_tools", CommandKind::Call),
    AppCommand::new("mcp_memory_clients", CommandKind::Call),
    AppCommand::new("mcp_memory_config", CommandKind::Call),
    AppCommand::new("set_memory_client_access", CommandKind::Call),
    AppCommand::new("pending_client_writes", CommandKind::Call),
    AppCommand::new("decide_client_write", CommandKind::Call),
    AppCommand::new("reranker_status", CommandKind::Call),
    AppCommand::new("set_rerank_model_dir", CommandKind::Call),
    AppCommand::new("set_rerank_enabled", CommandKind::Call),
    AppCommand::new("pick_rerank_model_dir", CommandKind::Dialog),
    AppCommand::new("vector_index_builds", CommandKind::Call),
    AppCommand::new("list_folders", CommandKind::Call),
    AppCommand::new("create_folder", CommandKind::Call),
    AppCommand::new("delete_folder", CommandKind::Call),
    AppCommand::new("folder_files", CommandKind::Call),
    AppCommand::new("upload_folder_file", CommandKind::Call),
    AppCommand::new("delete_folder_file", CommandKind::Call),
    AppCommand::new("attach_folder", CommandKind::Call),
    AppCommand::new("detach_folder", CommandKind::Call),
    AppCommand::new("agent_folders", CommandKind::Call),
    AppCommand::new("agent_files", CommandKind::Call),
    AppCommand::new("open_agent_file", CommandKind::Call),
    AppCommand::new("close_agent_file", CommandKind::Call),
    AppCommand::new("folder_file_text", CommandKind::Call),
    AppCommand::new("folder_watches", CommandKind::Call),
    AppCommand::new("watch_folder", CommandKind::Call),
    AppCommand::new("unwatch_folder", CommandKind::Call),
    AppCommand::new("pick_watch_dir", CommandKind::Dialog),
    AppCommand::new("cancel_folder_file", CommandKind::Call),
];

/// The names of [`APP_COMMANDS`], in order.
pub fn names() -> impl Iterator<Item = &'static str> {
    APP_COMMANDS.iter().map(|c| c.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_and_snake_case() {
        let mut seen = HashSet::new();
        for name in names() {
            assert!(seen.insert(name), "{name} is listed twice");
            assert!(
                !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{name} is not a snake_case command name"
            );
        }
    }
}

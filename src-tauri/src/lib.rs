//! Engram's desktop shell: a Tauri 2 window over the service layer.
//!
//! The shell holds no logic of its own: [`commands`] are one-liners over
//! [`engram_service::Engram`], runs stream over a per-request `Channel`, and the service's
//! app-wide [`Notice`]s are re-emitted as the `engram://notice` event so the window refreshes
//! whatever changed them (its own chat, a `letta-client` script on the REST API, an import).
//! One process owns the database (single-instance plugin); the data directory is the
//! engine's (`ENGRAM_HOME`, else the platform data dir).

pub mod approval_commands;
pub mod chat_commands;
pub mod commands;
pub mod error;
pub mod file_commands;
pub mod mcp_commands;
pub mod memory_commands;
pub mod price_commands;
pub mod python_commands;
pub mod rest;
pub mod search_commands;
pub mod trust_commands;
pub mod turn_commands;

use engram_service::{Engram, Notice};
use std::sync::Arc;
use tauri::{Emitter, Manager, Runtime};

/// The event the window listens to for [`Notice`]s.
pub const NOTICE_EVENT: &str = "engram://notice";

/// The shell's managed state. `engram` is an `Arc` because the REST API server, when switched
/// on, serves the same engine from its own task.
pub struct Desktop {
    /// The engine.
    pub engram: Arc<Engram>,
    /// The local REST API, when the user switched it on.
    pub rest: rest::RestApi,
}

/// The app with its commands and state, without the window or the plugins that need a real
/// desktop — shared by [`run`] and the headless tests (`tauri::test::mock_builder`).
pub fn builder<R: Runtime>(builder: tauri::Builder<R>, engram: Arc<Engram>) -> tauri::Builder<R> {
    builder
        .manage(Desktop {
            engram,
            rest: rest::RestApi::default(),
        })
        .setup(|app| {
            start(app.handle());
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![
            commands::app_info,
            commands::set_rest_api,
            commands::list_providers,
            commands::set_provider,
            commands::delete_provider,
            commands::test_provider,
            commands::detect_local_providers,
            commands::get_default_model,
            commands::set_default_model,
            commands::list_agents,
            commands::get_agent,
            commands::create_agent,
            commands::update_agent,
            commands::clone_agent,
            commands::delete_agent,
            commands::list_messages,
            commands::send_message,
            commands::cancel_run,
            commands::list_blocks,
            commands::update_block,
            commands::block_history,
            commands::undo_block_edit,
            commands::list_passages,
            commands::search_archival,
            commands::add_passage,
            commands::delete_passage,
            commands::edit_passage,
            commands::search_recall,
            commands::context_window,
            commands::export_agent,
            commands::import_agent_file,
            commands::list_templates,
            commands::list_tools,
            commands::agent_tools,
            commands::upsert_tool,
            commands::delete_tool,
            commands::attach_tool,
            commands::detach_tool,
            commands::try_tool,
            trust_commands::trust_tool,
            trust_commands::untrust_tool,
            trust_commands::agent_endpoints,
            trust_commands::set_agent_base_url,
            trust_commands::accept_endpoint,
            trust_commands::dismiss_endpoint,
            python_commands::tool_python,
            python_commands::set_up_tool_python,
            chat_commands::message_window,
            chat_commands::attach_run,
            memory_commands::create_agent_block,
            memory_commands::shared_blocks,
            memory_commands::attach_block,
            memory_commands::detach_block,
            memory_commands::delete_block,
            memory_commands::block_undo_plan,
            memory_commands::restore_block_edit,
            memory_commands::context_view,
            memory_commands::chat_models,
            memory_commands::model_windows,
            memory_commands::set_model_window,
            approval_commands::pending_approval,
            approval_commands::resolve_approval,
            approval_commands::set_tool_approval,
            turn_commands::regenerate_preview,
            turn_commands::rollback_preview,
            turn_commands::regenerate,
            turn_commands::edit_and_resend,
            turn_commands::delete_message,
            turn_commands::reset_messages,
            turn_commands::run_records,
            turn_commands::run_edits,
            price_commands::model_prices,
            price_commands::set_model_price,
            price_commands::delete_model_price,
            price_commands::usage_cost,
            file_commands::export_agents,
            file_commands::export_to_file,
            file_commands::import_from_file,
            mcp_commands::list_mcp_servers,
            mcp_commands::add_mcp_server,
            mcp_commands::remove_mcp_server,
            mcp_commands::set_mcp_server_active,
            mcp_commands::import_mcp_servers,
            mcp_commands::list_mcp_tools,
            mcp_commands::stored_mcp_tools,
            search_commands::reranker_status,
            search_commands::set_rerank_model_dir,
            search_commands::set_rerank_enabled,
            search_commands::pick_rerank_model_dir,
        ])
}

/// What the app starts once it runs: notices to the windows, and the REST API if the user
/// left it on. (Called from the builder's setup; headless tests, whose mock runtime has no
/// event loop to run setup, call it themselves.)
pub fn start<R: Runtime>(app: &tauri::AppHandle<R>) {
    forward_notices(app.clone());
    restore_rest_api(app.clone());
    resume_backfills(app.clone());
}

/// Goes on filling in vectors a restart left missing (a backfill cut short, an embedding model
/// changed just before closing), in the background.
fn resume_backfills<R: Runtime>(app: tauri::AppHandle<R>) {
    tauri::async_runtime::spawn(async move {
        if let Err(e) = app.state::<Desktop>().engram.resume_backfills() {
            tracing::warn!(error = %e, "cannot resume embedding backfills");
        }
    });
}

/// Re-emits the engine's notices to every window for as long as the app runs. A window that
/// fell behind is told to re-read everything.
fn forward_notices<R: Runtime>(app: tauri::AppHandle<R>) {
    use tokio::sync::broadcast::error::RecvError;
    let mut notices = app.state::<Desktop>().engram.notices();
    tauri::async_runtime::spawn(async move {
        loop {
            let notice = match notices.recv().await {
                Ok(n) => n,
                Err(RecvError::Lagged(_)) => Notice::AgentsChanged,
                Err(RecvError::Closed) => break,
            };
            if let Err(e) = app.emit(NOTICE_EVENT, &notice) {
                tracing::warn!(error = %e, "cannot emit a notice");
            }
        }
    });
}

/// Serves the REST API again if the user left it switched on.
fn restore_rest_api<R: Runtime>(app: tauri::AppHandle<R>) {
    let desktop = app.state::<Desktop>();
    if !desktop.engram.rest_api_enabled().unwrap_or(false) {
        return;
    }
    let engram = desktop.engram.clone();
    tauri::async_runtime::spawn(async move {
        if let Err(e) = app.state::<Desktop>().rest.start(engram).await {
            tracing::warn!(error = %e, "cannot serve the REST API");
        }
    });
}

/// Opens the engine and runs the desktop app until its window closes.
///
/// # Panics
/// When the data directory or database cannot be opened, or the window cannot be created:
/// there is nothing to show then, and the message says why.
pub fn run() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "engram=info,warn".into()),
        )
        .init();
    let engram = match Engram::open(engram_service::Options::from_env(None)) {
        Ok(e) => Arc::new(e),
        Err(e) => {
            eprintln!("Engram cannot open its data: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = engram_server::tool_api::install(&engram) {
        tracing::warn!("tools cannot call Engram's API back: {e}");
    }
    let app = tauri::Builder::default()
        // First, so a second launch only focuses the window that is already open.
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| {
            if let Some(window) = app.get_webview_window("main") {
                let _ = window.unminimize();
                let _ = window.set_focus();
            }
        }))
        .plugin(tauri_plugin_window_state::Builder::default().build())
        .plugin(tauri_plugin_opener::init())
        .plugin(tauri_plugin_dialog::init());
    builder(app, engram)
        .run(tauri::generate_context!())
        .expect("the desktop app failed to start");
}

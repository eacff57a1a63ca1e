//! Engram's desktop shell: a Tauri 2 window over the service layer.
//!
//! The shell holds no logic of its own: [`commands`] dispatches the window's commands to the
//! service's one list of them (`engram_service::commands`), runs stream over a per-request
//! `Channel`, and the service's
//! app-wide [`Notice`]s are re-emitted as the `engram://notice` event so the window refreshes
//! whatever changed them (its own chat, a `letta-client` script on the REST API, an import).
//! One process owns the database (single-instance plugin); the data directory is the
//! engine's (`ENGRAM_HOME`, else the platform data dir).

mod args;
pub mod chat_commands;
pub mod commands;
pub mod error;
mod events;
pub mod file_commands;
pub mod remote_link;
pub mod rest;
pub mod search_commands;
pub mod server_commands;
mod state;

pub use state::Desktop;

use engram_service::{Engram, Notice};
use std::sync::Arc;
use tauri::{Emitter, Manager, Runtime};

pub use events::NOTICE_EVENT;

/// The app with its commands and state, without the window or the plugins that need a real
/// desktop — shared by [`run`] and the headless tests (`tauri::test::mock_builder`).
pub fn builder<R: Runtime>(builder: tauri::Builder<R>, engram: Arc<Engram>) -> tauri::Builder<R> {
    builder
        .manage(Desktop {
            engram,
            rest: rest::RestApi::default(),
            remote: remote_link::RemoteLink::default(),
        })
        .setup(|app| {
            start(app.handle());
            Ok(())
        })
        .invoke_handler(commands::handler())
}

/// What the app starts once it runs: notices to the windows, and the REST API if the user
/// left it on. (Called from the builder's setup; headless tests, whose mock runtime has no
/// event loop to run setup, call it themselves.)
pub fn start<R: Runtime>(app: &tauri::AppHandle<R>) {
    forward_notices(app.clone());
    restore_rest_api(app.clone());
    resume_backfills(app.clone());
    server_commands::reconnect_at_start(app.clone());
}

/// Goes on filling in vectors a restart left missing (a backfill cut short, an embedding model
/// changed just before closing), in the background, and starts watching the folders linked
/// to a directory.
fn resume_backfills<R: Runtime>(app: tauri::AppHandle<R>) {
    tauri::async_runtime::spawn(async move {
        if let Err(e) = app.state::<Desktop>().engram.archival().resume_backfills() {
            tracing::warn!(error = %e, "cannot resume embedding backfills");
        }
        // Folders linked to a directory on disk are kept in step while the app runs.
        app.state::<Desktop>().engram.folders().resume_watches();
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
            // While the window works on a server, that server's notices are the ones it hears.
            if app.state::<Desktop>().remote.current().is_some() {
                continue;
            }
            if let Err(e) = app.emit(NOTICE_EVENT, &notice) {
                tracing::warn!(error = %e, "cannot emit a notice");
            }
        }
    });
}

/// Serves the REST API again if the user left it switched on.
fn restore_rest_api<R: Runtime>(app: tauri::AppHandle<R>) {
    let desktop = app.state::<Desktop>();
    if !desktop.engram.trust().rest_api_enabled().unwrap_or(false) {
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
        Ok(e) => e,
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
    let at_exit = Arc::clone(&engram);
    builder(app, engram)
        .build(tauri::generate_context!())
        .expect("the desktop app failed to start")
        .run(move |_, event| {
            if let tauri::RunEvent::Exit = event {
                // A sleep-time pass in flight stops here and writes nothing (a pass writes
                // only at its end), rather than racing the process's exit.
                at_exit.sleeptime().stop();
            }
        });
}

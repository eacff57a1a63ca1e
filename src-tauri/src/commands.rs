//! The window's commands, over the service's one list (`engram_service::commands`): every
//! call the service answers is dispatched here by name with its JSON arguments, and every
//! run command streams its events over the `Channel` the window passes as `on_event` — the
//! same names and arguments as `engram serve`'s `POST /app/{command}`. What needs the shell
//! itself is answered by hand, with arguments typed by the service's structs
//! ([`set_rest_api`], `chat_commands::attach_run`, `file_commands`' native dialogs).
//!
//! Tauri's ACL has already checked the command against the capability file when the handler
//! runs, so dispatching by name allows nothing the window could not call before.

use crate::args::{Args, invalid};
use crate::error::{IpcError, IpcResult};
use crate::state::Desktop;
use engram_core::commands::CommandKind;
use engram_core::{Error, RunEvent};
use engram_service::commands::{self, Caller, CommandDef, SetRestApiArgs};
use engram_service::{Engram, RestApiStatus};
use serde_json::Value;
use std::str::FromStr;
use std::sync::Arc;
use tauri::ipc::{
    Channel, Invoke, InvokeBody, InvokeError, InvokeResponseBody, JavaScriptChannelId,
};
use tauri::{Manager, Runtime, State};

/// The invoke handler: the service's calls and runs by name, then the shell's own commands.
pub fn handler<R: Runtime>() -> impl Fn(Invoke<R>) -> bool + Send + Sync + 'static {
    let by_hand = shell_handler::<R, _>(tauri::generate_handler![
        set_rest_api,
        crate::server_commands::connect_server,
        crate::server_commands::disconnect_server,
        crate::server_commands::server_connection,
        crate::chat_commands::attach_run,
        crate::file_commands::export_to_file,
        crate::file_commands::import_from_file,
        crate::search_commands::pick_rerank_model_dir,
        crate::search_commands::pick_watch_dir,
    ]);
    move |invoke| match commands::find(invoke.message.command()) {
        Some(def) if !def.is_adapter() => {
            answer(def, invoke);
            true
        }
        _ => by_hand(invoke),
    }
}

/// Gives `generate_handler!`'s closure its argument type (it cannot infer it alone).
fn shell_handler<R: Runtime, F: Fn(Invoke<R>) -> bool>(f: F) -> F {
    f
}

/// Answers a call, or starts a run and streams it, from the service's definition.
fn answer<R: Runtime>(def: &'static CommandDef, invoke: Invoke<R>) {
    let webview = invoke.message.webview();
    let desktop = webview.state::<Desktop>();
    let engram = desktop.engram.clone();
    let args = match invoke.message.payload() {
        InvokeBody::Json(v) => v.clone(),
        InvokeBody::Raw(_) => Value::Null,
    };
    if let Some(remote) = desktop.remote.current() {
        forward(&remote, def, args, invoke);
        return;
    }
    if def.kind == CommandKind::Run {
        let channel = run_channel::<R, RunEvent>(def.name, &args, webview.clone());
        invoke.resolver.respond_async(async move {
            run(engram, def.name, args, channel?)
                .await
                .map_err(InvokeError::from)
        });
        return;
    }
    // The window is the user's own.
    let caller = Caller {
        rest_api: desktop.rest.status(),
        authenticated: true,
        user: None,
    };
    match commands::call(&engram, caller, def.name, args) {
        Some(task) => invoke.resolver.respond_async_serialized(async move {
            task.await
                .map(InvokeResponseBody::Json)
                .map_err(|e| InvokeError::from(IpcError::from(e)))
        }),
        None => invoke
            .resolver
            .invoke_error(invalid(format!("{} is not a call", def.name))),
    }
}

/// Answers a command on the server the window works on: a call with the server's JSON, a run
/// by streaming the server's events into the window's channel (see `crate::remote_link`).
fn forward<R: Runtime>(
    remote: &Arc<engram_remote::Remote>,
    def: &'static CommandDef,
    mut args: Value,
    invoke: Invoke<R>,
) {
    let remote = remote.clone();
    if def.kind == CommandKind::Run {
        let channel = run_channel::<R, Value>(def.name, &args, invoke.message.webview());
        if let Some(fields) = args.as_object_mut() {
            fields.remove("on_event");
        }
        invoke.resolver.respond_async(async move {
            let channel = channel?;
            remote
                .run(def.name, &args, |event| {
                    // A closed window is no reason to stop reading: the server keeps the run.
                    let _ = channel.send(event);
                })
                .await
                .map(|_| ())
                .map_err(|e| InvokeError::from(IpcError::from(e)))
        });
        return;
    }
    invoke.resolver.respond_async_serialized(async move {
        let value = remote
            .call(def.name, &args)
            .await
            .map_err(|e| InvokeError::from(IpcError::from(e)))?;
        serde_json::to_string(&value)
            .map(InvokeResponseBody::Json)
            .map_err(|e| InvokeError::from(IpcError::from(Error::Internal(e.to_string()))))
    });
}

/// The `Channel` a run command's events go to: the window's `on_event` argument.
fn run_channel<R: Runtime, T>(
    name: &str,
    args: &Value,
    webview: tauri::Webview<R>,
) -> Result<Channel<T>, InvokeError> {
    let id = args
        .get("on_event")
        .and_then(Value::as_str)
        .and_then(|s| JavaScriptChannelId::from_str(s).ok())
        .ok_or_else(|| invalid(format!("{name}: `on_event` must be a Channel")))?;
    Ok(id.channel_on(webview))
}

/// Starts the run and forwards its events until it ends (see `chat_commands::stream`).
/// Errors found before it starts (no key, empty message, a rollback conflict) reject the
/// call; later ones arrive as `error` events followed by `done`.
async fn run(
    engram: Arc<Engram>,
    name: &str,
    args: Value,
    on_event: Channel<RunEvent>,
) -> IpcResult<()> {
    let Some(request) = commands::run_request(name, args) else {
        return Err(Error::invalid(format!("{name} is not a run")).into());
    };
    let (agent, request) = request?;
    let run = engram.runs().start(&agent, request).await?;
    crate::chat_commands::stream(run, &on_event).await
}

/// Serves the local REST API on 127.0.0.1:8283 (or stops it), and remembers the choice.
#[tauri::command(rename_all = "snake_case")]
pub async fn set_rest_api(
    d: State<'_, Desktop>,
    args: Args<SetRestApiArgs>,
) -> IpcResult<RestApiStatus> {
    if let Some(remote) = d.remote.current() {
        return Err(crate::remote_link::not_while_remote(
            "This computer's REST API",
            &remote,
        ));
    }
    d.engram.trust().set_rest_api_enabled(args.0.enabled)?;
    if args.0.enabled {
        Ok(d.rest.start(d.engram.clone()).await?)
    } else {
        Ok(d.rest.stop())
    }
}

//! The window's commands for "Connect to a server" (see `remote_link`): connect, disconnect,
//! what the link is; and making the kept link again at start.

use crate::args::Args;
use crate::error::IpcResult;
use crate::events::NOTICE_EVENT;
use crate::state::Desktop;
use engram_core::Error;
use engram_remote::Remote;
use engram_service::commands::{
    ConnectServerArgs, DisconnectServerArgs, ServerConnection, ServerConnectionArgs,
};
use engram_service::{ExposeSecret, Notice, SecretString, ServerLink};
use std::sync::Arc;
use tauri::{AppHandle, Emitter, Manager, Runtime, State};

/// Makes the kept link again, if there is one (at start, in the background): on failure the
/// window works on this computer's engine and `server_connection` says why.
pub(crate) fn reconnect_at_start<R: Runtime>(app: AppHandle<R>) {
    let link = match app.state::<Desktop>().engram.trust().linked_server() {
        Ok(Some(link)) => link,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the linked server");
            return;
        }
    };
    tauri::async_runtime::spawn(async move {
        let (link, token) = link;
        let desktop = app.state::<Desktop>();
        match Remote::connect(
            &link.url,
            Some(token.expose_secret()),
            link.fingerprint.as_deref(),
        )
        .await
        {
            Ok(remote) => desktop.remote.switch(&app, Some(Arc::new(remote))),
            Err(e) => {
                tracing::warn!(error = %e, url = %link.url, "cannot reach the linked server");
                desktop.remote.set_failed(link, e.to_string());
                let _ = app.emit(NOTICE_EVENT, &Notice::AgentsChanged);
            }
        }
    });
}

/// Connects to a server (see `ConnectServerArgs`): checks the address, the certificate and
/// the token with the server first, keeps the link, and switches every window to it.
#[tauri::command(rename_all = "snake_case")]
pub async fn connect_server<R: Runtime>(
    app: AppHandle<R>,
    d: State<'_, Desktop>,
    args: Args<ConnectServerArgs>,
) -> IpcResult<ServerConnection> {
    let ConnectServerArgs {
        url,
        token,
        fingerprint,
    } = args.0;
    let remote = Remote::connect(&url, token.as_deref(), fingerprint.as_deref()).await?;
    let link = ServerLink {
        url: remote.address().url.clone(),
        fingerprint: remote.address().fingerprint.clone(),
    };
    d.engram
        .trust()
        .link_server(&link, &SecretString::from(remote.token().to_owned()))?;
    d.remote.switch(&app, Some(Arc::new(remote)));
    d.remote
        .status()
        .ok_or_else(|| Error::Internal("the link was lost at once".into()).into())
}

/// Back to this computer's engine; the server's address and token are forgotten.
#[tauri::command(rename_all = "snake_case")]
pub async fn disconnect_server<R: Runtime>(
    app: AppHandle<R>,
    d: State<'_, Desktop>,
    _args: Args<DisconnectServerArgs>,
) -> IpcResult<Option<ServerConnection>> {
    d.engram.trust().unlink_server()?;
    d.remote.switch(&app, None);
    Ok(None)
}

/// The server the window works on (or failed to reach at start), or `null`.
#[tauri::command(rename_all = "snake_case")]
pub async fn server_connection(
    d: State<'_, Desktop>,
    _args: Args<ServerConnectionArgs>,
) -> IpcResult<Option<ServerConnection>> {
    Ok(d.remote.status())
}

//! "Connect to a server": the window works on a remote `engram serve`'s engine instead of this
//! computer's. The window does not change — it keeps calling the shell's commands — and the
//! shell forwards each command, run and joined run to the server (`engram_remote`, HTTPS with
//! the certificate pinned) and re-emits the server's notices as its own. The link is kept (the
//! address in the settings, the token in the keychain) and made again at the next start.
//!
//! Commands that need this computer's own things (native file dialogs for imports, directories
//! to watch or load a reranker from) are refused while connected, saying so; exports are
//! fetched from the server and saved here.

use crate::NOTICE_EVENT;
use crate::args::Args;
use crate::error::{IpcError, IpcResult};
use crate::state::Desktop;
use engram_core::Error;
use engram_remote::{Remote, RemoteError};
use engram_service::commands::{
    ConnectServerArgs, DisconnectServerArgs, ServerConnection, ServerConnectionArgs,
};
use engram_service::{ExposeSecret, Notice, SecretString, ServerLink};
use std::sync::{Arc, Mutex, RwLock};
use tauri::{AppHandle, Emitter, Manager, Runtime, State};

/// The server the window works on, if any, and why the kept one could not be reached.
#[derive(Default)]
pub struct RemoteLink {
    current: RwLock<Option<Arc<Remote>>>,
    /// A kept link that could not be made at start, and why.
    failed: RwLock<Option<(ServerLink, String)>>,
    /// The task re-emitting the server's notices.
    notices: Mutex<Option<tauri::async_runtime::JoinHandle<()>>>,
}

impl RemoteLink {
    /// The server the window works on now, if any.
    pub fn current(&self) -> Option<Arc<Remote>> {
        self.current.read().ok().and_then(|r| r.clone())
    }

    /// Works on `remote` from now on (or on this computer's engine for `None`): the server's
    /// notices replace the engine's, and every window re-reads everything.
    fn switch<R: Runtime>(&self, app: &AppHandle<R>, remote: Option<Arc<Remote>>) {
        if let Ok(mut n) = self.notices.lock()
            && let Some(task) = n.take()
        {
            task.abort();
        }
        if let Ok(mut c) = self.current.write() {
            c.clone_from(&remote);
        }
        if let Ok(mut f) = self.failed.write() {
            *f = None;
        }
        if let Some(remote) = remote {
            let app = app.clone();
            let task = tauri::async_runtime::spawn(async move {
                remote
                    .notices(|notice| app.emit(NOTICE_EVENT, &notice).is_ok())
                    .await;
            });
            if let Ok(mut n) = self.notices.lock() {
                *n = Some(task);
            }
        }
        let _ = app.emit(NOTICE_EVENT, &Notice::AgentsChanged);
    }

    /// What the window shows of the link.
    fn status(&self) -> Option<ServerConnection> {
        if let Some(remote) = self.current() {
            return Some(ServerConnection {
                url: remote.address().url.clone(),
                host: remote.host(),
                user: remote.user(),
                fingerprint: remote.address().fingerprint.clone(),
                version: remote.version(),
                connected: true,
                error: None,
            });
        }
        let failed = self.failed.read().ok()?.clone()?;
        let (link, why) = failed;
        Some(ServerConnection {
            host: url::Url::parse(&link.url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
                .unwrap_or_default(),
            url: link.url,
            user: None,
            fingerprint: link.fingerprint,
            version: None,
            connected: false,
            error: Some(why),
        })
    }
}

impl From<RemoteError> for IpcError {
    fn from(e: RemoteError) -> Self {
        IpcError::from_body(e.0)
    }
}

/// The refusal of a command that needs this computer while the window works on a server.
pub(crate) fn not_while_remote(what: &str, remote: &Remote) -> IpcError {
    Error::invalid(format!(
        "{what} is not available while working on {}: disconnect in Settings → Server to use this computer's",
        remote.host()
    ))
    .into()
}

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
                if let Ok(mut f) = desktop.remote.failed.write() {
                    *f = Some((link, e.to_string()));
                }
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

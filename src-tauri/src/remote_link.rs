//! "Connect to a server": the window works on a remote `engram serve`'s engine instead of this
//! computer's. The window does not change — it keeps calling the shell's commands — and the
//! shell forwards each command, run and joined run to the server (`engram_remote`, HTTPS with
//! the certificate pinned) and re-emits the server's notices as its own. The link is kept (the
//! address in the settings, the token in the keychain) and made again at the next start.
//!
//! Commands that need this computer's own things (a directory to watch or to load a reranker
//! from, this computer's REST API) are refused while connected, saying so; exports are made on
//! the server and saved here, imports read here and made there. The window's commands for the
//! link itself are in `server_commands`.

use crate::error::IpcError;
use crate::events::NOTICE_EVENT;
use engram_core::Error;
use engram_remote::{Remote, RemoteError};
use engram_service::commands::ServerConnection;
use engram_service::{Notice, ServerLink};
use std::sync::{Arc, Mutex, RwLock};
use tauri::{AppHandle, Emitter, Runtime};

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
    pub(crate) fn switch<R: Runtime>(&self, app: &AppHandle<R>, remote: Option<Arc<Remote>>) {
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
    pub(crate) fn status(&self) -> Option<ServerConnection> {
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

impl RemoteLink {
    /// Remembers that the kept link to `link` could not be made, and why (the window shows
    /// it; this computer's engine answers meanwhile).
    pub(crate) fn set_failed(&self, link: ServerLink, why: String) {
        if let Ok(mut f) = self.failed.write() {
            *f = Some((link, why));
        }
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

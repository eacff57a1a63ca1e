//! The local REST API served from inside the desktop app, switched on and off in settings, so
//! `letta-client` scripts and notebooks reach the same agents the window shows.

use engram_server::{Auth, DEFAULT_PORT, ServerConfig};
use engram_service::{Engram, RestApiStatus};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// The running server, if any.
#[derive(Default)]
pub struct RestApi {
    running: Mutex<Option<Running>>,
}

struct Running {
    url: String,
    stop: oneshot::Sender<()>,
}

impl RestApi {
    /// Whether it is serving, and where.
    pub fn status(&self) -> RestApiStatus {
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        RestApiStatus {
            enabled: running.is_some(),
            url: running.as_ref().map(|r| r.url.clone()),
        }
    }

    /// Starts serving on 127.0.0.1:8283 (Letta's port) with the bearer token from the keychain;
    /// does nothing when already serving. Errors: `secrets` for the token, `conflict` when the
    /// port is taken (another Engram or a Letta server).
    pub async fn start(&self, engram: Arc<Engram>) -> engram_core::Result<RestApiStatus> {
        if self.status().enabled {
            return Ok(self.status());
        }
        let token = engram.trust().rest_api_token()?;
        let listener = engram_server::bind("127.0.0.1", DEFAULT_PORT)
            .await
            .map_err(|e| {
                engram_core::Error::Conflict(format!(
                    "cannot serve the REST API on 127.0.0.1:{DEFAULT_PORT}: {e}"
                ))
            })?;
        let url = format!("http://{}", listener.local_addr().map_err(io_error)?);
        let (stop, stopped) = oneshot::channel();
        tauri::async_runtime::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            let config = ServerConfig::new(Auth::Token(token));
            if let Err(e) = engram_server::serve(listener, engram, config, shutdown).await {
                tracing::warn!(error = %e, "the REST API stopped");
            }
        });
        tracing::info!(%url, "serving the REST API");
        *self.running.lock().unwrap_or_else(|e| e.into_inner()) = Some(Running { url, stop });
        Ok(self.status())
    }

    /// Stops serving (requests in flight finish first).
    pub fn stop(&self) -> RestApiStatus {
        if let Some(r) = self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            let _ = r.stop.send(());
        }
        self.status()
    }
}

fn io_error(e: std::io::Error) -> engram_core::Error {
    engram_core::Error::Internal(e.to_string())
}

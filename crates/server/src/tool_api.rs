//! The door a running tool calls Engram's API through (see `engram_agent::tool_api`): one Unix
//! socket per tool call, in a private directory, serving the same Letta routes as
//! `engram serve` — but only those of the call's own agent, without a token (the socket is the
//! credential: only the call's sandbox is given it), and with block edits recorded as the tool
//! call's.

use crate::errors::ApiError;
use crate::{Auth, ServerConfig, router};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use engram_agent::{ToolApi, ToolApiGrant, ToolScope};
use engram_service::Engram;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use tokio_util::sync::CancellationToken;

/// Opens per-call sockets under `dir` for the engine it was made for.
pub struct UnixToolApi {
    engram: Weak<Engram>,
    dir: PathBuf,
}

/// Gives `engram`'s user tools a way to call its API back: creates `<data dir>/run` (mode
/// 0700, so no other user can reach the sockets in it) and installs a [`UnixToolApi`]. Every
/// transport that runs agents calls it once at start.
///
/// Returns the installed API (to open doors directly, e.g. in tests).
///
/// Errors: the directory cannot be created or made private.
pub fn install(engram: &Arc<Engram>) -> std::io::Result<Arc<UnixToolApi>> {
    let dir = engram.home().join("run");
    std::fs::create_dir_all(&dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    }
    let api = Arc::new(UnixToolApi {
        engram: Arc::downgrade(engram),
        dir,
    });
    engram.set_tool_api(api.clone());
    Ok(api)
}

impl ToolApi for UnixToolApi {
    fn open(&self, scope: ToolScope) -> Result<ToolApiGrant, String> {
        let engram = self
            .engram
            .upgrade()
            .ok_or("Engram is shutting down; its API is closed")?;
        // Short names: a Unix socket path must stay under ~100 bytes.
        let name = format!("t{:016x}.sock", rand::random::<u64>());
        let path = self.dir.join(name);
        let listener = tokio::net::UnixListener::bind(&path).map_err(|e| {
            format!(
                "cannot open Engram's API for the tool ({}): {e}",
                path.display()
            )
        })?;
        let app = router(engram, ServerConfig::new(Auth::Disabled)).layer(
            axum::middleware::from_fn_with_state(Arc::new(scope), scoped),
        );
        let stop = CancellationToken::new();
        let served = stop.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(served.cancelled_owned())
                .await;
        });
        let socket = path.clone();
        Ok(ToolApiGrant::new(socket, move || {
            stop.cancel();
            remove(&path);
        }))
    }
}

fn remove(path: &Path) {
    if let Err(e) = std::fs::remove_file(path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(path = %path.display(), "cannot remove a tool's API socket: {e}");
    }
}

/// Lets through only requests for the scope's own agent (and the health check), hands the
/// scope to the handlers, and refuses the rest in words the tool's author can act on.
async fn scoped(State(scope): State<Arc<ToolScope>>, mut req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let own = format!("/v1/agents/{}", scope.agent_id);
    let for_own_agent =
        path == own || path.trim_end_matches('/') == own || path.starts_with(&format!("{own}/"));
    let health = path.starts_with("/v1/health");
    if !(for_own_agent || health) {
        return refuse(format!(
            "a tool may reach only its own agent's routes (/v1/agents/{}/…) through Engram's \
             API, not {path}",
            scope.agent_id
        ));
    }
    // A message to its own agent would wait for the run the tool is part of: never answered.
    if req.method() == Method::POST && path.contains("/messages") {
        return refuse(
            "a tool cannot send messages to its own agent while the agent is running it".into(),
        );
    }
    req.extensions_mut().insert(scope.as_ref().clone());
    next.run(req).await
}

fn refuse(detail: String) -> Response {
    ApiError::new(StatusCode::FORBIDDEN, "forbidden", detail).into_response()
}

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
use engram_service::Engram;
use engram_service::{ToolApi, ToolApiError, ToolApiGrant, ToolScope};
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
    fn open(&self, scope: ToolScope) -> Result<ToolApiGrant, ToolApiError> {
        let engram = self.engram.upgrade().ok_or(ToolApiError::ShuttingDown)?;
        // Short names: a Unix socket path must stay under ~100 bytes.
        let name = format!("t{:016x}.sock", rand::random::<u64>());
        let path = self.dir.join(name);
        let listener =
            tokio::net::UnixListener::bind(&path).map_err(|source| ToolApiError::Socket {
                path: path.clone(),
                source,
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

/// Lets through only what a tool needs of its own agent (the tutorials read and write its
/// blocks), hands the scope to the handlers, and refuses the rest in words the tool's author
/// can act on. A tool may not change the agent itself (model, base URL, instructions, tools,
/// rules), attach blocks by id, reset or message it: each would let code the user trusted for
/// one job reach further than that job.
async fn scoped(State(scope): State<Arc<ToolScope>>, mut req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    if let Err(why) = allowed(&scope, req.method(), &path) {
        return refuse(why);
    }
    req.extensions_mut().insert(scope.as_ref().clone());
    next.run(req).await
}

/// Whether a tool of `scope`'s agent may make this request; `Err` says why not.
fn allowed(scope: &ToolScope, method: &Method, path: &str) -> Result<(), String> {
    if path.starts_with("/v1/health") {
        return Ok(());
    }
    let own = format!("/v1/agents/{}", scope.agent_id);
    let Some(rest) = path
        .strip_prefix(&own)
        .filter(|r| r.is_empty() || r.starts_with('/'))
    else {
        return Err(format!(
            "a tool may reach only its own agent's routes (/v1/agents/{}/…) through Engram's \
             API, not {path}",
            scope.agent_id
        ));
    };
    let rest = rest.trim_end_matches('/');
    let read = *method == Method::GET;
    let ok = match rest {
        "" => read,
        r if r.starts_with("/core-memory") => {
            let by_id = r.contains("/blocks/attach/") || r.contains("/blocks/detach/");
            !by_id && (read || *method == Method::PATCH)
        }
        r if r.starts_with("/archival-memory") || r.starts_with("/passages") => {
            read || *method == Method::POST
        }
        r if r.starts_with("/messages") => read,
        r if r.starts_with("/tools") => read,
        _ => false,
    };
    if ok {
        Ok(())
    } else if rest.starts_with("/messages") {
        Err("a tool cannot send messages to its own agent while the agent is running it".into())
    } else {
        Err(format!(
            "a tool may read its agent and edit its memory (blocks, archival passages) through \
             Engram's API; {method} {path} changes the agent itself, which only the user can do"
        ))
    }
}

fn refuse(detail: String) -> Response {
    ApiError::new(StatusCode::FORBIDDEN, "forbidden", detail).into_response()
}

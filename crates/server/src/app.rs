//! `/app/…`: the desktop UI's own API over HTTP, so the same UI runs in a browser (end-to-end
//! tests, a second window) as in the Tauri shell.
//!
//! Every command is defined once in the service (`engram_service::commands`); this is one
//! generic route over that list: `POST /app/{command}` with a JSON object of snake_case
//! arguments, answering the command's JSON result, or `{code, message, details?}` with an
//! error status. Run commands (`send_message`, `regenerate`, …) answer Server-Sent Events,
//! one [`RunEvent`](engram_core::RunEvent) per `data:` line, ending after `done`;
//! `attach_run` is the one command answered here by hand (`app_chat.rs`);
//! `GET /app/notices` streams [`Notice`](engram_service::Notice)s. Letta's `/v1` routes keep
//! Letta's shapes; these keep Engram's.

use crate::access::Principal;
use crate::config::AppState;
use crate::errors::AppError;
use crate::json::Args;
use axum::body::Bytes;
use axum::extract::{FromRequest, Path, Request, State};
use axum::http::{StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use engram_core::ErrorBody;
use engram_core::commands::CommandKind;
use engram_service::RestApiStatus;
use engram_service::commands::{self, Caller};
use futures::StreamExt;
use std::convert::Infallible;

/// The routes; mounted under the same guard as `/v1`.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/app/notices", get(notices))
        // Other methods on a command's path are unknown API paths (JSON 404s), also when the
        // UI is served beside the API.
        .route(
            "/app/{command}",
            post(command).fallback(crate::routes::not_found),
        )
        .merge(crate::app_chat::routes())
}

/// The command that carries a whole file (base64 in its JSON), on a route of its own so it
/// can take bodies up to the upload limit; every other command keeps the small one.
pub(crate) fn upload_routes() -> Router<AppState> {
    const UPLOAD: &str = "upload_folder_file";
    Router::new().route(
        &format!("/app/{UPLOAD}"),
        post(|state: State<AppState>, req: Request| command(state, Path(UPLOAD.to_owned()), req))
            .fallback(crate::routes::not_found),
    )
}

/// The arguments object of a request: its JSON body, or `null` when it has none (commands
/// without arguments need not send `{}`).
async fn arguments(req: Request) -> Result<serde_json::Value, Response> {
    if req.headers().contains_key(header::CONTENT_TYPE) {
        return Args::<serde_json::Value>::from_request(req, &())
            .await
            .map(|Args(v)| v);
    }
    let body = Bytes::from_request(req, &())
        .await
        .map_err(IntoResponse::into_response)?;
    if body.is_empty() {
        Ok(serde_json::Value::Null)
    } else {
        let body = ErrorBody {
            code: "invalid_input".into(),
            message: "Expected request with `Content-Type: application/json`".into(),
            details: None,
        };
        Err((StatusCode::UNSUPPORTED_MEDIA_TYPE, Json(body)).into_response())
    }
}

/// `POST /app/{command}`: a call answered with its JSON result, or a run answered as SSE.
/// Unknown commands, and those only the desktop app answers, are 404 as any unknown path.
async fn command(State(s): State<AppState>, Path(name): Path<String>, req: Request) -> Response {
    let Some(def) = commands::find(&name).filter(|c| c.http && !c.is_adapter()) else {
        return crate::routes::not_found().await.into_response();
    };
    let user = req
        .extensions()
        .get::<Principal>()
        .and_then(Principal::user)
        .cloned();
    // A command that is not a user's is refused before its body is read (an upload's may be
    // tens of MB).
    if let Some(user) = &user
        && def.access == commands::Access::Admin
        && let Some(refused) =
            crate::access::app_refusal(&s, user, def, &serde_json::Value::Null).await
    {
        return refused;
    }
    let args = match arguments(req).await {
        Ok(args) => args,
        Err(rejected) => return rejected,
    };
    if let Some(u) = &user
        && let Some(refused) = crate::access::app_refusal(&s, u, def, &args).await
    {
        return refused;
    }
    if def.kind == CommandKind::Run {
        return match commands::run_request(def.name, args) {
            Some(Ok((agent, request))) => crate::app_chat::start(s, agent, request)
                .await
                .unwrap_or_else(IntoResponse::into_response),
            Some(Err(e)) => AppError(e).into_response(),
            None => crate::routes::not_found().await.into_response(),
        };
    }
    // A browser reaches this through the REST API itself, so it is on; its address is the
    // one the browser already uses.
    let caller = Caller {
        rest_api: RestApiStatus {
            enabled: true,
            url: None,
        },
        authenticated: s.authenticated,
        user,
    };
    let Some(answer) = commands::call(&s.engram, caller, def.name, args) else {
        return crate::routes::not_found().await.into_response();
    };
    match answer.await {
        Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(e) => AppError(e).into_response(),
    }
}

/// Every [`Notice`](engram_service::Notice) from now on (a user's: of agents they may read),
/// as SSE. A listener that fell behind gets `agents_changed`, so it re-reads what it shows.
async fn notices(
    State(s): State<AppState>,
    principal: Option<Extension<Principal>>,
) -> impl IntoResponse {
    use tokio::sync::broadcast::error::RecvError;
    let user = principal.and_then(|Extension(p)| p.user().cloned());
    let rx = s.engram.notices();
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        let notice = match rx.recv().await {
            Ok(n) => n,
            Err(RecvError::Lagged(_)) => engram_service::Notice::AgentsChanged,
            Err(RecvError::Closed) => return None,
        };
        Some((notice, rx))
    })
    // A user hears only of agents they may read.
    .filter(move |n| {
        let (s, user, n) = (s.clone(), user.clone(), n.clone());
        async move {
            match &user {
                None => true,
                Some(u) => crate::access::may_see(&s, u, &n).await,
            }
        }
    })
    .filter_map(|n| async move { Event::default().json_data(&n).ok().map(Ok::<_, Infallible>) });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

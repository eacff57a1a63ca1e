//! Engram's local REST API, shaped like Letta's so the `letta-client` SDKs (0.1.x and 1.x) and
//! the notebooks written for them run against Engram unchanged.
//!
//! Handlers are thin: parse, call one [`Engram`] method, shape the answer as Letta does
//! ([`shapes`]), map errors to Letta's `{"detail": …}` ([`errors`]). Runs stream as SSE
//! ([`sse`]). Every request passes [`guard`] first: loopback `Host`/`Origin` only (DNS
//! rebinding), then the bearer token — the server's own (the administrator's) or a user's —
//! and, for a user, [`access`]: only their agents, through the routes named there.
//!
//! ```no_run
//! # async fn demo(engram: std::sync::Arc<engram_service::Engram>) -> std::io::Result<()> {
//! use engram_server::{Auth, ServerConfig, bind, serve};
//! let token = engram.trust().rest_api_token().expect("token");
//! let config = ServerConfig::new(Auth::Token(token));
//! let listener = bind("127.0.0.1", 8283).await?;
//! serve(listener, engram, config, std::future::pending()).await
//! # }
//! ```

pub mod access;
mod app;
mod app_chat;
mod config;
pub mod errors;
mod folder_shapes;
pub mod guard;
mod json;
mod paging;
mod replica;
mod routes;
pub mod shapes;
pub mod sse;
pub mod tls;
pub mod tool_api;

use config::AppState;
pub use config::{Auth, DEFAULT_BODY_LIMIT, DEFAULT_UPLOAD_LIMIT, ServerConfig};

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, header};
use axum::routing::any;
use axum::serve::ListenerExt;
use engram_service::Engram;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use tokio::net::TcpListener;
use tower_http::services::{ServeDir, ServeFile};
use tower_http::set_header::SetResponseHeaderLayer;

/// Letta's default port, which the SDKs' examples use.
pub const DEFAULT_PORT: u16 = 8283;
/// The Content-Security-Policy of the served UI, as strict as the desktop window's: scripts
/// and styles only from the app itself, images also as `data:`, no frames, no plugins.
pub const UI_CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data:; connect-src 'self'; object-src 'none'; frame-ancestors 'none'; \
     base-uri 'none'; form-action 'none'";

/// The API as an axum router: Letta's `/v1/…` routes behind the guard, the body limits and
/// request tracing.
pub fn router(engram: Arc<Engram>, config: ServerConfig) -> Router {
    let authenticated = matches!(config.auth, Auth::Token(_));
    let guard_state = Arc::new(guard::Guard::new(&config).with_users(engram.clone()));
    // Two body limits: file uploads carry whole documents, everything else is small.
    let api = limited(routes::all().merge(app::routes()), config.body_limit).merge(limited(
        routes::uploads().merge(app::upload_routes()),
        config.upload_limit,
    ));
    let with_ui = match &config.ui_dir {
        // Unknown API paths stay JSON 404s; every other path is the single-page app's.
        Some(dir) => api
            .route("/v1/{*rest}", any(routes::not_found))
            .route("/app/{command}/{*rest}", any(routes::not_found))
            .fallback_service(ServeDir::new(dir).fallback(ServeFile::new(dir.join("index.html"))))
            .layer(SetResponseHeaderLayer::if_not_present(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(UI_CSP),
            )),
        None => api.fallback(routes::not_found),
    };
    let state = AppState {
        engram,
        authenticated,
    };
    with_ui
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            replica::check,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            access::check,
        ))
        .with_state(state)
        .layer(axum::middleware::map_response(errors::json_for_bare_errors))
        .layer(axum::middleware::from_fn_with_state(
            guard_state,
            guard::check,
        ))
        .layer(tower_http::trace::TraceLayer::new_for_http())
}

/// `routes` with request bodies capped at `limit` bytes: the extractors' limit and a hard
/// limit on the body stream (a `Content-Length` over it is refused before the body is read),
/// with the limit noted on a 413 so its message can name it.
fn limited(routes: Router<AppState>, limit: usize) -> Router<AppState> {
    routes
        .layer(DefaultBodyLimit::max(limit))
        .layer(tower_http::limit::RequestBodyLimitLayer::new(limit))
        .layer(axum::middleware::map_response(
            move |mut response: axum::response::Response| async move {
                if response.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                    response.extensions_mut().insert(errors::BodyLimit(limit));
                }
                response
            },
        ))
}

/// Why the server would not start.
#[derive(Debug)]
pub struct NotLoopback(pub String);

impl std::fmt::Display for NotLoopback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "refusing to listen on {}: without TLS the REST API binds to loopback only \
             (127.0.0.1, ::1 or localhost), since anything on the network could drive your \
             agents; to serve beyond it, add --tls-self-signed (or --tls-cert and --tls-key) \
             and --name with the name clients reach it by",
            self.0
        )
    }
}

impl std::error::Error for NotLoopback {}

/// The loopback address `host` names (`localhost`, `127.0.0.1`, `::1`, any `127.x`), or
/// [`NotLoopback`].
pub fn loopback_addr(host: &str, port: u16) -> Result<SocketAddr, NotLoopback> {
    let ip: IpAddr = match host.trim_matches(['[', ']']) {
        "localhost" => IpAddr::from([127, 0, 0, 1]),
        other => other.parse().map_err(|_| NotLoopback(host.to_owned()))?,
    };
    if ip.is_loopback() {
        Ok(SocketAddr::new(ip, port))
    } else {
        Err(NotLoopback(host.to_owned()))
    }
}

/// Binds a loopback listener; port 0 picks a free port (see `local_addr`).
/// Errors: [`NotLoopback`] (as `InvalidInput`) for other hosts; the OS error when the port is
/// taken.
pub async fn bind(host: &str, port: u16) -> std::io::Result<TcpListener> {
    let addr = loopback_addr(host, port)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    TcpListener::bind(addr).await
}

/// Serves the API on `listener` until `shutdown` completes (in-flight requests finish first).
pub async fn serve(
    listener: TcpListener,
    engram: Arc<Engram>,
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // SSE chunks are small writes: without TCP_NODELAY, Nagle holds each one back until the
    // client's delayed ACK (~40 ms), and streamed tokens arrive in bursts.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router(engram, config))
        .with_graceful_shutdown(shutdown)
        .await
}

/// Serves the API over HTTPS on `listener` (see [`tls`]) until `shutdown` completes, as
/// [`serve`] does over HTTP.
pub async fn serve_tls(
    listener: tls::TlsListener,
    engram: Arc<Engram>,
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(engram, config))
        .with_graceful_shutdown(shutdown)
        .await
}

/// Binds `host:port` on any address, for serving beyond loopback (over TLS; the caller checks).
/// Errors: the OS error when the address is not this machine's or the port is taken.
pub async fn bind_any(host: &str, port: u16) -> std::io::Result<TcpListener> {
    let host = host.trim_matches(['[', ']']);
    TcpListener::bind((host, port)).await
}

//! Streamable HTTP on loopback: the REST API's `Host`/`Origin` checks (403), then a configured
//! client's bearer token (401 otherwise), which decides who the request is and what it may do.

use crate::handler::MemoryServer;
use crate::notify::Subscribers;
use crate::seen::Seen;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt as _;
use engram_server::errors::ApiError;
use engram_server::guard::{is_local_authority, is_local_origin};
use engram_service::Engram;
use engram_service::mcp_memory::{Access, MemoryClient};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use secrecy::{ExposeSecret, SecretString};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A running memory server on HTTP.
pub struct HttpServer {
    /// The address it listens on.
    pub addr: SocketAddr,
    gate: Arc<Gate>,
    stop: CancellationToken,
    done: tokio::task::JoinHandle<()>,
}

impl HttpServer {
    /// `http://ADDR/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The clients it serves, with their bearer tokens.
    pub fn clients(&self) -> &[(MemoryClient, SecretString)] {
        &self.gate.clients
    }

    /// Stops accepting requests and waits for the open ones to end.
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = self.done.await;
    }
}

/// The configured clients, by token.
struct Gate {
    clients: Vec<(MemoryClient, SecretString)>,
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).map(|v| v.to_str().unwrap_or("\u{fffd}"))
}

/// Constant-time comparison, so a token cannot be guessed byte by byte from timings.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn check(State(gate): State<Arc<Gate>>, mut req: Request, next: Next) -> Response {
    let headers = req.headers();
    if let Some(host) = header_str(headers, header::HOST)
        && !is_local_authority(host)
    {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("Host '{host}' is not allowed: the memory server answers only to localhost"),
        )
        .into_response();
    }
    if let Some(origin) = header_str(headers, header::ORIGIN)
        && !is_local_origin(origin, &[])
    {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("Origin '{origin}' is not allowed"),
        )
        .into_response();
    }
    let given = header_str(headers, header::AUTHORIZATION)
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .unwrap_or_default();
    let client = gate
        .clients
        .iter()
        .find(|(_, token)| same_bytes(given.as_bytes(), token.expose_secret().as_bytes()))
        .map(|(client, _)| client.clone());
    let Some(client) = client else {
        let mut response = ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing or wrong bearer token: use the token `engram mcp client add NAME` printed",
        )
        .into_response();
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, "Bearer".parse().expect("static"));
        return response;
    };
    req.extensions_mut().insert(client);
    next.run(req).await
}

/// Errors of [`serve_http`].
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The agents or clients could not be read.
    #[error("{0}")]
    Engine(engram_core::Error),
    /// No client is configured, so nobody could connect.
    #[error(
        "no MCP memory clients are configured: add one with `engram mcp client add NAME` (it prints the client's token)"
    )]
    NoClients,
    /// The address is not loopback or cannot be bound.
    #[error("cannot listen: {0}")]
    Bind(std::io::Error),
    /// The MCP session over stdio broke (the client sent something that is not MCP, or the
    /// pipe failed).
    #[error("the MCP session failed: {0}")]
    Session(String),
}

/// Serves the memory of `agents` (ids or names) on `host:port` (loopback only; port 0 picks
/// one) to the configured clients, each with its own token and access, until stopped. A write
/// waiting for the user's approval waits at most `approval_timeout`.
///
/// Errors: [`ServeError`].
pub async fn serve_http(
    engram: Arc<Engram>,
    agents: &[String],
    host: &str,
    port: u16,
    approval_timeout: Duration,
) -> Result<HttpServer, ServeError> {
    let mut clients = engram
        .memory_server()
        .client_tokens(agents)
        .map_err(ServeError::Engine)?;
    for (client, _) in &mut clients {
        client.approval_timeout = approval_timeout;
    }
    if clients.is_empty() {
        return Err(ServeError::NoClients);
    }
    let watcher = engram
        .memory_server()
        .client(
            "watcher",
            agents,
            &Access {
                read_only: true,
                ..Access::default()
            },
        )
        .map_err(ServeError::Engine)?;
    let subscribers = Subscribers::start(engram.clone(), &watcher);
    let seen: Arc<Seen> = Arc::default();
    let listener = engram_server::bind(host, port)
        .await
        .map_err(ServeError::Bind)?;
    let addr = listener.local_addr().map_err(ServeError::Bind)?;
    let stop = CancellationToken::new();
    let service: StreamableHttpService<MemoryServer, LocalSessionManager> =
        StreamableHttpService::new(
            move || {
                Ok(MemoryServer::new(
                    engram.clone(),
                    None,
                    true,
                    subscribers.clone(),
                    seen.clone(),
                ))
            },
            Default::default(),
            StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token()),
        );
    let gate = Arc::new(Gate { clients });
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(gate.clone(), check));
    // Small SSE writes: without TCP_NODELAY each answer waits ~40 ms for the delayed ACK.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let until = stop.clone();
    let done = tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move { until.cancelled_owned().await })
            .await;
    });
    Ok(HttpServer {
        addr,
        gate,
        stop,
        done,
    })
}

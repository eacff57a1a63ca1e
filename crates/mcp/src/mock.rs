//! A small MCP server for tests, written with rmcp's server side: the real protocol, tools with
//! JSON schemas, and the faults the client must survive (a crash mid-call, a call that never
//! ends, a tool-level error).
//!
//! Run over stdio by the `mock-mcp` binary, or over streamable HTTP with [`serve_http`], which
//! also records the `Authorization` header of every request so tests can check where a bearer
//! token went.

use axum::serve::ListenerExt as _;
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// Arguments of `echo`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct EchoArgs {
    /// The text to send back.
    pub text: String,
}

/// Arguments of `add`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct AddArgs {
    /// The first number.
    pub a: i64,
    /// The second number.
    pub b: i64,
}

/// Arguments of `sleep`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct SleepArgs {
    /// How long to wait, in seconds.
    pub seconds: f64,
}

/// The test server's tools. `crash` ends the whole process (stdio) mid-call.
#[derive(Debug, Clone)]
pub struct MockServer {
    tool_router: ToolRouter<Self>,
    /// Whether `crash` may end the process (only when the process is this server alone).
    may_exit: bool,
}

impl MockServer {
    /// A server; `may_exit` lets `crash` end the process (the stdio binary), otherwise it
    /// answers with a protocol error.
    pub fn new(may_exit: bool) -> Self {
        Self {
            tool_router: Self::tool_router(),
            may_exit,
        }
    }
}

#[tool_router]
impl MockServer {
    /// Sends the text back, prefixed so tests can tell the server answered.
    #[tool(description = "Repeat the given text back.")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        format!("echo: {text}")
    }

    /// Adds two integers.
    #[tool(description = "Add two whole numbers.")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        (a + b).to_string()
    }

    /// Waits, then answers (for timeouts).
    #[tool(description = "Wait for some seconds, then answer.")]
    async fn sleep(&self, Parameters(SleepArgs { seconds }): Parameters<SleepArgs>) -> String {
        tokio::time::sleep(std::time::Duration::from_secs_f64(
            seconds.clamp(0.0, 3600.0),
        ))
        .await;
        format!("slept {seconds} s")
    }

    /// Ends the server process in the middle of the call.
    #[tool(description = "Stop the server abruptly (for tests).")]
    fn crash(&self) -> Result<String, ErrorData> {
        if self.may_exit {
            std::process::exit(3);
        }
        Err(ErrorData::internal_error("this server cannot crash", None))
    }

    /// A tool-level error, as a server reports a tool that ran and failed.
    #[tool(description = "Always fails with a message.")]
    fn fail(&self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text("the tool failed on purpose")])
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MockServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_instructions("A test server for Engram.")
    }
}

/// Serves [`MockServer`] on stdin/stdout until the client goes away.
///
/// Errors: the transport's, as text.
pub async fn serve_stdio() -> Result<(), String> {
    let service = MockServer::new(true)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| e.to_string())?;
    service.waiting().await.map_err(|e| e.to_string())?;
    Ok(())
}

/// A streamable-HTTP test server on 127.0.0.1, serving MCP at `/mcp`.
pub struct HttpServer {
    /// The address it listens on.
    pub addr: SocketAddr,
    /// The `Authorization` header of every request, in order (`None` when absent).
    pub authorizations: Arc<Mutex<Vec<Option<String>>>>,
    queries: Arc<Mutex<Vec<Option<String>>>>,
    stop: CancellationToken,
}

impl HttpServer {
    /// `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The `Authorization` headers seen so far.
    pub fn seen_authorizations(&self) -> Vec<Option<String>> {
        self.authorizations
            .lock()
            .map(|a| a.clone())
            .unwrap_or_default()
    }

    /// The query strings of the requests seen so far (`None` for a request without one).
    pub fn seen_queries(&self) -> Vec<Option<String>> {
        self.queries.lock().map(|q| q.clone()).unwrap_or_default()
    }

    /// Stops serving (also on drop).
    pub fn stop(&self) {
        self.stop.cancel();
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Starts [`MockServer`] over streamable HTTP on `addr` (port 0 picks a free one) in the
/// current tokio runtime.
///
/// Errors: binding the address.
pub async fn serve_http(addr: SocketAddr) -> std::io::Result<HttpServer> {
    let stop = CancellationToken::new();
    let service: StreamableHttpService<MockServer, LocalSessionManager> =
        StreamableHttpService::new(
            || Ok(MockServer::new(false)),
            Default::default(),
            StreamableHttpServerConfig::default()
                .with_sse_keep_alive(None)
                .with_cancellation_token(stop.child_token()),
        );
    let authorizations: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let seen = authorizations.clone();
    let queries: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let seen_queries = queries.clone();
    let router =
        axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn(
                move |req: axum::extract::Request, next: axum::middleware::Next| {
                    let header = req
                        .headers()
                        .get(axum::http::header::AUTHORIZATION)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    if let Ok(mut s) = seen.lock() {
                        s.push(header);
                    }
                    if let Ok(mut q) = seen_queries.lock() {
                        q.push(req.uri().query().map(str::to_owned));
                    }
                    next.run(req)
                },
            ));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    // Small SSE writes: without TCP_NODELAY each answer waits ~40 ms for the delayed ACK.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let until = stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move { until.cancelled_owned().await })
            .await;
    });
    Ok(HttpServer {
        addr,
        authorizations,
        queries,
        stop,
    })
}

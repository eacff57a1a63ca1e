//! One connection per server, shared by every agent; started on first use, dropped when it
//! fails (so the next use starts it again) and, for stdio servers, after an idle period.

use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::service::{RunningService, ServiceError, ServiceExt};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Environment variables a stdio server inherits from Engram (the set the MCP reference
/// clients pass on: enough to find programs and a home). Everything else, API keys included,
/// stays out unless the server's own `env` names it.
pub const INHERITED_ENV: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR",
];

/// How to reach a server.
#[derive(Clone, PartialEq, Eq)]
pub enum Launch {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program (looked up on `PATH`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment (on top of [`INHERITED_ENV`]); values may be secrets.
        env: Vec<(String, String)>,
    },
    /// A streamable-HTTP endpoint.
    Http {
        /// The endpoint URL, e.g. `http://127.0.0.1:8000/mcp`.
        url: String,
        /// A bearer token sent as `Authorization: Bearer …` to this URL only.
        bearer: Option<String>,
    },
}

impl std::fmt::Debug for Launch {
    // Env values, tokens and credentials in a URL are secrets: never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stdio { command, args, env } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.iter().map(|(k, _)| k).collect::<Vec<_>>())
                .finish(),
            Self::Http { url, bearer } => f
                .debug_struct("Http")
                .field("url", &crate::url_secrets::hide(url).0)
                .field("bearer", &bearer.as_ref().map(|_| "<redacted>"))
                .finish(),
        }
    }
}

/// A server as the hub needs it: a stable key, a name for messages, and how to reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerSpec {
    /// Stable key of the connection (the stored server's id).
    pub id: String,
    /// The name people and the model see in messages.
    pub name: String,
    /// How to reach it.
    pub launch: Launch,
}

impl ServerSpec {
    /// `text` (an error from the transport, which may quote the request URL) without the
    /// credentials of an HTTP server's URL or its bearer token.
    pub fn scrub(&self, text: &str) -> String {
        match &self.launch {
            Launch::Stdio { .. } => text.to_owned(),
            Launch::Http { url, bearer } => {
                let text = crate::url_secrets::scrub(text, url);
                match bearer {
                    Some(b) if !b.is_empty() => {
                        text.replace(b.as_str(), crate::url_secrets::HIDDEN)
                    }
                    _ => text,
                }
            }
        }
    }
}

/// A tool a server offers, as listed (`tools/list`).
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteTool {
    /// The server's name for it (may contain `-`, `.` and other characters).
    pub name: String,
    /// Its description (empty when the server gives none).
    pub description: String,
    /// JSON Schema of its arguments (an object schema).
    pub input_schema: Value,
}

/// What a call returned.
#[derive(Clone, Debug, PartialEq)]
pub struct CallOutcome {
    /// The server marked the result as an error (`isError`): the tool ran and failed.
    pub is_error: bool,
    /// The result's text parts joined by newlines; other content is described in brackets
    /// (`[image image/png]`); structured content alone is given as JSON.
    pub text: String,
}

/// Why a server could not be used. Every message names the server.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum McpError {
    /// The server could not be started or did not complete the MCP handshake.
    #[error("MCP server '{server}' could not be started: {detail}")]
    Start {
        /// The server's name.
        server: String,
        /// What went wrong.
        detail: String,
    },
    /// The connection broke (the process exited, the HTTP server went away).
    #[error("MCP server '{server}' stopped responding: {detail}; it will be restarted on next use")]
    Lost {
        /// The server's name.
        server: String,
        /// What went wrong.
        detail: String,
    },
    /// The server took longer than the timeout.
    #[error(
        "MCP server '{server}' did not answer within {seconds} s; it will be restarted on next use"
    )]
    Timeout {
        /// The server's name.
        server: String,
        /// The timeout, in seconds.
        seconds: u64,
    },
    /// The server answered with a protocol error (unknown tool, bad arguments…).
    #[error("MCP server '{server}' refused the request: {detail}")]
    Refused {
        /// The server's name.
        server: String,
        /// The server's error message.
        detail: String,
    },
}

type Client = RunningService<RoleClient, ClientConfig>;

/// A server's connection slot: empty until first use and after a failure or idle stop. A tokio
/// lock, since starting a server (held under it) awaits.
type Slot = Arc<tokio::sync::Mutex<Option<Arc<Conn>>>>;

/// A live connection.
struct Conn {
    client: Client,
    in_flight: AtomicUsize,
    last_used: Mutex<Instant>,
    /// The launch it was made with (a changed config makes a new connection).
    launch: Launch,
}

/// Connections to MCP servers, keyed by server id. Cheap to share behind an `Arc`.
pub struct Hub {
    slots: Mutex<HashMap<String, Slot>>,
    /// How long one request may take.
    timeout: Duration,
    /// How long a stdio server may sit unused before it is stopped.
    idle: Duration,
}

impl Hub {
    /// Default time a request may take: 60 s.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
    /// Default idle period after which an unused stdio server is stopped: 5 minutes.
    pub const DEFAULT_IDLE: Duration = Duration::from_secs(300);

    /// A hub with a per-request `timeout` and an `idle` period for stdio servers.
    pub fn new(timeout: Duration, idle: Duration) -> Self {
        Self {
            slots: Mutex::new(HashMap::new()),
            timeout,
            idle,
        }
    }

    /// The per-request timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    fn slot(&self, id: &str) -> Slot {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots.entry(id.to_owned()).or_default().clone()
    }

    /// Whether a connection to server `id` is open now (a stdio server's process is running).
    pub async fn is_connected(&self, id: &str) -> bool {
        self.slot(id).lock().await.is_some()
    }

    /// Closes the connection to server `id`, if any (stopping a stdio server's process); the
    /// next use connects again. Called when a server is changed or removed.
    pub async fn forget(&self, id: &str) {
        let slot = self.slot(id);
        slot.lock().await.take();
    }

    /// The open connection to `spec`, made if there is none (or its config changed).
    async fn connect(&self, spec: &ServerSpec) -> Result<Arc<Conn>, McpError> {
        let slot = self.slot(&spec.id);
        let mut guard = slot.lock().await;
        if let Some(conn) = guard.as_ref()
            && conn.launch == spec.launch
            && !conn.client.is_transport_closed()
        {
            return Ok(conn.clone());
        }
        guard.take();
        let start = tokio::time::timeout(self.timeout, start(spec));
        let client = match start.await {
            Ok(r) => r?,
            Err(_) => {
                return Err(McpError::Start {
                    server: spec.name.clone(),
                    detail: format!("no answer within {} s", self.timeout.as_secs()),
                });
            }
        };
        let conn = Arc::new(Conn {
            client,
            in_flight: AtomicUsize::new(0),
            last_used: Mutex::new(Instant::now()),
            launch: spec.launch.clone(),
        });
        *guard = Some(conn.clone());
        tracing::info!(server = %spec.name, "MCP server connected");
        Ok(conn)
    }

    /// Drops `conn` if it is still the server's connection (a newer one stays).
    async fn drop_conn(&self, spec: &ServerSpec, conn: &Arc<Conn>) {
        let slot = self.slot(&spec.id);
        let mut guard = slot.lock().await;
        if guard.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
            guard.take();
        }
    }

    /// After a use: a stdio server still unused `idle` from now is stopped.
    fn schedule_idle_stop(self: &Arc<Self>, spec: &ServerSpec, conn: &Arc<Conn>) {
        if !matches!(spec.launch, Launch::Stdio { .. }) {
            return;
        }
        let hub = Arc::downgrade(self);
        let conn = Arc::downgrade(conn);
        let spec = spec.clone();
        let idle = self.idle;
        tokio::spawn(async move {
            tokio::time::sleep(idle).await;
            let (Some(hub), Some(conn)) = (hub.upgrade(), conn.upgrade()) else {
                return;
            };
            let unused = conn.in_flight.load(Ordering::SeqCst) == 0
                && conn
                    .last_used
                    .lock()
                    .map(|t| t.elapsed() >= idle)
                    .unwrap_or(true);
            if unused {
                tracing::info!(server = %spec.name, "stopping idle MCP server");
                hub.drop_conn(&spec, &conn).await;
            }
        });
    }

    /// Runs `op` on the server's connection with the timeout; a broken connection or a
    /// timeout drops it (the next use restarts the server).
    async fn with_conn<T, F, Fut>(self: &Arc<Self>, spec: &ServerSpec, op: F) -> Result<T, McpError>
    where
        F: FnOnce(Arc<Conn>) -> Fut,
        Fut: Future<Output = Result<T, ServiceError>>,
    {
        let conn = self.connect(spec).await?;
        conn.in_flight.fetch_add(1, Ordering::SeqCst);
        let result = tokio::time::timeout(self.timeout, op(conn.clone())).await;
        conn.in_flight.fetch_sub(1, Ordering::SeqCst);
        if let Ok(mut t) = conn.last_used.lock() {
            *t = Instant::now();
        }
        let server = spec.name.clone();
        let out = match result {
            Err(_) => {
                self.drop_conn(spec, &conn).await;
                Err(McpError::Timeout {
                    server,
                    seconds: self.timeout.as_secs().max(1),
                })
            }
            Ok(Err(ServiceError::McpError(e))) => Err(McpError::Refused {
                server,
                detail: spec.scrub(&e.message),
            }),
            Ok(Err(e)) => {
                self.drop_conn(spec, &conn).await;
                Err(McpError::Lost {
                    server,
                    detail: spec.scrub(&e.to_string()),
                })
            }
            Ok(Ok(v)) => Ok(v),
        };
        self.schedule_idle_stop(spec, &conn);
        out
    }

    /// The server's tools (`tools/list`, every page), starting it if needed.
    ///
    /// Errors: [`McpError`] naming the server.
    pub async fn list_tools(
        self: &Arc<Self>,
        spec: &ServerSpec,
    ) -> Result<Vec<RemoteTool>, McpError> {
        let tools = self
            .with_conn(spec, |c| async move { c.client.list_all_tools().await })
            .await?;
        Ok(tools
            .into_iter()
            .map(|t| RemoteTool {
                name: t.name.to_string(),
                description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: Value::Object((*t.input_schema).clone()),
            })
            .collect())
    }

    /// Calls `tool` with `arguments` (a JSON object), starting the server if needed.
    ///
    /// Errors: [`McpError`] naming the server; a tool that ran and failed is `Ok` with
    /// `is_error` set.
    pub async fn call_tool(
        self: &Arc<Self>,
        spec: &ServerSpec,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallOutcome, McpError> {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let result = self
            .with_conn(spec, |c| async move { c.client.call_tool(params).await })
            .await?;
        Ok(CallOutcome {
            is_error: result.is_error == Some(true),
            text: result_text(&result.content, result.structured_content.as_ref()),
        })
    }
}

/// The text of a result: text parts as they are, other parts named in brackets.
fn result_text<C: serde::Serialize>(content: &[C], structured: Option<&Value>) -> String {
    let mut parts = Vec::new();
    for c in content {
        let v = serde_json::to_value(c).unwrap_or(Value::Null);
        match v["type"].as_str() {
            Some("text") => parts.push(v["text"].as_str().unwrap_or_default().to_owned()),
            Some("resource_link") | Some("resource") => {
                let uri = v["uri"]
                    .as_str()
                    .or_else(|| v["resource"]["uri"].as_str())
                    .unwrap_or("");
                let text = v["resource"]["text"].as_str();
                parts.push(text.map_or_else(|| format!("[resource {uri}]"), str::to_owned));
            }
            Some(kind) => parts.push(format!(
                "[{kind} {}]",
                v["mimeType"].as_str().unwrap_or("content")
            )),
            None => {}
        }
    }
    if parts.is_empty()
        && let Some(s) = structured
    {
        return s.to_string();
    }
    parts.join("\n")
}

/// Whether `url`'s host is this machine (`localhost`, `127.x`, `::1`).
fn is_loopback_url(url: &str) -> bool {
    let Ok(parsed) = url::Url::parse(url.trim()) else {
        return false;
    };
    match parsed.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Starts a connection: spawns the process or opens the HTTP session, then the handshake.
async fn start(spec: &ServerSpec) -> Result<Client, McpError> {
    let fail = |detail: String| McpError::Start {
        server: spec.name.clone(),
        detail: spec.scrub(&detail),
    };
    match &spec.launch {
        Launch::Stdio { command, args, env } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).env_clear().kill_on_drop(true);
            for key in INHERITED_ENV {
                if let Some(v) = std::env::var_os(key) {
                    cmd.env(key, v);
                }
            }
            cmd.envs(env.iter().map(|(k, v)| (k, v)));
            let (transport, _stderr) = TokioChildProcess::builder(cmd)
                .stderr(std::process::Stdio::null())
                .spawn()
                .map_err(|e| fail(format!("`{command}`: {e}")))?;
            ClientConfig::default()
                .serve(transport)
                .await
                .map_err(|e| fail(e.to_string()))
        }
        Launch::Http { url, bearer } => {
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            if let Some(token) = bearer {
                config = config.auth_header(token.clone());
            }
            // No redirects: the token goes to this URL's server and nowhere else.
            let mut builder =
                reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
            // A server on this machine is reached directly: the environment's HTTP_PROXY would
            // otherwise get its requests, token included.
            if is_loopback_url(url) {
                builder = builder.no_proxy();
            }
            let http = builder.build().map_err(|e| fail(e.to_string()))?;
            let transport = StreamableHttpClientTransport::with_client(http, config);
            ClientConfig::default()
                .serve(transport)
                .await
                .map_err(|e| fail(e.to_string()))
        }
    }
}

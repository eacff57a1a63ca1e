//! How the server is set up ([`ServerConfig`]) and what every handler gets ([`AppState`]).

use engram_service::Engram;
use secrecy::SecretString;
use std::path::PathBuf;
use std::sync::Arc;

/// Default cap on request bodies, in bytes (8 MiB: agent files with long histories fit).
pub const DEFAULT_BODY_LIMIT: usize = 8 * 1024 * 1024;

/// Cap on the bodies of the routes that upload a file into a folder, in bytes: a document of
/// the largest size Engram reads ([`MAX_DOCUMENT_BYTES`](engram_service::MAX_DOCUMENT_BYTES),
/// 64 MiB) as base64 in the `/app` command's JSON (4 bytes per 3), plus 1 MiB for the rest of
/// the request (the JSON envelope, or a multipart form's headers). About 86 MiB.
pub const DEFAULT_UPLOAD_LIMIT: usize =
    (engram_service::MAX_DOCUMENT_BYTES as usize).div_ceil(3) * 4 + 1024 * 1024;

/// Whether requests need the bearer token.
#[derive(Clone)]
pub enum Auth {
    /// `Authorization: Bearer <token>` is required on every route but the health check.
    Token(SecretString),
    /// No token (chosen explicitly with `--no-auth`, for local scripting).
    Disabled,
}

/// How the server behaves.
#[derive(Clone)]
pub struct ServerConfig {
    /// Token check.
    pub auth: Auth,
    /// Largest accepted request body, in bytes; larger bodies get 413.
    pub body_limit: usize,
    /// Largest accepted body on the file upload routes (`/v1/folders/{id}/upload`, its
    /// `/v1/sources/…` twin and `/app/upload_folder_file`), in bytes; larger bodies get 413.
    pub upload_limit: usize,
    /// Origins allowed besides loopback `http(s)://localhost|127.0.0.1|[::1][:port]`
    /// (e.g. the desktop shell's `tauri://localhost`), compared exactly.
    pub extra_origins: Vec<String>,
    /// Names (DNS names or IP addresses, without ports) the server is reached by besides
    /// loopback, when it listens beyond it over TLS: requests whose `Host` names one pass the
    /// guard, as do pages from `https://` one of them. Empty: loopback names only.
    pub hosts: Vec<String>,
    /// A built web UI (`ui/dist`) to serve at `/` beside the API, so a browser can use Engram
    /// through the `/app` routes. Its files need no token; the API routes still do.
    pub ui_dir: Option<PathBuf>,
}

impl ServerConfig {
    /// A config with `auth`, the default body limits and no extra origins.
    pub fn new(auth: Auth) -> Self {
        Self {
            auth,
            body_limit: DEFAULT_BODY_LIMIT,
            upload_limit: DEFAULT_UPLOAD_LIMIT,
            extra_origins: Vec::new(),
            hosts: Vec::new(),
            ui_dir: None,
        }
    }
}

/// What every handler gets.
#[derive(Clone)]
pub(crate) struct AppState {
    pub engram: Arc<Engram>,
    /// Whether requests carry the user's token. Without it (`--no-auth`) any local program
    /// could call the API, so acts that run programs as the user (adding or accepting an MCP
    /// server) are refused.
    pub authenticated: bool,
}

//! What the shell keeps while it runs.

use crate::rest;
use engram_service::Engram;
use std::sync::Arc;

/// The shell's managed state. `engram` is an `Arc` because the REST API server, when switched
/// on, serves the same engine from its own task.
pub struct Desktop {
    /// The engine.
    pub engram: Arc<Engram>,
    /// The local REST API, when the user switched it on.
    pub rest: rest::RestApi,
    /// The remote server the window works on instead of `engram`, when connected.
    pub remote: crate::remote_link::RemoteLink,
}

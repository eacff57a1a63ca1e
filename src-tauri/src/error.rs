//! Errors across IPC: the engine's `{code, message, details?}`, so the UI handles the desktop
//! and the HTTP transport alike.

use engram_core::{Error, ErrorBody};
use serde::Serialize;

/// A failed command as the window receives it (the rejected `invoke` promise's value).
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub struct IpcError(ErrorBody);

impl From<Error> for IpcError {
    fn from(e: Error) -> Self {
        if matches!(
            e,
            Error::Storage(_) | Error::Internal(_) | Error::Secrets(_)
        ) {
            tracing::warn!(error = %e, "command failed");
        }
        Self(ErrorBody::from(&e))
    }
}

impl IpcError {
    /// An error as another engine sent it (a remote server's), passed on unchanged.
    pub fn from_body(body: ErrorBody) -> Self {
        Self(body)
    }
}

/// A command's result.
pub type IpcResult<T> = Result<T, IpcError>;

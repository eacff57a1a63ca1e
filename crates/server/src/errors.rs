//! Errors on the wire as Letta (FastAPI) sends them: a status and `{"detail": "…"}`.
//!
//! Engine errors map by kind: not found → 404, invalid input → 400 (422 for bodies that parse
//! but do not fit), conflict → 409, provider trouble → 502 (400 when the provider is not set
//! up), storage/keychain/bugs → 500. The engine's stable `code` rides along so clients that
//! know Engram can act on it.

use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use engram_core::Error;
use engram_core::error::ProviderFault;
use serde_json::json;

/// An error response: status, Letta's `detail` text and Engram's error code.
#[derive(Debug)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// One line for people.
    pub detail: String,
    /// Engram's stable code (`not_found`, `invalid_input`…).
    pub code: &'static str,
    /// For `stale_version` (409): the block as stored now, in Letta's `Block` shape (with its
    /// `version`), sent as `current` next to `detail` so a client can offer a conflict choice.
    pub current: Option<serde_json::Value>,
}

impl ApiError {
    /// An error with a status and detail text.
    pub fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Self {
        Self {
            status,
            detail: detail.into(),
            code,
            current: None,
        }
    }

    /// 400 with `detail`.
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_input", detail)
    }

    /// 404 with `detail`.
    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", detail)
    }
}

/// The status an engine error is reported with.
pub fn status_of(e: &Error) -> StatusCode {
    match e {
        Error::NotFound { .. } => StatusCode::NOT_FOUND,
        Error::Invalid(_) | Error::ContextWindowTooSmall { .. } => StatusCode::BAD_REQUEST,
        Error::Conflict(_)
        | Error::StaleVersion { .. }
        | Error::LeaseLost { .. }
        | Error::AgentBusy { .. } => StatusCode::CONFLICT,
        Error::Provider {
            fault: ProviderFault::NotConfigured,
            ..
        } => StatusCode::BAD_REQUEST,
        Error::Provider { .. } => StatusCode::BAD_GATEWAY,
        Error::Cancelled => StatusCode::CONFLICT,
        Error::NotAvailable(_) => StatusCode::NOT_IMPLEMENTED,
        Error::Secrets(_) | Error::Storage(_) | Error::Internal(_) => {
            StatusCode::INTERNAL_SERVER_ERROR
        }
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        let mut out = Self::new(status_of(&e), e.code(), e.to_string());
        if let Error::StaleVersion { current, .. } = &e {
            out.current = Some(crate::shapes::block(current));
        }
        out
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::warn!(status = %self.status, detail = %self.detail, "request failed");
        }
        let mut body = json!({"detail": self.detail, "code": self.code});
        if let Some(current) = self.current {
            body["current"] = current;
        }
        (self.status, Json(body)).into_response()
    }
}

/// The body limit, in bytes, of the route that answered 413 (set by the router's limit layers,
/// read when the answer gets its JSON body).
#[derive(Clone, Copy, Debug)]
pub(crate) struct BodyLimit(pub(crate) usize);

/// Gives error responses that axum or tower-http produced with a plain-text or empty body
/// (413 from the body limit, 405, unmatched extractors) Letta's JSON shape. A 413 names the
/// route's limit.
pub async fn json_for_bare_errors(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !status.is_client_error() && !status.is_server_error() || is_json {
        return response;
    }
    let detail = match (status, response.extensions().get::<BodyLimit>()) {
        (StatusCode::PAYLOAD_TOO_LARGE, Some(BodyLimit(limit))) => format!(
            "request body too large: this route takes at most {:.1} MiB ({limit} bytes)",
            *limit as f64 / (1024.0 * 1024.0)
        ),
        (StatusCode::PAYLOAD_TOO_LARGE, None) => "request body too large".to_owned(),
        (other, _) => other
            .canonical_reason()
            .unwrap_or("request failed")
            .to_owned(),
    };
    let code = match status {
        StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::NOT_FOUND => "not_found",
        _ => "invalid_input",
    };
    ApiError::new(status, code, detail).into_response()
}

/// Handler result.
pub type ApiResult<T> = Result<T, ApiError>;

/// An engine error as `{code, message, details?}` with the status the `/v1` routes would give.
pub(crate) struct AppError(pub(crate) Error);

impl From<Error> for AppError {
    fn from(e: Error) -> Self {
        Self(e)
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = status_of(&self.0);
        if status.is_server_error() {
            tracing::warn!(%status, error = %self.0, "app command failed");
        }
        (status, Json(engram_core::ErrorBody::from(&self.0))).into_response()
    }
}

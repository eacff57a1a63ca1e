//! Extractors whose rejections are Letta-shaped errors instead of axum's plain text.

use crate::errors::ApiError;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

/// A JSON body; malformed JSON is 400, JSON of the wrong shape 422, a body over the limit 413.
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(Body(v)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

fn json_rejection(r: JsonRejection) -> ApiError {
    let status = r.status();
    let (status, code) = match r {
        JsonRejection::JsonSyntaxError(_) => (StatusCode::BAD_REQUEST, "invalid_input"),
        JsonRejection::JsonDataError(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_input"),
        JsonRejection::MissingJsonContentType(_) => {
            (StatusCode::UNSUPPORTED_MEDIA_TYPE, "invalid_input")
        }
        _ if status == StatusCode::PAYLOAD_TOO_LARGE => (status, "payload_too_large"),
        _ => (status, "invalid_input"),
    };
    ApiError::new(status, code, r.body_text())
}

/// Query parameters; ones that do not parse are 422 with the reason.
pub struct Params<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(v)) => Ok(Params(v)),
            Err(r @ QueryRejection::FailedToDeserializeQueryString(_)) => Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_input",
                r.body_text(),
            )),
            Err(r) => Err(ApiError::bad_request(r.body_text())),
        }
    }
}

/// A command's arguments: a JSON object; anything else is 400 `invalid_input` (415 without a
/// JSON content type, 413 over the body limit).
pub(crate) struct Args<T>(pub(crate) T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Args<T> {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Response> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(Args(v)),
            Err(rejection) => {
                let status = match rejection {
                    JsonRejection::MissingJsonContentType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    ref r if r.status() == StatusCode::PAYLOAD_TOO_LARGE => r.status(),
                    _ => StatusCode::BAD_REQUEST,
                };
                let body = engram_core::ErrorBody {
                    code: "invalid_input".into(),
                    message: rejection.body_text(),
                    details: None,
                };
                Err((status, axum::Json(body)).into_response())
            }
        }
    }
}

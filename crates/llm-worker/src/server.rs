//! The HTTP side: `GET /v1/models` and `POST /v1/chat/completions` (streamed as server-sent
//! events or whole), behind a bearer token, on loopback only.

use crate::api::{self, ChatRequest};
use crate::engine::{Event, Failure, Job, ModelFacts};
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::stream::{self, StreamExt as _};
use serde_json::{Value, json};
use std::convert::Infallible;
use std::sync::Arc;
use tokio::sync::mpsc;

/// What every handler shares.
pub struct AppState {
    /// The model's id in the API.
    pub name: String,
    /// The loaded model.
    pub facts: ModelFacts,
    /// The generator's queue.
    pub jobs: mpsc::UnboundedSender<Job>,
    /// The bearer token every request must carry.
    pub token: String,
}

/// The router with its routes and the token check.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat))
        .layer(middleware::from_fn_with_state(state.clone(), authorize))
        // Agent prompts with memory and tools are large, but not this large.
        .layer(axum::extract::DefaultBodyLimit::max(16 * 1024 * 1024))
        .with_state(state)
}

/// Refuses requests without `Authorization: Bearer <token>` (401), compared in constant time.
async fn authorize(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if !same_secret(given.as_bytes(), state.token.as_bytes()) {
        return error(401, "invalid_api_key", "a valid bearer token is required");
    }
    next.run(req).await
}

/// Equality that takes as long for any mismatch of equal-length inputs.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn error(status: u16, code: &str, message: &str) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, axum::Json(api::error_body(code, message))).into_response()
}

fn failure(f: &Failure) -> Response {
    error(f.status, f.code, &f.message)
}

async fn models(State(state): State<Arc<AppState>>) -> Response {
    axum::Json(json!({
        "object": "list",
        "data": [{
            "id": state.name, "object": "model", "owned_by": "engram",
            "context_window": state.facts.n_ctx,
            "meta": {"n_ctx_train": state.facts.n_ctx_train},
        }],
    }))
    .into_response()
}

async fn chat(State(state): State<Arc<AppState>>, body: axum::body::Bytes) -> Response {
    let req: ChatRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return error(
                400,
                "invalid_request_error",
                &format!("bad request body: {e}"),
            );
        }
    };
    if let Err(why) = req.validate() {
        return error(400, "invalid_request_error", &why);
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    let stream = req.stream;
    let include_usage = req.stream_options.as_ref().is_some_and(|o| o.include_usage);
    if state
        .jobs
        .send(Job {
            request: req,
            events: tx,
        })
        .is_err()
    {
        return error(500, "server_error", "the model is not running");
    }
    // The first event says whether the request is answered at all.
    match rx.recv().await {
        Some(Event::Started) => {}
        Some(Event::Failed(f)) => return failure(&f),
        _ => return error(500, "server_error", "the model stopped before answering"),
    }
    let id = format!("chatcmpl-{:x}", now_nanos());
    let created = now_secs();
    let model = state.name.clone();
    if !stream {
        return whole(rx, &id, &model, created).await;
    }
    let head = api::delta_chunk(
        &id,
        &model,
        created,
        json!({"role": "assistant", "content": ""}),
    );
    let events = stream::once(async move { head })
        .chain(
            stream::unfold((rx, false), move |(mut rx, done)| {
                let (id, model) = (id.clone(), model.clone());
                async move {
                    if done {
                        return None;
                    }
                    let chunks: Vec<Value> = match rx.recv().await {
                        Some(Event::Delta(delta)) => {
                            vec![api::delta_chunk(&id, &model, created, delta)]
                        }
                        Some(Event::Finished {
                            finish_reason,
                            usage,
                            ..
                        }) => {
                            let mut out =
                                vec![api::finish_chunk(&id, &model, created, finish_reason)];
                            if include_usage {
                                out.push(api::usage_chunk(&id, &model, created, usage));
                            }
                            return Some((out, (rx, true)));
                        }
                        Some(Event::Failed(f)) => {
                            let body = api::error_body(f.code, &f.message);
                            return Some((vec![body], (rx, true)));
                        }
                        Some(Event::Started) => Vec::new(),
                        None => return None,
                    };
                    Some((chunks, (rx, false)))
                }
            })
            .flat_map(stream::iter),
        )
        .map(|chunk| Ok::<_, Infallible>(SseEvent::default().data(chunk.to_string())))
        .chain(stream::once(async {
            Ok::<_, Infallible>(SseEvent::default().data("[DONE]"))
        }));
    Sse::new(events).into_response()
}

/// A non-streamed answer: waits for the end and sends the whole message.
async fn whole(
    mut rx: mpsc::UnboundedReceiver<Event>,
    id: &str,
    model: &str,
    created: u64,
) -> Response {
    while let Some(event) = rx.recv().await {
        match event {
            Event::Finished {
                message,
                finish_reason,
                usage,
            } => {
                return axum::Json(api::completion(
                    id,
                    model,
                    created,
                    message,
                    finish_reason,
                    usage,
                ))
                .into_response();
            }
            Event::Failed(f) => return failure(&f),
            Event::Started | Event::Delta(_) => {}
        }
    }
    error(500, "server_error", "the model stopped before answering")
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn now_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::same_secret;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
        assert!(!same_secret(b"", b"abc"));
    }
}

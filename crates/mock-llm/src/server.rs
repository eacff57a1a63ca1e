//! The HTTP server: routes, shared state (queue, request log, violations) and turning a
//! [`Reply`] into an HTTP response for either API.

use axum::serve::ListenerExt;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::limits::Limits;
use crate::state::{Log, Shared, StreamStyle, lock};
use crate::view::Api;
use crate::wire::{Answer, Usage, sse_body, unix_now};
use crate::{Recorded, Reply, Script, anthropic, control, embeddings, openai, validate};

/// A running mock model server on `127.0.0.1`. It serves on a tokio task of the runtime that
/// started it, and shuts down when dropped (hanging and delayed requests are let go at once).
pub struct MockLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl MockLlm {
    /// Starts a server on `127.0.0.1` with a free port.
    ///
    /// # Panics
    /// When no port can be bound on the loopback interface (a broken test machine).
    pub async fn start(script: Script) -> MockLlm {
        MockLlm::start_on(0, script)
            .await
            .expect("mock-llm: cannot bind a port on 127.0.0.1")
    }

    /// Starts a server on `127.0.0.1:port` (0 = any free port).
    ///
    /// # Errors
    /// When the port cannot be bound.
    pub async fn start_on(port: u16, script: Script) -> std::io::Result<MockLlm> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let (shutdown, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            script,
            queue: Mutex::new(VecDeque::new()),
            log: Mutex::new(Log::default()),
            counter: AtomicU64::new(1),
            style: Mutex::new(StreamStyle::default()),
            reject_invalid: AtomicBool::new(false),
            limits: Mutex::new(None),
            refusals: AtomicU64::new(0),
            prompt_counts: Mutex::new(Vec::new()),
            shutdown,
        });
        let router = router(shared.clone());
        let mut stop = shared.shutdown.subscribe();
        tokio::spawn(async move {
            let signal = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            // Streamed chunks are small writes: without TCP_NODELAY, Nagle holds each one back
            // until the client's delayed ACK (~40 ms).
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            if let Err(e) = axum::serve(listener, router)
                .with_graceful_shutdown(signal)
                .await
            {
                tracing::warn!(error = %e, "mock-llm server stopped with an error");
            }
        });
        tracing::debug!(%addr, "mock-llm listening");
        Ok(MockLlm { addr, shared })
    }

    /// The OpenAI-style base URL, `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The server root without `/v1`, `http://127.0.0.1:PORT` (Anthropic clients usually take
    /// this and add `/v1/messages` themselves).
    pub fn root_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Appends a canned reply; queued replies are used first, one per chat request.
    pub fn push(&self, reply: Reply) {
        lock(&self.shared.queue).push_back(reply);
    }

    /// Appends several canned replies in order.
    pub fn push_all(&self, replies: impl IntoIterator<Item = Reply>) {
        lock(&self.shared.queue).extend(replies);
    }

    /// How many pushed replies have not been used yet.
    pub fn pending(&self) -> usize {
        lock(&self.shared.queue).len()
    }

    /// Every request received so far, in order (all endpoints).
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.log).requests.clone()
    }

    /// The chat requests only (`/v1/chat/completions` and `/v1/messages`), in order.
    pub fn chat_requests(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| is_chat_path(&r.path))
            .collect()
    }

    /// Protocol violations found so far, each naming the request index (into
    /// [`MockLlm::requests`]) and the problem. Empty means every request was valid.
    pub fn violations(&self) -> Vec<String> {
        lock(&self.shared.log).violations.clone()
    }

    /// Forgets the recorded requests and violations (the queue is kept).
    pub fn clear_log(&self) {
        *lock(&self.shared.log) = Log::default();
    }

    /// Changes how streams are paced and shaped, for the following requests.
    pub fn set_stream_style(&self, style: StreamStyle) {
        *lock(&self.shared.style) = style;
    }

    /// When on, a chat request with violations is answered with a 400 naming them (as a real
    /// provider would) instead of being answered normally. Off by default; violations are
    /// recorded either way.
    pub fn reject_invalid(&self, on: bool) {
        self.shared.reject_invalid.store(on, Ordering::Relaxed);
    }

    /// Counts, limits and misbehaves like a real server from now on (see [`Limits`]); `None`
    /// goes back to the default (usage estimated from the body size, no refusals).
    pub fn set_limits(&self, limits: Option<Limits>) {
        self.shared.set_limits(limits);
    }

    /// How many chat requests were refused for exceeding [`Limits::context_window`].
    pub fn refusals(&self) -> u64 {
        self.shared.refusals.load(Ordering::Relaxed)
    }

    /// The prompt tokens of every chat request counted under [`Limits`] since the last call
    /// (refused ones included), in order; empties the list.
    pub fn take_prompt_counts(&self) -> Vec<u64> {
        std::mem::take(&mut *lock(&self.shared.prompt_counts))
    }
}

impl std::fmt::Debug for MockLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockLlm")
            .field("addr", &self.addr)
            .field("script", &self.shared.script)
            .finish()
    }
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        self.shared.shutdown.send_replace(true);
    }
}

fn is_chat_path(path: &str) -> bool {
    path.ends_with("/chat/completions") || path.ends_with("/messages")
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route(
            "/v1/chat/completions",
            post(|s, u, h, b| chat(Api::OpenAi, s, u, h, b)),
        )
        .route(
            "/v1/messages",
            post(|s, u, h, b| chat(Api::Anthropic, s, u, h, b)),
        )
        .route("/v1/embeddings", post(embeddings_handler))
        .route("/v1/models", get(models))
        .route("/v1/models/{id}", get(model))
        .route("/_mock/push", post(control::push))
        .route("/_mock/requests", get(control::requests))
        .route("/_mock/violations", get(control::violations))
        .route("/_mock/limits", post(control::limits))
        .fallback(unknown)
        .with_state(shared)
}

type St = State<Arc<Shared>>;

async fn chat(api: Api, State(shared): St, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let path = uri.path().to_string();
    let json: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            let index = shared.record(&path, &headers, Value::Null);
            shared.violate(index, &path, &format!("body is not valid JSON: {e}"));
            return error_response(
                api,
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "request body is not valid JSON",
            );
        }
    };
    let index = shared.record(&path, &headers, json.clone());
    let body_chars = String::from_utf8_lossy(&body).chars().count();
    let (view, problems) = match api {
        Api::OpenAi => (
            openai::parse(&json, body_chars),
            validate::openai_chat(&json),
        ),
        Api::Anthropic => (
            anthropic::parse(&json, body_chars),
            validate::anthropic_messages(&json, &headers),
        ),
    };
    for problem in &problems {
        shared.violate(index, &path, problem);
    }
    if !problems.is_empty() && shared.reject_invalid.load(Ordering::Relaxed) {
        let message = format!(
            "mock-llm rejected an invalid request: {}",
            problems.join("; ")
        );
        return error_response(
            api,
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            &message,
        );
    }
    tracing::debug!(
        index,
        path,
        messages = view.messages.len(),
        "mock-llm chat request"
    );
    let limits = lock(&shared.limits).clone();
    let counted = limits
        .as_ref()
        .map(|l| l.count(&json, api == Api::Anthropic));
    if let (Some(limits), Some(tokens)) = (&limits, counted) {
        lock(&shared.prompt_counts).push(tokens);
        if let Some(window) = limits.context_window.filter(|w| tokens > *w) {
            shared.refusals.fetch_add(1, Ordering::Relaxed);
            return context_length_response(api, window, tokens);
        }
    }
    let ramble = limits.as_ref().is_some_and(|l| l.ramble_summaries);
    let reply = shared.next_reply(&view, ramble);
    let Some(reply) = shared.settle(reply).await else {
        return error_response(
            api,
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "mock-llm is shutting down",
        );
    };
    let model = if view.model.is_empty() {
        "mock-small".to_string()
    } else {
        view.model.clone()
    };
    let style = lock(&shared.style).clone();
    match reply {
        Reply::Error {
            status,
            body,
            retry_after,
        } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = (status, axum::Json(body)).into_response();
            if let Some(secs) = retry_after {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            }
            response
        }
        Reply::ContextLengthExceeded => {
            // The request that triggers this in a test is usually small; claim it is over the
            // model's usual limit.
            let tokens = counted.unwrap_or(view.estimated_tokens() as u64);
            let window = match api {
                Api::OpenAi => 8192,
                Api::Anthropic => 200_000,
            };
            context_length_response(api, window, tokens.max(window + 1))
        }
        Reply::Garbage => {
            let id = format!("garbage{}", shared.next_id());
            match (api, view.stream) {
                (Api::OpenAi, false) => json_text_response(openai::garbage_body(&openai::Meta {
                    id: &id,
                    model: &model,
                    created: unix_now(),
                })),
                (Api::OpenAi, true) => sse_response(sse_body(
                    openai::garbage_frames(&openai::Meta {
                        id: &id,
                        model: &model,
                        created: unix_now(),
                    }),
                    style.chunk_delay,
                    true,
                )),
                (Api::Anthropic, false) => json_text_response(anthropic::garbage_body(&id, &model)),
                (Api::Anthropic, true) => sse_response(sse_body(
                    anthropic::garbage_frames(&id, &model),
                    style.chunk_delay,
                    true,
                )),
            }
        }
        reply => {
            let prefix = match api {
                Api::OpenAi => "call_mock",
                Api::Anthropic => "toolu_mock",
            };
            let Some(answer) =
                Answer::from_reply(&reply, || format!("{prefix}{}", shared.next_id()))
            else {
                // settle() resolved delays and hangs and the faults were matched above, so this
                // is only reachable if a new Reply variant is not handled here yet.
                return error_response(
                    api,
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "server_error",
                    "mock-llm cannot encode this reply",
                );
            };
            let mut usage = Usage::estimate(body_chars, &answer);
            if let Some(tokens) = counted {
                usage.prompt = tokens;
            }
            match api {
                Api::OpenAi => {
                    let id = format!("chatcmpl-mock{}", shared.next_id());
                    let meta = openai::Meta {
                        id: &id,
                        model: &model,
                        created: unix_now(),
                    };
                    if view.stream {
                        let frames = openai::stream_frames(
                            &answer,
                            &meta,
                            usage,
                            openai::include_usage(&json),
                            &style,
                        );
                        sse_response(sse_body(frames, style.chunk_delay, false))
                    } else {
                        axum::Json(openai::completion(&answer, &meta, usage)).into_response()
                    }
                }
                Api::Anthropic => {
                    let id = format!("msg_mock{}", shared.next_id());
                    if view.stream {
                        sse_response(sse_body(
                            anthropic::stream_frames(&answer, &id, &model, usage),
                            style.chunk_delay,
                            false,
                        ))
                    } else {
                        axum::Json(anthropic::message(&answer, &id, &model, usage)).into_response()
                    }
                }
            }
        }
    }
}

fn context_length_response(api: Api, window: u64, tokens: u64) -> Response {
    let body = match api {
        Api::OpenAi => openai::context_length_error(window, tokens),
        Api::Anthropic => anthropic::context_length_error(window, tokens),
    };
    (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
}

fn error_response(api: Api, status: StatusCode, kind: &str, message: &str) -> Response {
    let body = match api {
        Api::OpenAi => openai::error_body(message, kind),
        Api::Anthropic => anthropic::error_body(message, kind),
    };
    (status, axum::Json(body)).into_response()
}

fn sse_response(body: Body) -> Response {
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(body)
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

fn json_text_response(text: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], text).into_response()
}

async fn embeddings_handler(
    State(shared): St,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let index = shared.record(&path, &headers, json.clone());
    match embeddings::respond(&json) {
        Ok(out) => axum::Json(out).into_response(),
        Err(problem) => {
            shared.violate(index, &path, &problem);
            error_response(
                Api::OpenAi,
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                &problem,
            )
        }
    }
}

/// The models the mock claims to serve: two chat models with the context window they state
/// (`context_length`, as OpenRouter and LM Studio say it), then an embedding model, so a model
/// picker has chat and embedding models to tell apart.
const MODELS: [(&str, Option<u32>); 3] = [
    ("mock-small", Some(8192)),
    ("mock-large", Some(32768)),
    ("mock-embed", None),
];

fn model_json(id: &str) -> Value {
    let mut m =
        json!({"id": id, "object": "model", "created": 1_700_000_000, "owned_by": "engram-mock"});
    if let Some((_, Some(window))) = MODELS.iter().find(|(m, _)| *m == id) {
        m["context_length"] = json!(window);
    }
    m
}

async fn models(State(shared): St, uri: Uri, headers: HeaderMap) -> Response {
    shared.record(uri.path(), &headers, Value::Null);
    axum::Json(
        json!({"object": "list", "data": MODELS.iter().map(|(m, _)| model_json(m)).collect::<Vec<_>>()}),
    )
    .into_response()
}

async fn model(
    State(shared): St,
    uri: Uri,
    headers: HeaderMap,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    shared.record(uri.path(), &headers, Value::Null);
    if MODELS.iter().any(|(m, _)| *m == id) {
        axum::Json(model_json(&id)).into_response()
    } else {
        let message = format!("The model `{id}` does not exist");
        (
            StatusCode::NOT_FOUND,
            axum::Json(openai::error_body(&message, "invalid_request_error")),
        )
            .into_response()
    }
}

/// Anything else is recorded as a violation: a client calling a wrong path (say `/v1/v1/…`)
/// should fail the test that caused it, loudly.
async fn unknown(
    State(shared): St,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let index = shared.record(&path, &headers, json);
    shared.violate(index, &path, &format!("unknown endpoint {method} {path}"));
    let message = format!("mock-llm has no endpoint {method} {path}");
    (
        StatusCode::NOT_FOUND,
        axum::Json(openai::error_body(&message, "invalid_request_error")),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_can_be_shared_across_tasks() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<MockLlm>();
    }
}

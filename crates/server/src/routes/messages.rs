//! `/v1/agents/{id}/messages`: send (whole response or SSE stream), list with cursors, cancel.

use super::agent_id;
use crate::AppState;
use crate::errors::{ApiError, ApiResult};
use crate::json::{Body, Params};
use crate::paging::Cursor;
use crate::sse::ChunkMapper;
use axum::Json;
use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use engram_core::{AgentId, LoopStyle, MessageId, RunEvent};
use engram_service::{Engram, MessagePage, Order, letta};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// One message of a request: `content` is text or a list of `{type: "text", text}` parts.
#[derive(Debug, Deserialize)]
pub struct MessageIn {
    role: Option<String>,
    content: Value,
}

/// Letta's `LettaRequest` / `LettaStreamingRequest` (the fields Engram acts on).
#[derive(Debug, Deserialize)]
pub struct SendIn {
    messages: Option<Vec<MessageIn>>,
    /// 1.x shorthand for one user message.
    input: Option<Value>,
    #[serde(default)]
    stream_tokens: bool,
    /// 1.x: `messages.create(streaming=True)` streams from the same route.
    #[serde(default)]
    streaming: bool,
}

fn text_of(content: &Value) -> ApiResult<String> {
    match content {
        Value::String(s) => Ok(s.clone()),
        Value::Array(parts) => Ok(parts
            .iter()
            .filter(|p| p["type"] == "text" || p.get("type").is_none())
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n")),
        _ => Err(ApiError::new(
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_input",
            "message content must be a string or a list of text parts",
        )),
    }
}

impl SendIn {
    /// The user's text: every message joined (Engram runs one user turn per request).
    fn text(&self) -> ApiResult<String> {
        let mut texts = Vec::new();
        for m in self.messages.iter().flatten() {
            match m.role.as_deref().unwrap_or("user") {
                "user" => texts.push(text_of(&m.content)?),
                other => {
                    return Err(ApiError::bad_request(format!(
                        "role '{other}' is not supported here; send user messages"
                    )));
                }
            }
        }
        if let Some(input) = &self.input {
            texts.push(text_of(input)?);
        }
        let text = texts.join("\n");
        if text.trim().is_empty() {
            return Err(ApiError::bad_request(
                "the request has no user message text",
            ));
        }
        Ok(text)
    }
}

/// `POST …/messages`: runs the agent's turn and answers Letta's `LettaResponse`
/// (`{messages, stop_reason, usage}`); with `streaming: true` answers as [`stream`] does.
/// A run that failed part-way still answers 200, with its stop reason and an `error` object.
pub async fn create(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Body(req): Body<SendIn>,
) -> ApiResult<Response> {
    if req.streaming {
        return stream(State(s), Path(id), Body(req)).await;
    }
    let id = agent_id(id);
    let style = s.engram.get_agent(&id)?.agent.loop_style;
    let text = req.text()?;
    let (tx, rx) = mpsc::unbounded_channel();
    drop(rx);
    let outcome = s
        .engram
        .send_message(&id, &text, &tx, CancellationToken::new())
        .await?;
    let mut body = letta::response(&outcome, style);
    if let Some(error) = &outcome.error {
        body["error"] = json!({"error_type": error.code, "message": error.message});
    }
    Ok(Json(body).into_response())
}

/// `POST …/messages/stream`: the run as SSE `data:` chunks (see [`crate::sse`]), then
/// `data: [DONE]`. Errors found before the run starts (unknown agent, no provider set up)
/// are ordinary HTTP errors; later ones are `error_message` chunks.
pub async fn stream(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Body(req): Body<SendIn>,
) -> ApiResult<Response> {
    let id = agent_id(id);
    let style = s.engram.get_agent(&id)?.agent.loop_style;
    let text = req.text()?;
    let (mut events, first) = start_run(s.engram.clone(), id, text).await?;
    let mut mapper = ChunkMapper::new(style, req.stream_tokens);
    let head = futures::stream::iter(first);
    let rest = futures::stream::poll_fn(move |cx| events.poll_recv(cx));
    let chunks = head
        .chain(rest)
        .flat_map(move |e| futures::stream::iter(mapper.map(e)))
        .map(|chunk| Ok::<_, Infallible>(Event::default().data(chunk.to_string())))
        .chain(futures::stream::once(async {
            Ok(Event::default().data("[DONE]"))
        }));
    Ok(Sse::new(chunks)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// Starts the run in its own task (it finishes even if the client goes away, so the stored
/// conversation stays whole) and waits for its first event, or for the error that kept it from
/// starting.
pub(crate) async fn start_run(
    engram: Arc<Engram>,
    agent: AgentId,
    text: String,
) -> engram_core::Result<(mpsc::UnboundedReceiver<RunEvent>, Option<RunEvent>)> {
    start_turn(engram, agent, Turn::Send { text }).await
}

/// Which run to start: a new message, or one of the message actions that replace a turn.
pub(crate) enum Turn {
    /// Send a user message.
    Send {
        /// Its text.
        text: String,
    },
    /// Re-run the last turn (`Engram::regenerate`).
    Regenerate,
    /// Replace a user message and run from there (`Engram::edit_and_resend`).
    Resend {
        /// The user message replaced.
        message: MessageId,
        /// Its new text.
        text: String,
    },
}

/// [`start_run`] for any [`Turn`].
pub(crate) async fn start_turn(
    engram: Arc<Engram>,
    agent: AgentId,
    turn: Turn,
) -> engram_core::Result<(mpsc::UnboundedReceiver<RunEvent>, Option<RunEvent>)> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (failed_tx, failed_rx) = oneshot::channel();
    tokio::spawn(async move {
        let cancel = CancellationToken::new();
        let result = match turn {
            Turn::Send { text } => engram.send_message(&agent, &text, &tx, cancel).await,
            Turn::Regenerate => engram.regenerate(&agent, &tx, cancel).await,
            Turn::Resend { message, text } => {
                engram
                    .edit_and_resend(&agent, &message, &text, &tx, cancel)
                    .await
            }
        };
        if let Err(e) = result {
            let _ = failed_tx.send(e);
        }
    });
    match rx.recv().await {
        Some(first) => Ok((rx, Some(first))),
        // The task dropped its sender: either it reported why it could not start, or it ended.
        None => match failed_rx.await {
            Ok(e) => Err(e),
            Err(_) => Ok((rx, None)),
        },
    }
}

/// Query of `GET …/messages`.
#[derive(Deserialize)]
pub struct ListQuery {
    #[serde(flatten)]
    cursor: Cursor,
}

/// `GET …/messages`: Letta messages, newest first unless `order=asc`, paged by message-id
/// cursors (`after`, `before`) and `limit` (default 100).
pub async fn list(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Params(q): Params<ListQuery>,
) -> ApiResult<Json<Vec<Value>>> {
    let id = agent_id(id);
    let style: LoopStyle = s.engram.get_agent(&id)?.agent.loop_style;
    let page = MessagePage {
        after: q.cursor.after.clone().map(MessageId::from),
        before: q.cursor.before.clone().map(MessageId::from),
        limit: q.cursor.limit.unwrap_or(100),
        order: if q.cursor.descending(true) {
            Order::Desc
        } else {
            Order::Asc
        },
    };
    let messages = s.engram.page_messages(&id, &page)?;
    Ok(Json(
        messages
            .iter()
            .flat_map(|m| letta::letta_messages(m, style))
            .collect(),
    ))
}

/// `POST …/messages/cancel`: stops the agent's runs; `{"cancelled": n}`.
pub async fn cancel(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let id = agent_id(id);
    s.engram.get_agent(&id)?;
    Ok(Json(json!({"cancelled": s.engram.cancel_runs(&id)})))
}

//! What every chat wire format does alike: one call, streamed or not; retrying a stream only
//! until its first delta reached the caller; taking a whole JSON answer when a server ignores
//! `stream: true`. The formats (`openai`, `anthropic`) say only what differs: the path, how an
//! answer body parses, how a stream reads, and how much of `recover` their replies need.

use crate::errors::{ErrorContext, Failure};
use crate::retry::with_retries;
use crate::transport::{Events, Transport, is_event_stream};
use crate::types::{ChatResponse, Delta, ProviderError};
use serde_json::Value;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};

/// Where deltas go as they arrive (the caller's `on_delta`).
pub(crate) type Emit<'a> = &'a (dyn Fn(Delta) + Send + Sync);

/// One chat API's wire format.
pub(crate) trait ChatWire: Sync {
    /// The endpoint below the base URL (`chat/completions`, `messages`).
    const PATH: &'static str;

    /// The client bound to the provider.
    fn transport(&self) -> &Transport;

    /// A whole (non-streamed) answer, as the server sent it (tool-call ids may be empty; the
    /// model's `complete` applies `recover`). `Err` says what is wrong with the body.
    fn parse_response(value: &Value) -> Result<ChatResponse, String>;

    /// Reads an event stream to its end, passing text and reasoning pieces to `emit`, and
    /// returns the answer as the server sent it (as `parse_response`). A stream that stops
    /// before the format's end marker is an error (see [`incomplete`]).
    fn read_stream<'a>(
        &'a self,
        events: Events<'a>,
        emit: Emit<'a>,
    ) -> impl Future<Output = Result<ChatResponse, Failure>> + Send + 'a;
}

/// One call of `wire` with the request `body`: a plain POST when `stream` is false, else a
/// streamed one whose deltas go to `on_delta`. Failures are retried by the transport's policy,
/// but a stream only until a delta has reached the caller (a retry would repeat it).
pub(crate) async fn complete<W: ChatWire>(
    wire: &W,
    body: &Value,
    stream: bool,
    on_delta: Emit<'_>,
) -> Result<ChatResponse, ProviderError> {
    let transport = wire.transport();
    if !stream {
        let value = transport.post_json(W::PATH, body).await?;
        return W::parse_response(&value).map_err(|what| transport.ctx.bad_response(&what));
    }
    let emitted = AtomicBool::new(false);
    let emit = |d: Delta| {
        emitted.store(true, Ordering::Relaxed);
        on_delta(d);
    };
    let (emit, emitted) = (&emit, &emitted);
    with_retries(&transport.retry, move |_| async move {
        stream_once(wire, body, emit).await.map_err(|mut f| {
            if emitted.load(Ordering::Relaxed) {
                f.retryable = false;
            }
            f
        })
    })
    .await
}

/// One streamed attempt: deltas go to `emit` as they arrive.
async fn stream_once<W: ChatWire>(
    wire: &W,
    body: &Value,
    emit: Emit<'_>,
) -> Result<ChatResponse, Failure> {
    let transport = wire.transport();
    let response = transport.post(W::PATH, body).await?;
    if !is_event_stream(&response) {
        // The server ignored `stream: true`; hand the whole answer on as one delta.
        let value = transport.read_json(response).await?;
        let answer = W::parse_response(&value)
            .map_err(|what| Failure::fatal(transport.ctx.bad_response(&what)))?;
        if let Some(reasoning) = &answer.reasoning {
            emit(Delta::Reasoning(reasoning.clone()));
        }
        if !answer.content.is_empty() {
            emit(Delta::Text(answer.content.clone()));
        }
        return Ok(answer);
    }
    wire.read_stream(transport.events(response), emit).await
}

/// The failure for a stream that ended before the answer was complete (no end marker and no
/// finish reason); not retried, as deltas may have gone out.
pub(crate) fn incomplete(ctx: &ErrorContext) -> Failure {
    Failure::fatal(ctx.dropped("the stream ended before the answer was complete"))
}

/// `0.7f32` as `0.7`, not `0.699999988079071` (temperatures go on the wire as JSON numbers).
pub(crate) fn f32_to_f64(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_helpers_keep_their_wire_meaning() {
        assert_eq!(f32_to_f64(0.7), 0.7);
    }
}

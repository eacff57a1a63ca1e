//! Failures: retries, timeouts, classification, and the key never leaking.

use crate::support::{Deltas, KEY, call, call_into, config, dead_base_url, request, serve, sse};
use axum::routing::post;
use engram_core::error::ProviderFault;
use engram_mock_llm::{MockLlm, Reply, Script, StreamStyle};
use engram_providers::{ProviderConfig, ProviderKind, chat_model, list_models};
use futures::StreamExt;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn chat_count(mock: &MockLlm) -> usize {
    mock.chat_requests().len()
}

#[tokio::test]
async fn rate_limit_with_retry_after_waits_then_succeeds() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::rate_limited(Some(1)));
    mock.push(Reply::text("finally"));
    // base_delay is 10 ms, so a wait near 1 s can only come from Retry-After.
    let model = chat_model(config(ProviderKind::OpenAi, &mock.base_url())).unwrap();
    let start = Instant::now();
    let r = model.complete(&request(false), &|_| {}).await.unwrap();
    let waited = start.elapsed();
    assert_eq!(r.content, "finally");
    assert_eq!(chat_count(&mock), 2);
    assert!(
        waited >= Duration::from_millis(950) && waited < Duration::from_millis(1900),
        "{waited:?}"
    );
}

#[tokio::test]
async fn retry_after_is_capped_by_max_delay() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::rate_limited(Some(3600)));
    mock.push(Reply::text("ok"));
    let mut cfg = config(ProviderKind::OpenAi, &mock.base_url());
    cfg.retry.max_delay = Duration::from_millis(200);
    let start = Instant::now();
    call(cfg, true).await.unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn rate_limit_exhausting_retries_is_rate_limited() {
    let mock = MockLlm::start(Script::Queue).await;
    for _ in 0..3 {
        mock.push(Reply::rate_limited(None));
    }
    let e = call(config(ProviderKind::OpenAi, &mock.base_url()), false)
        .await
        .unwrap_err();
    assert_eq!(e.fault, ProviderFault::RateLimited);
    assert_eq!(e.status, Some(429));
    assert_eq!(chat_count(&mock), 3);
}

#[tokio::test]
async fn server_errors_exhaust_retries() {
    for (kind, stream) in [
        (ProviderKind::OpenAi, false),
        (ProviderKind::OpenAi, true),
        (ProviderKind::Anthropic, true),
    ] {
        let mock = MockLlm::start(Script::Queue).await;
        for _ in 0..3 {
            mock.push(Reply::server_error());
        }
        mock.push(Reply::text("never reached"));
        let e = call(config(kind, &mock.base_url()), stream)
            .await
            .unwrap_err();
        assert_eq!(e.fault, ProviderFault::Server, "{e}");
        assert_eq!(e.status, Some(500));
        assert!(e.message.contains("gave up after 2 retries"), "{e}");
        assert_eq!(chat_count(&mock), 3, "1 attempt + max_retries 2");
    }
}

#[tokio::test]
async fn a_server_error_then_success_is_retried_when_streaming() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::server_error());
    mock.push(Reply::text("second time lucky"));
    let deltas = Deltas::default();
    let r = call_into(
        config(ProviderKind::Anthropic, &mock.base_url()),
        true,
        &deltas,
    )
    .await
    .unwrap();
    assert_eq!(r.content, "second time lucky");
    assert_eq!(deltas.text(), "second time lucky", "nothing duplicated");
}

/// A stream that fails after text went out is not retried: the caller already showed it.
#[tokio::test]
async fn a_stream_failing_after_a_delta_is_not_retried() {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let router = axum::Router::new().route(
        "/v1/chat/completions",
        post(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            async {
                sse(&[
                    json!({"choices":[{"index":0,"delta":{"content":"Hel"}}]}).to_string(),
                    json!({"error":{"message":"upstream overloaded","type":"server_error"}})
                        .to_string(),
                ])
            }
        }),
    );
    let base = serve(router).await;
    let deltas = Deltas::default();
    let e = call_into(config(ProviderKind::OpenAi, &base), true, &deltas)
        .await
        .unwrap_err();
    assert_eq!(e.fault, ProviderFault::Server, "{e}");
    assert!(e.message.contains("upstream overloaded"), "{e}");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    assert_eq!(deltas.text(), "Hel");
}

#[tokio::test]
async fn retry_after_as_an_http_date_is_honoured() {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let router = axum::Router::new().route(
        "/v1/chat/completions",
        post(move || {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            async move {
                use axum::response::IntoResponse;
                if n == 0 {
                    // HTTP dates have whole seconds: 2 s ahead means a wait of 1–2 s.
                    let date = (chrono::Utc::now() + chrono::Duration::seconds(2)).format("%a, %d %b %Y %H:%M:%S GMT").to_string();
                    (axum::http::StatusCode::SERVICE_UNAVAILABLE, [("retry-after", date)], "overloaded").into_response()
                } else {
                    axum::Json(json!({"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}]}))
                        .into_response()
                }
            }
        }),
    );
    let base = serve(router).await;
    let start = Instant::now();
    let r = call(config(ProviderKind::OpenAi, &base), false)
        .await
        .unwrap();
    assert_eq!(r.content, "ok");
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    assert!(
        start.elapsed() >= Duration::from_millis(900),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn context_length_is_classified_and_not_retried() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::ContextLengthExceeded);
    let e = call(config(ProviderKind::OpenAi, &mock.base_url()), false)
        .await
        .unwrap_err();
    assert_eq!(e.fault, ProviderFault::ContextLength, "{e}");
    assert!(e.message.contains("maximum context length"), "{e}");
    assert_eq!(chat_count(&mock), 1);
}

#[tokio::test]
async fn other_client_errors_are_bad_requests_with_the_server_message() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::Error {
        status: 400,
        body: json!({"error": {"message": "Invalid value for 'temperature'", "type": "invalid_request_error"}}),
        retry_after: None,
    });
    let e = call(config(ProviderKind::OpenAi, &mock.base_url()), false)
        .await
        .unwrap_err();
    assert_eq!(e.fault, ProviderFault::BadRequest);
    assert!(e.message.contains("Invalid value for 'temperature'"), "{e}");
    assert_eq!(chat_count(&mock), 1);
}

#[tokio::test]
async fn a_hanging_server_times_out_without_retries() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::Hang);
    let mut cfg = config(ProviderKind::OpenAi, &mock.base_url());
    cfg.timeouts.read = Duration::from_millis(300);
    let start = Instant::now();
    let e = call(cfg, true).await.unwrap_err();
    assert_eq!(e.fault, ProviderFault::Timeout, "{e}");
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(chat_count(&mock), 1);
}

#[tokio::test]
async fn slow_start_within_the_read_timeout_is_fine_and_beyond_it_times_out() {
    let mock = MockLlm::start(Script::Queue).await;
    let mut cfg = config(ProviderKind::Anthropic, &mock.base_url());
    cfg.timeouts.read = Duration::from_millis(500);
    let model = chat_model(cfg).unwrap();
    mock.push(Reply::Delayed(
        Duration::from_millis(200),
        Box::new(Reply::text("slow but fine")),
    ));
    assert_eq!(
        model
            .complete(&request(false), &|_| {})
            .await
            .unwrap()
            .content,
        "slow but fine"
    );
    mock.push(Reply::Delayed(
        Duration::from_secs(5),
        Box::new(Reply::text("too slow")),
    ));
    let e = model.complete(&request(false), &|_| {}).await.unwrap_err();
    assert_eq!(e.fault, ProviderFault::Timeout, "{e}");
}

#[tokio::test]
async fn a_stalled_stream_times_out() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.set_stream_style(StreamStyle {
        chunk_delay: Duration::from_millis(800),
        ..StreamStyle::default()
    });
    mock.push(Reply::text("one two three four"));
    let mut cfg = config(ProviderKind::OpenAi, &mock.base_url());
    cfg.timeouts.read = Duration::from_millis(250);
    let e = call(cfg, true).await.unwrap_err();
    assert_eq!(e.fault, ProviderFault::Timeout, "{e}");
    assert!(e.message.contains("stopped streaming"), "{e}");
}

#[tokio::test]
async fn garbage_is_a_bad_response() {
    let mock = MockLlm::start(Script::Queue).await;
    let model = chat_model(config(ProviderKind::OpenAi, &mock.base_url())).unwrap();
    for stream in [false, true] {
        mock.push(Reply::Garbage);
        let e = model.complete(&request(stream), &|_| {}).await.unwrap_err();
        // A stream that breaks off mid-chunk is a dropped connection.
        let expected = if stream {
            ProviderFault::Unreachable
        } else {
            ProviderFault::BadResponse
        };
        assert_eq!(e.fault, expected, "stream={stream}: {e}");
    }
    assert_eq!(chat_count(&mock), 2, "bad responses are not retried");
}

#[tokio::test]
async fn an_unreachable_server_says_where_it_looked() {
    let base = dead_base_url().await;
    let mut cfg = config(ProviderKind::OpenAi, &base);
    cfg.retry.max_retries = 1;
    let e = call(cfg.clone(), true).await.unwrap_err();
    assert_eq!(e.fault, ProviderFault::Unreachable, "{e}");
    assert!(
        e.message
            .contains(&format!("is the server running at {base}?")),
        "{e}"
    );
    let e = list_models(&cfg).await.unwrap_err();
    assert_eq!(e.fault, ProviderFault::Unreachable, "{e}");
}

#[tokio::test]
async fn auth_failures_never_show_the_key() {
    let mock = MockLlm::start(Script::Queue).await;
    // A server that echoes the key it got, as some proxies do.
    mock.push(Reply::Error {
        status: 401,
        body: json!({"error": {"message": format!("Incorrect API key provided: {KEY}"), "type": "invalid_request_error"}}),
        retry_after: None,
    });
    let cfg = config(ProviderKind::OpenAi, &mock.base_url());
    let e = call(cfg.clone(), false).await.unwrap_err();
    assert_eq!(e.fault, ProviderFault::Auth);
    assert_eq!(e.status, Some(401));
    assert!(e.message.contains("check the API key for"), "{e}");
    for text in [
        e.to_string(),
        format!("{e:?}"),
        format!("{cfg:?}"),
        engram_core::Error::from(e).to_string(),
    ] {
        assert!(!text.contains(KEY), "key leaked: {text}");
        assert!(
            !text.contains("0123456789"),
            "part of the key leaked: {text}"
        );
    }
    assert_eq!(chat_count(&mock), 1, "auth failures are not retried");

    mock.push(Reply::Error {
        status: 403,
        body: json!({"type": "error", "error": {"type": "permission_error", "message": "no"}}),
        retry_after: None,
    });
    let e = call(config(ProviderKind::Anthropic, &mock.base_url()), true)
        .await
        .unwrap_err();
    assert_eq!(e.fault, ProviderFault::Auth);
}

/// Dropping the future is how callers cancel: mid-request and mid-backoff, and the model is
/// usable afterwards.
#[tokio::test]
async fn dropping_the_future_cancels_cleanly() {
    let mock = MockLlm::start(Script::Queue).await;
    let mut cfg: ProviderConfig = config(ProviderKind::OpenAi, &mock.base_url());
    cfg.timeouts.read = Duration::from_secs(30);
    cfg.retry.base_delay = Duration::from_secs(30);
    let model = chat_model(cfg).unwrap();
    mock.push(Reply::Hang);
    let req = request(true);
    let cancelled =
        tokio::time::timeout(Duration::from_millis(200), model.complete(&req, &|_| {})).await;
    assert!(cancelled.is_err(), "still hanging when cancelled");
    mock.push(Reply::server_error());
    let cancelled =
        tokio::time::timeout(Duration::from_millis(300), model.complete(&req, &|_| {})).await;
    assert!(cancelled.is_err(), "cancelled during the backoff wait");
    let r = model.complete(&request(false), &|_| {}).await.unwrap();
    assert_eq!(r.content, "ok");
}

#[tokio::test]
async fn a_stream_broken_off_after_headers_says_the_connection_dropped() {
    let router = axum::Router::new().route(
        "/v1/chat/completions",
        post(|| async {
            let first = format!(
                "data: {}\n\n",
                json!({"choices":[{"index":0,"delta":{"content":"Hel"}}]})
            );
            let frames =
                futures::stream::iter([Ok::<_, std::io::Error>(axum::body::Bytes::from(first))])
                    .chain(futures::stream::once(async {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        Err(std::io::Error::other("gone"))
                    }));
            axum::response::Response::builder()
                .header("content-type", "text/event-stream")
                .body(axum::body::Body::from_stream(frames))
                .unwrap()
        }),
    );
    let base = serve(router).await;
    let deltas = Deltas::default();
    let e = call_into(config(ProviderKind::OpenAi, &base), true, &deltas)
        .await
        .unwrap_err();
    // Said as a dropped connection, not as an unreadable answer.
    assert_eq!(e.fault, ProviderFault::Unreachable, "{e}");
    assert!(
        e.message.contains("dropped in the middle of the answer"),
        "{e}"
    );
    assert!(!e.message.contains("cannot read"), "{e}");
    assert_eq!(deltas.text(), "Hel");
}

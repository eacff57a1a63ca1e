//! Faults: HTTP errors, context-length errors, hangs, broken bodies, delays.

use std::time::{Duration, Instant};

use crate::common::*;
use engram_mock_llm::{MockLlm, Reply, Script};
use futures::StreamExt;
use serde_json::{Value, json};

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::rate_limited(Some(2)));
    mock.push(Reply::text("after the retry"));
    let res = post(&mock.base_url(), "/chat/completions", &simple_body(false)).await;
    assert_eq!(res.status(), 429);
    assert_eq!(res.headers()["retry-after"], "2");
    let v: Value = res.json().await.unwrap();
    assert_eq!(v["error"]["code"], "rate_limit_exceeded");
    let v: Value = chat_json(&mock.base_url(), &simple_body(false)).await;
    assert_eq!(v["choices"][0]["message"]["content"], "after the retry");
}

#[tokio::test]
async fn custom_errors_and_500() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::server_error());
    mock.push(Reply::Error {
        status: 503,
        body: json!({"error": {"message": "overloaded"}}),
        retry_after: None,
    });
    let res = post(&mock.base_url(), "/chat/completions", &simple_body(true)).await;
    assert_eq!(res.status(), 500);
    assert!(res.headers().get("retry-after").is_none());
    assert_eq!(
        res.json::<Value>().await.unwrap()["error"]["type"],
        "server_error"
    );
    let res = post(&mock.base_url(), "/chat/completions", &simple_body(false)).await;
    assert_eq!(res.status(), 503);
    assert_eq!(
        res.json::<Value>().await.unwrap(),
        json!({"error": {"message": "overloaded"}})
    );
}

#[tokio::test]
async fn context_length_bodies_for_both_apis() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::ContextLengthExceeded);
    mock.push(Reply::ContextLengthExceeded);
    let res = post(&mock.base_url(), "/chat/completions", &simple_body(true)).await;
    assert_eq!(res.status(), 400);
    let v: Value = res.json().await.unwrap();
    assert_eq!(v["error"]["code"], "context_length_exceeded");
    assert_eq!(v["error"]["type"], "invalid_request_error");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("This model's maximum context length is")
    );
    let body = json!({"model": "claude-x", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]});
    let res = post_anthropic(&mock.base_url(), &body).await;
    assert_eq!(res.status(), 400);
    let v: Value = res.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "invalid_request_error");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("prompt is too long: ")
    );
    assert!(mock.violations().is_empty(), "{:?}", mock.violations());
}

#[tokio::test]
async fn hang_until_the_client_times_out() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::Hang);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let started = Instant::now();
    let err = client
        .post(format!("{}/chat/completions", mock.base_url()))
        .json(&simple_body(false))
        .send()
        .await
        .expect_err("a hung request must time out");
    assert!(err.is_timeout(), "{err}");
    assert!(started.elapsed() >= Duration::from_millis(290));
    // The server is still fine afterwards.
    let v: Value = chat_json(&mock.base_url(), &simple_body(false)).await;
    assert_eq!(v["choices"][0]["message"]["content"], "ok");
}

#[tokio::test]
async fn dropping_the_server_releases_a_hang() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::Hang);
    let url = format!("{}/chat/completions", mock.base_url());
    let pending =
        tokio::spawn(async move { client().post(url).json(&simple_body(false)).send().await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(mock.requests().len(), 1);
    drop(mock);
    let outcome = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .expect("still hanging after drop")
        .unwrap();
    if let Ok(res) = outcome {
        assert_eq!(res.status(), 503);
    }
}

#[tokio::test]
async fn garbage_non_stream_is_not_json() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::Garbage);
    let res = post(&mock.base_url(), "/chat/completions", &simple_body(false)).await;
    assert_eq!(res.status(), 200);
    let text = res.text().await.unwrap();
    assert!(text.starts_with('{'));
    assert!(serde_json::from_str::<Value>(&text).is_err(), "{text}");
}

#[tokio::test]
async fn garbage_stream_breaks_off_mid_chunk() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::Garbage);
    let res = post(&mock.base_url(), "/chat/completions", &simple_body(true)).await;
    assert_eq!(res.status(), 200);
    let mut stream = res.bytes_stream();
    let mut received = Vec::new();
    let mut failed = false;
    while let Some(item) = stream.next().await {
        match item {
            Ok(bytes) => received.extend_from_slice(&bytes),
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    let text = String::from_utf8(received).unwrap();
    assert!(
        failed,
        "the body should end with a transport error; got {text:?}"
    );
    assert!(text.starts_with("data: {"), "{text}");
    assert!(!text.contains("[DONE]"));
    let last = text.rsplit("\n\n").next().unwrap();
    assert!(
        last.starts_with("data: {") && serde_json::from_str::<Value>(&last[6..]).is_err(),
        "{last:?}"
    );
}

#[tokio::test]
async fn delayed_reply_waits() {
    let mock = MockLlm::start(Script::Queue).await;
    mock.push(Reply::Delayed(
        Duration::from_millis(300),
        Box::new(Reply::text("late")),
    ));
    let started = Instant::now();
    let v: Value = chat_json(&mock.base_url(), &simple_body(false)).await;
    assert!(started.elapsed() >= Duration::from_millis(290));
    assert_eq!(v["choices"][0]["message"]["content"], "late");
}

#[tokio::test]
async fn limits_refuse_over_long_prompts_and_report_scaled_usage() {
    use engram_mock_llm::Limits;
    let mock = MockLlm::start(Script::Queue).await;
    let long = "word ".repeat(400); // 2,000 characters: 504 tokens, 630 with a quarter more
    let body = |text: &str| json!({"model": "mock-small", "messages": [{"role": "user", "content": text}]});
    mock.set_limits(Some(Limits {
        context_window: Some(300),
        token_factor: 1.25,
        ramble_summaries: false,
    }));
    let res = post(&mock.base_url(), "/chat/completions", &body(&long)).await;
    assert_eq!(res.status(), 400);
    let v: Value = res.json().await.unwrap();
    assert_eq!(v["error"]["code"], "context_length_exceeded");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("maximum context length is 300 tokens"),
        "{message}"
    );
    assert_eq!(mock.refusals(), 1);

    // 100 characters = 25 tokens, + 4 for the message = 29; a quarter more = 37.
    let v: Value = post(
        &mock.base_url(),
        "/chat/completions",
        &body(&"x".repeat(100)),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(v["usage"]["prompt_tokens"], 37);
    assert_eq!(mock.take_prompt_counts(), vec![630, 37]);
    assert_eq!(mock.refusals(), 1);

    // Off again: no refusal.
    mock.set_limits(None);
    let res = post(&mock.base_url(), "/chat/completions", &body(&long)).await;
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn a_rambling_model_answers_summary_requests_at_length() {
    let mock = MockLlm::start(Script::Brain).await;
    let base = mock.base_url();
    let client = client();
    let limits = client
        .post(format!("{}/_mock/limits", mock.root_url()))
        .json(&json!({"ramble_summaries": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(limits.status(), 200);
    let transcript = "user: my dog is called Rex.\n".repeat(20);
    let body = json!({"model": "mock-small", "max_tokens": 20, "messages": [
        {"role": "system", "content": "Summarise the conversation in at most 50 words."},
        {"role": "user", "content": transcript}]});
    let v: Value = chat_json(&base, &body).await;
    let text = v["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(text.len() > 2 * transcript.len(), "{}", text.len());
    // Requests with tools are answered by the script as usual.
    let v: Value = chat_json(&base, &simple_body(false)).await;
    assert!(v["choices"][0]["message"].is_object());
}

//! A provider's key goes only to the host it was stored for, also when that host answers with a
//! redirect: reqwest drops `Authorization` on a cross-host redirect but not Anthropic's
//! `x-api-key`, and a 307 carries the conversation along. Two real HTTP servers on 127.0.0.1:
//! the configured one redirects, the other records what reaches it.

use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use engram_core::{LlmConfig, NewAgent};
use engram_providers::ProviderKind;
use engram_service::ProviderSetup;
use engram_suite::Home;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

const KEY: &str = "sk-ant-test-NEVER-ELSEWHERE-77";

/// Serves `app` on a free loopback port; returns `http://127.0.0.1:PORT`.
async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn a_redirect_to_another_host_is_not_followed_with_the_key() {
    // The other host: records every request's headers and body.
    let seen: Arc<Mutex<Vec<(HeaderMap, String)>>> = Arc::default();
    let record = seen.clone();
    let elsewhere = serve(axum::Router::new().fallback(move |req: Request| {
        let record = record.clone();
        async move {
            let headers = req.headers().clone();
            let body = axum::body::to_bytes(req.into_body(), 1 << 20)
                .await
                .unwrap_or_default();
            record
                .lock()
                .unwrap()
                .push((headers, String::from_utf8_lossy(&body).into_owned()));
            (StatusCode::INTERNAL_SERVER_ERROR, "recorded").into_response()
        }
    }))
    .await;
    // The configured host: sends every request on, keeping method and body (307).
    let target = elsewhere.clone();
    let configured = serve(axum::Router::new().fallback(move |req: Request| {
        let to = format!("{target}{}", req.uri().path());
        async move { (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, to)]).into_response() }
    }))
    .await;

    let home = Home::new();
    home.engram
        .providers()
        .set(ProviderSetup {
            name: "anthropic".into(),
            kind: Some(ProviderKind::Anthropic),
            base_url: Some(format!("{configured}/v1")),
            api_key: Some(KEY.to_owned().into()),
            ..ProviderSetup::default()
        })
        .unwrap();
    let mut llm = LlmConfig::new("anthropic/claude-test");
    llm.context_window = 32_000;
    let agent = home
        .engram
        .agents()
        .create(NewAgent {
            name: "Ann".into(),
            llm: Some(llm),
            ..NewAgent::default()
        })
        .await
        .unwrap()
        .agent
        .id;
    let (out, _) = engram_suite::chat(
        &home.engram,
        &agent,
        "my secret plans",
        CancellationToken::new(),
    )
    .await;

    let seen = seen.lock().unwrap();
    assert!(
        seen.is_empty(),
        "the other host got {} request(s), first with headers {:?}",
        seen.len(),
        seen.first().map(|(h, _)| h)
    );
    let error = out.error.expect("the run fails");
    assert!(error.message.contains("redirect"), "{}", error.message);
    assert!(!error.message.contains(KEY));
}

#[test]
fn moving_a_provider_to_another_host_takes_its_key_again() {
    let home = Home::new();
    let setup = |base: &str, key: Option<&str>| ProviderSetup {
        name: "openai".into(),
        base_url: Some(base.to_owned()),
        api_key: key.map(|k| k.to_owned().into()),
        ..ProviderSetup::default()
    };
    home.engram
        .providers()
        .set(setup("http://127.0.0.1:9/v1", Some(KEY)))
        .unwrap();
    // Without the key, the stored one would follow the base URL to the new host.
    let err = home
        .engram
        .providers()
        .set(setup("https://collector.example/v1", None))
        .unwrap_err();
    assert!(matches!(err, engram_core::Error::Invalid(_)), "{err:?}");
    assert!(err.to_string().contains("give the key again"), "{err}");
    let listed = home.engram.providers().list().unwrap();
    assert_eq!(
        listed[0].base_url.as_deref(),
        Some("http://127.0.0.1:9/v1"),
        "nothing changed"
    );
    // Another path on the same server keeps the key; a new host with its key is fine.
    home.engram
        .providers()
        .set(setup("http://127.0.0.1:9/v2", None))
        .unwrap();
    home.engram
        .providers()
        .set(setup(
            "https://collector.example/v1",
            Some("sk-for-that-host"),
        ))
        .unwrap();
}

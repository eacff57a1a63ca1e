//! Embeddings and model lists.

use crate::support::{KEY, config, serve};
use axum::routing::{get, post};
use engram_core::error::ProviderFault;
use engram_mock_llm::{EMBEDDING_DIMS, MockLlm, Script, embed};
use engram_providers::{MAX_EMBEDDING_BATCH, ProviderKind, embedding_model, list_models};
use serde_json::json;

#[tokio::test]
async fn embeddings_come_back_in_input_order_across_batches() {
    let mock = MockLlm::start(Script::Queue).await;
    let model = embedding_model(config(ProviderKind::OpenAi, &mock.base_url())).unwrap();
    let texts: Vec<String> = (0..MAX_EMBEDDING_BATCH + 3)
        .map(|i| format!("passage number {i} about topic {}", i % 7))
        .collect();
    let vectors = model.embed("mock-embed", &texts).await.unwrap();
    assert_eq!(vectors.len(), texts.len());
    for (text, v) in texts.iter().zip(&vectors) {
        assert_eq!(v, &embed(text, EMBEDDING_DIMS));
    }
    let recorded = mock.requests();
    assert_eq!(recorded.len(), 2, "two batches");
    assert_eq!(recorded[0].path, "/v1/embeddings");
    assert_eq!(
        recorded[0].body["input"].as_array().unwrap().len(),
        MAX_EMBEDDING_BATCH
    );
    assert_eq!(recorded[0].body["model"], "mock-embed");
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
    assert!(model.embed("mock-embed", &[]).await.unwrap().is_empty());
}

#[tokio::test]
async fn shuffled_embedding_answers_are_sorted_by_index() {
    let router = axum::Router::new().route(
        "/v1/embeddings",
        post(|| async {
            axum::Json(json!({"data": [
                {"index": 1, "embedding": [1.0, 1.0]},
                {"index": 2, "embedding": [2.0, 2.0]},
                {"index": 0, "embedding": [0.0, 0.0]},
            ]}))
        }),
    );
    let base = serve(router).await;
    let model = embedding_model(config(ProviderKind::OpenAi, &base)).unwrap();
    let texts = ["a".to_owned(), "b".to_owned(), "c".to_owned()];
    let v = model.embed("m", &texts).await.unwrap();
    assert_eq!(v, vec![vec![0.0, 0.0], vec![1.0, 1.0], vec![2.0, 2.0]]);
    let e = model.embed("m", &texts[..2]).await.unwrap_err();
    assert_eq!(e.fault, ProviderFault::BadResponse, "{e}");
}

#[tokio::test]
async fn list_models_on_both_apis() {
    let mock = MockLlm::start(Script::Queue).await;
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let models = list_models(&config(kind, &mock.base_url())).await.unwrap();
        let ids: Vec<&str> = models.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["mock-small", "mock-large", "mock-embed"], "{kind:?}");
    }
    let recorded = mock.requests();
    assert_eq!(recorded[0].path, "/v1/models");
    assert_eq!(
        recorded[0].authorization.as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(recorded[1].api_key_header.as_deref(), Some(KEY));
}

#[tokio::test]
async fn anthropic_model_lists_are_paged_and_windows_read() {
    let router = axum::Router::new().route(
        "/v1/models",
        get(|axum::extract::RawQuery(q): axum::extract::RawQuery| async move {
            let q = q.unwrap_or_default();
            if q.contains("after_id=claude-b") {
                axum::Json(json!({"data": [{"id": "claude-c", "max_input_tokens": 200000}], "has_more": false, "last_id": "claude-c"}))
            } else {
                axum::Json(json!({"data": [{"id": "claude-a"}, {"id": "claude-b"}], "has_more": true, "last_id": "claude-b"}))
            }
        }),
    );
    let base = serve(router).await;
    let models = list_models(&config(ProviderKind::Anthropic, &base))
        .await
        .unwrap();
    let got: Vec<_> = models
        .iter()
        .map(|m| (m.id.as_str(), m.context_window))
        .collect();
    assert_eq!(
        got,
        [
            ("claude-a", None),
            ("claude-b", None),
            ("claude-c", Some(200_000))
        ]
    );
}

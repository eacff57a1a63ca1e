//! The embeddings endpoint.

use crate::common::*;
use engram_mock_llm::{EMBEDDING_DIMS, MockLlm, Script, embed};
use serde_json::{Value, json};

fn cos(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn vector(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

#[tokio::test]
async fn batch_of_deterministic_normalised_vectors() {
    let mock = MockLlm::start(Script::Queue).await;
    let body = json!({"model": "text-embedding-3-small", "input": [
        "Alya loves cherry pie", "Alya really loves cherry pies", "The tax report is due on Monday"]});
    let res = post(&mock.base_url(), "/embeddings", &body).await;
    assert_eq!(res.status(), 200);
    let v: Value = res.json().await.unwrap();
    assert_eq!(v["object"], "list");
    assert_eq!(v["model"], "text-embedding-3-small");
    assert!(v["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
    let data = v["data"].as_array().unwrap();
    assert_eq!(data.len(), 3);
    let vs: Vec<Vec<f64>> = data.iter().map(|d| vector(&d["embedding"])).collect();
    for (i, d) in data.iter().enumerate() {
        assert_eq!(d["index"], i);
        assert_eq!(d["object"], "embedding");
        assert_eq!(vs[i].len(), EMBEDDING_DIMS);
        assert!((cos(&vs[i], &vs[i]) - 1.0).abs() < 1e-5);
    }
    assert!(cos(&vs[0], &vs[1]) > 0.7);
    assert!(cos(&vs[0], &vs[2]) < 0.3);
    // Same text, same vector, also through the library function.
    let again: Value = post(
        &mock.base_url(),
        "/embeddings",
        &json!({"model": "m", "input": "Alya loves cherry pie"}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(vector(&again["data"][0]["embedding"]), vs[0]);
    let lib: Vec<f64> = embed("Alya loves cherry pie", EMBEDDING_DIMS)
        .into_iter()
        .map(f64::from)
        .collect();
    assert_eq!(lib, vs[0]);
    assert!(mock.violations().is_empty());
}

#[tokio::test]
async fn dimensions_base64_and_bad_input() {
    let mock = MockLlm::start(Script::Queue).await;
    let v: Value = post(
        &mock.base_url(),
        "/embeddings",
        &json!({"model": "m", "input": "pie", "dimensions": 16}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(v["data"][0]["embedding"].as_array().unwrap().len(), 16);
    let v: Value = post(
        &mock.base_url(),
        "/embeddings",
        &json!({"model": "m", "input": "pie", "encoding_format": "base64"}),
    )
    .await
    .json()
    .await
    .unwrap();
    // 256 f32 = 1024 bytes = 1368 base64 characters.
    assert_eq!(v["data"][0]["embedding"].as_str().unwrap().len(), 1368);
    for bad in [
        json!({"model": "m"}),
        json!({"model": "m", "input": [""]}),
        json!({"input": "x"}),
        json!({"model": "m", "input": [[1, 2]]}),
    ] {
        let res = post(&mock.base_url(), "/embeddings", &bad).await;
        assert_eq!(res.status(), 400, "{bad}");
    }
    assert_eq!(mock.violations().len(), 4);
}

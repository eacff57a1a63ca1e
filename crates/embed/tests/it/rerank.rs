//! The cross-encoder's loading and scoring code, on tiny made-up models written as real
//! weights folders (`engram_embed::rerank::fixture`) with the real BERT tokenizer: no
//! published cross-encoder ships in a package registry the tests can reach.

use crate::model_dir;
use engram_embed::rerank::CrossEncoder;
use engram_embed::rerank::fixture::{self, Head};
use engram_embed::rerank_local::LocalReranker;
use engram_retrieval::rerank::relevance;
use std::time::Duration;

fn folder(head: Head) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fixture::write(dir.path(), &model_dir().join("tokenizer.json"), head).unwrap();
    dir
}

fn texts(t: &[&str]) -> Vec<String> {
    t.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_head_is_pooler_tanh_then_classifier() {
    // Pooler weights 0, bias 0.3 → tanh(0.3) in all 32 units; classifier weights 1 → 32·tanh(0.3).
    let dir = folder(Head::Constant(0.3));
    let model = CrossEncoder::load(dir.path()).unwrap();
    let scores = model
        .score("where is the bowl", &texts(&["a blue bowl", "", "x y z"]))
        .unwrap();
    let expected = 32.0 * 0.3f32.tanh();
    assert_eq!(scores.len(), 3);
    for s in scores {
        assert!((s - expected).abs() < 1e-4, "{s} vs {expected}");
    }
}

#[test]
fn a_pair_scores_the_same_alone_and_in_a_padded_batch() {
    let dir = folder(Head::Random);
    let model = CrossEncoder::load(dir.path()).unwrap();
    let query = "when did Mel go to the pottery workshop";
    let batch = texts(&[
        "Mel: Yes! Last May, I made a wobbly blue bowl there.",
        "ok",
        "Sam: The weather is awful this week, and the long forecast says it will stay like that for days.",
    ]);
    let together = model.score(query, &batch).unwrap();
    for (i, text) in batch.iter().enumerate() {
        let alone = model.score(query, std::slice::from_ref(text)).unwrap()[0];
        assert!(
            (alone - together[i]).abs() < 1e-3,
            "{text}: {alone} alone, {} in the batch",
            together[i]
        );
    }
    // Made-up weights still read the text: different passages, different scores.
    assert!((together[0] - together[1]).abs() > 1e-4, "{together:?}");
    // And the query: the same passage scores differently for another question.
    let other = model
        .score("what is the weather like", &batch[..1])
        .unwrap()[0];
    assert!((other - together[0]).abs() > 1e-4);
}

#[test]
fn damaged_folders_are_refused_with_the_file_named() {
    let dir = folder(Head::Random);
    std::fs::write(dir.path().join("model.safetensors"), b"not safetensors").unwrap();
    let e = CrossEncoder::load(dir.path())
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("model.safetensors"), "{e}");

    let dir = folder(Head::Random);
    std::fs::remove_file(dir.path().join("tokenizer.json")).unwrap();
    let e = CrossEncoder::load(dir.path())
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("tokenizer.json"), "{e}");

    // A classifier with three labels (NLI) is not a relevance model.
    let dir = folder(Head::Random);
    let path = dir.path().join("config.json");
    let mut config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    config["id2label"] = serde_json::json!({"0": "a", "1": "b", "2": "c"});
    std::fs::write(&path, config.to_string()).unwrap();
    let e = CrossEncoder::load(dir.path())
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("3 labels"), "{e}");

    // An embedding model's folder has no classification head.
    let e = CrossEncoder::load(&model_dir())
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("sequence classifier"), "{e}");
}

#[test]
fn relevance_maps_logits_into_zero_to_one_in_order() {
    assert_eq!(relevance(0.0), 0.5);
    assert!(relevance(-11.0) > 0.0 && relevance(-11.0) < 0.001);
    assert!(relevance(11.0) < 1.0 && relevance(11.0) > 0.999);
    assert!(relevance(1.0) > relevance(0.5));
}

#[tokio::test]
async fn the_reranker_loads_on_first_use_and_unloads_when_idle() {
    let dir = folder(Head::Constant(0.1));
    let reranker = LocalReranker::new(dir.path().to_owned(), Duration::from_millis(200));
    assert!(!reranker.is_loaded());
    let s = reranker.score("q", &texts(&["a", "b"])).await.unwrap();
    assert_eq!(s.len(), 2);
    assert!(reranker.is_loaded());
    let mut waited = Duration::ZERO;
    while reranker.is_loaded() && waited < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += Duration::from_millis(50);
    }
    assert!(!reranker.is_loaded(), "still loaded after {waited:?}");
    // Loaded again on the next call.
    assert_eq!(reranker.score("q", &texts(&["a"])).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_missing_folder_is_an_error_that_names_it() {
    let reranker = LocalReranker::new("/nonexistent/reranker".into(), Duration::from_secs(60));
    let e = reranker.score("q", &texts(&["a"])).await.unwrap_err();
    assert!(e.to_string().contains("/nonexistent/reranker"), "{e}");
    assert!(e.to_string().contains("config.json"), "{e}");
    // Nothing to score needs no model.
    assert!(reranker.score("q", &[]).await.unwrap().is_empty());
}

//! Semantic memory with the built-in local embedding model (the real all-MiniLM-L6-v2
//! weights): paraphrases are found where words are not shared, an embedding outage loses
//! nothing and search still answers, vectors missing after an import are backfilled, and an
//! agent's embedding endpoint stays the one it was created with.

use engram_core::{AgentId, EmbeddingConfig, NewAgent, NewPassage, TagMatch};
use engram_service::{Engram, Notice};
use engram_suite::Home;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const PASSAGES: [&str; 4] = [
    "Bob loves boston terriers",
    "The quarterly tax report is due on Friday",
    "Alice moved to a flat near the harbour in Lisbon",
    "Remember to water the tomatoes twice a week",
];

async fn agent(engram: &Engram, embedding: Option<&str>) -> AgentId {
    let new = NewAgent {
        name: "Sam".into(),
        embedding: embedding.map(|m| EmbeddingConfig {
            model: m.into(),
            base_url: None,
        }),
        ..NewAgent::default()
    };
    engram.agents().create(new).await.unwrap().agent.id
}

async fn search(engram: &Engram, agent: &AgentId, q: &str, tags: &[&str], k: usize) -> Vec<String> {
    engram
        .archival()
        .search(
            agent,
            q,
            tags.iter().map(|t| t.to_string()).collect(),
            TagMatch::Any,
            (None, None),
            k,
        )
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.passage.text)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_agents_get_the_local_model_and_a_paraphrase_finds_its_passage() {
    let home = Home::with_model(&[]);
    let sam = agent(&home.engram, None).await;
    let cfg = home
        .engram
        .agents()
        .get(&sam)
        .await
        .unwrap()
        .agent
        .embedding;
    assert_eq!(
        cfg,
        Some(EmbeddingConfig {
            model: "local/all-minilm-l6-v2".into(),
            base_url: None
        })
    );
    for p in PASSAGES {
        home.engram
            .archival()
            .insert(&sam, p, vec![])
            .await
            .unwrap();
    }
    // Vectors are computed in the background after the write.
    assert!(
        home.engram
            .archival()
            .fresh_vectors(&sam, std::time::Duration::from_secs(30))
            .await
    );
    let missing = home
        .engram
        .store()
        .passages()
        .embeddings_missing(&sam)
        .unwrap();
    assert!(missing.is_empty(), "{missing:?}");

    // "my dog" shares no word with the passage: words alone cannot find it.
    let words_only = agent(&home.engram, Some("none")).await;
    let plain = home.engram.models().default_embedding().unwrap();
    assert!(plain.is_some());
    home.engram
        .agents()
        .update(
            &words_only,
            &engram_core::AgentPatch {
                embedding: Some(None),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    for p in PASSAGES {
        home.engram
            .archival()
            .insert(&words_only, p, vec![])
            .await
            .unwrap();
    }
    let lexical = search(&home.engram, &words_only, "my dog", &[], 3).await;
    assert!(
        !lexical.iter().any(|t| t.contains("terriers")),
        "{lexical:?}"
    );

    let hybrid = search(&home.engram, &sam, "my dog", &[], 3).await;
    assert_eq!(
        hybrid.first().map(String::as_str),
        Some(PASSAGES[0]),
        "{hybrid:?}"
    );
    // Stable: the same search gives the same ranking.
    for _ in 0..3 {
        assert_eq!(search(&home.engram, &sam, "my dog", &[], 3).await, hybrid);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_apply_before_the_limit_in_hybrid_search() {
    let home = Home::with_model(&[]);
    let sam = agent(&home.engram, None).await;
    for i in 0..30 {
        let text = format!("Notes about puppies and dogs, number {i}");
        home.engram
            .archival()
            .insert(&sam, &text, vec!["pets".into()])
            .await
            .unwrap();
    }
    home.engram
        .archival()
        .insert(&sam, "Bob loves boston terriers", vec!["bob".into()])
        .await
        .unwrap();
    // Vectors are computed in the background after the write.
    assert!(
        home.engram
            .archival()
            .fresh_vectors(&sam, std::time::Duration::from_secs(30))
            .await
    );
    let hits = search(&home.engram, &sam, "my dog", &["bob"], 1).await;
    assert_eq!(hits, vec!["Bob loves boston terriers".to_owned()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_passage_is_found_by_words_then_by_meaning_after_backfill() {
    let home = Home::with_model(&[]);
    let sam = agent(&home.engram, None).await;
    // As an import stores them: no vectors.
    let rows: Vec<NewPassage> = PASSAGES
        .iter()
        .map(|t| NewPassage {
            text: t.to_string(),
            ..Default::default()
        })
        .collect();
    home.engram.store().passages().insert(&sam, &rows).unwrap();
    assert_eq!(
        search(&home.engram, &sam, "boston terriers", &[], 1).await,
        vec![PASSAGES[0].to_owned()]
    );
    // The search's successful query embedding may already have started a background
    // backfill; either way, after this call every passage has its vector.
    let report = home.engram.archival().backfill(&sam).await.unwrap();
    assert_eq!(report.remaining, 0);
    assert!(report.embedded <= 4);
    let store = home.engram.store();
    assert_eq!(store.passages().count_without_vectors(&sam).unwrap(), 0);
    let hits = search(&home.engram, &sam, "my dog", &[], 1).await;
    assert_eq!(hits, vec![PASSAGES[0].to_owned()]);
    // A second run finds nothing left to do.
    let again = home.engram.archival().backfill(&sam).await.unwrap();
    assert_eq!((again.embedded, again.remaining), (0, 0));
}

/// A passage written through the service comes back before its vectors exist: its words find
/// it at once, and once the background pass has run, a paraphrase finds it by meaning too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passage_is_found_by_words_while_its_vectors_are_computed_then_by_meaning() {
    let home = Home::with_model(&[]);
    let sam = agent(&home.engram, None).await;
    let store = home.engram.store();
    let stored = home
        .engram
        .archival()
        .insert(&sam, PASSAGES[0], vec![])
        .await
        .unwrap();
    // The model is not loaded yet, and its first load takes far longer than a write: the
    // write did not wait for it.
    assert_eq!(store.passages().count_without_vectors(&sam).unwrap(), 1);
    let by_words = engram_store::PassageQuery {
        query: "boston terriers".into(),
        top_k: 1,
        ..Default::default()
    };
    let hits = engram_retrieval::search(store, &sam, &by_words, None)
        .await
        .unwrap();
    assert_eq!(hits[0].passage.id, stored.id, "found by its words at once");

    assert!(
        home.engram
            .archival()
            .fresh_vectors(&sam, std::time::Duration::from_secs(30))
            .await
    );
    assert_eq!(store.passages().count_without_vectors(&sam).unwrap(), 0);
    assert_eq!(
        store
            .passages()
            .count_without_tokens(&sam, "local/all-minilm-l6-v2")
            .unwrap(),
        0,
        "its token vectors for late interaction are stored too"
    );
    // "my dog" shares no word with it: only its vector can find it.
    assert_eq!(
        search(&home.engram, &sam, "my dog", &[], 1).await,
        vec![PASSAGES[0].to_owned()]
    );
}

/// An embeddings server that always fails, counting the requests it gets.
async fn failing_server() -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let app = axum::Router::new().route(
        "/v1/embeddings",
        axum::routing::post(move || {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                (axum::http::StatusCode::SERVICE_UNAVAILABLE, "down")
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), hits)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedding_outage_loses_nothing_and_search_answers_at_once() {
    let home = Home::new();
    let (url, requests) = failing_server().await;
    let new = NewAgent {
        name: "Sam".into(),
        embedding: Some(EmbeddingConfig {
            model: "ollama/nomic-embed-text".into(),
            base_url: Some(url),
        }),
        ..NewAgent::default()
    };
    let sam = home.engram.agents().create(new).await.unwrap().agent.id;
    let mut notices = home.engram.notices();
    let stored = home
        .engram
        .archival()
        .insert(&sam, "The spare key is under the blue flowerpot", vec![])
        .await
        .expect("the passage is stored although the embedding server is down");
    let missing = home
        .engram
        .store()
        .passages()
        .embeddings_missing(&sam)
        .unwrap();
    assert_eq!(missing.len(), 1);
    assert_eq!(missing[0].id, stored.id);
    // The background pass tried the model and said why it failed.
    home.engram
        .archival()
        .fresh_vectors(&sam, std::time::Duration::from_secs(30))
        .await;
    let notice = loop {
        match notices.try_recv().unwrap() {
            Notice::EmbeddingsUnavailable { agent_id, message } => break (agent_id, message),
            _ => continue,
        }
    };
    assert_eq!(notice.0, sam);
    assert!(notice.1.contains("without a vector"), "{}", notice.1);

    let before = requests.load(Ordering::SeqCst);
    let hits = search(&home.engram, &sam, "where is the spare key", &[], 3).await;
    assert_eq!(hits, vec![stored.text.clone()]);
    // One attempt for the query, no retries with backoff before answering.
    assert_eq!(requests.load(Ordering::SeqCst) - before, 1);
    assert!(
        std::iter::from_fn(|| notices.try_recv().ok())
            .any(|n| matches!(n, Notice::EmbeddingsUnavailable { message, .. } if message.contains("words alone")))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_weights_give_a_clear_error_and_search_falls_back_to_words() {
    let damaged = tempfile::tempdir().unwrap();
    let real = engram_suite::model::model_dir();
    for f in ["config.json", "tokenizer.json"] {
        std::fs::copy(real.join(f), damaged.path().join(f)).unwrap();
    }
    std::fs::write(damaged.path().join("model.safetensors"), b"not weights").unwrap();
    let dir = damaged.path().display().to_string();
    let home = Home::with_env(&[("ENGRAM_LOCAL_MODEL_DIR", dir.as_str())]);
    let sam = agent(&home.engram, None).await;
    let mut notices = home.engram.notices();
    home.engram
        .archival()
        .insert(&sam, "The spare key is under the blue flowerpot", vec![])
        .await
        .unwrap();
    home.engram
        .archival()
        .fresh_vectors(&sam, std::time::Duration::from_secs(30))
        .await;
    let message = loop {
        if let Notice::EmbeddingsUnavailable { message, .. } = notices.try_recv().unwrap() {
            break message;
        }
    };
    assert!(message.contains("model.safetensors"), "{message}");
    assert!(message.contains("local/all-minilm-l6-v2"), "{message}");
    let hits = search(&home.engram, &sam, "spare key", &[], 3).await;
    assert_eq!(hits.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_use_download_comes_from_the_model_repository_with_progress() {
    // A local server plays the model's repository, serving the real files.
    let real = engram_suite::model::model_dir();
    let files: Vec<(String, Vec<u8>)> = ["config.json", "tokenizer.json", "model.safetensors"]
        .iter()
        .map(|f| (f.to_string(), std::fs::read(real.join(f)).unwrap()))
        .collect();
    let files = Arc::new(files);
    let app = axum::Router::new().route(
        "/repo/{name}",
        axum::routing::get(
            move |axum::extract::Path(name): axum::extract::Path<String>| {
                let files = files.clone();
                async move {
                    match files.iter().find(|(n, _)| *n == name) {
                        Some((_, b)) => (axum::http::StatusCode::OK, b.clone()),
                        None => (axum::http::StatusCode::NOT_FOUND, Vec::new()),
                    }
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let url = format!("http://{addr}/repo");
    let home = Home::with_env(&[("ENGRAM_LOCAL_MODEL_URL", url.as_str())]);
    let before = home
        .engram
        .models()
        .embedding_model_status("local/all-minilm-l6-v2")
        .unwrap();
    assert!(!before.present && !before.user_folder);
    let mut notices = home.engram.notices();
    let sam = agent(&home.engram, None).await;
    home.engram
        .archival()
        .insert(&sam, "Bob loves boston terriers", vec![])
        .await
        .unwrap();
    // Vectors are computed in the background after the write.
    assert!(
        home.engram
            .archival()
            .fresh_vectors(&sam, std::time::Duration::from_secs(30))
            .await
    );
    let progress: Vec<(u64, u64)> = std::iter::from_fn(|| notices.try_recv().ok())
        .filter_map(|n| match n {
            Notice::ModelDownload {
                done_bytes,
                total_bytes,
                ..
            } => Some((done_bytes, total_bytes)),
            _ => None,
        })
        .collect();
    assert!(progress.len() > 2, "{progress:?}");
    let (done, total) = *progress.last().unwrap();
    assert_eq!(done, total);
    let after = home
        .engram
        .models()
        .embedding_model_status("local/all-minilm-l6-v2")
        .unwrap();
    assert!(after.present && after.loaded, "{after:?}");
    assert!(after.dir.starts_with(&home.path().display().to_string()));
    assert!(
        home.engram
            .store()
            .passages()
            .embeddings_missing(&sam)
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn an_agents_embedding_endpoint_is_written_down_and_kept() {
    let home = Home::with_env(&[("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")]);
    let given = NewAgent {
        name: "Sam".into(),
        embedding: Some(EmbeddingConfig {
            model: "ollama/nomic-embed-text".into(),
            base_url: Some("http://127.0.0.1:11500/v1".into()),
        }),
        ..NewAgent::default()
    };
    let a = home.engram.agents().create(given).await.unwrap().agent;
    assert_eq!(
        a.embedding.unwrap().base_url.as_deref(),
        Some("http://127.0.0.1:11500/v1")
    );
    // Without a base URL, the one that resolves now is written down…
    let b = agent(&home.engram, Some("openai/text-embedding-3-small")).await;
    let stored = home
        .engram
        .agents()
        .get(&b)
        .await
        .unwrap()
        .agent
        .embedding
        .unwrap();
    assert_eq!(stored.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
    // …and kept when the environment changes later.
    let dir = home.dir;
    let reopened = engram_suite::open_with_env(dir.path(), &[]);
    let kept = reopened
        .agents()
        .get(&b)
        .await
        .unwrap()
        .agent
        .embedding
        .unwrap();
    assert_eq!(kept.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
    // A provider nobody configured is refused rather than guessed.
    let unknown = NewAgent {
        name: "X".into(),
        embedding: Some(EmbeddingConfig {
            model: "mystery/embedder".into(),
            base_url: None,
        }),
        ..NewAgent::default()
    };
    let err = reopened
        .agents()
        .create(unknown)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("mystery"), "{err}");
}

/// Offline, a retry by hand asks for the built-in model at once (not after the back-off that
/// spares automatic uses), says again that it failed, and an agent without a built-in model has
/// nothing to retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_by_hand_tries_the_download_at_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let refused = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", refused.local_addr().unwrap());
    let asked = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = refused.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            drop(socket);
        }
    });
    let home = engram_suite::Home::with_env(&[(engram_service::LOCAL_MODEL_URL_ENV, &url)]);
    let mock = engram_mock_llm::MockLlm::start(engram_mock_llm::Script::Brain).await;
    let agent = home
        .agent_with(&mock, engram_core::LoopStyle::ToolLoop, |a| {
            a.embedding = Some(engram_core::EmbeddingConfig {
                model: engram_service::LOCAL_EMBEDDING_MODEL.into(),
                base_url: None,
            });
        })
        .await;
    for i in 0..5 {
        home.engram
            .archival()
            .insert(&agent, &format!("note {i} about tulips"), vec![])
            .await
            .unwrap();
    }
    // The background pass tried the download, and failed.
    home.engram
        .archival()
        .fresh_vectors(&agent, std::time::Duration::from_secs(30))
        .await;
    let automatic = asked.load(Ordering::SeqCst);
    assert!(automatic >= 1, "the first use tried the download");
    let err = home
        .engram
        .models()
        .retry_embedding_model(&agent)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "provider_not_configured", "{err}");
    assert!(
        asked.load(Ordering::SeqCst) > automatic,
        "the retry asked again without waiting for the back-off"
    );

    let words_only = home
        .agent_with(&mock, engram_core::LoopStyle::ToolLoop, |a| {
            a.name = "Words".into();
        })
        .await;
    home.engram
        .agents()
        .update(
            &words_only,
            &engram_core::AgentPatch {
                embedding: Some(None),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(
        home.engram
            .models()
            .retry_embedding_model(&words_only)
            .await
            .unwrap()
            .is_none()
    );
}

//! The reranking stage of archival search through the real service, with the built-in
//! embedding model's real weights and tiny made-up cross-encoders written as real weights
//! folders (no published cross-encoder is in a package registry the tests can reach; the
//! model code itself is tested in `crates/embed/tests/it/rerank.rs`).

use engram_core::{LoopStyle, Role};
use engram_embed::rerank::fixture::{self, Head};
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_service::Notice;
use engram_suite::Home;
use engram_suite::archival::{agent_with_passages, search, texts};

const PASSAGES: [&str; 6] = [
    "Bob loves boston terriers",
    "Bob walks his terrier by the harbour every morning",
    "The quarterly tax report is due on Friday",
    "Alice moved to a flat near the harbour in Lisbon",
    "Remember to water the tomatoes twice a week",
    "Bob's dog is called Rex",
];

fn cross_encoder(head: Head) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = engram_suite::model::model_dir().join("tokenizer.json");
    fixture::write(dir.path(), &tokenizer, head).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reranker_rescores_hits_in_zero_to_one_and_can_be_switched_off() {
    let model = cross_encoder(Head::Random);
    let dir = model.path().display().to_string();
    let home = Home::with_model(&[("ENGRAM_RERANK_MODEL_DIR", dir.as_str())]);
    let status = home.engram.models().reranker_status();
    assert!(
        status.active && status.enabled && !status.loaded,
        "{status:?}"
    );
    let sam = agent_with_passages(&home.engram, "Sam", &PASSAGES).await;

    let reranked = search(&home.engram, &sam, "Bob's dog", 4).await;
    assert_eq!(reranked.len(), 4);
    assert!(home.engram.models().reranker_status().loaded);
    assert!(reranked.iter().all(|h| (0.0..=1.0).contains(&h.score)));
    assert!(reranked.windows(2).all(|w| w[0].score >= w[1].score));
    // The same search again: the same answer.
    assert_eq!(
        texts(&search(&home.engram, &sam, "Bob's dog", 4).await),
        texts(&reranked)
    );

    let status = home.engram.models().set_rerank_enabled(false).unwrap();
    assert!(!status.active && !status.enabled, "{status:?}");
    let hybrid = search(&home.engram, &sam, "Bob's dog", 4).await;
    // Made-up weights score differently from the hybrid ranking.
    assert_ne!(
        reranked.iter().map(|h| h.score).collect::<Vec<_>>(),
        hybrid.iter().map(|h| h.score).collect::<Vec<_>>()
    );
    // Back on: the reranked answer again.
    home.engram.models().set_rerank_enabled(true).unwrap();
    assert_eq!(
        texts(&search(&home.engram, &sam, "Bob's dog", 4).await),
        texts(&reranked)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn equal_relevance_keeps_the_hybrid_order() {
    // Every pair scores 32·tanh(0.05): the reranker cannot tell them apart.
    let model = cross_encoder(Head::Constant(0.05));
    let home = Home::with_model(&[]);
    let sam = agent_with_passages(&home.engram, "Sam", &PASSAGES).await;
    // The store's hybrid ranking: reranking (late interaction, without a cross-encoder) off.
    home.engram.models().set_rerank_enabled(false).unwrap();
    let hybrid = search(&home.engram, &sam, "harbour terrier", 4).await;
    home.engram.models().set_rerank_enabled(true).unwrap();
    home.engram
        .models()
        .set_rerank_model_dir(Some(model.path()))
        .unwrap();
    let reranked = search(&home.engram, &sam, "harbour terrier", 4).await;
    assert_eq!(texts(&reranked), texts(&hybrid));
    let expected = engram_retrieval::rerank::relevance(32.0 * 0.05f32.tanh());
    for h in &reranked {
        assert!(
            (h.score - expected).abs() < 1e-6,
            "{} vs {expected}",
            h.score
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_reranker_leaves_the_hybrid_ranking_with_a_notice() {
    let model = cross_encoder(Head::Random);
    std::fs::write(model.path().join("model.safetensors"), b"not weights").unwrap();
    let home = Home::with_model(&[]);
    let sam = agent_with_passages(&home.engram, "Sam", &PASSAGES).await;
    // The store's hybrid ranking: reranking (late interaction, without a cross-encoder) off.
    home.engram.models().set_rerank_enabled(false).unwrap();
    let hybrid = search(&home.engram, &sam, "Bob's dog", 3).await;
    home.engram.models().set_rerank_enabled(true).unwrap();
    home.engram
        .models()
        .set_rerank_model_dir(Some(model.path()))
        .unwrap();
    let mut notices = home.engram.notices();
    let hits = search(&home.engram, &sam, "Bob's dog", 3).await;
    assert_eq!(texts(&hits), texts(&hybrid));
    assert_eq!(
        hits.iter().map(|h| h.score).collect::<Vec<_>>(),
        hybrid.iter().map(|h| h.score).collect::<Vec<_>>()
    );
    let message = loop {
        match notices.try_recv() {
            Ok(Notice::RerankerUnavailable { agent_id, message }) => {
                assert_eq!(agent_id, sam);
                break message;
            }
            Ok(_) => continue,
            Err(e) => panic!("no reranker notice: {e}"),
        }
    };
    assert!(message.contains("model.safetensors"), "{message}");
    assert!(message.contains("without reranking"), "{message}");
    // The settings show why, until a search with a working folder succeeds.
    let status = home.engram.models().reranker_status();
    let why = status.error.as_deref().unwrap_or_default();
    assert!(status.active && !status.dir_from_env, "{status:?}");
    assert!(why.contains("model.safetensors"), "{status:?}");

    // A folder without the files is refused when it is set, and nothing changes.
    let empty = tempfile::tempdir().unwrap();
    let e = home
        .engram
        .models()
        .set_rerank_model_dir(Some(empty.path()))
        .unwrap_err();
    assert!(e.to_string().contains("config.json"), "{e}");
    assert_eq!(
        home.engram.models().reranker_status().dir.as_deref(),
        Some(model.path().to_str().unwrap())
    );

    let working = cross_encoder(Head::Random);
    let status = home
        .engram
        .models()
        .set_rerank_model_dir(Some(working.path()))
        .unwrap();
    assert_eq!(status.error, None, "another folder has no failure yet");
    search(&home.engram, &sam, "Bob's dog", 3).await;
    let status = home.engram.models().reranker_status();
    assert!(status.loaded && status.error.is_none(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_search_tool_reranks_as_the_window_does() {
    let model = cross_encoder(Head::Random);
    let dir = model.path().display().to_string();
    let home = Home::with_model(&[("ENGRAM_RERANK_MODEL_DIR", dir.as_str())]);
    let mock = MockLlm::start(Script::Queue).await;
    let sam = home.agent(&mock, LoopStyle::ToolLoop).await;
    for p in PASSAGES {
        home.engram
            .archival()
            .insert(&sam, p, vec![])
            .await
            .unwrap();
    }
    let service = search(&home.engram, &sam, "Bob's dog", 4).await;
    home.engram.models().set_rerank_enabled(false).unwrap();
    let hybrid = search(&home.engram, &sam, "Bob's dog", 4).await;
    home.engram.models().set_rerank_enabled(true).unwrap();
    assert_ne!(
        texts(&service),
        texts(&hybrid),
        "the made-up reranker reorders"
    );

    mock.push(Reply::ToolCalls(vec![Call::new(
        "archival_memory_search",
        serde_json::json!({"query": "Bob's dog", "top_k": 4}),
    )]));
    mock.push(Reply::text("found them"));
    home.chat(&sam, "what do you know about Bob's dog?").await;
    let messages = home.engram.recall().list(&sam, None, 50).await.unwrap();
    let result = messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .expect("a tool result");
    let body: serde_json::Value = serde_json::from_str(&result.content).unwrap();
    let listed: serde_json::Value =
        serde_json::from_str(body["message"].as_str().unwrap()).unwrap();
    let tool: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["content"].as_str().unwrap())
        .collect();
    assert_eq!(tool, texts(&service));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_sets_the_reranker_and_a_broken_one_is_a_warning_not_a_failure() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = tempfile::tempdir().unwrap();
    let weights = engram_suite::model::model_dir().display().to_string();
    let run = |args: &[&str]| {
        engram_suite::cli_command(home.path())
            .env("ENGRAM_LOCAL_MODEL_DIR", &weights)
            .args(args)
            .output()
            .expect("run engram")
    };
    let id = engram_suite::cli_agent(home.path(), &mock).to_string();
    for p in PASSAGES {
        engram_suite::stdout_ok(&run(&["archival", "add", &id, p]));
    }
    let model = cross_encoder(Head::Random);
    std::fs::write(model.path().join("model.safetensors"), b"not weights").unwrap();
    let dir = model.path().display().to_string();
    let status: serde_json::Value = serde_json::from_str(&engram_suite::stdout_ok(&run(&[
        "embedding",
        "rerank",
        &dir,
    ])))
    .unwrap();
    assert_eq!(status["active"], true, "{status}");
    assert_eq!(status["dir"], dir.as_str(), "{status}");

    let out = run(&["archival", "search", &id, "Bob's dog", "--json"]);
    let hits: serde_json::Value = serde_json::from_str(&engram_suite::stdout_ok(&out)).unwrap();
    assert!(!hits.as_array().unwrap().is_empty(), "{hits}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("without reranking"), "{stderr}");
    assert!(stderr.contains("model.safetensors"), "{stderr}");

    let status: serde_json::Value = serde_json::from_str(&engram_suite::stdout_ok(&run(&[
        "embedding",
        "rerank",
        "--off",
    ])))
    .unwrap();
    assert_eq!(status["active"], false, "{status}");
    assert_eq!(status["enabled"], false, "{status}");
    let out = run(&["archival", "search", &id, "Bob's dog", "--json"]);
    engram_suite::stdout_ok(&out);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("reranking"),
        "switched off: no reranker is tried"
    );
}

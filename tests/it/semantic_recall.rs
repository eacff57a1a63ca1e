//! Semantic recall memory: messages get vectors in the background after each step,
//! so `conversation_search` and recall search find a message by meaning; messages stored
//! without vectors (an import, an embedding outage) are backfilled; a changed embedding model
//! re-embeds in the background while chat goes on and never mixes the two models' vectors; a
//! backfill cut short by a restart goes on. The built-in model runs from the real
//! all-MiniLM-L6-v2 weights (`ENGRAM_LOCAL_MODEL_DIR`).

use engram_core::{
    AgentId, AgentPatch, EmbeddingConfig, LoopStyle, NewAgent, NewMessage, StopReason,
};
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_retrieval::HybridSearch;
use engram_service::{Engram, Notice};
use engram_store::MessageQuery;
use engram_suite::{Home, last_tool_results};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const DOG: &str = "Bob loves boston terriers";

fn query(text: &str, limit: usize) -> MessageQuery {
    MessageQuery {
        query: text.into(),
        limit,
        ..Default::default()
    }
}

async fn recall(engram: &Engram, agent: &AgentId, text: &str, limit: usize) -> Vec<String> {
    engram
        .recall()
        .search(agent, &query(text, limit))
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.message.content)
        .collect()
}

/// Waits until every message of the agent that needs a vector of its model has one and no
/// background backfill runs (the real model in a debug build takes seconds).
async fn wait_embedded(engram: &Engram, agent: &AgentId) {
    let started = Instant::now();
    loop {
        let missing = engram
            .store()
            .messages()
            .count_without_vectors(agent)
            .unwrap();
        if missing == 0 && !engram.archival().backfill_running(agent) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "{missing} messages still without a vector"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An OpenAI-compatible embeddings server that answers with the scripted server's hashed
/// vectors while `up`, and with 503 otherwise.
async fn switchable_embeddings() -> (String, Arc<AtomicBool>) {
    let up = Arc::new(AtomicBool::new(true));
    let flag = up.clone();
    let app = axum::Router::new().route(
        "/v1/embeddings",
        axum::routing::post(move |axum::Json(body): axum::Json<serde_json::Value>| {
            let flag = flag.clone();
            async move {
                if !flag.load(Ordering::SeqCst) {
                    return Err((axum::http::StatusCode::SERVICE_UNAVAILABLE, "down"));
                }
                let inputs: Vec<String> = match &body["input"] {
                    serde_json::Value::String(s) => vec![s.clone()],
                    serde_json::Value::Array(a) => a
                        .iter()
                        .map(|v| v.as_str().unwrap_or_default().to_owned())
                        .collect(),
                    _ => Vec::new(),
                };
                let data: Vec<_> = inputs
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        json!({"object": "embedding", "index": i,
                               "embedding": engram_mock_llm::embed(t, engram_mock_llm::EMBEDDING_DIMS)})
                    })
                    .collect();
                Ok(axum::Json(json!({"object": "list", "data": data,
                                     "model": "nomic-embed-text"})))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), up)
}

fn served(url: &str) -> Option<EmbeddingConfig> {
    Some(EmbeddingConfig {
        model: "ollama/nomic-embed-text".into(),
        base_url: Some(url.into()),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paraphrase_finds_a_message_by_meaning_through_conversation_search() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::with_model(&[]);
    let sam = home.agent(&mock, LoopStyle::ToolLoop).await;
    assert_eq!(
        home.engram
            .agents()
            .get(&sam)
            .await
            .unwrap()
            .agent
            .embedding
            .unwrap()
            .model,
        "local/all-minilm-l6-v2"
    );
    mock.push(Reply::text("Noted."));
    let (out, _) = home.chat(&sam, DOG).await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    // The turn's messages get their vectors after it, in the background.
    wait_embedded(&home.engram, &sam).await;

    // "my dog" shares no word with the message: words alone cannot find it.
    let store = home.engram.store();
    let lexical = store.search_messages(&sam, &query("my dog", 5)).unwrap();
    assert!(
        lexical
            .iter()
            .all(|h| !h.message.content.contains("terriers")),
        "{lexical:?}"
    );
    let hits = home
        .engram
        .recall()
        .search(&sam, &query("my dog", 5))
        .await
        .unwrap();
    assert_eq!(hits[0].message.content, DOG, "{hits:?}");
    assert!(hits.iter().all(|h| (0.0..=1.0).contains(&h.score)));

    // The agent's own tool searches the same way.
    mock.push(Reply::ToolCalls(vec![Call::new(
        "conversation_search",
        json!({"query": "my dog"}),
    )]));
    mock.push(Reply::text("You told me about Bob."));
    let (out, _) = home.chat(&sam, "Search your memory, please.").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    let results = last_tool_results(&mock);
    assert_eq!(results.len(), 1, "{results:?}");
    let found: serde_json::Value =
        serde_json::from_str(results[0]["message"].as_str().unwrap()).unwrap();
    assert_eq!(found[0]["content"], DOG, "{found}");
    assert_eq!(found[0]["role"], "user");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_stored_without_vectors_are_found_by_meaning_after_the_backfill() {
    let home = Home::with_model(&[]);
    let sam = home
        .engram
        .agents()
        .create(NewAgent {
            name: "Sam".into(),
            ..NewAgent::default()
        })
        .await
        .unwrap()
        .agent
        .id;
    // As an agent-file import stores a conversation: rows without vectors.
    let store = home.engram.store();
    store
        .messages()
        .append(
            &sam,
            &[
                NewMessage::user(DOG),
                NewMessage::assistant("Thanks for telling me.", None, vec![]),
                NewMessage::user("The quarterly tax report is due on Friday"),
                NewMessage::assistant("I will remind you.", None, vec![]),
            ],
        )
        .unwrap();
    assert_eq!(store.messages().count_without_vectors(&sam).unwrap(), 4);
    let mut notices = home.engram.notices();
    let report = home.engram.archival().backfill(&sam).await.unwrap();
    assert_eq!(report.remaining, 0);
    assert_eq!(report.embedded, 4);
    let progress: Vec<(u64, u64)> = std::iter::from_fn(|| notices.try_recv().ok())
        .filter_map(|n| match n {
            Notice::EmbeddingBackfill { done, total, .. } => Some((done, total)),
            _ => None,
        })
        .collect();
    assert_eq!(progress.last(), Some(&(4, 4)), "{progress:?}");
    let hits = recall(&home.engram, &sam, "my dog", 2).await;
    assert_eq!(hits[0], DOG, "{hits:?}");
    // A second run finds nothing left to do.
    let again = home.engram.archival().backfill(&sam).await.unwrap();
    assert_eq!((again.embedded, again.remaining), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedding_outage_during_a_turn_loses_nothing_and_the_message_is_backfilled() {
    let mock = MockLlm::start(Script::Queue).await;
    let (url, up) = switchable_embeddings().await;
    let home = Home::new();
    let sam = home
        .agent_with(&mock, LoopStyle::ToolLoop, |a| a.embedding = served(&url))
        .await;
    up.store(false, Ordering::SeqCst);
    mock.push(Reply::text("Got it."));
    let said = "The spare key is under the blue flowerpot";
    let (out, _) = home.chat(&sam, said).await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    // Both messages are stored; the background embedding failed, so they lack vectors…
    let store = home.engram.store();
    let listed: Vec<String> = store
        .messages()
        .list(&sam, None, 10)
        .unwrap()
        .into_iter()
        .map(|m| m.content)
        .collect();
    assert!(listed.iter().any(|t| t == said), "{listed:?}");
    let started = Instant::now();
    while home.engram.archival().backfill_running(&sam) {
        assert!(started.elapsed() < Duration::from_secs(60));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(store.messages().count_without_vectors(&sam).unwrap(), 2);
    // …and search answers by words meanwhile.
    assert_eq!(recall(&home.engram, &sam, "spare key", 1).await, [said]);

    // The server is back: the next search's embedding starts the backfill.
    up.store(true, Ordering::SeqCst);
    recall(&home.engram, &sam, "flowerpot", 1).await;
    wait_embedded(&home.engram, &sam).await;
    // Found by its vector alone (a query with no words to match).
    let v = engram_mock_llm::embed("spare key blue flowerpot", engram_mock_llm::EMBEDDING_DIMS);
    let hits = store
        .search_messages_by(&sam, &query("🙂", 1), Some(&v))
        .unwrap();
    assert_eq!(hits[0].message.content, said, "{hits:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_change_re_embeds_in_the_background_while_a_chat_turn_completes() {
    let mock = MockLlm::start(Script::Queue).await;
    let (url, _up) = switchable_embeddings().await;
    let home = Home::with_model(&[]);
    let sam = home
        .agent_with(&mock, LoopStyle::ToolLoop, |a| a.embedding = served(&url))
        .await;
    mock.push(Reply::text("Noted."));
    home.chat(&sam, DOG).await;
    wait_embedded(&home.engram, &sam).await;
    let store = home.engram.store();
    let old = engram_mock_llm::embed(DOG, engram_mock_llm::EMBEDDING_DIMS);
    let before = store
        .search_messages_by(&sam, &query("🙂", 1), Some(&old))
        .unwrap();
    assert_eq!(before[0].message.content, DOG);

    home.engram
        .agents()
        .update(
            &sam,
            &AgentPatch {
                embedding: Some(Some(EmbeddingConfig {
                    model: "local/all-minilm-l6-v2".into(),
                    base_url: None,
                })),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    // The old model's vectors are never compared with the new model's queries: a query of
    // the old model's kind finds nothing by meaning any more.
    let mixed = store
        .search_messages_by(&sam, &query("🙂", 1), Some(&old))
        .unwrap();
    assert!(mixed.is_empty(), "{mixed:?}");

    // Chat goes on while the new model re-embeds in the background.
    mock.push(Reply::text("Sure."));
    let (out, _) = home.chat(&sam, "What is on my list today?").await;
    assert_eq!(out.stop_reason, StopReason::EndTurn);
    wait_embedded(&home.engram, &sam).await;
    let hits = recall(&home.engram, &sam, "my dog", 1).await;
    assert_eq!(hits, [DOG]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backfill_cut_short_by_a_restart_goes_on_when_the_app_starts_again() {
    let home = Home::with_model(&[]);
    let sam = home
        .engram
        .agents()
        .create(NewAgent {
            name: "Sam".into(),
            ..NewAgent::default()
        })
        .await
        .unwrap()
        .agent
        .id;
    let mut rows = vec![NewMessage::user(DOG)];
    rows.extend((0..99).map(|i| NewMessage::user(format!("Note {i}: buy more paint"))));
    home.engram.store().messages().append(&sam, &rows).unwrap();
    // Stop the backfill after its first batch, as closing the app would.
    let mut notices = home.engram.notices();
    tokio::select! {
        _ = home.engram.archival().backfill(&sam) => panic!("the backfill was not cut short"),
        _ = async {
            while !matches!(notices.recv().await, Ok(Notice::EmbeddingBackfill { .. })) {}
        } => {}
    }
    let left = home
        .engram
        .store()
        .messages()
        .count_without_vectors(&sam)
        .unwrap();
    assert!(left > 0 && left < 100, "{left}");

    let Home { dir, engram } = home;
    drop(engram);
    let model = engram_suite::model::model_dir().display().to_string();
    let reopened =
        engram_suite::open_with_env(dir.path(), &[("ENGRAM_LOCAL_MODEL_DIR", model.as_str())]);
    assert_eq!(reopened.archival().resume_backfills().unwrap(), 1);
    wait_embedded(&reopened, &sam).await;
    assert_eq!(recall(&reopened, &sam, "my puppy", 1).await, [DOG]);
}

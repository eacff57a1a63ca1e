//! Archival memory end to end: the agent saves and searches passages through its tools, with and
//! without an embedding model; filters apply before the limit.

use engram_core::{EmbeddingConfig, LoopStyle, TagMatch};
use engram_mock_llm::{MockLlm, Script};
use engram_suite::Home;

#[tokio::test]
async fn the_agent_saves_and_finds_passages() {
    let mock = MockLlm::start(Script::Brain).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::Classic).await;
    home.chat(
        &agent,
        "remember that the spare key is under the blue flowerpot",
    )
    .await;
    let list = engram_store::PassageList {
        limit: 100,
        ..Default::default()
    };
    let passages = home.engram.archival().list(&agent, &list).await.unwrap();
    assert_eq!(passages.len(), 1, "{passages:?}");
    assert!(passages[0].text.contains("blue flowerpot"));

    let (out, _) = home
        .chat(&agent, "search your archival memory for spare key")
        .await;
    let calls: Vec<_> = out
        .messages
        .iter()
        .flat_map(|m| m.tool_calls.iter())
        .map(|c| c.name.as_str())
        .collect();
    assert!(calls.contains(&"archival_memory_search"), "{calls:?}");
    let response = engram_service::letta::response(&out, LoopStyle::Classic);
    assert!(
        response.to_string().contains("blue flowerpot"),
        "{response}"
    );
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
}

#[tokio::test]
async fn passages_are_embedded_and_searched_with_vectors_when_the_agent_has_a_model() {
    let mock = MockLlm::start(Script::Brain).await;
    let home = Home::new();
    let agent = home
        .agent_with(&mock, LoopStyle::ToolLoop, |a| {
            a.embedding = Some(EmbeddingConfig {
                model: "openai/mock-embed".into(),
                base_url: Some(mock.base_url()),
            });
        })
        .await;
    for (text, tag) in [
        ("The tulips in the front garden bloom in April.", "garden"),
        ("Bob's sister Carla lives in Lisbon.", "family"),
        ("The garden hose leaks near the tap.", "garden"),
    ] {
        home.engram
            .archival()
            .insert(&agent, text, vec![tag.into()])
            .await
            .unwrap();
    }
    // The vectors follow in the background, in one batch.
    assert!(
        home.engram
            .archival()
            .fresh_vectors(&agent, std::time::Duration::from_secs(10))
            .await
    );
    assert!(
        home.engram
            .store()
            .passages()
            .embeddings_missing(&agent)
            .unwrap()
            .is_empty(),
        "every passage has a vector"
    );
    assert!(mock.requests().iter().any(|r| r.path == "/v1/embeddings"));

    let hits = home
        .engram
        .archival()
        .search(
            &agent,
            "garden tulips",
            vec![],
            TagMatch::Any,
            (None, None),
            2,
        )
        .await
        .unwrap();
    assert_eq!(
        hits[0].passage.text,
        "The tulips in the front garden bloom in April."
    );
    let family = home
        .engram
        .archival()
        .search(
            &agent,
            "garden",
            vec!["family".into()],
            TagMatch::Any,
            (None, None),
            1,
        )
        .await
        .unwrap();
    assert!(
        family.iter().all(|h| h.passage.tags == ["family"]),
        "tag filter before the limit: {family:?}"
    );

    // The agent's own tool goes through the same path.
    home.chat(&agent, "remember that the compost bin is behind the shed")
        .await;
    assert!(
        home.engram
            .store()
            .passages()
            .embeddings_missing(&agent)
            .unwrap()
            .is_empty()
    );
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
}

#[tokio::test]
async fn word_search_marks_the_neighbours_it_brings_along_as_context() {
    let mock = MockLlm::start(Script::Brain).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    let words_only = engram_core::AgentPatch {
        embedding: Some(None),
        ..Default::default()
    };
    home.engram
        .agents()
        .update(&agent, &words_only)
        .await
        .unwrap();
    // Written one after another: the second is the first's neighbour in time.
    for text in [
        "The tulips in the front garden bloom in April.",
        "She planted them the autumn after moving in.",
        "Unrelated: the car needs new tyres before winter.",
    ] {
        home.engram
            .archival()
            .insert(&agent, text, vec![])
            .await
            .unwrap();
    }
    let hits = home
        .engram
        .archival()
        .search(&agent, "tulips", vec![], TagMatch::Any, (None, None), 10)
        .await
        .unwrap();
    let seen: Vec<(&str, bool)> = hits
        .iter()
        .map(|h| (&h.passage.text[..12], h.context))
        .collect();
    let tulips = hits
        .iter()
        .find(|h| h.passage.text.contains("tulips"))
        .unwrap();
    assert!(!tulips.context, "{seen:?}");
    let neighbour = hits
        .iter()
        .find(|h| h.passage.text.contains("planted"))
        .expect("the neighbour comes along");
    assert!(neighbour.context, "{seen:?}");
    // The store agrees with the search's own words (stems included).
    let ids: Vec<_> = hits.iter().map(|h| h.passage.id.clone()).collect();
    let with = home
        .engram
        .store()
        .passages()
        .with_words(&agent, "tulip", &ids)
        .unwrap();
    assert!(with.contains(&tulips.passage.id) && !with.contains(&neighbour.passage.id));
}

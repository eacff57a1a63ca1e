//! Archival memory end to end: the agent saves and searches passages through its tools, with and
//! without an embedding model; filters apply before the limit.

use engram_core::{EmbeddingConfig, LoopStyle, TagMatch};
use engram_mock_llm::{MockLlm, Script};
use engram_suite::Home;

#[tokio::test]
async fn the_agent_saves_and_finds_passages() {
    let mock = MockLlm::start(Script::Brain).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::Classic);
    home.chat(
        &agent,
        "remember that the spare key is under the blue flowerpot",
    )
    .await;
    let list = engram_store::PassageList {
        limit: 100,
        ..Default::default()
    };
    let passages = home.engram.list_passages(&agent, &list).unwrap();
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
    let agent = home.agent_with(&mock, LoopStyle::ToolLoop, |a| {
        a.embedding = Some(EmbeddingConfig {
            model: "openai/mock-embed".into(),
            base_url: Some(mock.base_url()),
        });
    });
    for (text, tag) in [
        ("The tulips in the front garden bloom in April.", "garden"),
        ("Bob's sister Carla lives in Lisbon.", "family"),
        ("The garden hose leaks near the tap.", "garden"),
    ] {
        home.engram
            .add_passage(&agent, text, vec![tag.into()])
            .await
            .unwrap();
    }
    assert!(
        home.engram
            .store()
            .passage_embeddings_missing(&agent)
            .unwrap()
            .is_empty(),
        "every passage has a vector"
    );
    assert!(mock.requests().iter().any(|r| r.path == "/v1/embeddings"));

    let hits = home
        .engram
        .search_archival(
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
        .search_archival(
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
            .passage_embeddings_missing(&agent)
            .unwrap()
            .is_empty()
    );
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
}

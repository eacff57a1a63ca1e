//! Exports that keep what a year built: an `.af` round trip keeps every passage's
//! vector (only for the same embedding model) and every step's usage, and the JSON report is
//! refused on import with a message that says what it is.

use engram_core::{EmbeddingConfig, LoopStyle, NewPassage, Step};
use engram_mock_llm::{MockLlm, Script};
use engram_suite::{Home, cli, stdout_ok};
use serde_json::Value;

const MODEL: &str = "openai/text-embedding-3-small";

/// Usage as the totals see it: everything but the ids minted afresh on import.
fn usage(steps: &[Step]) -> Vec<Value> {
    steps
        .iter()
        .map(|s| {
            serde_json::json!([
                s.run_id,
                s.index,
                s.model,
                s.prompt_tokens,
                s.completion_tokens,
                s.finish_reason,
                s.started_at,
                s.llm_ms,
                s.step_ms
            ])
        })
        .collect()
}

/// A chatted-with agent on `mock` whose passages carry 3-dimension vectors of [`MODEL`].
async fn agent_with_vectors(home: &Home, mock: &MockLlm) -> engram_core::AgentId {
    let a = home
        .agent_with(mock, LoopStyle::ToolLoop, |n| {
            n.embedding = Some(EmbeddingConfig {
                model: MODEL.into(),
                base_url: Some(mock.base_url()),
            });
        })
        .await;
    home.chat(&a, "my name is Bob").await;
    home.chat(&a, "what is my name?").await;
    let store = home.engram.store();
    store
        .passages()
        .insert(
            &a,
            &[
                NewPassage {
                    text: "Bob likes tea.".into(),
                    embedding: Some(vec![0.25, -1.5, 3.0e-7]),
                    ..NewPassage::default()
                },
                NewPassage {
                    text: "No vector yet.".into(),
                    ..NewPassage::default()
                },
                NewPassage {
                    text: "Bob's sister is Ann.".into(),
                    embedding: Some(vec![f32::MIN_POSITIVE, 1.0, -0.0]),
                    ..NewPassage::default()
                },
            ],
        )
        .unwrap();
    a
}

#[tokio::test]
async fn vectors_and_usage_survive_an_agent_file_round_trip() {
    let mock = MockLlm::start(Script::Brain).await;
    let home = Home::new();
    let a = agent_with_vectors(&home, &mock).await;
    let store = home.engram.store();
    let steps = store.runs().list_steps(&a, None).unwrap();
    assert!(steps.len() >= 2, "the chats made steps: {steps:?}");
    let vectors: Vec<Vec<f32>> = store
        .passages()
        .vectors(&a)
        .unwrap()
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    assert_eq!(vectors.len(), 2);

    let file = home
        .engram
        .agent_files()
        .export(std::slice::from_ref(&a))
        .await
        .unwrap();
    let json: Value = serde_json::from_slice(&file).unwrap();
    let ext = &json["engram"]["agents"]["agent-0"];
    assert_eq!(ext["passages"][0]["embedding_model"], MODEL);
    assert_eq!(
        ext["passages"][0]["embedding"], "AACAPgAAwL+wD6E0",
        "base64 of little-endian f32s"
    );
    assert!(ext["passages"][1].get("embedding").is_none());
    assert_eq!(ext["steps"].as_array().unwrap().len(), steps.len());

    // Into another database, and into the same one again (fresh step ids, no conflict).
    for target in [Home::new(), home] {
        let report = target.engram.agent_files().import(&file).await.unwrap();
        assert!(
            report.warnings.iter().all(|w| !w.contains("vector")),
            "{:?}",
            report.warnings
        );
        let b = &report.agents[0];
        let st = target.engram.store();
        let got: Vec<Vec<f32>> = st
            .passages()
            .vectors(b)
            .unwrap()
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        assert_eq!(got, vectors, "vectors are equal bit for bit");
        let imported = st.runs().list_steps(b, None).unwrap();
        assert_eq!(usage(&imported), usage(&steps), "usage history is equal");
        assert!(imported.iter().all(|s| !steps.iter().any(|o| o.id == s.id)));
        // The messages name the imported steps.
        let step_ids: Vec<_> = imported.iter().map(|s| s.id.clone()).collect();
        let msgs = st.messages().list(b, None, usize::MAX).unwrap();
        let named: Vec<_> = msgs.iter().filter_map(|m| m.step_id.clone()).collect();
        assert!(!named.is_empty());
        assert!(
            named.iter().all(|id| step_ids.contains(id)),
            "{named:?} vs {step_ids:?}"
        );
    }
}

#[tokio::test]
async fn vectors_of_another_embedding_model_are_left_out_with_a_warning() {
    let mock = MockLlm::start(Script::Brain).await;
    let home = Home::new();
    let a = agent_with_vectors(&home, &mock).await;
    let file = home.engram.agent_files().export(&[a]).await.unwrap();
    let mut json: Value = serde_json::from_slice(&file).unwrap();
    json["engram"]["agents"]["agent-0"]["embedding"]["model"] = "ollama/nomic-embed-text".into();
    let other = Home::new();
    let report = other
        .engram
        .agent_files()
        .import(&serde_json::to_vec(&json).unwrap())
        .await
        .unwrap();
    let w = report.warnings.join("\n");
    assert!(
        w.contains("2 passage vector(s)") && w.contains("ollama/nomic-embed-text"),
        "{w}"
    );
    let b = &report.agents[0];
    assert!(
        other
            .engram
            .store()
            .passages()
            .vectors(b)
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        other.engram.store().agents().memory_counts(b).unwrap().1,
        3,
        "passages all kept"
    );

    // A vector that is not base64 is refused with its path, and nothing is imported.
    json["engram"]["agents"]["agent-0"]["passages"][0]["embedding"] = "%%%".into();
    let e = other
        .engram
        .agent_files()
        .import(&serde_json::to_vec(&json).unwrap())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("engram.agents.agent-0.passages[0].embedding"),
        "{e}"
    );
    assert_eq!(other.engram.agents().list().await.unwrap().len(), 1);
}

#[tokio::test]
async fn the_json_report_says_it_cannot_be_imported() {
    let mock = MockLlm::start(Script::Brain).await;
    let home = Home::new();
    let a = agent_with_vectors(&home, &mock).await;
    let json = stdout_ok(&cli(
        home.path(),
        &["export", a.as_str(), "--format", "json"],
    ));
    let v: Value = serde_json::from_str(&json).unwrap();
    assert!(v["note"].as_str().unwrap().contains("read-only report"));
    let path = home.path().join("report.json");
    std::fs::write(&path, &json).unwrap();
    let out = cli(home.path(), &["import", path.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("read-only report") && err.contains("Agent File (.af)"),
        "{err}"
    );
}

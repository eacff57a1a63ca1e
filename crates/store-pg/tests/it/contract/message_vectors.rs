//! Vectors of recall memory: which messages need one, a fill that stores only what still
//! holds (the same text, the same model), a stale vector gone with an edit, and recall search
//! finding by meaning among the vectors of the agent's current model.

use super::{agent, code};
use crate::harness::{Harness, on_both_backends};
use engram_core::{AgentPatch, EmbeddingConfig, MessageKind, NewMessage, ToolCall};
use engram_store_api::{
    AgentStore, CandidateDepth, Candidates, MessageQuery, MessageStore, MessageVector, Ranking,
    RewriteStore, embeddable_text,
};

on_both_backends!(
    messages_get_vectors_of_the_agents_model_and_are_found_by_meaning,
    a_fill_stores_only_what_still_holds,
);

fn embedding(model: &str) -> Option<EmbeddingConfig> {
    Some(EmbeddingConfig {
        model: model.into(),
        base_url: None,
    })
}

/// The vector ranking alone.
fn by_meaning(c: Candidates) -> Ranking {
    c.vector.unwrap_or_default()
}

const DEPTH: CandidateDepth = CandidateDepth {
    lexical: 10,
    vector: 10,
};

async fn messages_get_vectors_of_the_agents_model_and_are_found_by_meaning<H: Harness>(h: H) {
    let b = h.backend();
    let mut new = agent("ana");
    new.embedding = embedding("openai/small");
    let (a, _) = b.create_agent(&new, &[], &[]).await.unwrap();
    let said = |args: &str| ToolCall {
        id: "call-1".into(),
        name: "send_message".into(),
        arguments: args.into(),
    };
    let stored = b
        .append_messages(
            &a.id,
            &[
                NewMessage::user("I adopted a puppy"),
                NewMessage::assistant("", None, vec![said(r#"{"message": "Congratulations!"}"#)]),
                NewMessage::tool("call-1", "send_message", "OK"),
                NewMessage::hidden(MessageKind::Heartbeat, "go on"),
                NewMessage::assistant("", None, vec![said(r#"{"n": 3}"#)]),
            ],
        )
        .await
        .unwrap();

    // The person's and the agent's messages, in order; tool results and heartbeats never.
    let waiting = b.messages_without_vectors(&a.id, None, 10).await.unwrap();
    let ids: Vec<_> = waiting.iter().map(|u| u.message.id.clone()).collect();
    assert_eq!(
        ids,
        [
            stored[0].id.clone(),
            stored[1].id.clone(),
            stored[4].id.clone()
        ]
    );
    assert_eq!(b.count_messages_without_vectors(&a.id).await.unwrap(), 3);
    // Paged by cursor.
    let rest = b
        .messages_without_vectors(&a.id, Some(waiting[0].cursor), 1)
        .await
        .unwrap();
    assert_eq!(rest[0].message.id, stored[1].id);

    let vector = |i: usize, v: Vec<f32>| MessageVector {
        id: stored[i].id.clone(),
        text: embeddable_text(&stored[i]).unwrap_or_default(),
        vector: v,
    };
    let filled = [
        vector(0, vec![1.0, 0.0, 0.0]),
        vector(1, vec![0.0, 1.0, 0.0]),
        // Nothing to embed: marked, so it is not asked for again.
        vector(4, Vec::new()),
    ];
    assert_eq!(filled[1].text, "Congratulations!");
    assert_eq!(
        b.fill_message_vectors(&a.id, "openai/small", &filled)
            .await
            .unwrap(),
        3
    );
    assert_eq!(b.count_messages_without_vectors(&a.id).await.unwrap(), 0);
    assert!(
        b.messages_without_vectors(&a.id, None, 10)
            .await
            .unwrap()
            .is_empty()
    );

    // A query no word matches finds by meaning, best first.
    let q = MessageQuery {
        query: "pet dog".into(),
        limit: 10,
        ..MessageQuery::default()
    };
    let hits = b
        .rank_messages(&a.id, &q, Some(&[0.9, 0.2, 0.0]), DEPTH, &by_meaning)
        .await
        .unwrap();
    let found: Vec<_> = hits.iter().map(|h| h.message.id.clone()).collect();
    assert_eq!(found, [stored[0].id.clone(), stored[1].id.clone()]);
    assert!(hits[0].score > hits[1].score);
    // A query of another dimension compares with nothing.
    let other = b
        .rank_messages(&a.id, &q, Some(&[1.0, 0.0]), DEPTH, &by_meaning)
        .await
        .unwrap();
    assert!(other.is_empty());

    // A new text loses its vector.
    b.update_message_text(None, &a.id, &stored[0].id, "I adopted a kitten", None, None)
        .await
        .unwrap();
    let waiting = b.messages_without_vectors(&a.id, None, 10).await.unwrap();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].message.content, "I adopted a kitten");

    // Another model: every message waits again, and the old vectors are not compared.
    b.update_agent(
        &a.id,
        &AgentPatch {
            embedding: Some(embedding("openai/large")),
            ..AgentPatch::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(b.count_messages_without_vectors(&a.id).await.unwrap(), 3);
    let after = b
        .rank_messages(&a.id, &q, Some(&[0.9, 0.2, 0.0]), DEPTH, &by_meaning)
        .await
        .unwrap();
    assert!(after.is_empty());
}

async fn a_fill_stores_only_what_still_holds<H: Harness>(h: H) {
    let b = h.backend();
    let mut new = agent("ana");
    new.embedding = embedding("openai/small");
    let (a, _) = b.create_agent(&new, &[], &[]).await.unwrap();
    let stored = b
        .append_messages(
            &a.id,
            &[
                NewMessage::user("I live in Lisbon"),
                NewMessage::user("I moved"),
            ],
        )
        .await
        .unwrap();
    let stale = MessageVector {
        id: stored[0].id.clone(),
        text: "I live in Porto".into(),
        vector: vec![1.0, 0.0],
    };
    let right = MessageVector {
        id: stored[1].id.clone(),
        text: "I moved".into(),
        vector: vec![0.0, 1.0],
    };
    // Computed from other text, or by a model the agent no longer has: not stored.
    assert_eq!(
        b.fill_message_vectors(&a.id, "openai/small", &[stale, right.clone()])
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        b.fill_message_vectors(&a.id, "openai/old", std::slice::from_ref(&right))
            .await
            .unwrap(),
        0
    );
    assert_eq!(b.count_messages_without_vectors(&a.id).await.unwrap(), 1);
    // Bad vectors are refused whole.
    let bad = MessageVector {
        id: stored[0].id.clone(),
        text: "I live in Lisbon".into(),
        vector: vec![f32::NAN, 1.0],
    };
    assert_eq!(
        code(b.fill_message_vectors(&a.id, "openai/small", &[bad]).await),
        "invalid_input"
    );
    let empty = MessageVector {
        vector: Vec::new(),
        ..right.clone()
    };
    assert_eq!(
        code(
            b.fill_message_vectors(&a.id, "openai/small", &[empty])
                .await
        ),
        "invalid_input"
    );
    // An agent without a model has nothing waiting.
    let (plain, _) = b.create_agent(&agent("bo"), &[], &[]).await.unwrap();
    b.append_messages(&plain.id, &[NewMessage::user("hello")])
        .await
        .unwrap();
    assert_eq!(
        b.count_messages_without_vectors(&plain.id).await.unwrap(),
        0
    );
    let unknown = engram_core::AgentId::new();
    assert_eq!(
        code(b.messages_without_vectors(&unknown, None, 5).await),
        "not_found"
    );
    assert_eq!(
        code(
            b.fill_message_vectors(&unknown, "openai/small", &[right])
                .await
        ),
        "not_found"
    );
}

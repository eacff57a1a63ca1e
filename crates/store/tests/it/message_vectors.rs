//! Message vectors: which messages need one, filling them in without overwriting a newer
//! write or mixing models, and the vector side of conversation search.

use crate::support::{create, temp_store};
use engram_core::{AgentPatch, EmbeddingConfig, MessageKind, NewMessage, Role, ToolCall};
use engram_retrieval::HybridSearch;
use engram_store::{MessageQuery, MessageVector, Store, embeddable_text};

fn model(store: &Store, agent: &engram_core::AgentId, name: Option<&str>) {
    store
        .agents()
        .update(
            agent,
            &AgentPatch {
                embedding: Some(name.map(|m| EmbeddingConfig {
                    model: m.into(),
                    base_url: None,
                })),
                ..Default::default()
            },
        )
        .unwrap();
}

/// Fills every missing vector with `vector_of(text)`; returns how many were stored.
fn fill(
    store: &Store,
    agent: &engram_core::AgentId,
    name: &str,
    vector_of: fn(&str) -> Vec<f32>,
) -> usize {
    let missing = store.messages().without_vectors(agent, None, 100).unwrap();
    let filled: Vec<MessageVector> = missing
        .into_iter()
        .map(|u| {
            let text = embeddable_text(&u.message).unwrap_or_default();
            MessageVector {
                id: u.message.id,
                vector: if text.is_empty() {
                    Vec::new()
                } else {
                    vector_of(&text)
                },
                text,
            }
        })
        .collect();
    store.messages().fill_vectors(agent, name, &filled).unwrap()
}

/// A toy two-dimensional "model": pets point one way, everything else the other.
fn toy(text: &str) -> Vec<f32> {
    if text.contains("terrier") || text.contains("puppy") {
        vec![1.0, 0.1]
    } else {
        vec![0.1, 1.0]
    }
}

fn q(text: &str, roles: Vec<Role>, limit: usize) -> MessageQuery {
    MessageQuery {
        query: text.into(),
        roles,
        limit,
        ..Default::default()
    }
}

#[test]
fn only_messages_worth_searching_wait_for_a_vector_of_the_current_model() {
    let (_d, store) = temp_store();
    let (a, _) = create(&store, "A");
    let calls = vec![ToolCall {
        id: "c1".into(),
        name: "conversation_search".into(),
        arguments: r#"{"limit": 3}"#.into(),
    }];
    store
        .messages()
        .append(
            &a.id,
            &[
                NewMessage::user("Bob loves boston terriers"),
                NewMessage::assistant("", None, calls),
                NewMessage::hidden(MessageKind::Heartbeat, r#"{"type":"heartbeat"}"#),
                NewMessage::tool("c1", "conversation_search", "[]"),
            ],
        )
        .unwrap();
    // Without an embedding model nothing waits.
    assert_eq!(store.messages().count_without_vectors(&a.id).unwrap(), 0);
    assert!(
        store
            .messages()
            .without_vectors(&a.id, None, 10)
            .unwrap()
            .is_empty()
    );
    model(&store, &a.id, Some("toy/one"));
    // The user message and the assistant's tool call (which has no text: it gets a marker).
    assert_eq!(store.messages().count_without_vectors(&a.id).unwrap(), 2);
    let first = store.messages().without_vectors(&a.id, None, 1).unwrap();
    let rest = store
        .messages()
        .without_vectors(&a.id, Some(first[0].cursor), 10)
        .unwrap();
    assert_eq!(rest.len(), 1);
    assert_eq!(fill(&store, &a.id, "toy/one", toy), 2);
    assert_eq!(store.messages().count_without_vectors(&a.id).unwrap(), 0);
    // A new model wants its own vectors; the old ones no longer count.
    model(&store, &a.id, Some("toy/two"));
    assert_eq!(store.messages().count_without_vectors(&a.id).unwrap(), 2);
}

#[test]
fn a_stale_fill_never_lands() {
    let (_d, store) = temp_store();
    let (a, _) = create(&store, "A");
    model(&store, &a.id, Some("toy/one"));
    let m = store
        .messages()
        .append(&a.id, &[NewMessage::user("I got a puppy")])
        .unwrap()
        .remove(0);
    let stale = MessageVector {
        id: m.id.clone(),
        text: "I got a puppy".into(),
        vector: vec![1.0, 0.0],
    };
    // Another model is the agent's now: nothing is stored.
    model(&store, &a.id, Some("toy/two"));
    assert_eq!(
        store
            .messages()
            .fill_vectors(&a.id, "toy/one", std::slice::from_ref(&stale))
            .unwrap(),
        0
    );
    // The text changed since it was embedded: nothing is stored.
    store
        .messages()
        .update_text(&a.id, &m.id, "I got a kitten", None, None)
        .unwrap();
    assert_eq!(
        store
            .messages()
            .fill_vectors(&a.id, "toy/two", &[stale])
            .unwrap(),
        0
    );
    // A vector for the current text lands, and goes again when the text changes.
    let fresh = MessageVector {
        id: m.id.clone(),
        text: "I got a kitten".into(),
        vector: vec![0.0, 1.0],
    };
    assert_eq!(
        store
            .messages()
            .fill_vectors(&a.id, "toy/two", &[fresh])
            .unwrap(),
        1
    );
    assert_eq!(store.messages().count_without_vectors(&a.id).unwrap(), 0);
    store
        .messages()
        .update_text(&a.id, &m.id, "I got a hamster", None, None)
        .unwrap();
    assert_eq!(store.messages().count_without_vectors(&a.id).unwrap(), 1);
    // Bad vectors are refused.
    let bad = MessageVector {
        id: m.id,
        text: "I got a hamster".into(),
        vector: vec![f32::NAN],
    };
    assert!(
        store
            .messages()
            .fill_vectors(&a.id, "toy/two", &[bad])
            .is_err()
    );
}

#[test]
fn recall_search_fuses_words_and_meaning_with_filters_before_the_limit() {
    let (_d, store) = temp_store();
    let (a, _) = create(&store, "A");
    model(&store, &a.id, Some("toy/one"));
    let mut rows = vec![NewMessage::user("Bob loves boston terriers")];
    for i in 0..30 {
        rows.push(NewMessage::assistant(
            format!("A puppy fact, number {i}"),
            None,
            vec![],
        ));
    }
    rows.push(NewMessage::user("The tax report is due on Friday"));
    store.messages().append(&a.id, &rows).unwrap();
    assert_eq!(fill(&store, &a.id, "toy/one", toy), 32);

    let pet = toy("terrier");
    // No shared word, found by meaning; scores stay in 0..1.
    let hits = store
        .search_messages_by(&a.id, &q("my dog", vec![Role::User], 1), Some(&pet))
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].message.content, "Bob loves boston terriers");
    assert!((0.0..=1.0).contains(&hits[0].score));
    // The role filter applies to the vector side before the limit: 30 assistant messages
    // point the same way but are not users.
    let words = store
        .search_messages_by(&a.id, &q("tax", vec![Role::User], 5), Some(&pet))
        .unwrap();
    assert!(
        words.iter().all(|h| h.message.role == Role::User),
        "{words:?}"
    );
    assert_eq!(words[0].message.content, "The tax report is due on Friday");
    // Words alone: every hit holds a query word, best first, the best scoring 1.
    let lexical = store
        .search_messages(&a.id, &q("tax", Vec::new(), 5))
        .unwrap();
    assert_eq!(lexical.len(), 1);
    assert!((lexical[0].score - 1.0).abs() < 1e-9);
    // A query vector of another length matches no stored vector: words only.
    let other = store
        .search_messages_by(&a.id, &q("tax", Vec::new(), 5), Some(&[1.0, 0.0, 0.0]))
        .unwrap();
    assert_eq!(other.len(), 1);
    // Deleting a message takes its vector along.
    let id = hits[0].message.id.clone();
    store.messages().delete(None, &a.id, &id).unwrap();
    let after = store
        .search_messages_by(&a.id, &q("my dog", vec![Role::User], 1), Some(&pet))
        .unwrap();
    assert!(after.iter().all(|h| h.message.id != id));
}

//! Conversation and archival search: safety, filters before the limit, dates, fusion.

use crate::support::{at, create, temp_store};
use engram_core::{MessageKind, NewMessage, NewPassage, Role, TagMatch};
use engram_retrieval::HybridSearch;
use engram_store::{MessageQuery, PassageQuery};

const NASTY: &[&str] = &[
    "",
    " ",
    "AND OR \"",
    "\"",
    "\"\"\"",
    "NEAR(",
    "NEAR(a b, 3)",
    "*",
    "a*",
    "col:x",
    "body:x",
    "^start",
    "(",
    ")",
    "-x",
    "+",
    "x AND",
    "NOT",
    "{a b}",
    "🎉",
    "🎉 party 🎉",
    "'",
    "\\",
    "\0",
    "a\"b",
    "AND",
    "OR OR OR",
    ":",
    "x:y:z",
    "[]",
    "%_",
    "ünïcödé",
    "日本語",
];

#[test]
fn nasty_queries_never_fail() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    store
        .messages()
        .append(&a.id, &[NewMessage::user("a party NEAR the col x")])
        .unwrap();
    store
        .passages()
        .insert(
            &a.id,
            &[NewPassage {
                text: "a party NEAR the col x".into(),
                ..Default::default()
            }],
        )
        .unwrap();
    for q in NASTY {
        let m = store.search_messages(
            &a.id,
            &MessageQuery {
                query: (*q).into(),
                limit: 5,
                ..Default::default()
            },
        );
        assert!(m.is_ok(), "messages {q:?}: {m:?}");
        for embedding in [None, Some(vec![1.0, 2.0])] {
            let p = store.search_passages(
                &a.id,
                &PassageQuery {
                    query: (*q).into(),
                    top_k: 5,
                    embedding,
                    ..Default::default()
                },
            );
            assert!(p.is_ok(), "passages {q:?}: {p:?}");
        }
    }
    let hits = store
        .search_passages(
            &a.id,
            &PassageQuery {
                query: "🎉 party 🎉".into(),
                top_k: 5,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(hits.len(), 1, "words next to emoji still match");
    let hits = store
        .search_passages(
            &a.id,
            &PassageQuery {
                query: "col:x".into(),
                top_k: 5,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(hits.len(), 1, "column syntax is searched as words");
}

#[test]
fn more_matching_words_rank_higher_and_stemming_applies() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    let texts = [
        "the garden has roses",
        "walking in the garden with tulips and roses",
        "tulips",
    ];
    let ps: Vec<_> = texts
        .iter()
        .map(|t| NewPassage {
            text: (*t).into(),
            ..Default::default()
        })
        .collect();
    store.passages().insert(&a.id, &ps).unwrap();
    let hits = store
        .search_passages(
            &a.id,
            &PassageQuery {
                query: "gardens, TULIP!".into(),
                top_k: 10,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(hits.len(), 3, "OR keeps partial matches");
    assert_eq!(hits[0].passage.text, texts[1]);
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
}

#[test]
fn tag_filters_apply_before_top_k() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    let mut ps: Vec<_> = (0..50)
        .map(|i| NewPassage {
            text: format!("coffee note number {i} coffee coffee"),
            ..Default::default()
        })
        .collect();
    ps.push(NewPassage {
        text: "coffee once".into(),
        tags: vec!["special".into(), "rare".into()],
        ..Default::default()
    });
    store.passages().insert(&a.id, &ps).unwrap();

    for tag_match in [TagMatch::Any, TagMatch::All] {
        let q = PassageQuery {
            query: "coffee".into(),
            tags: vec!["special".into()],
            tag_match,
            top_k: 1,
            ..Default::default()
        };
        let hits = store.search_passages(&a.id, &q).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].passage.text, "coffee once");
        let vq = PassageQuery {
            embedding: Some(vec![1.0]),
            ..q
        };
        assert_eq!(
            store.search_passages(&a.id, &vq).unwrap()[0].passage.text,
            "coffee once"
        );
    }
    let any = PassageQuery {
        query: "coffee".into(),
        tags: vec!["rare".into(), "nope".into()],
        top_k: 5,
        ..Default::default()
    };
    assert_eq!(store.search_passages(&a.id, &any).unwrap().len(), 1);
    let all = PassageQuery {
        tag_match: TagMatch::All,
        ..any.clone()
    };
    assert!(store.search_passages(&a.id, &all).unwrap().is_empty());
    let both = PassageQuery {
        tags: vec!["rare".into(), "special".into(), "rare".into()],
        ..all
    };
    assert_eq!(store.search_passages(&a.id, &both).unwrap().len(), 1);
    // Blank query: newest matching the filters.
    let blank = PassageQuery {
        tags: vec!["special".into()],
        top_k: 1,
        ..Default::default()
    };
    assert_eq!(
        store.search_passages(&a.id, &blank).unwrap()[0]
            .passage
            .text,
        "coffee once"
    );
}

#[test]
fn date_filters_apply_in_sql() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    let days = [
        "2024-01-01T09:00:00Z",
        "2024-01-02T09:00:00Z",
        "2024-01-03T09:00:00Z",
    ];
    let ps: Vec<_> = days
        .iter()
        .map(|d| NewPassage {
            text: format!("standup on {d}"),
            created_at: Some(at(d)),
            ..Default::default()
        })
        .collect();
    store.passages().insert(&a.id, &ps).unwrap();
    let ms: Vec<_> = days
        .iter()
        .map(|d| NewMessage {
            created_at: Some(at(d)),
            ..NewMessage::user(format!("standup on {d}"))
        })
        .collect();
    store.messages().append(&a.id, &ms).unwrap();

    let start = Some(at("2024-01-02T00:00:00Z"));
    let end = Some(at("2024-01-02T23:59:59Z"));
    for query in ["standup", ""] {
        let hits = store
            .search_passages(
                &a.id,
                &PassageQuery {
                    query: query.into(),
                    start,
                    end,
                    top_k: 10,
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(hits.len(), 1, "{query:?}");
        assert_eq!(hits[0].passage.created_at, at(days[1]));
        let hits = store
            .search_messages(
                &a.id,
                &MessageQuery {
                    query: query.into(),
                    start,
                    end,
                    limit: 10,
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(hits.len(), 1, "{query:?}");
        assert_eq!(hits[0].message.created_at, at(days[1]));
    }
    let from_second = PassageQuery {
        query: "standup".into(),
        start,
        top_k: 1,
        ..Default::default()
    };
    assert_ne!(
        store.search_passages(&a.id, &from_second).unwrap()[0]
            .passage
            .created_at,
        at(days[0])
    );
    let exact = PassageQuery {
        query: "standup".into(),
        start: Some(at(days[2])),
        end: Some(at(days[2])),
        top_k: 5,
        ..Default::default()
    };
    assert_eq!(
        store.search_passages(&a.id, &exact).unwrap().len(),
        1,
        "bounds are inclusive"
    );
}

#[test]
fn embeddings_change_the_ranking_by_fusion_on_one_score_scale() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    let ps = vec![
        NewPassage {
            text: "rust rust rust borrow checker".into(),
            embedding: Some(vec![0.0, 1.0, 0.0]),
            ..Default::default()
        },
        NewPassage {
            text: "rust and ownership".into(),
            embedding: Some(vec![1.0, 0.1, 0.0]),
            ..Default::default()
        },
        NewPassage {
            text: "ownership of memory".into(),
            embedding: Some(vec![0.9, 0.2, 0.0]),
            ..Default::default()
        },
        NewPassage {
            text: "unrelated cooking".into(),
            embedding: Some(vec![0.0, 0.0, 1.0]),
            ..Default::default()
        },
        NewPassage {
            text: "rust in another dimension".into(),
            embedding: Some(vec![1.0, 0.0]),
            ..Default::default()
        },
    ];
    store.passages().insert(&a.id, &ps).unwrap();
    let bm25 = store
        .search_passages(
            &a.id,
            &PassageQuery {
                query: "rust".into(),
                top_k: 3,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(bm25[0].passage.text, "rust rust rust borrow checker");
    // Lexical scores are shares of the best hit: 1 for the best, less for the rest.
    assert_eq!(bm25[0].score, 1.0);
    assert!(
        bm25[1..].iter().all(|h| h.score > 0.0 && h.score < 1.0),
        "{bm25:?}"
    );

    let q = PassageQuery {
        query: "rust".into(),
        top_k: 3,
        embedding: Some(vec![1.0, 0.0, 0.0]),
        ..Default::default()
    };
    let fused = store.search_passages(&a.id, &q).unwrap();
    assert_eq!(
        fused[0].passage.text, "rust and ownership",
        "first by vector, second by BM25"
    );
    assert!(fused.windows(2).all(|w| w[0].score >= w[1].score));
    // 0.7 × the lexical share + 0.3 × the cosine: on the same 0..1 scale as lexical scores.
    let cos = 1.0 / 1.01f64.sqrt();
    let lexical_share = bm25
        .iter()
        .find(|h| h.passage.text == "rust and ownership")
        .unwrap()
        .score;
    assert!(
        (fused[0].score - (0.7 * lexical_share + 0.3 * cos)).abs() < 1e-6,
        "{}",
        fused[0].score
    );
    assert!(fused.iter().all(|h| (0.0..=1.0).contains(&h.score)));
    assert!(
        fused
            .iter()
            .all(|h| h.passage.text != "unrelated cooking" || h.score < fused[0].score)
    );

    // Blank text with an embedding: nearest first; vectors of another dimension are ignored.
    let near = PassageQuery {
        top_k: 10,
        embedding: Some(vec![1.0, 0.0, 0.0]),
        ..Default::default()
    };
    let hits = store.search_passages(&a.id, &near).unwrap();
    assert_eq!(hits[0].passage.text, "rust and ownership");
    assert!(
        (hits[0].score - 1.0 / 1.01f64.sqrt()).abs() < 1e-6,
        "the cosine itself"
    );
    assert_eq!(hits.len(), 4);
}

#[test]
fn conversation_search_hides_loop_messages_and_system_unless_asked() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    store
        .messages()
        .append(
            &a.id,
            &[
                NewMessage::user("where is the kiwi"),
                NewMessage::hidden(MessageKind::Heartbeat, "kiwi heartbeat"),
                NewMessage::hidden(MessageKind::Alert, "kiwi alert"),
                NewMessage {
                    role: Role::System,
                    ..NewMessage::user("kiwi system note")
                },
                NewMessage::assistant("", Some("thinking about kiwi".into()), vec![]),
                NewMessage::assistant(
                    "",
                    None,
                    vec![engram_core::ToolCall {
                        id: "c".into(),
                        name: "archival_memory_search".into(),
                        arguments: r#"{"query":"kiwi"}"#.into(),
                    }],
                ),
                NewMessage::tool(
                    "c",
                    "archival_memory_search",
                    r#"{"status":"OK","message":"kiwi in the fridge"}"#,
                ),
            ],
        )
        .unwrap();
    let search = |roles: Vec<Role>, limit| {
        store
            .search_messages(
                &a.id,
                &MessageQuery {
                    query: "kiwi".into(),
                    roles,
                    limit,
                    ..Default::default()
                },
            )
            .unwrap()
    };
    assert_eq!(
        search(vec![], 10).len(),
        4,
        "user, reasoning, tool-call arguments, tool result"
    );
    assert_eq!(search(vec![Role::Assistant], 10).len(), 2);
    let with_system = search(vec![Role::System], 10);
    assert_eq!(with_system.len(), 1);
    assert_eq!(with_system[0].message.content, "kiwi system note");
    assert_eq!(search(vec![], 1).len(), 1);
    // Blank query: newest visible messages first.
    let newest = store
        .search_messages(
            &a.id,
            &MessageQuery {
                limit: 2,
                roles: vec![Role::User],
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(newest.len(), 1);
    assert_eq!(newest[0].message.content, "where is the kiwi");
}

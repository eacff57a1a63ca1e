//! Archival memory: passages inserted in one transaction with their tags, read back as
//! written, listed by time with cursors, counted, deleted, searched by their words with tag and
//! date filters, and deleted with their agent.

use super::{agent, agent_with, code};
use crate::harness::{Harness, on_both_backends};
use engram_core::{AgentId, Error, NewPassage, Passage, PassageId, TagMatch, Timestamp};
use engram_store_api::{AgentStore, PassageRange, PassageSearch, PassageStore};

on_both_backends!(
    inserted_passages_read_back_as_written,
    a_batch_with_blank_text_or_a_bad_vector_writes_nothing,
    passages_list_by_time_with_cursors_either_way,
    deleting_a_passage_takes_only_the_agents_own,
    passages_go_with_their_agent,
    a_passage_search_ranks_more_of_the_words_first,
    a_passage_search_filters_tags_and_dates,
    a_passage_change_rewrites_text_tags_and_vector_together,
    a_backfill_fills_only_missing_vectors_of_the_current_model,
    passages_with_the_querys_words_are_told_from_the_others,
);

fn at(secs: i64) -> Timestamp {
    chrono::DateTime::from_timestamp(1_700_000_000 + secs, 0).unwrap()
}

fn new(text: &str, tags: &[&str], secs: i64) -> NewPassage {
    NewPassage {
        text: text.into(),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        created_at: Some(at(secs)),
        ..NewPassage::default()
    }
}

fn texts(ps: &[Passage]) -> Vec<&str> {
    ps.iter().map(|p| p.text.as_str()).collect()
}

async fn inserted_passages_read_back_as_written<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "archivist", &[]).await;
    let when = chrono::DateTime::from_timestamp(1_700_000_000, 987_654_321).unwrap();
    let stored = b
        .insert_passages(
            &a.id,
            &[
                NewPassage {
                    text: "Grace prefers tea to coffee".into(),
                    tags: vec!["people".into(), "food".into(), "people".into()],
                    embedding: Some(vec![0.25, -1.0, 3.5]),
                    created_at: Some(when),
                },
                NewPassage {
                    text: "The launch moved to May".into(),
                    ..NewPassage::default()
                },
            ],
        )
        .await
        .unwrap();
    assert_eq!(stored.len(), 2);
    assert_eq!(
        stored[0].tags,
        ["people", "food"],
        "duplicates dropped, order kept"
    );
    assert_eq!(
        stored[0].created_at.timestamp_micros(),
        1_700_000_000_987_654
    );
    assert_eq!(stored[0].created_at.timestamp_subsec_nanos(), 987_654_000);
    assert!(stored[1].tags.is_empty());
    assert!(
        stored
            .iter()
            .all(|p| p.agent_id == a.id && p.superseded.is_none())
    );
    assert_ne!(stored[0].id, stored[1].id);
    for p in &stored {
        assert_eq!(&b.get_passage(&p.id).await.unwrap(), p);
    }
    assert_eq!(b.count_passages(&a.id).await.unwrap(), 2);
    assert!(b.insert_passages(&a.id, &[]).await.unwrap().is_empty());
    assert_eq!(b.count_passages(&a.id).await.unwrap(), 2);
    // The vector comes back as given, for the passage that has one.
    assert_eq!(
        b.passage_vectors(&a.id).await.unwrap(),
        [(stored[0].id.clone(), vec![0.25, -1.0, 3.5])]
    );
    assert_eq!(code(b.passage_vectors(&AgentId::new()).await), "not_found");
}

async fn a_batch_with_blank_text_or_a_bad_vector_writes_nothing<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "strict", &[]).await;
    let good = new("a fine fact", &["t"], 0);
    let bad_batches = [
        vec![good.clone(), new("   ", &[], 1)],
        vec![
            good.clone(),
            NewPassage {
                embedding: Some(vec![]),
                ..new("no dimensions", &[], 2)
            },
        ],
        vec![
            good.clone(),
            NewPassage {
                embedding: Some(vec![1.0, f32::NAN]),
                ..new("not a number", &[], 3)
            },
        ],
    ];
    for batch in &bad_batches {
        assert_eq!(code(b.insert_passages(&a.id, batch).await), "invalid_input");
    }
    assert_eq!(b.count_passages(&a.id).await.unwrap(), 0, "all or nothing");
    let ghost = agent("ghost").id;
    assert_eq!(
        code(b.insert_passages(&ghost, std::slice::from_ref(&good)).await),
        "not_found"
    );
    assert_eq!(code(b.count_passages(&ghost).await), "not_found");
    assert_eq!(
        code(b.list_passages(&ghost, &PassageRange::default()).await),
        "not_found"
    );
    assert_eq!(
        code(
            b.search_passages(&ghost, &PassageSearch::new("fact", 5))
                .await
        ),
        "not_found"
    );
    let id = PassageId::new();
    match b.get_passage(&id).await {
        Err(Error::NotFound { what, id: missing }) => {
            assert_eq!((what, missing.as_str()), ("passage", id.as_str()))
        }
        other => panic!("expected the passage not to be found, got {other:?}"),
    }
}

async fn passages_list_by_time_with_cursors_either_way<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "lister", &[]).await;
    let (other, _) = agent_with(&b, "other", &[]).await;
    // Inserted out of time order; p3a and p3b share a time and keep their insertion order.
    let stored = b
        .insert_passages(
            &a.id,
            &[
                new("p2", &[], 2),
                new("p1", &[], 1),
                new("p3a", &[], 3),
                new("p3b", &[], 3),
                new("p5", &[], 5),
                new("p4", &[], 4),
            ],
        )
        .await
        .unwrap();
    let id = |text: &str| stored.iter().find(|p| p.text == text).unwrap().id.clone();
    let list = |after: Option<&str>, before: Option<&str>, limit, ascending| {
        let b = b.clone();
        let a = a.id.clone();
        let range = PassageRange {
            after: after.map(id),
            before: before.map(id),
            limit,
            ascending,
            include_superseded: false,
        };
        async move {
            b.list_passages(&a, &range)
                .await
                .unwrap()
                .into_iter()
                .map(|p| p.text)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        list(None, None, 10, true).await,
        ["p1", "p2", "p3a", "p3b", "p4", "p5"]
    );
    assert_eq!(
        list(None, None, 10, false).await,
        ["p5", "p4", "p3b", "p3a", "p2", "p1"]
    );
    assert_eq!(list(None, None, 2, true).await, ["p1", "p2"]);
    assert_eq!(list(None, None, 2, false).await, ["p5", "p4"]);
    assert_eq!(list(Some("p2"), None, 2, true).await, ["p3a", "p3b"]);
    assert_eq!(list(Some("p3a"), None, 10, true).await, ["p3b", "p4", "p5"]);
    assert_eq!(list(Some("p3b"), None, 2, false).await, ["p3a", "p2"]);
    assert_eq!(
        list(None, Some("p4"), 2, true).await,
        ["p3a", "p3b"],
        "before: the page nearest the cursor, in the list's order"
    );
    assert_eq!(list(None, Some("p2"), 2, false).await, ["p3b", "p3a"]);
    assert_eq!(
        list(Some("p1"), Some("p4"), 10, true).await,
        ["p2", "p3a", "p3b"]
    );
    assert_eq!(
        list(Some("p5"), Some("p2"), 10, false).await,
        ["p4", "p3b", "p3a"]
    );
    assert!(list(Some("p5"), None, 10, true).await.is_empty());
    assert!(list(None, None, 0, true).await.is_empty());

    let theirs = b
        .insert_passages(&other.id, &[new("not yours", &[], 0)])
        .await
        .unwrap();
    let r = b
        .list_passages(
            &a.id,
            &PassageRange {
                after: Some(theirs[0].id.clone()),
                limit: 5,
                ..PassageRange::default()
            },
        )
        .await;
    assert_eq!(
        code(r),
        "not_found",
        "a cursor must be one of the agent's passages"
    );
}

async fn deleting_a_passage_takes_only_the_agents_own<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "owner", &[]).await;
    let (other, _) = agent_with(&b, "other", &[]).await;
    let mine = b
        .insert_passages(
            &a.id,
            &[new("keep me", &["x"], 0), new("drop me", &["x"], 1)],
        )
        .await
        .unwrap();
    assert_eq!(
        code(b.delete_passage(&other.id, &mine[1].id).await),
        "not_found",
        "another agent cannot delete it"
    );
    assert_eq!(
        code(b.delete_passage(&agent("ghost").id, &mine[1].id).await),
        "not_found"
    );
    b.delete_passage(&a.id, &mine[1].id).await.unwrap();
    assert_eq!(code(b.get_passage(&mine[1].id).await), "not_found");
    assert_eq!(
        code(b.delete_passage(&a.id, &mine[1].id).await),
        "not_found"
    );
    assert_eq!(b.count_passages(&a.id).await.unwrap(), 1);
    let left = b
        .list_passages(
            &a.id,
            &PassageRange {
                limit: 10,
                ..PassageRange::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(texts(&left), ["keep me"]);
    let found = b
        .search_passages(&a.id, &PassageSearch::new("drop keep", 10))
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].item, mine[0]);
}

async fn passages_go_with_their_agent<H: Harness>(h: H) {
    let b = h.backend();
    let (gone, _) = agent_with(&b, "leaving", &[]).await;
    let (stays, _) = agent_with(&b, "staying", &[]).await;
    let doomed = b
        .insert_passages(&gone.id, &[new("tulips", &[], 0)])
        .await
        .unwrap();
    let kept = b
        .insert_passages(&stays.id, &[new("tulips too", &[], 0)])
        .await
        .unwrap();
    b.delete_agent(&gone.id).await.unwrap();
    assert_eq!(code(b.get_passage(&doomed[0].id).await), "not_found");
    assert_eq!(b.get_passage(&kept[0].id).await.unwrap(), kept[0]);
    assert_eq!(b.count_passages(&stays.id).await.unwrap(), 1);
}

async fn a_passage_search_ranks_more_of_the_words_first<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "gardener", &[]).await;
    let (other, _) = agent_with(&b, "neighbour", &[]).await;
    b.insert_passages(
        &a.id,
        &[
            new("Planted tulips by the old fence", &[], 0),
            new("The weather was grey all week", &[], 1),
            new("Tulips and roses share one bed", &[], 2),
            new("Roses need more sun than expected", &[], 3),
            new("They love gardening on Sundays", &[], 4),
        ],
    )
    .await
    .unwrap();
    b.insert_passages(&other.id, &[new("tulips roses tulips roses", &[], 0)])
        .await
        .unwrap();
    let hits = b
        .search_passages(&a.id, &PassageSearch::new("tulips roses", 10))
        .await
        .unwrap();
    let found: Vec<&str> = hits.iter().map(|h| h.item.text.as_str()).collect();
    assert_eq!(found.len(), 3, "{found:?}");
    assert_eq!(found[0], "Tulips and roses share one bed");
    assert!(hits.iter().all(|h| h.item.agent_id == a.id));
    assert_eq!(hits[0].score, 1.0);
    assert!(hits[1..].iter().all(|h| h.score > 0.0 && h.score < 1.0));
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));

    let garden = b
        .search_passages(&a.id, &PassageSearch::new("gardens", 10))
        .await
        .unwrap();
    assert_eq!(
        texts(&garden.into_iter().map(|h| h.item).collect::<Vec<_>>()),
        ["They love gardening on Sundays"]
    );
    // Query syntax is searched as words; no words, nothing; blank, the newest first.
    let syntax = b
        .search_passages(&a.id, &PassageSearch::new("\"weather\" & !(", 10))
        .await
        .unwrap();
    assert_eq!(syntax.len(), 1);
    assert_eq!(syntax[0].item.text, "The weather was grey all week");
    assert!(
        b.search_passages(&a.id, &PassageSearch::new("?!", 10))
            .await
            .unwrap()
            .is_empty()
    );
    let newest = b
        .search_passages(&a.id, &PassageSearch::new("", 2))
        .await
        .unwrap();
    let newest: Vec<(&str, f64)> = newest
        .iter()
        .map(|h| (h.item.text.as_str(), h.score))
        .collect();
    assert_eq!(
        newest,
        [
            ("They love gardening on Sundays", 0.0),
            ("Roses need more sun than expected", 0.0)
        ]
    );
}

async fn a_passage_search_filters_tags_and_dates<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "tagger", &[]).await;
    b.insert_passages(
        &a.id,
        &[
            new("kiwi one", &["fruit"], 0),
            new("kiwi two", &["fruit", "green"], 100),
            new("kiwi three", &["green"], 200),
            new("kiwi four", &[], 300),
        ],
    )
    .await
    .unwrap();
    let search = |q: PassageSearch| {
        let b = b.clone();
        let a = a.id.clone();
        async move {
            let mut found: Vec<String> = b
                .search_passages(&a, &q)
                .await
                .unwrap()
                .into_iter()
                .map(|h| h.item.text)
                .collect();
            found.sort_unstable();
            found
        }
    };
    let tagged = |tags: &[&str], tag_match, query: &str| PassageSearch {
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        tag_match,
        ..PassageSearch::new(query, 10)
    };
    assert_eq!(search(PassageSearch::new("kiwi", 10)).await.len(), 4);
    assert_eq!(
        search(tagged(&["fruit", "green"], TagMatch::Any, "kiwi")).await,
        ["kiwi one", "kiwi three", "kiwi two"]
    );
    assert_eq!(
        search(tagged(&["fruit", "green"], TagMatch::All, "kiwi")).await,
        ["kiwi two"]
    );
    assert_eq!(
        search(tagged(&["green", "green"], TagMatch::All, "kiwi")).await,
        ["kiwi three", "kiwi two"],
        "a tag named twice counts once"
    );
    assert_eq!(
        search(tagged(&["fruit"], TagMatch::Any, "")).await,
        ["kiwi one", "kiwi two"],
        "a blank query filters the same way"
    );
    assert_eq!(
        search(PassageSearch {
            start: Some(at(100)),
            end: Some(at(200)),
            ..PassageSearch::new("kiwi", 10)
        })
        .await,
        ["kiwi three", "kiwi two"],
        "both ends inclusive"
    );
}

async fn a_passage_change_rewrites_text_tags_and_vector_together<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "editor", &[]).await;
    let (other, _) = agent_with(&b, "bystander", &[]).await;
    let stored = b
        .insert_passages(
            &a.id,
            &[NewPassage {
                embedding: Some(vec![1.0, 0.0]),
                ..new("Ana lives in Lisbon", &["people"], 0)
            }],
        )
        .await
        .unwrap()
        .remove(0);

    // Tags alone: the text and its vector stay.
    let tagged = b
        .update_passage(
            &a.id,
            &stored.id,
            None,
            Some(&["home".into(), " ".into(), "people".into(), "home".into()]),
            None,
        )
        .await
        .unwrap();
    assert_eq!(tagged.text, "Ana lives in Lisbon");
    assert_eq!(
        tagged.tags,
        ["home", "people"],
        "order kept, blanks and repeats dropped"
    );
    assert_eq!(tagged.created_at, stored.created_at);
    assert_eq!(
        b.passage_vectors(&a.id).await.unwrap(),
        [(stored.id.clone(), vec![1.0, 0.0])]
    );

    // New text with its new vector: both replace the old ones, and search follows the text.
    let moved = b
        .update_passage(
            &a.id,
            &stored.id,
            Some("Ana moved to Porto"),
            None,
            Some(&[0.0, 1.0, 0.5]),
        )
        .await
        .unwrap();
    assert_eq!(
        (moved.text.as_str(), moved.tags.clone()),
        ("Ana moved to Porto", tagged.tags.clone())
    );
    assert_eq!(b.get_passage(&stored.id).await.unwrap(), moved);
    assert_eq!(
        b.passage_vectors(&a.id).await.unwrap(),
        [(stored.id.clone(), vec![0.0, 1.0, 0.5])]
    );
    let hits = b
        .search_passages(&a.id, &PassageSearch::new("Porto", 5))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert!(
        b.search_passages(&a.id, &PassageSearch::new("Lisbon", 5))
            .await
            .unwrap()
            .is_empty()
    );

    // New text without a vector drops the old one: it described the old text.
    b.update_passage(&a.id, &stored.id, Some("Ana moved to Faro"), None, None)
        .await
        .unwrap();
    assert!(b.passage_vectors(&a.id).await.unwrap().is_empty());

    // Refusals change nothing.
    let before = b.get_passage(&stored.id).await.unwrap();
    assert_eq!(
        code(
            b.update_passage(&a.id, &stored.id, Some("  "), Some(&["x".into()]), None)
                .await
        ),
        "invalid_input"
    );
    assert_eq!(
        code(
            b.update_passage(&a.id, &stored.id, Some("ok"), None, Some(&[f32::INFINITY]))
                .await
        ),
        "invalid_input"
    );
    assert_eq!(
        code(
            b.update_passage(&other.id, &stored.id, Some("not yours"), None, None)
                .await
        ),
        "not_found",
        "another agent's passage"
    );
    assert_eq!(
        code(
            b.update_passage(&a.id, &PassageId::new(), Some("nobody"), None, None)
                .await
        ),
        "not_found"
    );
    assert_eq!(b.get_passage(&stored.id).await.unwrap(), before);
}

async fn a_backfill_fills_only_missing_vectors_of_the_current_model<H: Harness>(h: H) {
    let b = h.backend();
    let mut new = super::agent("embedder");
    new.embedding = Some(engram_core::EmbeddingConfig {
        model: "local/all-minilm-l6-v2".into(),
        base_url: None,
    });
    let (a, _) = b.create_agent(&new, &[], &[]).await.unwrap();
    let stored = b
        .insert_passages(
            &a.id,
            &[
                new_passage("first fact", 0),
                NewPassage {
                    embedding: Some(vec![0.5, 0.5]),
                    ..new_passage("already has one", 1)
                },
                new_passage("second fact", 2),
                new_passage("third fact", 3),
            ],
        )
        .await
        .unwrap();
    assert_eq!(b.count_passages_without_vectors(&a.id).await.unwrap(), 3);
    let waiting = b.passages_without_vectors(&a.id, 2).await.unwrap();
    assert_eq!(
        texts(&waiting),
        ["first fact", "second fact"],
        "oldest first, limited"
    );

    // The third passage changed after it was read: its vector describes the old text.
    b.update_passage(&a.id, &stored[3].id, Some("third fact, edited"), None, None)
        .await
        .unwrap();
    let model = "local/all-minilm-l6-v2";
    let filled = [
        (
            stored[0].id.clone(),
            "first fact".to_owned(),
            vec![1.0, 0.0],
        ),
        (
            stored[1].id.clone(),
            "already has one".to_owned(),
            vec![9.0, 9.0],
        ),
        (
            stored[3].id.clone(),
            "third fact".to_owned(),
            vec![0.0, 1.0],
        ),
    ];
    // Another model's vectors are not stored at all.
    assert_eq!(
        b.fill_passage_vectors(&a.id, "openai/text-embedding-3-small", &filled)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        code(
            b.fill_passage_vectors(
                &a.id,
                model,
                &[(stored[2].id.clone(), "second fact".into(), vec![f32::NAN])]
            )
            .await
        ),
        "invalid_input"
    );
    assert_eq!(
        b.fill_passage_vectors(&a.id, model, &filled).await.unwrap(),
        1
    );
    let vectors = b.passage_vectors(&a.id).await.unwrap();
    assert_eq!(
        vectors,
        [
            (stored[0].id.clone(), vec![1.0, 0.0]),
            (stored[1].id.clone(), vec![0.5, 0.5]),
        ],
        "a stored vector is never overwritten, an edited text not given the old one"
    );
    assert_eq!(
        texts(&b.passages_without_vectors(&a.id, 10).await.unwrap()),
        ["second fact", "third fact, edited"]
    );
    assert_eq!(b.count_passages_without_vectors(&a.id).await.unwrap(), 2);
    let ghost = AgentId::new();
    assert_eq!(
        code(b.count_passages_without_vectors(&ghost).await),
        "not_found"
    );
    assert_eq!(
        code(b.passages_without_vectors(&ghost, 5).await),
        "not_found"
    );
    assert_eq!(
        code(b.fill_passage_vectors(&ghost, model, &[]).await),
        "not_found"
    );
}

fn new_passage(text: &str, secs: i64) -> NewPassage {
    new(text, &[], secs)
}

async fn passages_with_the_querys_words_are_told_from_the_others<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "reader", &[]).await;
    let (other, _) = agent_with(&b, "other", &[]).await;
    let mine = b
        .insert_passages(
            &a.id,
            &[
                new("Grace likes green tea", &[], 0),
                new("Bo plays chess on Sundays", &[], 1),
                new("The office closes at six", &[], 2),
            ],
        )
        .await
        .unwrap();
    let theirs = b
        .insert_passages(&other.id, &[new("More tea for Ana", &[], 0)])
        .await
        .unwrap();
    let mut ids: Vec<PassageId> = mine.iter().map(|p| p.id.clone()).collect();
    ids.push(theirs[0].id.clone());
    // Stems compared ("teas" finds "tea"); only the agent's own passages among `ids`.
    assert_eq!(
        b.passages_with_words(&a.id, "teas or chess?", &ids)
            .await
            .unwrap(),
        [mine[0].id.clone(), mine[1].id.clone()]
    );
    assert_eq!(
        b.passages_with_words(&a.id, "chess", &ids[2..])
            .await
            .unwrap(),
        [],
        "only among the ids given"
    );
    for nothing in ["", "   ", "?!"] {
        assert!(
            b.passages_with_words(&a.id, nothing, &ids)
                .await
                .unwrap()
                .is_empty(),
            "{nothing:?}"
        );
    }
    assert_eq!(
        code(b.passages_with_words(&AgentId::new(), "tea", &ids).await),
        "not_found"
    );
}

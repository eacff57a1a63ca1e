//! Archival memory storage: insert, list, delete, embeddings.

use crate::support::{at, create, temp_store};
use engram_core::{Error, NewPassage};
use engram_store::PassageList;

fn passage(text: &str) -> NewPassage {
    NewPassage {
        text: text.into(),
        ..Default::default()
    }
}

#[test]
fn insert_keeps_tag_order_without_duplicates_and_round_trips() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    let when = at("2023-03-03T03:03:03.999999999Z");
    let stored = store
        .passages()
        .insert(
            &a.id,
            &[NewPassage {
                text: "Ann's birthday is in May".into(),
                tags: vec![
                    "people".into(),
                    "dates".into(),
                    "people".into(),
                    "ann".into(),
                ],
                created_at: Some(when),
                embedding: None,
            }],
        )
        .unwrap();
    assert_eq!(stored[0].tags, ["people", "dates", "ann"]);
    assert_eq!(stored[0].created_at, at("2023-03-03T03:03:03.999999Z"));
    assert_eq!(store.passages().get(&stored[0].id).unwrap(), stored[0]);
}

#[test]
fn bad_passages_store_nothing() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    let r = store
        .passages()
        .insert(&a.id, &[passage("fine"), passage("   ")]);
    assert!(matches!(r, Err(Error::Invalid(_))));
    let nan = NewPassage {
        embedding: Some(vec![f32::NAN]),
        ..passage("x")
    };
    assert!(matches!(
        store.passages().insert(&a.id, &[nan]),
        Err(Error::Invalid(_))
    ));
    let empty = NewPassage {
        embedding: Some(vec![]),
        ..passage("x")
    };
    assert!(matches!(
        store.passages().insert(&a.id, &[empty]),
        Err(Error::Invalid(_))
    ));
    assert_eq!(store.agents().memory_counts(&a.id).unwrap().1, 0);
    assert!(matches!(
        store.passages().insert(&"agent-x".into(), &[passage("x")]),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn list_pages_in_both_orders_and_filters_by_substring() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    for i in 0..12 {
        let text = if i % 3 == 0 {
            format!("note {i}: 100%_done")
        } else {
            format!("note {i}")
        };
        store.passages().insert(&a.id, &[passage(&text)]).unwrap();
    }
    let texts = |q: PassageList| -> Vec<String> {
        store
            .passages()
            .list(&a.id, &q)
            .unwrap()
            .into_iter()
            .map(|p| p.text)
            .collect()
    };
    assert_eq!(
        texts(PassageList {
            limit: 2,
            ascending: true,
            ..Default::default()
        }),
        ["note 0: 100%_done", "note 1"]
    );
    assert_eq!(
        texts(PassageList {
            limit: 2,
            offset: 1,
            ..Default::default()
        }),
        ["note 10", "note 9: 100%_done"]
    );
    let found = texts(PassageList {
        search: Some("%_DONE".into()),
        limit: 10,
        ascending: true,
        ..Default::default()
    });
    assert_eq!(
        found,
        [
            "note 0: 100%_done",
            "note 3: 100%_done",
            "note 6: 100%_done",
            "note 9: 100%_done"
        ]
    );
    assert!(
        texts(PassageList {
            search: Some("0%x".into()),
            limit: 10,
            ..Default::default()
        })
        .is_empty()
    );
    assert_eq!(
        texts(PassageList {
            search: Some(String::new()),
            limit: 100,
            ..Default::default()
        })
        .len(),
        12
    );
}

#[test]
fn delete_checks_the_owner() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    let (b, _) = create(&store, "b");
    let p = store
        .passages()
        .insert(&a.id, &[passage("mine")])
        .unwrap()
        .remove(0);
    assert!(matches!(
        store.passages().delete(&b.id, &p.id),
        Err(Error::NotFound {
            what: "passage",
            ..
        })
    ));
    store.passages().delete(&a.id, &p.id).unwrap();
    assert!(matches!(
        store.passages().get(&p.id),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn embeddings_can_be_backfilled() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    let ps = store
        .passages()
        .insert(
            &a.id,
            &[
                passage("one"),
                NewPassage {
                    embedding: Some(vec![1.0, 0.0]),
                    ..passage("two")
                },
                passage("three"),
            ],
        )
        .unwrap();
    let missing: Vec<_> = store
        .passages()
        .embeddings_missing(&a.id)
        .unwrap()
        .into_iter()
        .map(|p| p.text)
        .collect();
    assert_eq!(missing, ["one", "three"]);
    store
        .passages()
        .set_embedding(&ps[0].id, &[0.5, 0.5])
        .unwrap();
    assert_eq!(store.passages().embeddings_missing(&a.id).unwrap().len(), 1);
    assert!(matches!(
        store.passages().set_embedding(&"passage-x".into(), &[1.0]),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        store.passages().set_embedding(&ps[2].id, &[f32::INFINITY]),
        Err(Error::Invalid(_))
    ));
}

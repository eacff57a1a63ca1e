//! The tag index: tag rows carry their passage's agent, time and row key, so tag
//! filters are index ranges. Every writer of passages and tags keeps those copies right, and a
//! tag-filtered list agrees with the same filter applied by hand, in both orders, from either
//! end, with cursors, dates and a substring.

use crate::steps::step;
use crate::support::{agent, at, create, temp_store};
use engram_core::{AgentId, NewMessage, NewPassage, Passage, TagMatch};
use engram_store::{ImportAgent, ImportBundle, PassageList, StepCommit, Store};
use rusqlite::Connection;
use std::path::Path;

/// Tag rows whose copies disagree with their passage, and the number of tag rows.
fn drift(db: &Path) -> (i64, i64) {
    let conn = Connection::open(db).unwrap();
    let wrong = conn
        .query_row(
            "SELECT count(*) FROM passage_tags t LEFT JOIN passages p ON p.id = t.passage_id
             WHERE p.id IS NULL OR t.agent_id != p.agent_id OR t.created_at != p.created_at
                OR t.passage_pk != p.pk",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let rows = conn
        .query_row("SELECT count(*) FROM passage_tags", [], |r| r.get(0))
        .unwrap();
    (wrong, rows)
}

fn tagged(text: &str, tags: &[&str]) -> NewPassage {
    NewPassage {
        text: text.into(),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        ..NewPassage::default()
    }
}

#[test]
fn tag_rows_follow_their_passage_through_every_writer() {
    let (dir, store) = temp_store();
    let db = dir.path().join("data").join("engram.db");
    let (a, _) = create(&store, "a");

    // Added by the user or a tool (duplicates dropped).
    let added = store
        .passages()
        .insert(
            &a.id,
            &[
                tagged("one", &["x", "y", "x"]),
                tagged("two", &["y"]),
                tagged("three", &[]),
            ],
        )
        .unwrap();
    assert_eq!(drift(&db), (0, 3));

    // Tags edited in place, text too.
    store
        .passages()
        .update(
            &a.id,
            &added[2].id,
            Some("three, edited"),
            Some(&["z".to_owned(), "x".to_owned()]),
            None,
        )
        .unwrap();
    store
        .passages()
        .update(&a.id, &added[0].id, None, Some(&["y".to_owned()]), None)
        .unwrap();
    assert_eq!(drift(&db), (0, 4));
    let x = |store: &Store| {
        store
            .passages()
            .count(
                &a.id,
                &PassageList {
                    tags: vec!["x".into()],
                    ..PassageList::default()
                },
            )
            .unwrap()
    };
    assert_eq!(x(&store), 1, "only 'three, edited' carries x now");

    // Stored by a step, then rolled back with its turn.
    let s = step(&a.id);
    let mut user = NewMessage::user("remember the fig");
    user.run_id = Some(s.run_id.clone());
    let user = store.messages().append(&a.id, &[user]).unwrap().remove(0);
    store
        .runs()
        .commit_step(&StepCommit {
            step: s,
            approval: Default::default(),
            messages: vec![NewMessage::assistant("Noted.", None, vec![])],
            block_writes: vec![],
            passages: vec![tagged("the fig", &["x", "fruit"])],
        })
        .unwrap();
    assert_eq!(drift(&db), (0, 6));
    assert_eq!(x(&store), 2);
    store
        .messages()
        .rollback_from(None, &a.id, &user.id)
        .unwrap();
    assert_eq!(drift(&db), (0, 4));
    assert_eq!(x(&store), 1);

    // Deleted.
    store.passages().delete(&a.id, &added[2].id).unwrap();
    assert_eq!(drift(&db), (0, 2));
    assert_eq!(x(&store), 0);

    // Imported with an agent, backdated: the copies carry the file's time.
    let mut imported = agent("imported");
    imported.id = AgentId::new();
    let ids = store
        .import_bundle(&ImportBundle {
            agents: vec![ImportAgent {
                agent: imported,
                block_ids: vec![],
                messages: vec![],
                passages: vec![NewPassage {
                    created_at: Some(at("2024-03-01T12:00:00Z")),
                    ..tagged("old note", &["x"])
                }],
                passage_ids: vec![],
                extras: None,
                tags: vec![],
                steps: vec![],
                pending_endpoints: vec![],
                sleeptime: None,
                superseded: vec![],
            }],
            ..ImportBundle::default()
        })
        .unwrap();
    assert_eq!(drift(&db), (0, 3));
    let other = &ids.agents[0];
    assert_eq!(x(&store), 0, "another agent's tag is not this agent's");
    let old = PassageList {
        tags: vec!["x".into()],
        end: Some(at("2024-12-31T00:00:00Z")),
        limit: 10,
        ..PassageList::default()
    };
    let page = store.passages().page(other, &old).unwrap();
    assert_eq!(page.total, 1);
    assert_eq!(page.passages[0].text, "old note");

    // The agent deleted: its passages and their tags go.
    store.agents().delete(other).unwrap();
    assert_eq!(drift(&db), (0, 2));
}

/// Two agents with the same tags over the same minutes (several passages per minute), so a
/// filter that forgot the agent, the time order or the tie-break would show.
fn two_archives(store: &Store) -> (AgentId, Vec<Passage>) {
    let (a, _) = create(store, "a");
    let (b, _) = create(store, "b");
    let base = at("2024-01-01T00:00:00Z");
    let make = |i: usize| {
        let mut tags = Vec::new();
        for (k, tag) in [(2, "two"), (3, "three"), (5, "five")] {
            if i.is_multiple_of(k) {
                tags.push(tag.to_owned());
            }
        }
        NewPassage {
            text: format!(
                "n{i} {}",
                if i.is_multiple_of(4) { "ripe" } else { "green" }
            ),
            tags,
            created_at: Some(base + chrono::Duration::minutes((i / 3) as i64)),
            embedding: None,
        }
    };
    // Interleaved writes, so row keys of the two agents alternate.
    let mut mine = Vec::new();
    for i in 0..60 {
        mine.extend(store.passages().insert(&a.id, &[make(i)]).unwrap());
        store.passages().insert(&b.id, &[make(i)]).unwrap();
    }
    (a.id, mine)
}

/// Tags, how they match, a substring, and a date range (RFC 3339 start and end).
type Case<'a> = (
    &'a [&'a str],
    TagMatch,
    Option<&'a str>,
    Option<(&'a str, &'a str)>,
);

#[test]
fn tag_filtered_pages_agree_with_the_filter_applied_by_hand() {
    let (_dir, store) = temp_store();
    let (a, all) = two_archives(&store);
    // The agent's passages in time order, as the unfiltered list gives them.
    let ordered = store
        .passages()
        .list(
            &a,
            &PassageList {
                limit: 1000,
                ascending: true,
                ..PassageList::default()
            },
        )
        .unwrap();
    assert_eq!(ordered.len(), all.len());
    let cases: &[Case] = &[
        (&["two"], TagMatch::Any, None, None),
        (&["two", "three"], TagMatch::Any, None, None),
        (&["two", "three"], TagMatch::All, None, None),
        (&["two", "three", "five"], TagMatch::All, None, None),
        (&["five", "five"], TagMatch::All, None, None),
        (&["three"], TagMatch::Any, Some("ripe"), None),
        (&["two", "five"], TagMatch::Any, Some("ripe"), None),
        (
            &["three"],
            TagMatch::Any,
            None,
            Some(("2024-01-01T00:04:00Z", "2024-01-01T00:12:00Z")),
        ),
        (
            &["two", "three"],
            TagMatch::All,
            Some("n"),
            Some(("2024-01-01T00:03:00Z", "2024-01-01T00:15:00Z")),
        ),
        (&["nothing"], TagMatch::Any, None, None),
    ];
    for (tags, tag_match, search, dates) in cases {
        let passes = |p: &Passage| {
            let has = tags.iter().filter(|t| p.tags.iter().any(|x| x == *t));
            let distinct: std::collections::BTreeSet<_> = tags.iter().collect();
            let have: std::collections::BTreeSet<_> = has.collect();
            let tag_ok = match tag_match {
                TagMatch::Any => !have.is_empty(),
                TagMatch::All => have.len() == distinct.len(),
            };
            let text_ok = search.is_none_or(|s| p.text.contains(s));
            let date_ok = dates.is_none_or(|(s, e)| p.created_at >= at(s) && p.created_at <= at(e));
            tag_ok && text_ok && date_ok
        };
        let expected: Vec<&Passage> = ordered.iter().filter(|p| passes(p)).collect();
        for ascending in [true, false] {
            let expected: Vec<String> = if ascending {
                expected.iter().map(|p| p.text.clone()).collect()
            } else {
                expected.iter().rev().map(|p| p.text.clone()).collect()
            };
            let base = PassageList {
                tags: tags.iter().map(|t| (*t).to_owned()).collect(),
                tag_match: *tag_match,
                search: search.map(str::to_owned),
                start: dates.map(|d| at(d.0)),
                end: dates.map(|d| at(d.1)),
                ascending,
                limit: 4,
                ..PassageList::default()
            };
            let why = format!("{tags:?} {tag_match:?} {search:?} {dates:?} ascending {ascending}");
            // Every page by offset, with its total and position.
            let mut got = Vec::new();
            for offset in (0..expected.len().max(1)).step_by(4) {
                let page = store
                    .passages()
                    .page(
                        &a,
                        &PassageList {
                            offset,
                            ..base.clone()
                        },
                    )
                    .unwrap();
                assert_eq!(page.total, expected.len() as u64, "{why}");
                assert_eq!(page.offset, offset as u64, "{why}");
                got.extend(page.passages.into_iter().map(|p| p.text));
            }
            assert_eq!(got, expected, "{why}: pages by offset");
            // Every page by cursor, forward from the first.
            let mut got: Vec<String> = Vec::new();
            let mut after = None;
            loop {
                let page = store
                    .passages()
                    .page(
                        &a,
                        &PassageList {
                            after: after.clone(),
                            ..base.clone()
                        },
                    )
                    .unwrap();
                assert_eq!(page.offset, got.len() as u64, "{why}: cursor position");
                let Some(last) = page.passages.last() else {
                    break;
                };
                after = Some(last.id.clone());
                got.extend(page.passages.iter().map(|p| p.text.clone()));
            }
            assert_eq!(got, expected, "{why}: pages by cursor");
            // The page before the end, by a `before` cursor on the last passage.
            if let Some(last) = expected.last() {
                let last_id = &ordered.iter().find(|p| &p.text == last).unwrap().id;
                let page = store
                    .passages()
                    .list(
                        &a,
                        &PassageList {
                            before: Some(last_id.clone()),
                            ..base.clone()
                        },
                    )
                    .unwrap();
                let texts: Vec<String> = page.into_iter().map(|p| p.text).collect();
                let n = expected.len() - 1;
                assert_eq!(
                    texts,
                    expected[n.saturating_sub(4)..n],
                    "{why}: before the last"
                );
            }
        }
    }
}

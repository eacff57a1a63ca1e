//! Archival memory paged in SQL: both orders, offsets from either end, cursors, filters,
//! totals that match the filters, and "jump to a date".

use crate::support::{at, create, temp_store};
use engram_core::{AgentId, Error, NewPassage, PassageId, TagMatch};
use engram_store::{PassageList, Store};

/// 25 passages a minute apart from 2024-01-01 00:00 (`n0` … `n24`); even ones are tagged
/// `even`, multiples of five also `five`. Several share one time, to test the key tie-break.
fn archive(store: &Store) -> (AgentId, Vec<PassageId>) {
    let (a, _) = create(store, "a");
    let base = at("2024-01-01T00:00:00Z");
    let new: Vec<NewPassage> = (0..25)
        .map(|i| {
            let mut tags = Vec::new();
            if i % 2 == 0 {
                tags.push("even".to_owned());
            }
            if i % 5 == 0 {
                tags.push("five".to_owned());
            }
            // n10, n11 and n12 are written in the same minute.
            let minute = if (10..=12).contains(&i) { 10 } else { i };
            NewPassage {
                text: format!("n{i}"),
                tags,
                created_at: Some(base + chrono::Duration::minutes(minute)),
                embedding: None,
            }
        })
        .collect();
    let ids = store
        .passages()
        .insert(&a.id, &new)
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    (a.id, ids)
}

fn texts(store: &Store, agent: &AgentId, q: &PassageList) -> Vec<String> {
    store
        .passages()
        .list(agent, q)
        .unwrap()
        .into_iter()
        .map(|p| p.text)
        .collect()
}

fn names(range: impl Iterator<Item = usize>) -> Vec<String> {
    range.map(|i| format!("n{i}")).collect()
}

fn list(limit: usize, offset: usize, ascending: bool) -> PassageList {
    PassageList {
        limit,
        offset,
        ascending,
        ..PassageList::default()
    }
}

#[test]
fn every_page_in_both_orders_from_either_end() {
    let (_dir, store) = temp_store();
    let (a, _) = archive(&store);
    for offset in [0, 10, 20, 24, 25, 30] {
        let page = store.passages().page(&a, &list(10, offset, false)).unwrap();
        let got: Vec<String> = page.passages.into_iter().map(|p| p.text).collect();
        let newest_first = names((0..25).rev().skip(offset).take(10));
        assert_eq!(got, newest_first, "newest first, offset {offset}");
        assert_eq!(page.total, 25);
        assert_eq!(page.offset, offset as u64);
        assert_eq!(
            texts(&store, &a, &list(10, offset, true)),
            names((0..25).skip(offset).take(10)),
            "oldest first, offset {offset}"
        );
    }
    // The last page of a deep offset (read from the list's other end) is the oldest passages.
    let last = store.passages().page(&a, &list(10, 20, false)).unwrap();
    assert_eq!(last.passages.last().unwrap().text, "n0");
    assert!(texts(&store, &a, &list(0, 0, false)).is_empty());
}

#[test]
fn cursors_page_forward_and_back_and_an_unknown_one_is_not_found() {
    let (_dir, store) = temp_store();
    let (a, ids) = archive(&store);
    for ascending in [true, false] {
        // Forward: `after` the last id until an empty page, as the 1.x SDKs page.
        let mut seen = Vec::new();
        let mut q = list(7, 0, ascending);
        loop {
            let page = store.passages().list(&a, &q).unwrap();
            if page.is_empty() {
                break;
            }
            q.after = Some(page.last().unwrap().id.clone());
            seen.extend(page.into_iter().map(|p| p.text));
        }
        let all = if ascending {
            names(0..25)
        } else {
            names((0..25).rev())
        };
        assert_eq!(seen, all, "ascending {ascending}");
    }
    // `before` takes the page nearest the cursor, in the list's order.
    let before = PassageList {
        before: Some(ids[12].clone()),
        ..list(3, 0, true)
    };
    assert_eq!(texts(&store, &a, &before), names(9..12));
    let before_desc = PassageList {
        before: Some(ids[12].clone()),
        ..list(3, 0, false)
    };
    assert_eq!(texts(&store, &a, &before_desc), names((13..16).rev()));
    // Both cursors: what lies between them.
    let between = PassageList {
        after: Some(ids[3].clone()),
        before: Some(ids[7].clone()),
        ..list(10, 0, true)
    };
    assert_eq!(texts(&store, &a, &between), names(4..7));
    // The page's position is reported for cursor pages too.
    let page = store
        .passages()
        .page(
            &a,
            &PassageList {
                after: Some(ids[11].clone()),
                ..list(5, 0, true)
            },
        )
        .unwrap();
    assert_eq!((page.offset, page.total), (12, 25));
    assert_eq!(page.passages[0].text, "n12");
    let unknown = PassageList {
        after: Some(PassageId::from("passage-nope")),
        ..list(5, 0, true)
    };
    assert!(matches!(
        store.passages().list(&a, &unknown),
        Err(Error::NotFound { .. })
    ));
    // Another agent's passage is not a cursor into this agent's archive.
    let (b, _) = create(&store, "b");
    let foreign = PassageList {
        after: Some(ids[0].clone()),
        ..list(5, 0, true)
    };
    assert!(matches!(
        store.passages().list(&b.id, &foreign),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn filters_run_before_paging_and_the_total_counts_only_what_passes() {
    let (_dir, store) = temp_store();
    let (a, _) = archive(&store);
    let tagged = |tags: &[&str], tag_match| PassageList {
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        tag_match,
        ..list(4, 0, true)
    };
    let even = store
        .passages()
        .page(&a, &tagged(&["even"], TagMatch::Any))
        .unwrap();
    assert_eq!(even.total, 13);
    let got: Vec<String> = even.passages.into_iter().map(|p| p.text).collect();
    assert_eq!(got, ["n0", "n2", "n4", "n6"]);
    let both = store
        .passages()
        .page(&a, &tagged(&["even", "five"], TagMatch::All))
        .unwrap();
    assert_eq!(both.total, 3, "n0, n10, n20");
    let either = store
        .passages()
        .page(&a, &tagged(&["even", "five"], TagMatch::Any))
        .unwrap();
    assert_eq!(either.total, 15, "13 even plus n5, n15");
    // The last page of a filtered list, read from the other end.
    let mut last = tagged(&["even"], TagMatch::Any);
    last.offset = 12;
    assert_eq!(texts(&store, &a, &last), ["n24"]);
    let page = store.passages().page(&a, &last).unwrap();
    assert_eq!(page.passages.len(), 1);
    assert_eq!(page.passages[0].text, "n24");

    let dated = PassageList {
        start: Some(at("2024-01-01T00:05:00Z")),
        end: Some(at("2024-01-01T00:09:00Z")),
        ..list(10, 0, false)
    };
    let page = store.passages().page(&a, &dated).unwrap();
    assert_eq!(page.total, 5);
    let got: Vec<String> = page.passages.into_iter().map(|p| p.text).collect();
    assert_eq!(got, names((5..10).rev()));
    let searched = PassageList {
        search: Some("n2".into()),
        ..list(10, 0, true)
    };
    assert_eq!(
        store.passages().count(&a, &searched).unwrap(),
        6,
        "n2, n20…n24"
    );
    assert!(
        store
            .passages()
            .page(&a, &tagged(&["none"], TagMatch::Any))
            .unwrap()
            .passages
            .is_empty()
    );
}

#[test]
fn jumping_to_a_date_opens_the_page_that_holds_it() {
    let (_dir, store) = temp_store();
    let (a, _) = archive(&store);
    // Newest first, pages of 10: n24…n15 | n14…n5 | n4…n0. 00:07 is n7's minute: page 2.
    let jump = PassageList {
        at: Some(at("2024-01-01T00:07:30Z")),
        ..list(10, 0, false)
    };
    let page = store.passages().page(&a, &jump).unwrap();
    assert_eq!(page.offset, 10);
    assert_eq!(page.passages[0].text, "n14");
    assert!(page.passages.iter().any(|p| p.text == "n7"));
    // Oldest first: n0…n9 | n10…n19 | …; 00:07:30 falls before n8: page 1.
    let jump = PassageList {
        at: Some(at("2024-01-01T00:07:30Z")),
        ..list(10, 0, true)
    };
    assert_eq!(store.passages().page(&a, &jump).unwrap().offset, 0);
    // Before everything (newest first): the last page; after everything: the first.
    let early = PassageList {
        at: Some(at("2023-01-01T00:00:00Z")),
        ..list(10, 0, false)
    };
    let page = store.passages().page(&a, &early).unwrap();
    assert_eq!(page.offset, 20);
    assert_eq!(page.passages.last().unwrap().text, "n0");
    // When the pages divide the list evenly, "before everything" is still the last page.
    let even = PassageList {
        at: Some(at("2023-01-01T00:00:00Z")),
        ..list(5, 0, false)
    };
    let page = store.passages().page(&a, &even).unwrap();
    assert_eq!(page.offset, 20);
    assert_eq!(page.passages.len(), 5);
    let late = PassageList {
        at: Some(at("2030-01-01T00:00:00Z")),
        ..list(10, 0, false)
    };
    assert_eq!(store.passages().page(&a, &late).unwrap().offset, 0);
}

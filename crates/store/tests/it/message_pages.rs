//! Paging recall memory in SQL: ranges in both orders, windows at the start, around a message
//! and at a date, and the compaction dividers inside them.

use crate::support::{at, create, temp_store};
use engram_core::{Error, Message, MessageId, NewMessage};
use engram_store::{SeqOrder, Store, WindowAt};

/// An agent with `n` user messages `m1..mn`, one minute apart from 2024-01-01 00:00 UTC.
fn history(n: usize) -> (tempfile::TempDir, Store, engram_core::AgentId, Vec<Message>) {
    let (dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    let start = at("2024-01-01T00:00:00Z");
    let msgs: Vec<_> = (1..=n)
        .map(|i| NewMessage {
            created_at: Some(start + chrono::Duration::minutes(i as i64 - 1)),
            ..NewMessage::user(format!("m{i}"))
        })
        .collect();
    let stored = store.messages().append(&a.id, &msgs).unwrap();
    (dir, store, a.id, stored)
}

fn texts(page: &[Message]) -> Vec<String> {
    page.iter().map(|m| m.content.clone()).collect()
}

fn names(range: std::ops::RangeInclusive<usize>) -> Vec<String> {
    range.map(|i| format!("m{i}")).collect()
}

#[test]
fn ranges_page_in_both_orders_between_exclusive_bounds() {
    let (_d, store, a, all) = history(30);
    let seq = |i: usize| all[i - 1].seq;
    let asc = store
        .messages()
        .page(&a, None, None, 10, SeqOrder::Asc)
        .unwrap();
    assert_eq!(texts(&asc), names(1..=10));
    let next = store
        .messages()
        .page(&a, Some(seq(10)), None, 10, SeqOrder::Asc)
        .unwrap();
    assert_eq!(texts(&next), names(11..=20));
    let desc = store
        .messages()
        .page(&a, None, None, 5, SeqOrder::Desc)
        .unwrap();
    assert_eq!(texts(&desc), ["m30", "m29", "m28", "m27", "m26"]);
    // Between two cursors: the page nearest the upper bound when newest first.
    let between = store
        .messages()
        .page(&a, Some(seq(3)), Some(seq(20)), 4, SeqOrder::Desc)
        .unwrap();
    assert_eq!(texts(&between), ["m19", "m18", "m17", "m16"]);
    let between = store
        .messages()
        .page(&a, Some(seq(3)), Some(seq(20)), 4, SeqOrder::Asc)
        .unwrap();
    assert_eq!(texts(&between), names(4..=7));
    assert!(
        store
            .messages()
            .page(&a, Some(seq(30)), None, 10, SeqOrder::Asc)
            .unwrap()
            .is_empty()
    );
    let gone = engram_core::AgentId::from("agent-gone");
    assert!(matches!(
        store.messages().page(&gone, None, None, 1, SeqOrder::Asc),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn windows_at_latest_start_and_cursors_say_what_lies_beyond() {
    let (_d, store, a, all) = history(25);
    let w = store.messages().window(&a, &WindowAt::Latest, 10).unwrap();
    assert_eq!(texts(&w.messages), names(16..=25));
    assert!(w.has_older && !w.has_newer);

    let w = store.messages().window(&a, &WindowAt::Start, 10).unwrap();
    assert_eq!(texts(&w.messages), names(1..=10));
    assert!(!w.has_older && w.has_newer);

    let before = WindowAt::Before {
        id: all[10].id.clone(),
    };
    let w = store.messages().window(&a, &before, 10).unwrap();
    assert_eq!(texts(&w.messages), names(1..=10));
    assert!(!w.has_older && w.has_newer, "m1 is the first message");

    let after = WindowAt::After {
        id: all[14].id.clone(),
    };
    let w = store.messages().window(&a, &after, 10).unwrap();
    assert_eq!(texts(&w.messages), names(16..=25));
    assert!(w.has_older && !w.has_newer, "m25 is the last message");

    let w = store.messages().window(&a, &WindowAt::Latest, 100).unwrap();
    assert_eq!(w.messages.len(), 25);
    assert!(!w.has_older && !w.has_newer);
}

#[test]
fn a_window_around_a_message_centres_it_and_names_it() {
    let (_d, store, a, all) = history(40);
    let at_m20 = WindowAt::Around {
        id: all[19].id.clone(),
    };
    let w = store.messages().window(&a, &at_m20, 9).unwrap();
    assert_eq!(texts(&w.messages), names(16..=24));
    assert_eq!(w.anchor.as_ref(), Some(&all[19].id));
    assert!(w.has_older && w.has_newer);

    // Near an end the other side fills the window.
    let near_start = WindowAt::Around {
        id: all[1].id.clone(),
    };
    let w = store.messages().window(&a, &near_start, 9).unwrap();
    assert_eq!(texts(&w.messages), names(1..=9));
    assert_eq!(w.anchor.as_ref(), Some(&all[1].id));
    assert!(!w.has_older && w.has_newer);
    let near_end = WindowAt::Around {
        id: all[38].id.clone(),
    };
    let w = store.messages().window(&a, &near_end, 9).unwrap();
    assert_eq!(texts(&w.messages), names(32..=40));
    assert!(w.has_older && !w.has_newer);

    let foreign = WindowAt::Around {
        id: MessageId::from("message-nope"),
    };
    assert!(matches!(
        store.messages().window(&a, &foreign, 9),
        Err(Error::NotFound { .. })
    ));
    // Another agent's message is not a cursor into this one.
    let (b, _) = create(&store, "b");
    assert!(matches!(
        store.messages().window(&b.id, &at_m20, 9),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn a_date_opens_at_the_first_message_on_or_after_it() {
    let (_d, store, a, all) = history(120);
    // 00:30:30 falls between m31 (00:30) and m32 (00:31).
    let date = WindowAt::Date {
        at: at("2024-01-01T00:30:30Z"),
    };
    let w = store.messages().window(&a, &date, 11).unwrap();
    assert_eq!(w.anchor.as_ref(), Some(&all[31].id), "m32");
    assert_eq!(texts(&w.messages), names(27..=37));

    let before_all = WindowAt::Date {
        at: at("2020-01-01T00:00:00Z"),
    };
    let w = store.messages().window(&a, &before_all, 5).unwrap();
    assert_eq!(w.anchor.as_ref(), Some(&all[0].id));
    assert_eq!(texts(&w.messages), names(1..=5));

    let after_all = WindowAt::Date {
        at: at("2030-01-01T00:00:00Z"),
    };
    let w = store.messages().window(&a, &after_all, 5).unwrap();
    assert_eq!(w.anchor.as_ref(), Some(&all[119].id), "the newest");
    assert_eq!(texts(&w.messages), names(116..=120));
}

#[test]
fn compactions_are_recorded_with_the_eviction_and_shown_in_their_windows() {
    let (_d, store, a, all) = history(30);
    let ids = |r: std::ops::Range<usize>| all[r].iter().map(|m| m.id.clone()).collect::<Vec<_>>();
    store
        .messages()
        .evict(&a, &ids(0..10), "They met; Bob likes tea.")
        .unwrap();
    store
        .messages()
        .evict(&a, &ids(10..18), "Bob likes tea and owns a cat.")
        .unwrap();

    let w = store.messages().window(&a, &WindowAt::Start, 30).unwrap();
    let marks: Vec<_> = w
        .compactions
        .iter()
        .map(|c| (c.seq, c.evicted, c.summary.as_str()))
        .collect();
    assert_eq!(
        marks,
        [
            (all[9].seq, 10, "They met; Bob likes tea."),
            (all[17].seq, 8, "Bob likes tea and owns a cat.")
        ]
    );
    // A window that ends before the second divider shows only the first.
    let w = store.messages().window(&a, &WindowAt::Start, 12).unwrap();
    assert_eq!(w.compactions.len(), 1);
    // A refused eviction records nothing.
    let bad = [MessageId::from("message-nope")];
    assert!(store.messages().evict(&a, &bad, "x").is_err());
    let w = store.messages().window(&a, &WindowAt::Latest, 30).unwrap();
    assert_eq!(w.compactions.len(), 2);
}

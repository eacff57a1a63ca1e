//! Agents and blocks listed in creation order with `after`/`before` cursors (Letta's list
//! endpoints): both lists page through one keyset reader, so each is checked the same way.

use crate::support::{create, temp_store};
use engram_core::{AgentId, BlockId};
use engram_store::{AgentList, BlockList, Store};

/// Pages of some list, given `(after, before, limit, ascending)`, as ids.
type Pager<'a> = dyn Fn(Option<&str>, Option<&str>, usize, bool) -> Vec<String> + 'a;

/// Checks cursors in both orders against the whole list `all` (oldest first, at least 5).
fn check_cursors(all: &[String], page: &Pager<'_>) {
    let ids = |r: &[String]| r.to_vec();
    assert_eq!(page(None, None, 100, true), ids(all));
    let newest_first: Vec<String> = all.iter().rev().cloned().collect();
    assert_eq!(page(None, None, 100, false), newest_first);
    // After/before in the list's order, either way round; `before` takes the nearest rows.
    assert_eq!(page(Some(&all[1]), None, 2, true), ids(&all[2..4]));
    assert_eq!(page(None, Some(&all[3]), 2, true), ids(&all[1..3]));
    assert_eq!(
        page(Some(&all[3]), None, 2, false),
        vec![all[2].clone(), all[1].clone()]
    );
    assert_eq!(
        page(None, Some(&all[1]), 2, false),
        vec![all[3].clone(), all[2].clone()]
    );
    assert_eq!(
        page(Some(&all[0]), Some(&all[4]), 100, true),
        ids(&all[1..4])
    );
    // An unknown cursor ends the paging; a zero limit reads nothing.
    assert!(page(Some("nobody"), None, 100, true).is_empty());
    assert!(page(None, Some("nobody"), 100, false).is_empty());
    assert!(page(None, None, 0, true).is_empty());
}

fn agent_page(store: &Store) -> impl Fn(Option<&str>, Option<&str>, usize, bool) -> Vec<String> {
    move |after, before, limit, ascending| {
        let q = AgentList {
            after: after.map(AgentId::from),
            before: before.map(AgentId::from),
            limit,
            ascending,
            ..AgentList::default()
        };
        let page = store.agents().page(&q).unwrap();
        page.into_iter().map(|a| a.id.to_string()).collect()
    }
}

#[test]
fn agents_page_by_cursor_in_both_orders() {
    let (_dir, store) = temp_store();
    let mut all: Vec<_> = (0..6)
        .map(|i| create(&store, &format!("agent {i}")).0)
        .collect();
    all.sort_by_key(|a| (a.created_at, a.id.to_string()));
    let all: Vec<String> = all.iter().map(|a| a.id.to_string()).collect();
    check_cursors(&all, &agent_page(&store));

    // Filters apply with the cursors: only "agent 2".
    let q = AgentList {
        name: Some("agent 2".into()),
        limit: 10,
        ascending: true,
        ..AgentList::default()
    };
    let page = store.agents().page(&q).unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].name, "agent 2");
}

#[test]
fn blocks_page_by_cursor_in_both_orders_and_by_label() {
    let (_dir, store) = temp_store();
    let mut humans = Vec::new();
    for i in 0..6 {
        let (_, blocks) = create(&store, &format!("agent {i}"));
        humans.extend(blocks.into_iter().filter(|b| b.label == "human"));
    }
    humans.sort_by_key(|b| (b.created_at, b.id.to_string()));
    let humans: Vec<String> = humans.iter().map(|b| b.id.to_string()).collect();
    let page = |after: Option<&str>, before: Option<&str>, limit, ascending| {
        let q = BlockList {
            label: Some("human".into()),
            after: after.map(BlockId::from),
            before: before.map(BlockId::from),
            limit,
            ascending,
        };
        let page = store.blocks().page(&q).unwrap();
        assert!(page.iter().all(|b| b.label == "human"));
        page.into_iter().map(|b| b.id.to_string()).collect()
    };
    check_cursors(&humans, &page);

    // Without a label, both blocks of every agent are listed.
    let every = store
        .blocks()
        .page(&BlockList {
            limit: 100,
            ascending: true,
            ..BlockList::default()
        })
        .unwrap();
    assert_eq!(every.len(), 12);
}

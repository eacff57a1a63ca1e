//! Letta's agent and block lists: every list (filters, cursors either way, limits, cursors that
//! name nothing) gives the page that the list's rules give when applied by hand to every agent
//! or block ([`agents_by_hand`], [`blocks_by_hand`]), on both backends, each paging in its own
//! SQL. Some agents share a creation time, and their ids differ in case, so the order of ids
//! (by their bytes) decides between them.

use super::agent;
use crate::harness::{Harness, on_both_backends};
use chrono::{DateTime, Utc};
use engram_core::{Agent, AgentAccess, AgentId, Block, BlockId, NewBlock, UserId};
use engram_store_api::{AgentList, AgentStore, BlockList, BlockStore, UserStore};

on_both_backends!(
    every_agent_page_follows_the_lists_rules,
    every_block_page_follows_the_lists_rules
);

fn at(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_700_000_000 + secs, 0).unwrap()
}

/// The page of `all` (in creation order) that a list with these cursors and limit gives, of
/// the rows `passes` keeps: empty when a cursor names no row.
fn cut<T: Clone>(
    all: &[T],
    id: impl Fn(&T) -> &str,
    passes: impl Fn(&T) -> bool,
    (after, before): (Option<&str>, Option<&str>),
    limit: usize,
    ascending: bool,
) -> Vec<T> {
    let mut order: Vec<&T> = all.iter().collect();
    if !ascending {
        order.reverse();
    }
    let place = |cursor: &str| order.iter().position(|t| id(t) == cursor);
    let after = match after.map(place) {
        Some(None) => return Vec::new(),
        found => found.flatten(),
    };
    let before = match before.map(place) {
        Some(None) => return Vec::new(),
        found => found.flatten(),
    };
    let kept: Vec<T> = order
        .iter()
        .enumerate()
        .filter(|(i, t)| after.is_none_or(|a| *i > a) && before.is_none_or(|b| *i < b) && passes(t))
        .map(|(_, t)| (*t).clone())
        .collect();
    if before.is_some() {
        kept[kept.len().saturating_sub(limit)..].to_vec()
    } else {
        kept.into_iter().take(limit).collect()
    }
}

/// The agents a list gives, by hand: `all` in creation order, with their tags and the one
/// user who may use them, if any.
fn agents_by_hand(all: &[(Agent, Vec<String>, Option<UserId>)], q: &AgentList) -> Vec<AgentId> {
    let passes = |(a, tags, user): &(Agent, Vec<String>, Option<UserId>)| {
        let name = q.name.as_ref().is_none_or(|n| &a.name == n);
        let text = q.query_text.as_ref().is_none_or(|t| {
            a.name
                .to_ascii_lowercase()
                .contains(&t.to_ascii_lowercase())
        });
        let has = |t: &String| tags.contains(t);
        let tagged = q.tags.is_empty()
            || if q.match_all_tags {
                q.tags.iter().all(has)
            } else {
                q.tags.iter().any(has)
            };
        name && text && tagged && q.user.as_ref().is_none_or(|u| user.as_ref() == Some(u))
    };
    let cursors = (
        q.after.as_ref().map(AgentId::as_str),
        q.before.as_ref().map(AgentId::as_str),
    );
    cut(
        all,
        |(a, ..)| a.id.as_str(),
        passes,
        cursors,
        q.limit,
        q.ascending,
    )
    .into_iter()
    .map(|(a, ..)| a.id)
    .collect()
}

async fn every_agent_page_follows_the_lists_rules<H: Harness>(h: H) {
    let b = h.backend();
    let ana = b.create_user("ana").await.unwrap();
    let names = [
        "Support Ana",
        "support-bob",
        "Kitchen",
        "ops_team",
        "100% sure",
        "SUPPORT night",
        "Kitchen",
        "Ünïcode support",
        "opsXteam",
        "notes",
    ];
    let tags = ["work", "home", "trip"];
    let mut all = Vec::new();
    for (i, name) in names.iter().enumerate() {
        // Pairs share a second; within a pair the ids differ in case only.
        let mut a = agent(name);
        a.id = AgentId::from(format!("agent-{}{i}", if i % 2 == 0 { "B" } else { "a" }));
        a.created_at = at(i as i64 / 2 * 60);
        a.updated_at = a.created_at;
        let (a, _) = b.create_agent(&a, &[], &[]).await.unwrap();
        let mine: Vec<String> = [tags[i % 3], tags[(i / 3) % 3]]
            .into_iter()
            .map(String::from)
            .collect();
        b.set_agent_tags(&a.id, &mine).await.unwrap();
        let user = (i % 3 != 1).then(|| ana.id.clone());
        if let Some(user) = &user {
            b.set_agent_access(&a.id, user, Some(AgentAccess::Read))
                .await
                .unwrap();
        }
        all.push((a, mine, user));
    }
    // Creation order: time, then id by its bytes ("agent-B…" before "agent-a…").
    all.sort_by(|(x, ..), (y, ..)| {
        (x.created_at, x.id.as_str().as_bytes()).cmp(&(y.created_at, y.id.as_str().as_bytes()))
    });
    let id = |i: usize| Some(all[i].0.id.clone());
    let mut lists = Vec::new();
    for ascending in [true, false] {
        for limit in [0, 1, 3, 50] {
            let base = AgentList {
                limit,
                ascending,
                ..AgentList::default()
            };
            lists.extend([
                base.clone(),
                AgentList {
                    after: id(3),
                    ..base.clone()
                },
                AgentList {
                    before: id(7),
                    ..base.clone()
                },
                AgentList {
                    after: id(1),
                    before: id(8),
                    ..base.clone()
                },
                AgentList {
                    after: Some(AgentId::from("agent-none")),
                    ..base.clone()
                },
                AgentList {
                    before: Some(AgentId::from("agent-none")),
                    ..base.clone()
                },
                AgentList {
                    name: Some("Kitchen".into()),
                    ..base.clone()
                },
                AgentList {
                    query_text: Some("SUPPORT".into()),
                    after: id(0),
                    ..base.clone()
                },
                // `%` and `_` are letters here, not patterns.
                AgentList {
                    query_text: Some("0% s".into()),
                    ..base.clone()
                },
                AgentList {
                    query_text: Some("ops_".into()),
                    ..base.clone()
                },
                AgentList {
                    query_text: Some("ÜNÏ".into()),
                    ..base.clone()
                },
                AgentList {
                    tags: vec!["work".into(), "trip".into(), "work".into()],
                    ..base.clone()
                },
                AgentList {
                    tags: vec!["work".into(), "trip".into()],
                    match_all_tags: true,
                    before: id(9),
                    ..base.clone()
                },
                AgentList {
                    user: Some(ana.id.clone()),
                    tags: vec!["home".into()],
                    ..base.clone()
                },
                AgentList {
                    user: Some(UserId::from("user-nobody".to_owned())),
                    ..base.clone()
                },
            ]);
        }
    }
    for q in &lists {
        let page: Vec<AgentId> = b
            .page_agents(q)
            .await
            .unwrap()
            .into_iter()
            .map(|a| a.id)
            .collect();
        assert_eq!(page, agents_by_hand(&all, q), "{q:?}");
        let every = AgentList {
            after: None,
            before: None,
            limit: usize::MAX,
            ..q.clone()
        };
        assert_eq!(
            b.count_agents(q).await.unwrap(),
            agents_by_hand(&all, &every).len() as u64,
            "count of {q:?}"
        );
    }
}

/// The blocks a list gives, by hand: `all` in creation order.
fn blocks_by_hand(all: &[Block], q: &BlockList) -> Vec<BlockId> {
    let passes = |b: &Block| q.label.as_ref().is_none_or(|l| &b.label == l);
    let cursors = (
        q.after.as_ref().map(BlockId::as_str),
        q.before.as_ref().map(BlockId::as_str),
    );
    cut(
        all,
        |b| b.id.as_str(),
        passes,
        cursors,
        q.limit,
        q.ascending,
    )
    .into_iter()
    .map(|b| b.id)
    .collect()
}

async fn every_block_page_follows_the_lists_rules<H: Harness>(h: H) {
    let b = h.backend();
    let labels = [
        "human", "persona", "notes", "human", "team", "human", "notes",
    ];
    for (i, label) in labels.iter().enumerate() {
        b.create_block(&NewBlock::new(*label, format!("value {i}")))
            .await
            .unwrap();
    }
    // Blocks of an agent list with the rest.
    b.create_agent(&agent("owner"), &[NewBlock::new("human", "Ana")], &[])
        .await
        .unwrap();
    let all = b.list_blocks(None).await.unwrap();
    assert_eq!(all.len(), labels.len() + 1);
    let id = |i: usize| Some(all[i].id.clone());
    let mut lists = Vec::new();
    for ascending in [true, false] {
        for limit in [0, 1, 2, 50] {
            let base = BlockList {
                limit,
                ascending,
                ..BlockList::default()
            };
            lists.extend([
                base.clone(),
                BlockList {
                    after: id(2),
                    ..base.clone()
                },
                BlockList {
                    before: id(6),
                    ..base.clone()
                },
                BlockList {
                    label: Some("human".into()),
                    after: id(0),
                    ..base.clone()
                },
                BlockList {
                    label: Some("human".into()),
                    before: id(7),
                    ..base.clone()
                },
                BlockList {
                    label: Some("nobody".into()),
                    ..base.clone()
                },
                BlockList {
                    after: Some(BlockId::from("block-none")),
                    ..base.clone()
                },
            ]);
        }
    }
    for q in &lists {
        let page: Vec<BlockId> = b
            .page_blocks(q)
            .await
            .unwrap()
            .into_iter()
            .map(|b| b.id)
            .collect();
        assert_eq!(page, blocks_by_hand(&all, q), "{q:?}");
    }
}

//! The archive browser's pages: every list the window can ask for (filters, offsets, cursors
//! either way, a date to jump to, past either end) gives the page, total and place that the
//! list's rules give when applied by hand to the agent's passages ([`by_hand`]), on both
//! backends, each paging in its own SQL.

use super::{agent, code};
use crate::harness::{Harness, on_both_backends};
use chrono::{DateTime, Utc};
use engram_core::{Error, NewPassage, Passage, PassageId, Result, TagMatch};
use engram_store_api::{AgentStore, PassageList, PassagePage, PassageRange, PassageStore};

on_both_backends!(every_page_follows_the_lists_rules);

fn at(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_700_000_000 + secs, 0).unwrap()
}

/// Whether `p` passes the list's filters (`search` case-insensitive for ASCII letters, as
/// SQL `LIKE` is; `tags`; `start`..=`end`).
fn passes(p: &Passage, q: &PassageList) -> bool {
    let search = q.search.as_deref().filter(|s| !s.is_empty());
    if let Some(s) = search
        && !p
            .text
            .to_ascii_lowercase()
            .contains(&s.to_ascii_lowercase())
    {
        return false;
    }
    let tagged = |t: &String| p.tags.contains(t);
    let tags_ok = q.tags.is_empty()
        || match q.tag_match {
            TagMatch::Any => q.tags.iter().any(tagged),
            TagMatch::All => q.tags.iter().all(tagged),
        };
    tags_ok && q.start.is_none_or(|s| p.created_at >= s) && q.end.is_none_or(|e| p.created_at <= e)
}

/// The page `q` asks for, cut by hand out of `all` (every passage of the agent, in the
/// list's order).
fn by_hand(all: &[Passage], q: &PassageList) -> Result<PassagePage> {
    let place = |id: &PassageId| {
        all.iter()
            .position(|p| &p.id == id)
            .ok_or_else(|| Error::not_found("passage", id.as_str()))
    };
    let after = q.after.as_ref().map(place).transpose()?;
    let before = q.before.as_ref().map(place).transpose()?;
    let listed: Vec<(usize, &Passage)> = all
        .iter()
        .enumerate()
        .filter(|(_, p)| passes(p, q))
        .collect();
    let total = listed.len();
    let between: Vec<&(usize, &Passage)> = listed
        .iter()
        .filter(|(i, _)| after.is_none_or(|a| *i > a) && before.is_none_or(|b| *i < b))
        .collect();
    let cursor = after.is_some() || before.is_some();
    let mut asked = q.offset;
    let (start, end) = if before.is_some() {
        // The page nearest the cursor, `offset` further from it.
        let end = between.len().saturating_sub(q.offset);
        (end.saturating_sub(q.limit), end)
    } else {
        let offset = match (q.at, cursor) {
            (Some(at), false) => {
                let ahead = listed
                    .iter()
                    .filter(|(_, p)| {
                        if q.ascending {
                            p.created_at < at
                        } else {
                            p.created_at > at
                        }
                    })
                    .count()
                    .min(total.saturating_sub(1));
                match q.limit {
                    0 => ahead,
                    n => ahead / n * n,
                }
            }
            _ => q.offset,
        };
        asked = offset;
        let start = offset.min(between.len());
        (start, start.saturating_add(q.limit).min(between.len()))
    };
    let passages: Vec<Passage> = between[start..end]
        .iter()
        .map(|(_, p)| (*p).clone())
        .collect();
    let offset = match (cursor, passages.first()) {
        (false, _) => asked,
        (true, None) if before.is_some() && after.is_none() => 0,
        (true, None) => total,
        (true, Some(first)) => listed
            .iter()
            .position(|(_, p)| p.id == first.id)
            .unwrap_or(total),
    };
    Ok(PassagePage {
        passages,
        total: total as u64,
        offset: offset as u64,
    })
}

async fn every_page_follows_the_lists_rules<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = b.create_agent(&agent("browser"), &[], &[]).await.unwrap();
    let tags = ["work", "home", "trip"];
    let passages: Vec<NewPassage> = (0..23)
        .map(|i| NewPassage {
            text: format!("note {i} {}", if i % 3 == 0 { "Porto" } else { "lyon" }),
            tags: vec![tags[i % 3].into(), tags[(i / 4) % 3].into()],
            // Some share a second, keeping insertion order among them.
            created_at: Some(at((i as i64 / 2) * 60)),
            ..NewPassage::default()
        })
        .collect();
    let stored = b.insert_passages(&a.id, &passages).await.unwrap();
    let id = |i: usize| Some(stored[i].id.clone());
    let mut lists = Vec::new();
    for ascending in [true, false] {
        for limit in [0, 1, 5, 50] {
            let base = PassageList {
                limit,
                ascending,
                ..PassageList::default()
            };
            let variants = [
                PassageList {
                    offset: 7,
                    ..base.clone()
                },
                PassageList {
                    offset: 40,
                    ..base.clone()
                },
                PassageList {
                    after: id(4),
                    ..base.clone()
                },
                PassageList {
                    after: id(4),
                    offset: 2,
                    ..base.clone()
                },
                PassageList {
                    before: id(18),
                    ..base.clone()
                },
                PassageList {
                    before: id(18),
                    offset: 3,
                    ..base.clone()
                },
                PassageList {
                    before: id(0),
                    ..base.clone()
                },
                PassageList {
                    after: id(22),
                    ..base.clone()
                },
                PassageList {
                    after: id(3),
                    before: id(15),
                    ..base.clone()
                },
                PassageList {
                    at: Some(at(300)),
                    ..base.clone()
                },
                PassageList {
                    at: Some(at(99_999)),
                    ..base.clone()
                },
                PassageList {
                    at: Some(at(-5)),
                    ..base.clone()
                },
                PassageList {
                    search: Some("porto".into()),
                    ..base.clone()
                },
                PassageList {
                    search: Some("3 P".into()),
                    ..base.clone()
                },
                PassageList {
                    tags: vec!["work".into(), "trip".into()],
                    ..base.clone()
                },
                PassageList {
                    tags: vec!["work".into(), "trip".into()],
                    tag_match: TagMatch::All,
                    after: id(2),
                    ..base.clone()
                },
                PassageList {
                    start: Some(at(120)),
                    end: Some(at(420)),
                    at: Some(at(240)),
                    ..base.clone()
                },
                PassageList {
                    search: Some("LYON".into()),
                    before: id(20),
                    ..base.clone()
                },
            ];
            lists.push(base);
            lists.extend(variants);
        }
    }
    for q in &lists {
        let whole = PassageRange {
            limit: usize::MAX,
            ascending: q.ascending,
            ..PassageRange::default()
        };
        let all = b.list_passages(&a.id, &whole).await.unwrap();
        assert_eq!(all.len(), 23);
        let expected = by_hand(&all, q).unwrap();
        assert_eq!(b.page_passages(&a.id, q).await.unwrap(), expected, "{q:?}");
    }
    // Only ASCII letters are folded, as SQL `LIKE` folds them on SQLite.
    b.insert_passages(&a.id, &[new_one("Émile met ELENA in Évora")])
        .await
        .unwrap();
    for (search, found) in [("elena", 1), ("émile", 0), ("Évora", 1), ("évora", 0)] {
        let q = PassageList {
            search: Some(search.into()),
            limit: 5,
            ..PassageList::default()
        };
        assert_eq!(
            b.page_passages(&a.id, &q).await.unwrap().total,
            found,
            "{search}"
        );
    }
    // A search pattern's own `%` and `_` are letters, not wildcards.
    let literal = PassageList {
        search: Some("%".into()),
        limit: 5,
        ..PassageList::default()
    };
    assert_eq!(b.page_passages(&a.id, &literal).await.unwrap().total, 0);

    let stranger = PassageList {
        after: Some(PassageId::new()),
        limit: 5,
        ..PassageList::default()
    };
    assert_eq!(code(b.page_passages(&a.id, &stranger).await), "not_found");
    assert_eq!(
        code(
            b.page_passages(&engram_core::AgentId::new(), &PassageList::default())
                .await
        ),
        "not_found"
    );
}

fn new_one(text: &str) -> NewPassage {
    NewPassage {
        text: text.into(),
        created_at: Some(at(99_000)),
        ..NewPassage::default()
    }
}

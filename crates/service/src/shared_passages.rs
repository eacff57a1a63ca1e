//! A page of archival memory on a shared server, cut in memory: the storage interface lists an
//! agent's passages whole (in the list's order) and the window's filters, cursors, offsets and
//! date jumps apply here, as the SQLite store applies them in SQL. Fine for archives of tens of
//! thousands of passages; paging in SQL on PostgreSQL is still to come.

use engram_core::{Error, Passage, Result, TagMatch};
use engram_store::{PassageList, PassagePage};

/// Whether `p` passes the list's filters (`search`, `tags`, `start`, `end`).
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

/// The page `q` asks for out of `all`, every passage of the agent the list may show (current
/// ones, and superseded ones when it asks for them) in the list's order: oldest first when
/// `q.ascending`, newest first otherwise.
///
/// Errors: `NotFound("passage")` for a cursor that is not among `all`.
pub(crate) fn page(all: Vec<Passage>, q: &PassageList) -> Result<PassagePage> {
    let place = |id: &engram_core::PassageId| {
        all.iter()
            .position(|p| &p.id == id)
            .ok_or_else(|| Error::not_found("passage", id.as_str()))
    };
    let after = q.after.as_ref().map(place).transpose()?;
    let before = q.before.as_ref().map(place).transpose()?;
    // (place in `all`, passage) of those passing the filters, in the list's order.
    let listed: Vec<(usize, Passage)> = all
        .into_iter()
        .enumerate()
        .filter(|(_, p)| passes(p, q))
        .collect();
    let total = listed.len();
    let between: Vec<&(usize, Passage)> = listed
        .iter()
        .filter(|(i, _)| after.is_none_or(|a| *i > a) && before.is_none_or(|b| *i < b))
        .collect();
    let cursor = after.is_some() || before.is_some();
    // Where a page without a cursor says it starts (past the end when asked so).
    let mut asked = q.offset;
    let (start, end) = if before.is_some() {
        // The page nearest the cursor, `offset` further from it.
        let end = between.len().saturating_sub(q.offset);
        (end.saturating_sub(q.limit), end)
    } else {
        let offset = match (q.at, cursor) {
            (Some(at), false) => {
                // The page holding the first passage at or past `at` in the list's order.
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
    let passages: Vec<Passage> = between[start..end].iter().map(|(_, p)| p.clone()).collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};
    use engram_core::{Agent, LlmConfig, NewPassage};
    use engram_store::Store;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + secs, 0).unwrap()
    }

    /// Every page the window can ask for, cut here from the interface's list, is the page the
    /// SQLite store cuts in SQL from the same passages.
    #[test]
    fn pages_cut_in_memory_are_the_pages_sqlite_cuts() {
        let store = Store::open_in_memory().unwrap();
        let agent = Agent::new("a", LlmConfig::new("openai/gpt-4o-mini"));
        store.agents().create(&agent, &[], &[]).unwrap();
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
        let stored = store.passages().insert(&agent.id, &passages).unwrap();
        let id = |i: usize| Some(stored[i].id.clone());
        let mut lists = Vec::new();
        for ascending in [true, false] {
            for limit in [0, 1, 5, 50] {
                let base = PassageList {
                    limit,
                    ascending,
                    ..PassageList::default()
                };
                lists.push(base.clone());
                lists.push(PassageList {
                    offset: 7,
                    ..base.clone()
                });
                lists.push(PassageList {
                    offset: 40,
                    ..base.clone()
                });
                lists.push(PassageList {
                    after: id(4),
                    ..base.clone()
                });
                lists.push(PassageList {
                    after: id(4),
                    offset: 2,
                    ..base.clone()
                });
                lists.push(PassageList {
                    before: id(18),
                    ..base.clone()
                });
                lists.push(PassageList {
                    before: id(18),
                    offset: 3,
                    ..base.clone()
                });
                lists.push(PassageList {
                    before: id(0),
                    ..base.clone()
                });
                lists.push(PassageList {
                    after: id(22),
                    ..base.clone()
                });
                lists.push(PassageList {
                    after: id(3),
                    before: id(15),
                    ..base.clone()
                });
                lists.push(PassageList {
                    at: Some(at(300)),
                    ..base.clone()
                });
                lists.push(PassageList {
                    at: Some(at(99_999)),
                    ..base.clone()
                });
                lists.push(PassageList {
                    search: Some("porto".into()),
                    ..base.clone()
                });
                lists.push(PassageList {
                    tags: vec!["work".into(), "trip".into()],
                    ..base.clone()
                });
                lists.push(PassageList {
                    tags: vec!["work".into(), "trip".into()],
                    tag_match: TagMatch::All,
                    after: id(2),
                    ..base.clone()
                });
                lists.push(PassageList {
                    start: Some(at(120)),
                    end: Some(at(420)),
                    at: Some(at(240)),
                    ..base.clone()
                });
                lists.push(PassageList {
                    search: Some("LYON".into()),
                    before: id(20),
                    ..base
                });
            }
        }
        for q in &lists {
            let all = store
                .passages()
                .list(
                    &agent.id,
                    &PassageList {
                        limit: usize::MAX,
                        ascending: q.ascending,
                        include_superseded: q.include_superseded,
                        ..PassageList::default()
                    },
                )
                .unwrap();
            let cut = page(all, q).unwrap();
            let sql = store.passages().page(&agent.id, q).unwrap();
            assert_eq!(cut, sql, "{q:?}");
        }
        let stranger = PassageList {
            after: Some(engram_core::PassageId::new()),
            limit: 5,
            ..PassageList::default()
        };
        assert_eq!(page(Vec::new(), &stranger).unwrap_err().code(), "not_found");
    }
}

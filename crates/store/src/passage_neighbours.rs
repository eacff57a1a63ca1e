//! The passages written just before and after each archival search candidate, for neighbour
//! smoothing (`engram_retrieval::neighbours`), found for all candidates in one SQL statement.
//!
//! One statement per candidate and side (400 for a hybrid search's 200 BM25 candidates) cost
//! about 2 ms of a 5 ms search at 100,000 passages: building, caching and binding each query
//! outweighed the index seeks. Here the candidates go in as one JSON array and every seek is a
//! correlated subquery of a single statement.
//!
//! Each side is two seeks on `passages_by_time (agent_id, created_at, rowid)`: first the nearest
//! row of the *same* instant (`created_at = h AND pk < h.pk`: an exact index range on the
//! trailing row key), then the nearest row of an earlier instant within
//! `search::NEIGHBOUR_WINDOW_MICROS`. A single row-value comparison `(created_at, pk) < (h, pk)`
//! lets SQLite range over `created_at` only and walk every row of the hit's instant: with
//! 5,000 passages stored in one instant (a bulk insert) that walk made lexical search
//! 46–160 ms. Date filters fold into the range bounds. A tag filter cannot be an index bound
//! here, so each seek walks at most [`TAG_SCAN`] rows of its instant or window for one that
//! carries the tags: with a tag filter, a neighbour is the nearest tagged passage among those
//! rows (the bound keeps a selective tag filter over a bulk insert from walking it all).

use crate::passage_rows::{PassageQuery, Query, filters, load_by_pk};
use crate::rooms::PassageRows;
use crate::search;
use crate::sql::{self, DbResult};
use engram_core::{AgentId, Passage, PassageId, Result};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params_from_iter};
use std::collections::HashMap;

/// With a tag filter, how many rows nearest in time each seek inspects for a tagged one.
pub(crate) const TAG_SCAN: usize = 64;

/// Neighbours of each row key in `keys` (the rows before and after it, by time then key, that
/// pass the search's filters and lie within the neighbour window), as
/// `key → [before, after]`. `keys` are the agent's rows (its full-text table's hits); a key
/// that is no row is left out. A hit's time is read from `passages_time_by_key`, never from its
/// row (a random page read: rows carry their vectors).
pub(crate) fn neighbour_map(
    conn: &Connection,
    agent: &AgentId,
    q: &PassageQuery,
    keys: &[i64],
) -> Result<HashMap<i64, [Option<i64>; 2]>> {
    let mut out = HashMap::with_capacity(keys.len());
    if keys.is_empty() {
        return Ok(out);
    }
    let (sql, args) = neighbour_sql(agent, q, keys)?;
    let mut stmt = conn.prepare_cached(&sql).db()?;
    let mut rows = stmt.query(params_from_iter(args)).db()?;
    while let Some(r) = rows.next().db()? {
        out.insert(r.get(0).db()?, [r.get(1).db()?, r.get(2).db()?]);
    }
    Ok(out)
}

/// The statement of [`neighbour_map`] and its arguments.
fn neighbour_sql(agent: &AgentId, q: &PassageQuery, keys: &[i64]) -> Result<(String, Vec<Value>)> {
    let mut query = Query::default();
    // Only a tag filter (or leaving superseded passages out) needs the passage row; agent and
    // dates are bounds on the index.
    let tagged = !q.tags.is_empty() || !q.include_superseded;
    let tag_filters = if tagged {
        Some(filters(agent, q, &mut query)?)
    } else {
        None
    };
    let a = query.arg(agent.as_str().to_owned());
    let w = query.arg(search::NEIGHBOUR_WINDOW_MICROS);
    let start = query.arg(q.start.map_or(i64::MIN, sql::micros));
    let end = query.arg(q.end.map_or(i64::MAX, sql::micros));
    let list = sql::json_keys(keys.iter().copied());
    let list = query.arg(list);
    // (side, tier): the same instant first, then the window; a candidate passed the date
    // filter, so its own instant needs no date bound.
    let seeks = [
        (
            "p.created_at = h.created_at AND p.pk < h.pk".to_owned(),
            "p.pk DESC",
        ),
        (
            format!(
                "p.created_at < h.created_at AND p.created_at >= max(h.created_at - {w}, {start})"
            ),
            "p.created_at DESC, p.pk DESC",
        ),
        (
            "p.created_at = h.created_at AND p.pk > h.pk".to_owned(),
            "p.pk ASC",
        ),
        (
            format!(
                "p.created_at > h.created_at AND p.created_at <= min(h.created_at + {w}, {end})"
            ),
            "p.created_at ASC, p.pk ASC",
        ),
    ];
    let seek = |(range, order): &(String, &str)| -> String {
        let inner = |cols: &str, limit: usize| {
            format!(
                "SELECT {cols} FROM passages p WHERE p.agent_id = {a} AND {range}
                 ORDER BY {order} LIMIT {limit}"
            )
        };
        match &tag_filters {
            None => inner("p.pk", 1),
            Some(f) => {
                let outer_order = order.replace("p.", "b.");
                format!(
                    "SELECT b.pk FROM ({}) b JOIN passages p ON p.pk = b.pk
                     WHERE {f} ORDER BY {outer_order} LIMIT 1",
                    inner("p.pk AS pk, p.created_at AS created_at", TAG_SCAN)
                )
            }
        }
    };
    let sql = format!(
        "SELECT h.pk, coalesce(({}), ({})), coalesce(({}), ({}))
         FROM json_each({list}) k
         CROSS JOIN passages h INDEXED BY passages_time_by_key ON h.pk = k.value",
        seek(&seeks[0]),
        seek(&seeks[1]),
        seek(&seeks[2]),
        seek(&seeks[3]),
    );
    Ok((sql, query.args))
}

impl PassageRows<'_> {
    /// The passages written around each of `ids` in `agent`'s archival memory: up to `reach`
    /// before and `reach` after, as neighbour smoothing finds a neighbour — nearest by
    /// creation time, then by insertion order within one instant, each at most 30 minutes
    /// from the next one in (`search::NEIGHBOUR_WINDOW_MICROS`), passing `q`'s tag and date
    /// filters (its text, vector and limit are not read). Returns one list per id, in input
    /// order, oldest first, without the passage itself; empty where there are none or the id
    /// is not one of the agent's. Late interaction reads a candidate with its neighbours
    /// (`engram_service`'s reranker). Errors: `NotFound("agent")`, storage.
    pub fn neighbours(
        self,
        agent: &AgentId,
        q: &PassageQuery,
        ids: &[PassageId],
        reach: usize,
    ) -> Result<Vec<Vec<Passage>>> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let q = &*crate::passage_rows::effective(c, agent, q)?;
            let mut keys = Vec::with_capacity(ids.len());
            let mut stmt = c
                .prepare_cached("SELECT pk FROM passages WHERE id = ?1 AND agent_id = ?2")
                .db()?;
            for id in ids {
                let pk: Option<i64> = stmt
                    .query_row([id.as_str(), agent.as_str()], |r| r.get(0))
                    .optional()
                    .db()?;
                keys.push(pk);
            }
            // Ring by ring: the next one out on each side is the neighbour on that side of
            // the last one found, so each ring is one statement for all candidates.
            let mut sides: Vec<[Vec<i64>; 2]> = vec![Default::default(); keys.len()];
            let mut edge: Vec<[Option<i64>; 2]> = keys.iter().map(|k| [*k, *k]).collect();
            for _ in 0..reach {
                let mut frontier: Vec<i64> = edge.iter().flatten().flatten().copied().collect();
                frontier.sort_unstable();
                frontier.dedup();
                if frontier.is_empty() {
                    break;
                }
                let found = neighbour_map(c, agent, q, &frontier)?;
                for (side, at) in sides.iter_mut().zip(edge.iter_mut()) {
                    for s in 0..2 {
                        at[s] = at[s].and_then(|k| found.get(&k)).and_then(|n| n[s]);
                        side[s].extend(at[s]);
                    }
                }
            }
            sides
                .into_iter()
                .map(|[before, after]| {
                    before
                        .into_iter()
                        .rev()
                        .chain(after)
                        .filter_map(|pk| load_by_pk(c, pk).transpose())
                        .collect()
                })
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;
    use engram_core::{NewPassage, TagMatch};

    /// The per-candidate query this module replaced: the reference its answers must equal.
    /// The passages written just before and just after passage `pk` (by creation time, then key)
    /// that pass the search's filters, at most `search::NEIGHBOUR_WINDOW_MICROS` away from it.
    fn one_at_a_time(
        conn: &Connection,
        agent: &AgentId,
        q: &PassageQuery,
        pk: i64,
    ) -> Result<[Option<i64>; 2]> {
        let mut out = [None, None];
        for (slot, (cmp, order, sign)) in [("<", "DESC", "-"), (">", "ASC", "+")]
            .into_iter()
            .enumerate()
        {
            let mut query = Query::default();
            let filters = filters(agent, q, &mut query)?;
            let hit = query.arg(pk);
            let window = query.arg(search::NEIGHBOUR_WINDOW_MICROS);
            let sql = format!(
                "SELECT p.pk FROM passages h, passages p
                 WHERE h.pk = {hit} AND {filters}
                   AND (p.created_at, p.pk) {cmp} (h.created_at, h.pk)
                   AND p.created_at BETWEEN min(h.created_at, h.created_at {sign} {window})
                                        AND max(h.created_at, h.created_at {sign} {window})
                 ORDER BY p.created_at {order}, p.pk {order} LIMIT 1"
            );
            out[slot] = conn
                .prepare_cached(&sql)
                .db()?
                .query_row(params_from_iter(query.args), |r| r.get(0))
                .optional()
                .db()?;
        }
        Ok(out)
    }

    fn agent_with(store: &Store, id: &str) -> AgentId {
        store
            .write(|tx| {
                tx.execute(
                    "INSERT INTO agents (id, name, description, system, llm, loop_style,
                                         max_steps, tools, created_at, updated_at)
                     VALUES (?1, 'A', '', '', '{}', 'tool_loop', 50, '[]', 0, 0)",
                    [id],
                )
                .db()
            })
            .unwrap();
        AgentId::from(id)
    }

    fn time(secs: i64) -> Option<engram_core::Timestamp> {
        chrono::DateTime::from_timestamp(1_700_000_000 + secs, 0)
    }

    fn all_keys(store: &Store, agent: &AgentId) -> Vec<i64> {
        store
            .read(|c| {
                let mut stmt = c
                    .prepare("SELECT pk FROM passages WHERE agent_id = ?1")
                    .db()?;
                let rows = stmt.query_map([agent.as_str()], |r| r.get(0)).db()?;
                rows.collect::<rusqlite::Result<_>>().db()
            })
            .unwrap()
    }

    /// Passages in bursts: 40 in one instant (a bulk insert), rows a minute apart, gaps longer
    /// than the window, another agent's rows in between; every 3rd tagged `a`, every 5th `b`.
    fn corpus(store: &Store) -> AgentId {
        let agent = agent_with(store, "agent-n");
        let other = agent_with(store, "agent-o");
        let mut ps = Vec::new();
        for i in 0..160i64 {
            let secs = match i {
                0..40 => 0,                      // one instant
                40..80 => 60 * (i - 39),         // a minute apart
                80..100 => 10_000 + 600 * i,     // ten minutes apart
                100..120 => 500_000 + 3_600 * i, // an hour apart: no neighbours
                _ => 900_000 + 30 * (i % 7),     // shuffled instants, some shared
            };
            let mut tags = Vec::new();
            if i % 3 == 0 {
                tags.push("a".to_owned());
            }
            if i % 5 == 0 {
                tags.push("b".to_owned());
            }
            ps.push(NewPassage {
                text: format!("passage {i}"),
                tags,
                created_at: time(secs),
                ..Default::default()
            });
        }
        for chunk in ps.chunks(17) {
            store.passages().insert(&agent, chunk).unwrap();
            store
                .passages()
                .insert(
                    &other,
                    &[NewPassage {
                        text: "other".into(),
                        created_at: chunk[0].created_at,
                        ..Default::default()
                    }],
                )
                .unwrap();
        }
        agent
    }

    #[test]
    fn one_statement_finds_what_one_query_per_candidate_found() {
        let store = Store::open_in_memory().unwrap();
        let agent = corpus(&store);
        let tags = |t: &[&str], m| (t.iter().map(|s| (*s).to_owned()).collect(), m);
        type Case = (Vec<String>, TagMatch, Option<i64>, Option<i64>);
        let cases: Vec<Case> = vec![
            (vec![], TagMatch::Any, None, None),
            (vec![], TagMatch::Any, Some(0), Some(0)),
            (vec![], TagMatch::Any, Some(300), Some(60_000)),
            (vec![], TagMatch::Any, None, Some(1_200)),
            {
                let (t, m) = tags(&["a"], TagMatch::Any);
                (t, m, None, None)
            },
            {
                let (t, m) = tags(&["a", "b"], TagMatch::Any);
                (t, m, None, None)
            },
            {
                let (t, m) = tags(&["a", "b"], TagMatch::All);
                (t, m, None, None)
            },
            {
                let (t, m) = tags(&["b"], TagMatch::Any);
                (t, m, Some(0), Some(70_000))
            },
        ];
        let mut compared = 0;
        for (tags, tag_match, start, end) in cases {
            let q = PassageQuery {
                tags,
                tag_match,
                start: start.and_then(time),
                end: end.and_then(time),
                ..Default::default()
            };
            // Candidates are rows that pass the filters.
            let passing: Vec<i64> = store
                .read(|c| {
                    let mut query = Query::default();
                    let f = filters(&agent, &q, &mut query)?;
                    let mut stmt = c
                        .prepare(&format!("SELECT p.pk FROM passages p WHERE {f}"))
                        .db()?;
                    let rows = stmt
                        .query_map(params_from_iter(query.args), |r| r.get(0))
                        .db()?;
                    rows.collect::<rusqlite::Result<_>>().db()
                })
                .unwrap();
            assert!(!passing.is_empty(), "{q:?}");
            let found = store
                .read(|c| neighbour_map(c, &agent, &q, &passing))
                .unwrap();
            assert_eq!(found.len(), passing.len());
            for &k in &passing {
                let expected = store.read(|c| one_at_a_time(c, &agent, &q, k)).unwrap();
                assert_eq!(
                    found.get(&k).copied(),
                    Some(expected),
                    "key {k} under {q:?}"
                );
                compared += 1;
            }
        }
        assert!(compared >= 400, "{compared}");
        // A key that is no row is not answered for.
        let q = PassageQuery::default();
        let found = store
            .read(|c| neighbour_map(c, &agent, &q, &[999_999]))
            .unwrap();
        assert!(found.is_empty());
    }

    /// Further rings are the neighbours of the neighbours, side by side, oldest first.
    #[test]
    fn passages_within_reach_chain_neighbour_to_neighbour() {
        let store = Store::open_in_memory().unwrap();
        let agent = corpus(&store);
        let rows: Vec<(i64, PassageId)> = store
            .read(|c| {
                let mut stmt = c
                    .prepare("SELECT pk, id FROM passages WHERE agent_id = ?1 ORDER BY pk")
                    .db()?;
                let rows = stmt
                    .query_map([agent.as_str()], |r| {
                        Ok((r.get(0)?, PassageId::from(r.get::<_, String>(1)?)))
                    })
                    .db()?;
                rows.collect::<rusqlite::Result<_>>().db()
            })
            .unwrap();
        let text_of: HashMap<i64, String> = rows
            .iter()
            .map(|(pk, id)| (*pk, store.passages().get(id).unwrap().text))
            .collect();
        let ids: Vec<PassageId> = rows.iter().map(|(_, id)| id.clone()).collect();
        for q in [
            PassageQuery::default(),
            PassageQuery {
                tags: vec!["a".into()],
                ..Default::default()
            },
        ] {
            let found = store.passages().neighbours(&agent, &q, &ids, 2).unwrap();
            let mut reached_two = 0;
            for ((pk, _), got) in rows.iter().zip(&found) {
                let side = |s: usize| {
                    let mut out = Vec::new();
                    let mut at = *pk;
                    for _ in 0..2 {
                        match store.read(|c| one_at_a_time(c, &agent, &q, at)).unwrap()[s] {
                            Some(next) => {
                                out.push(text_of[&next].clone());
                                at = next;
                            }
                            None => break,
                        }
                    }
                    out
                };
                let mut expected = side(0);
                expected.reverse();
                expected.extend(side(1));
                let got: Vec<String> = got.iter().map(|p| p.text.clone()).collect();
                // A tagged passage's neighbours under the tag filter; untagged ones are not
                // candidates of such a search, but are answered the same way.
                assert_eq!(got, expected, "passage {pk} under {q:?}");
                reached_two += usize::from(got.len() == 4);
            }
            assert!(reached_two >= 20, "{reached_two}");
        }
        let none = store
            .passages()
            .neighbours(&agent, &PassageQuery::default(), &ids[..3], 0)
            .unwrap();
        assert_eq!(none, vec![Vec::<Passage>::new(); 3]);
    }

    /// Every seek is an index range; a hit's time comes from `passages_time_by_key`, so no
    /// passage row (with its vector) is read unless a tag filter needs it.
    #[test]
    fn the_statement_reads_indexes_only() {
        let store = Store::open_in_memory().unwrap();
        let agent = agent_with(&store, "agent-plan");
        // An agent without superseded passages: `effective` drops that filter.
        let all = PassageQuery {
            include_superseded: true,
            ..PassageQuery::default()
        };
        let (sql, args) = neighbour_sql(&agent, &all, &[1, 2]).unwrap();
        let plan: Vec<String> = store
            .read(|c| {
                let mut stmt = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).db()?;
                let rows = stmt
                    .query_map(params_from_iter(args), |r| r.get::<_, String>(3))
                    .db()?;
                rows.collect::<rusqlite::Result<_>>().db()
            })
            .unwrap();
        let plan = plan.join("\n");
        assert!(
            plan.contains("SEARCH h USING COVERING INDEX passages_time_by_key (pk=?)"),
            "{plan}"
        );
        assert_eq!(
            plan.matches("USING COVERING INDEX passages_by_time")
                .count(),
            4,
            "{plan}"
        );
        assert!(plan.contains("created_at=? AND rowid<?"), "{plan}");
        assert!(
            !plan.contains("SCAN p") && !plan.contains("TEMP B-TREE"),
            "{plan}"
        );
    }

    #[test]
    fn a_bulk_insert_in_one_instant_has_neighbours_in_key_order_and_tags_look_a_bounded_way() {
        let store = Store::open_in_memory().unwrap();
        let agent = agent_with(&store, "agent-bulk");
        // 1,000 passages in one instant, as one insert without times stores them; only the
        // first and the last tagged.
        let ps: Vec<NewPassage> = (0..1_000)
            .map(|i| NewPassage {
                text: format!("row {i}"),
                tags: if i == 0 || i == 999 {
                    vec!["edge".into()]
                } else {
                    vec![]
                },
                created_at: time(0),
                ..Default::default()
            })
            .collect();
        store.passages().insert(&agent, &ps).unwrap();
        let mut keys = all_keys(&store, &agent);
        keys.sort_unstable();
        let found = store
            .read(|c| neighbour_map(c, &agent, &PassageQuery::default(), &keys))
            .unwrap();
        for (i, k) in keys.iter().enumerate() {
            let before = i.checked_sub(1).map(|j| keys[j]);
            let after = keys.get(i + 1).copied();
            assert_eq!(found[k], [before, after], "row {i}");
        }
        // With a tag filter a seek inspects TAG_SCAN rows: the two tagged rows, 999 apart,
        // are not each other's neighbours (the one-at-a-time query walked all 1,000).
        let tagged = PassageQuery {
            tags: vec!["edge".into()],
            ..Default::default()
        };
        let ends = [keys[0], keys[999]];
        let found = store
            .read(|c| neighbour_map(c, &agent, &tagged, &ends))
            .unwrap();
        assert_eq!(found[&keys[0]], [None, None]);
        assert_eq!(found[&keys[999]], [None, None]);
        let reference = store
            .read(|c| one_at_a_time(c, &agent, &tagged, keys[0]))
            .unwrap();
        assert_eq!(reference, [None, Some(keys[999])]);
    }
}

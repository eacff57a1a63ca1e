//! Browsing archival memory: pages of an agent's passages in time order, paged in SQL.
//!
//! Filters (substring, tags, date range) are SQL conditions and the page is an indexed range
//! scan over `passages_by_time` (`agent_id, created_at` plus the row key), so a page of 10
//! costs the same at 100 or 100,000 passages. With a tag filter the scan runs over the tag
//! index instead (`passage_tags_by_agent_tag_time`: agent, tag, created_at, row key), so a
//! tag-filtered page and total are index range reads too. Cursors (`after`/`before` a passage id, as
//! Letta's list routes take them) become row-value bounds on `(created_at, pk)`; a deep offset
//! is read from the other end of the list, so the last page is as cheap as the first.

use crate::passage_rows::{PASSAGE_COLS, Query, passage_from_row};
use crate::rooms::PassageRows;
use crate::sql::{self, DbResult};
use engram_core::{AgentId, Error, Passage, PassageId, Result, TagMatch, Timestamp};
use engram_store_api::{PassageList, PassagePage};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

/// A `LIKE` pattern matching text that contains `search` literally (`None` for no filter).
fn like_pattern(search: Option<&str>) -> Option<String> {
    search.filter(|s| !s.is_empty()).map(|s| {
        let escaped = s
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        format!("%{escaped}%")
    })
}

/// A passage's place in time order: `(created_at µs, pk)`.
type Key = (i64, i64);

/// The key of the agent's passage `id`. Errors: `NotFound("passage", id)`.
fn key_of(c: &Connection, agent: &AgentId, id: &PassageId) -> Result<Key> {
    c.prepare_cached("SELECT created_at, pk FROM passages WHERE id = ?1 AND agent_id = ?2")
        .db()?
        .query_row(params![id.as_str(), agent.as_str()], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()
        .db()?
        .ok_or_else(|| Error::not_found("passage", id.as_str()))
}

/// Bounds on a passage's place in time order, besides the list's own dates:
/// `(created_at, pk)` strictly greater than `after` and strictly less than `before`.
#[derive(Clone, Copy, Default)]
struct Between {
    after: Option<Key>,
    before: Option<Key>,
}

/// The columns a list query ranges over: the passages' own (`passages_by_time`), or the
/// copies the tag index (`passage_tags_by_agent_tag_time`) carries of each tagged passage's
/// agent, time and row key.
struct Cols {
    agent: &'static str,
    time: &'static str,
    pk: &'static str,
}

const PASSAGE: Cols = Cols {
    agent: "p.agent_id",
    time: "p.created_at",
    pk: "p.pk",
};

const TAG: Cols = Cols {
    agent: "t.agent_id",
    time: "t.created_at",
    pk: "t.passage_pk",
};

/// The WHERE conditions on the agent and time (the list's dates and `between`) over `cols`.
/// The dates and the bounds fold into one range on the time column, so SQLite seeks the index
/// instead of testing every entry (a row value `(created_at, pk) > (?, ?)` is not used as a
/// range by its planner).
fn range(
    agent: &AgentId,
    q: &PassageList,
    between: Between,
    cols: &Cols,
    query: &mut Query,
) -> String {
    let Cols { agent: a, time, pk } = cols;
    let start = q.start.map(sql::micros);
    let end = q.end.map(sql::micros);
    let low = [start, between.after.map(|k| k.0)]
        .into_iter()
        .flatten()
        .max();
    let high = [end, between.before.map(|k| k.0)]
        .into_iter()
        .flatten()
        .min();
    let mut cond = format!("{a} = {}", query.arg(agent.as_str().to_owned()));
    if let Some(t) = low {
        cond.push_str(&format!(" AND {time} >= {}", query.arg(t)));
    }
    if let Some(t) = high {
        cond.push_str(&format!(" AND {time} <= {}", query.arg(t)));
    }
    if let Some((t, k)) = between.after {
        cond.push_str(&format!(
            " AND NOT ({time} = {} AND {pk} <= {})",
            query.arg(t),
            query.arg(k)
        ));
    }
    if let Some((t, k)) = between.before {
        cond.push_str(&format!(
            " AND NOT ({time} = {} AND {pk} >= {})",
            query.arg(t),
            query.arg(k)
        ));
    }
    cond
}

/// The conditions on the passage row itself as `" AND …"` (the substring filter, and current
/// passages only unless `include_superseded`), or nothing.
fn like(q: &PassageList, query: &mut Query) -> String {
    let mut cond = like_pattern(q.search.as_deref())
        .map(|pattern| format!(" AND p.text LIKE {} ESCAPE '\\'", query.arg(pattern)))
        .unwrap_or_default();
    if !q.include_superseded {
        cond.push_str(" AND p.superseded_at IS NULL");
    }
    cond
}

/// Whether the list has conditions on the passage row (see [`like`]).
fn row_filtered(q: &PassageList) -> bool {
    like_pattern(q.search.as_deref()).is_some() || !q.include_superseded
}

/// `q` as the store runs it: hiding superseded passages only when the agent has some, so an
/// agent whose facts never changed keeps its index-only paths (see
/// `passage_rows::hides_superseded`).
fn effective(c: &Connection, agent: &AgentId, q: &PassageList) -> Result<PassageList> {
    let mut q = q.clone();
    q.include_superseded = !crate::passage_rows::hides_superseded(c, agent, q.include_superseded)?;
    Ok(q)
}

/// How a list's tag filter reads the tag index.
enum Tags<'a> {
    /// No tag filter: the list walks the passages' time index.
    None,
    /// One tag: the list is one range of the tag index, already in time order.
    One(&'a str),
    /// Several tags: the passages carrying at least `need` of them, from one range per tag.
    Several(Vec<&'a str>, i64),
}

fn tags_of(q: &PassageList) -> Tags<'_> {
    let unique = unique_tags(q);
    match unique.as_slice() {
        [] => Tags::None,
        [one] => Tags::One(one),
        _ => {
            let need = need_tags(q, unique.len());
            Tags::Several(unique, need)
        }
    }
}

/// The list's rows as a row source named `t` (with `passage_pk` and `created_at`) joined to
/// the passages `p` (when `join`), and the WHERE conditions (agent, time, tags; the substring
/// filter too), for a list with a tag filter. One tag reads one index range; several group
/// their ranges by passage.
fn tagged_source(
    agent: &AgentId,
    q: &PassageList,
    between: Between,
    tags: &Tags<'_>,
    join: bool,
    query: &mut Query,
) -> Result<(String, String)> {
    let like = like(q, query);
    let join = if join || !like.is_empty() {
        " CROSS JOIN passages p ON p.pk = t.passage_pk"
    } else {
        ""
    };
    let range = range(agent, q, between, &TAG, query);
    Ok(match tags {
        Tags::None => unreachable!("a list without tags reads the passages"),
        Tags::One(tag) => (
            format!("passage_tags t{join}"),
            format!("t.tag = {} AND {range}{like}", query.arg((*tag).to_owned())),
        ),
        Tags::Several(list, need) => {
            let list = query.arg(sql::to_json(list)?);
            let need = query.arg(*need);
            (
                format!(
                    "(SELECT t.passage_pk, t.created_at FROM passage_tags t
                      WHERE t.tag IN (SELECT value FROM json_each({list})) AND {range}
                      GROUP BY t.passage_pk HAVING count(*) >= {need}) t{join}"
                ),
                format!("1{like}"),
            )
        }
    })
}

fn unique_tags(q: &PassageList) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for t in &q.tags {
        if !out.contains(&t.as_str()) {
            out.push(t);
        }
    }
    out
}

/// How many of the list's `n` distinct tags a passage needs.
fn need_tags(q: &PassageList, n: usize) -> i64 {
    match q.tag_match {
        TagMatch::Any => 1,
        TagMatch::All => sql::sat(n),
    }
}

fn unfiltered(q: &PassageList) -> bool {
    !row_filtered(q) && q.tags.is_empty() && q.start.is_none() && q.end.is_none()
}

/// Passages passing the list's filters within `between`. With a tag filter, the tag index's
/// entries are counted (one range per tag), never the agent's other passages.
fn count_between(
    c: &Connection,
    agent: &AgentId,
    q: &PassageList,
    between: Between,
) -> Result<u64> {
    let (sql, args) = count_sql(agent, q, between)?;
    c.prepare_cached(&sql)
        .db()?
        .query_row(params_from_iter(args), |r| sql::uint(r, 0))
        .db()
}

/// With several tags, any of which will do (and no substring filter), the list's rows as a
/// merge of one index range per tag, in time order (`dir`), duplicates dropped: `SELECT
/// passage_pk, created_at …` with `limit` (`LIMIT … OFFSET …`, or `""`) inside. SQLite merges
/// the ranges as they come (`MERGE (UNION)`) instead of grouping every tagged row by passage
/// first, which cost 45 ms for 10,000 tagged passages (`benches/archive.rs`). `None` for other
/// tag filters.
fn tag_union(
    agent: &AgentId,
    q: &PassageList,
    between: Between,
    dir: &str,
    limit: &dyn Fn(&mut Query) -> String,
    query: &mut Query,
) -> Option<String> {
    let Tags::Several(tags, 1) = tags_of(q) else {
        return None;
    };
    if row_filtered(q) {
        return None;
    }
    let range = range(agent, q, between, &TAG, query);
    let arms: Vec<String> = tags
        .iter()
        .map(|tag| {
            format!(
                "SELECT t.passage_pk, t.created_at FROM passage_tags t
                 WHERE t.tag = {} AND {range}",
                query.arg((*tag).to_owned())
            )
        })
        .collect();
    let limit = limit(query);
    Some(format!(
        "{} ORDER BY 2 {dir}, 1 {dir}{limit}",
        arms.join(" UNION ")
    ))
}

/// The SQL and arguments of [`count_between`].
fn count_sql(agent: &AgentId, q: &PassageList, between: Between) -> Result<(String, Vec<Value>)> {
    let mut query = Query::default();
    // `LIMIT -1` (no limit) keeps SQLite from dropping the ORDER BY that makes it merge.
    if let Some(union) = tag_union(
        agent,
        q,
        between,
        "ASC",
        &|_| " LIMIT -1".into(),
        &mut query,
    ) {
        return Ok((format!("SELECT count(*) FROM ({union})"), query.args));
    }
    let sql = match tags_of(q) {
        Tags::None => {
            let cond = range(agent, q, between, &PASSAGE, &mut query);
            let like = like(q, &mut query);
            format!("SELECT count(*) FROM passages p WHERE {cond}{like}")
        }
        tags => {
            let (from, cond) = tagged_source(agent, q, between, &tags, false, &mut query)?;
            format!("SELECT count(*) FROM {from} WHERE {cond}")
        }
    };
    Ok((sql, query.args))
}

/// Passages passing the list's filters.
fn count(c: &Connection, agent: &AgentId, q: &PassageList) -> Result<u64> {
    if unfiltered(q) {
        // Kept by the insert/delete triggers; a count over 100k index entries costs ms.
        return c
            .prepare_cached("SELECT passages FROM agent_stats WHERE agent_id = ?1")
            .db()?
            .query_row([agent.as_str()], |r| sql::uint(r, 0))
            .optional()
            .db()
            .map(Option::unwrap_or_default);
    }
    count_between(c, agent, q, Between::default())
}

/// Passages passing the filters that come strictly before `key` in time order (`older`) or
/// strictly after it.
fn count_beside(
    c: &Connection,
    agent: &AgentId,
    q: &PassageList,
    key: Key,
    older: bool,
) -> Result<u64> {
    let between = if older {
        Between {
            before: Some(key),
            ..Between::default()
        }
    } else {
        Between {
            after: Some(key),
            ..Between::default()
        }
    };
    count_between(c, agent, q, between)
}

/// One range scan: passages passing the filters and lying beyond `lower` and short of `upper`
/// in the list's order, `skip`ped and `take`n reading from the start (`from_end` false) or
/// from the end of that range; returned in the list's order.
#[allow(clippy::too_many_arguments)]
fn scan(
    c: &Connection,
    agent: &AgentId,
    q: &PassageList,
    lower: Option<Key>,
    upper: Option<Key>,
    skip: usize,
    take: usize,
    from_end: bool,
) -> Result<Vec<Passage>> {
    if take == 0 {
        return Ok(Vec::new());
    }
    // In the list's order, "beyond lower" is later in time when ascending, earlier when not.
    let between = if q.ascending {
        Between {
            after: lower,
            before: upper,
        }
    } else {
        Between {
            after: upper,
            before: lower,
        }
    };
    let (sql, args) = scan_sql(agent, q, between, skip, take, q.ascending != from_end)?;
    let mut stmt = c.prepare_cached(&sql).db()?;
    let rows = stmt
        .query_map(params_from_iter(args), passage_from_row)
        .db()?;
    let mut out: Vec<Passage> = rows.collect::<rusqlite::Result<_>>().db()?;
    if from_end {
        out.reverse();
    }
    Ok(out)
}

/// The SQL and arguments of one range scan within `between`, in ascending time order or
/// descending.
fn scan_sql(
    agent: &AgentId,
    q: &PassageList,
    between: Between,
    skip: usize,
    take: usize,
    ascending: bool,
) -> Result<(String, Vec<Value>)> {
    let dir = if ascending { "ASC" } else { "DESC" };
    let mut query = Query::default();
    let limit = |query: &mut Query| {
        format!(
            " LIMIT {} OFFSET {}",
            query.arg(sql::sat(take)),
            query.arg(sql::sat(skip))
        )
    };
    if let Some(union) = tag_union(agent, q, between, dir, &limit, &mut query) {
        let sql = format!(
            "SELECT {PASSAGE_COLS} FROM ({union}) t CROSS JOIN passages p ON p.pk = t.passage_pk
             ORDER BY t.created_at {dir}, t.passage_pk {dir}"
        );
        return Ok((sql, query.args));
    }
    let (from, cond, order) = match tags_of(q) {
        Tags::None => {
            let cond = range(agent, q, between, &PASSAGE, &mut query);
            let like = like(q, &mut query);
            (
                "passages p".to_owned(),
                format!("{cond}{like}"),
                "p.created_at, p.pk",
            )
        }
        tags => {
            let (from, cond) = tagged_source(agent, q, between, &tags, true, &mut query)?;
            (from, cond, "t.created_at, t.passage_pk")
        }
    };
    let order = order.replace(',', &format!(" {dir},"));
    let sql = format!(
        "SELECT {PASSAGE_COLS} FROM {from} WHERE {cond}
         ORDER BY {order} {dir} LIMIT {} OFFSET {}",
        query.arg(sql::sat(take)),
        query.arg(sql::sat(skip))
    );
    Ok((sql, query.args))
}

/// The page `q` asks for; with `total` (the filtered count) known, a deep offset is read from
/// the list's other end.
fn page(
    c: &Connection,
    agent: &AgentId,
    q: &PassageList,
    total: Option<u64>,
) -> Result<Vec<Passage>> {
    let lower = q
        .after
        .as_ref()
        .map(|id| key_of(c, agent, id))
        .transpose()?;
    let upper = q
        .before
        .as_ref()
        .map(|id| key_of(c, agent, id))
        .transpose()?;
    if upper.is_some() {
        // `before` means the page nearest the cursor.
        return scan(c, agent, q, lower, upper, q.offset, q.limit, true);
    }
    if lower.is_none()
        && let Some(total) = total.and_then(|t| usize::try_from(t).ok())
        && q.offset > total / 2
    {
        let take = q.limit.min(total.saturating_sub(q.offset));
        let skip = total.saturating_sub(q.offset.saturating_add(q.limit));
        return scan(c, agent, q, None, None, skip, take, true);
    }
    scan(c, agent, q, lower, None, q.offset, q.limit, false)
}

/// Where the page holding `at` starts: the number of filtered passages ahead of it in the
/// list's order, rounded down to a multiple of `limit`; past the list's end (a time beyond
/// every passage), the last page of the `total`.
fn offset_at(
    c: &Connection,
    agent: &AgentId,
    q: &PassageList,
    at: Timestamp,
    total: u64,
) -> Result<usize> {
    let micros = sql::micros(at);
    // Ahead of `at` newest first: created after it; oldest first: created before it.
    let key = if q.ascending {
        (micros, i64::MIN)
    } else {
        (micros, i64::MAX)
    };
    let ahead = count_beside(c, agent, q, key, q.ascending)?;
    let ahead = usize::try_from(ahead.min(total.saturating_sub(1))).unwrap_or(usize::MAX);
    Ok(match q.limit {
        0 => ahead,
        n => ahead / n * n,
    })
}

impl PassageRows<'_> {
    /// A page of the agent's passages by creation time (see [`PassageList`]), without the
    /// count. Errors: `NotFound("agent")`; `NotFound("passage", id)` for a cursor that is not
    /// one of the agent's passages.
    pub fn list(self, agent: &AgentId, q: &PassageList) -> Result<Vec<Passage>> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let q = &effective(c, agent, q)?;
            // Unfiltered, the total is one lookup, and lets a deep offset read from the end.
            let total = if q.offset > 0 && unfiltered(q) {
                Some(count(c, agent, q)?)
            } else {
                None
            };
            page(c, agent, q, total)
        })
    }

    /// How many of the agent's passages pass the list's filters (`search`, `tags`, `start`,
    /// `end`; cursors and offsets do not count). Errors: `NotFound("agent")`.
    pub fn count(self, agent: &AgentId, q: &PassageList) -> Result<u64> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let q = &effective(c, agent, q)?;
            count(c, agent, q)
        })
    }

    /// A page of the agent's passages with the filtered total and the page's position, read
    /// under one lock so the three agree. Errors as [`list`](Self::list).
    pub fn page(self, agent: &AgentId, q: &PassageList) -> Result<PassagePage> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let mut q = effective(c, agent, q)?;
            let total = count(c, agent, &q)?;
            let cursor = q.after.is_some() || q.before.is_some();
            if let (Some(at), false) = (q.at, cursor) {
                q.offset = offset_at(c, agent, &q, at, total)?;
            }
            let passages = page(c, agent, &q, Some(total))?;
            let offset = match (cursor, passages.first()) {
                (false, _) => u64::try_from(q.offset).unwrap_or(u64::MAX),
                // Past either end of the list.
                (true, None) if q.before.is_some() && q.after.is_none() => 0,
                (true, None) => total,
                (true, Some(first)) => {
                    let key = key_of(c, agent, &first.id)?;
                    count_beside(c, agent, &q, key, q.ascending)?
                }
            };
            Ok(PassagePage {
                passages,
                total,
                offset,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;

    /// SQLite's plan for `sql`, one line per step.
    fn plan(store: &Store, sql: &str, args: Vec<Value>) -> String {
        store
            .read(|c| {
                let mut stmt = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).db()?;
                let rows = stmt
                    .query_map(params_from_iter(args), |r| r.get::<_, String>(3))
                    .db()?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>().db()?.join("\n"))
            })
            .unwrap()
    }

    /// A tag-filtered total and page read one range of the tag index; neither
    /// walks the agent's passages nor sorts them (for an agent with no superseded passages,
    /// whose lists `effective` runs with `include_superseded`).
    #[test]
    fn a_tag_filter_is_an_index_range_read() {
        let store = Store::open_in_memory().unwrap();
        let agent = AgentId::new();
        let q = PassageList {
            tags: vec!["weekly".into()],
            start: Some(chrono::Utc::now() - chrono::Duration::days(30)),
            limit: 10,
            include_superseded: true,
            ..PassageList::default()
        };
        let (sql, args) = count_sql(&agent, &q, Between::default()).unwrap();
        let counted = plan(&store, &sql, args);
        assert!(
            counted.contains("USING COVERING INDEX passage_tags_by_agent_tag_time (agent_id=? AND tag=? AND created_at>?)"),
            "{counted}"
        );
        assert!(!counted.contains("SCAN"), "{counted}");
        for ascending in [true, false] {
            let (sql, args) = scan_sql(&agent, &q, Between::default(), 0, 10, ascending).unwrap();
            let paged = plan(&store, &sql, args);
            assert!(
                paged.contains(
                    "INDEX passage_tags_by_agent_tag_time (agent_id=? AND tag=? AND created_at>?)"
                ),
                "{paged}"
            );
            assert!(
                !paged.contains("TEMP B-TREE FOR ORDER BY") && !paged.contains("SCAN"),
                "{paged}"
            );
        }
        // Several tags, any of them: one range per tag, merged in time order.
        let several = PassageList {
            tags: vec!["weekly".into(), "garden".into()],
            ..q
        };
        let (sql, args) = count_sql(&agent, &several, Between::default()).unwrap();
        let counted = plan(&store, &sql, args);
        assert!(counted.contains("MERGE (UNION)"), "{counted}");
        assert_eq!(
            counted
                .matches("COVERING INDEX passage_tags_by_agent_tag_time (agent_id=? AND tag=?")
                .count(),
            2,
            "{counted}"
        );
        assert!(!counted.contains("TEMP B-TREE"), "{counted}");
        for ascending in [true, false] {
            let (sql, args) =
                scan_sql(&agent, &several, Between::default(), 20, 10, ascending).unwrap();
            let paged = plan(&store, &sql, args);
            assert!(paged.contains("MERGE (UNION)"), "{paged}");
            assert!(!paged.contains("SCAN p"), "{paged}");
        }
        // All of them: one range per tag, grouped by passage.
        let several = PassageList {
            tags: vec!["weekly".into(), "garden".into()],
            tag_match: TagMatch::All,
            ..several
        };
        let (sql, args) = count_sql(&agent, &several, Between::default()).unwrap();
        let counted = plan(&store, &sql, args);
        // (`SCAN t` is the outer read of the grouped rows, not of a table.)
        assert!(
            counted.contains("INDEX passage_tags_by_agent_tag_time (agent_id=? AND tag=?"),
            "{counted}"
        );
        assert!(
            !counted.contains("SCAN p") && !counted.contains("passages_by_time"),
            "{counted}"
        );
    }
}

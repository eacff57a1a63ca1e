//! One page of a table in creation order, as Letta's list endpoints page: `after`/`before`
//! cursors naming a row, either direction, over the table's `(created_at, id)` index, so a page
//! costs the same however many rows there are. Agents and blocks list this way.

use crate::passage_rows::Query;
use crate::sql::{self, DbResult};
use engram_core::Result;
use rusqlite::{Connection, OptionalExtension, Row, params_from_iter};

/// Which page of a table to read.
pub(crate) struct Page<'a> {
    /// The table (`agents`, `blocks`); it has `created_at` (µs) and `id` columns.
    pub table: &'static str,
    /// The table's alias in `cols` and in the filter condition (`a`, `b`).
    pub alias: &'static str,
    /// The selected columns (the row mapper's shape).
    pub cols: &'static str,
    /// Only rows after this one in the list's order. An id that is not a row's gives an empty
    /// page (the SDKs' paging then ends).
    pub after: Option<&'a str>,
    /// Only rows before this one in the list's order: the `limit` nearest it.
    pub before: Option<&'a str>,
    /// Maximum number of rows.
    pub limit: usize,
    /// Oldest first when true.
    pub ascending: bool,
}

/// A row's place in creation order: `(created_at µs, id)`, `None` when `id` is no row's.
fn key_of(c: &Connection, table: &str, id: &str) -> Result<Option<(i64, String)>> {
    c.prepare_cached(&format!("SELECT created_at, id FROM {table} WHERE id = ?1"))
        .db()?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .db()
}

/// The rows of `page` that pass the condition `filters` writes (arguments go into the query it
/// is given), mapped by `from_row`, in the list's order.
pub(crate) fn read_page<T>(
    c: &Connection,
    page: &Page<'_>,
    filters: impl FnOnce(&mut Query) -> Result<String>,
    from_row: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>> {
    let mut keys = Vec::new();
    for (id, after) in [(page.after, true), (page.before, false)] {
        let Some(id) = id else { continue };
        match key_of(c, page.table, id)? {
            Some(k) => keys.push((k, after)),
            None => return Ok(Vec::new()),
        }
    }
    if page.limit == 0 {
        return Ok(Vec::new());
    }
    let Page { table, alias, .. } = page;
    let mut query = Query::default();
    let mut cond = filters(&mut query)?;
    for ((t, id), after) in keys {
        // "After" in the list's order is later in time when ascending.
        let cmp = if after == page.ascending { ">" } else { "<" };
        cond.push_str(&format!(
            " AND ({alias}.created_at, {alias}.id) {cmp} ({}, {})",
            query.arg(t),
            query.arg(id)
        ));
    }
    // `before` takes the page nearest the cursor: read backwards, then turn round.
    let backwards = page.before.is_some();
    let dir = if page.ascending != backwards {
        "ASC"
    } else {
        "DESC"
    };
    let sql = format!(
        "SELECT {} FROM {table} {alias} WHERE {cond}
         ORDER BY {alias}.created_at {dir}, {alias}.id {dir} LIMIT {}",
        page.cols,
        query.arg(sql::sat(page.limit))
    );
    let mut stmt = c.prepare_cached(&sql).db()?;
    let rows = stmt
        .query_map(params_from_iter(query.args), from_row)
        .db()?;
    let mut out: Vec<T> = rows.collect::<rusqlite::Result<_>>().db()?;
    if backwards {
        out.reverse();
    }
    Ok(out)
}

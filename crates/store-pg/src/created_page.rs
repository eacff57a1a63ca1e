//! One page of a table in creation order, as Letta's list endpoints page: `after`/`before`
//! cursors naming a row, either direction, as row-value bounds on `(created_at, id)`, ids
//! compared by their bytes (`COLLATE "C"`) as SQLite compares them. Agents and blocks list
//! this way; the rules are the SQLite store's (`created_page.rs` there).

use crate::rows::{Args, Cached};
use crate::tx::TxResult;
use deadpool_postgres::GenericClient;
use engram_core::Timestamp;
use tokio_postgres::Row;

/// Which page of a table to read.
pub(crate) struct Page<'a> {
    /// The table (`agents`, `blocks`); it has `created_at` and `id` columns.
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

/// A row's place in creation order, `None` when `id` is no row's.
async fn key_of(
    c: &impl GenericClient,
    table: &str,
    id: &str,
) -> TxResult<Option<(Timestamp, String)>> {
    let row = c
        .one_opt(
            &format!("SELECT created_at, id FROM {table} WHERE id = $1"),
            &[&id],
        )
        .await?;
    Ok(match row {
        Some(r) => Some((r.try_get(0)?, r.try_get(1)?)),
        None => None,
    })
}

/// The rows of `page` that pass `cond` (its arguments in `args`), mapped by `from_row`, in
/// the list's order.
pub(crate) async fn read_page<T>(
    c: &impl GenericClient,
    page: &Page<'_>,
    mut args: Args,
    mut cond: String,
    from_row: impl Fn(&Row) -> TxResult<T>,
) -> TxResult<Vec<T>> {
    let Page { table, alias, .. } = page;
    for (id, after) in [(page.after, true), (page.before, false)] {
        let Some(id) = id else { continue };
        let Some((at, id)) = key_of(c, table, id).await? else {
            return Ok(Vec::new());
        };
        // "After" in the list's order is later in time when ascending.
        let cmp = if after == page.ascending { ">" } else { "<" };
        cond.push_str(&format!(
            " AND ({alias}.created_at, {alias}.id COLLATE \"C\") {cmp} ({}, {})",
            args.add(at),
            args.add(id)
        ));
    }
    if page.limit == 0 {
        return Ok(Vec::new());
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
         ORDER BY {alias}.created_at {dir}, {alias}.id COLLATE \"C\" {dir} LIMIT {}",
        page.cols,
        args.add(i64::try_from(page.limit).unwrap_or(i64::MAX))
    );
    let found = c.rows(&sql, &args.refs()).await?;
    let mut out = found.iter().map(from_row).collect::<TxResult<Vec<T>>>()?;
    if backwards {
        out.reverse();
    }
    Ok(out)
}

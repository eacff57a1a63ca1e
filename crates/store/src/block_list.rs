//! Listing every block as Letta's `GET /v1/blocks/` does, paged in SQL: by label, with
//! `after`/`before` cursors in either order, over the `blocks_by_created (created_at, id)`
//! index (or `blocks_by_label` with a label).

use crate::Store;
use crate::blocks::{BLOCK_COLS, block_from_row};
use crate::passages::Query;
use crate::sql::{self, DbResult};
use engram_core::{Block, BlockId, Result};
use rusqlite::{OptionalExtension, params_from_iter};

/// Which blocks to list, and which page.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockList {
    /// Only blocks with this label.
    pub label: Option<String>,
    /// Only blocks after this one in the list's order. An id that is not a block's gives an
    /// empty page (the SDKs' paging then ends).
    pub after: Option<BlockId>,
    /// Only blocks before this one in the list's order: the `limit` nearest it.
    pub before: Option<BlockId>,
    /// Maximum number of blocks.
    pub limit: usize,
    /// Oldest first when true.
    pub ascending: bool,
}

impl Store {
    /// A page of blocks (attached or not) in creation order (see [`BlockList`]).
    pub fn list_blocks_page(&self, q: &BlockList) -> Result<Vec<Block>> {
        self.read(|c| {
            let mut query = Query::default();
            let mut cond = match &q.label {
                Some(label) => format!("b.label = {}", query.arg(label.clone())),
                None => "1".to_owned(),
            };
            for (id, after) in [(&q.after, true), (&q.before, false)] {
                let Some(id) = id else { continue };
                let key: Option<(i64, String)> = c
                    .prepare_cached("SELECT created_at, id FROM blocks WHERE id = ?1")
                    .db()?
                    .query_row([id.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
                    .db()?;
                let Some((t, id)) = key else {
                    return Ok(Vec::new());
                };
                // "After" in the list's order is later in time when ascending.
                let cmp = if after == q.ascending { ">" } else { "<" };
                cond.push_str(&format!(
                    " AND (b.created_at, b.id) {cmp} ({}, {})",
                    query.arg(t),
                    query.arg(id)
                ));
            }
            if q.limit == 0 {
                return Ok(Vec::new());
            }
            // `before` takes the page nearest the cursor: read backwards, then turn round.
            let backwards = q.before.is_some();
            let dir = if q.ascending != backwards {
                "ASC"
            } else {
                "DESC"
            };
            let sql = format!(
                "SELECT {BLOCK_COLS} FROM blocks b WHERE {cond}
                 ORDER BY b.created_at {dir}, b.id {dir} LIMIT {}",
                query.arg(sql::sat(q.limit))
            );
            let mut stmt = c.prepare_cached(&sql).db()?;
            let rows = stmt
                .query_map(params_from_iter(query.args), block_from_row)
                .db()?;
            let mut out: Vec<Block> = rows.collect::<rusqlite::Result<_>>().db()?;
            if backwards {
                out.reverse();
            }
            Ok(out)
        })
    }
}

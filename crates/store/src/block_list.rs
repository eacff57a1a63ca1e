//! Listing every block as Letta's `GET /v1/blocks/` does, paged in SQL: by label, with
//! `after`/`before` cursors in either order, over the `blocks_by_created (created_at, id)`
//! index (or `blocks_by_label` with a label).

use crate::blocks::{BLOCK_COLS, block_from_row};
use crate::created_page::{Page, read_page};
use crate::passage_rows::Query;
use crate::rooms::BlockRows;
use engram_core::{Block, BlockId, Result};
use engram_store_api::BlockList;

impl BlockRows<'_> {
    /// A page of blocks (attached or not) in creation order (see [`BlockList`]).
    pub fn page(self, q: &BlockList) -> Result<Vec<Block>> {
        let page = Page {
            table: "blocks",
            alias: "b",
            cols: BLOCK_COLS,
            after: q.after.as_ref().map(BlockId::as_str),
            before: q.before.as_ref().map(BlockId::as_str),
            limit: q.limit,
            ascending: q.ascending,
        };
        let filters = |query: &mut Query| {
            Ok(match &q.label {
                Some(label) => format!("b.label = {}", query.arg(label.clone())),
                None => "1".to_owned(),
            })
        };
        self.store
            .read(|c| read_page(c, &page, filters, block_from_row))
    }
}

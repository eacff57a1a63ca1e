//! Letta's block list on PostgreSQL, paged in SQL in creation order
//! ([`created_page`](crate::created_page)), optionally by label. The rules are
//! [`BlockList`]'s, as the SQLite store applies them.

use crate::created_page::{Page, read_page};
use crate::rows::{self, Args, BLOCK_COLS};
use crate::tx::TxResult;
use deadpool_postgres::GenericClient;
use engram_core::{Block, BlockId};
use engram_store_api::BlockList;

/// Reads the page `q` asks for (see [`BlockList`] and `BlockStore::page_blocks`).
pub(crate) async fn page(c: &impl GenericClient, q: &BlockList) -> TxResult<Vec<Block>> {
    let page = Page {
        table: "blocks",
        alias: "b",
        cols: BLOCK_COLS,
        after: q.after.as_ref().map(BlockId::as_str),
        before: q.before.as_ref().map(BlockId::as_str),
        limit: q.limit,
        ascending: q.ascending,
    };
    let mut args = Args::default();
    let cond = match &q.label {
        Some(label) => format!("b.label = {}", args.add(label.clone())),
        None => "true".to_owned(),
    };
    read_page(c, &page, args, cond, rows::block).await
}

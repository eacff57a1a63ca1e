//! Blocks as the memory panel manages them: a new block made for one agent, and which agents
//! share each block (Letta's shared memory: one block row attached to several agents).

use crate::blocks::{self, label_conflict};
use crate::rooms::BlockRows;
use crate::sql::{self, DbResult};
use engram_core::{AgentId, Block, BlockId, NewBlock, Result};
use rusqlite::{Connection, params};

pub use engram_store_api::{BlockAgent, SharedBlock};

impl BlockRows<'_> {
    /// Creates a block and attaches it to `agent` after its other blocks, in one transaction.
    /// Defaults as in [`create_block`](BlockRows::create).
    ///
    /// Errors: `NotFound("agent")`; `Invalid` for a bad label or a value over an explicit limit;
    /// `Conflict` when the agent already has a block with that label. Nothing is written on
    /// error.
    pub fn create_for_agent(self, agent: &AgentId, new: &NewBlock) -> Result<Block> {
        let block = blocks::build(new, sql::now())?;
        self.store.write(|tx| {
            insert_for_agent(tx, agent, &block)?;
            Ok(block)
        })
    }

    /// Every block with the agents it is attached to, oldest block first.
    pub fn shared(self) -> Result<Vec<SharedBlock>> {
        let all = self.list(None)?;
        let links: Vec<(BlockId, BlockAgent)> = self.store.read(|c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT ab.block_id, a.id, a.name FROM agent_blocks ab
                     JOIN agents a ON a.id = ab.agent_id ORDER BY a.created_at, a.id",
                )
                .db()?;
            let rows = stmt
                .query_map([], |r| {
                    Ok((
                        BlockId::from(r.get::<_, String>(0)?),
                        BlockAgent {
                            id: AgentId::from(r.get::<_, String>(1)?),
                            name: r.get(2)?,
                        },
                    ))
                })
                .db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })?;
        Ok(engram_store_api::shared_blocks(all, links))
    }
}

/// Inserts `block` and attaches it to `agent` after its other blocks (inside the caller's
/// transaction). Errors: `NotFound("agent")`; `Conflict` when the label is taken.
pub(crate) fn insert_for_agent(tx: &Connection, agent: &AgentId, block: &Block) -> Result<()> {
    sql::ensure_agent(tx, agent)?;
    let taken = tx
        .prepare_cached(
            "SELECT 1 FROM agent_blocks ab JOIN blocks b ON b.id = ab.block_id
             WHERE ab.agent_id = ?1 AND b.label = ?2",
        )
        .db()?
        .exists(params![agent.as_str(), block.label])
        .db()?;
    if taken {
        return Err(label_conflict(&block.label));
    }
    blocks::insert(tx, block)?;
    blocks::link_last(tx, agent, &block.id)
}

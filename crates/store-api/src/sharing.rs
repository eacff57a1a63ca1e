//! Which agents share each block (Letta's shared memory: one block row attached to several
//! agents), as the memory panel lists them.

use engram_core::{AgentId, Block, BlockId};
use serde::Serialize;
use std::collections::HashMap;

/// An agent a block is attached to, by id and display name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct BlockAgent {
    /// `agent-<uuid>`.
    pub id: AgentId,
    /// The agent's display name.
    pub name: String,
}

/// One block with every agent it is attached to (none for a standalone block).
#[derive(Clone, Debug, PartialEq, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct SharedBlock {
    /// The block.
    pub block: Block,
    /// The agents it is attached to, oldest agent first.
    pub agents: Vec<BlockAgent>,
}

/// Every block of `blocks` (in their order) with its agents from `links` (pairs of a block and
/// an agent attached to it, oldest agent first): how each backend assembles
/// [`BlockStore::shared_blocks`](crate::BlockStore::shared_blocks).
pub fn shared_blocks(blocks: Vec<Block>, links: Vec<(BlockId, BlockAgent)>) -> Vec<SharedBlock> {
    let mut by_block: HashMap<BlockId, Vec<BlockAgent>> = HashMap::new();
    for (block, agent) in links {
        by_block.entry(block).or_default().push(agent);
    }
    blocks
        .into_iter()
        .map(|block| SharedBlock {
            agents: by_block.remove(&block.id).unwrap_or_default(),
            block,
        })
        .collect()
}

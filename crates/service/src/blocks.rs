//! Blocks outside one agent's view: standalone blocks (shared memory) and attaching them.

use crate::{AgentState, Engram, Notice};
use engram_core::{AgentId, Block, BlockId, BlockPatch, Editor, NewBlock, Result};
use engram_store::SharedBlock;

impl Engram {
    /// Creates a block that belongs to no agent yet (attach it with
    /// [`attach_block`](Self::attach_block)). Errors: `invalid_input` for a bad label or a value
    /// over an explicit limit.
    pub fn create_block(&self, new: &NewBlock) -> Result<Block> {
        self.store.create_block(new)
    }

    /// Every block, attached or not, oldest first; only those labelled `label` when given.
    pub fn list_blocks(&self, label: Option<&str>) -> Result<Vec<Block>> {
        self.store.list_blocks(label)
    }

    /// A page of every block, filtered and paged in SQL (Letta's `GET /v1/blocks/`; see
    /// [`BlockList`](engram_store::BlockList)).
    pub fn list_blocks_page(&self, q: &engram_store::BlockList) -> Result<Vec<Block>> {
        self.store.list_blocks_page(q)
    }

    /// One block by id. Errors: `not_found`.
    pub fn get_block(&self, id: &BlockId) -> Result<Block> {
        self.store.get_block(id)
    }

    /// One block of an agent by label. Errors: `not_found` for the agent or the label.
    pub fn agent_block(&self, agent: &AgentId, label: &str) -> Result<Block> {
        self.store.agent_block(agent, label)
    }

    /// The agent's blocks in the order they are compiled. Errors: `not_found`.
    pub fn agent_blocks(&self, agent: &AgentId) -> Result<Vec<Block>> {
        self.store.agent_blocks(agent)
    }

    /// Changes a block by id (recorded in its history as a user edit); every agent it is
    /// attached to sees the change. With `patch.version` the block must still be at that
    /// version. Errors: `not_found`, `stale_version` (the current block in `details`),
    /// `invalid_input` (limit, label), `conflict` (label taken on an attached agent).
    pub fn update_block(&self, id: &BlockId, patch: &BlockPatch) -> Result<Block> {
        let block = self.store.update_block(id, patch, &Editor::User)?;
        self.notify_block(id);
        Ok(block)
    }

    /// Deletes a block and detaches it from every agent. Errors: `not_found`.
    pub fn delete_block(&self, id: &BlockId) -> Result<()> {
        let agents = self.store.block_agents(id)?;
        self.store.delete_block(id)?;
        for agent_id in agents {
            self.notify(Notice::MemoryChanged { agent_id });
        }
        Ok(())
    }

    /// Attaches an existing block to an agent (after its other blocks) and returns the agent.
    /// Attaching twice does nothing. Errors: `not_found`; `conflict` when the agent already has
    /// another block with that label.
    pub fn attach_block(&self, agent: &AgentId, block: &BlockId) -> Result<AgentState> {
        self.store.attach_block(agent, block)?;
        self.notify_block(block);
        self.get_agent(agent)
    }

    /// Detaches a block from an agent (the block stays) and returns the agent.
    /// Errors: `not_found`.
    pub fn detach_block(&self, agent: &AgentId, block: &BlockId) -> Result<AgentState> {
        self.store.detach_block(agent, block)?;
        self.notify(Notice::MemoryChanged {
            agent_id: agent.clone(),
        });
        self.get_agent(agent)
    }

    /// Creates a block and attaches it to `agent` after its other blocks, in one transaction
    /// (the memory panel's "add block"). Errors: `not_found` for the agent; `invalid_input`
    /// for a bad label or a value over an explicit limit; `conflict` when the label is taken.
    pub fn create_agent_block(&self, agent: &AgentId, new: &NewBlock) -> Result<Block> {
        let block = self.store.create_agent_block(agent, new)?;
        self.notify(Notice::MemoryChanged {
            agent_id: agent.clone(),
        });
        Ok(block)
    }

    /// Every block with the agents it is attached to (by id and name), oldest block first:
    /// where each block is shared, and what can be attached to another agent.
    pub fn shared_blocks(&self) -> Result<Vec<SharedBlock>> {
        self.store.shared_blocks()
    }
}

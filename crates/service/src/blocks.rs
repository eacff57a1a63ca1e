//! Blocks outside one agent's view: standalone blocks (shared memory) and attaching them.

use crate::rooms::Blocks;
use crate::{AgentState, Notice};
use engram_core::{
    AgentId, Block, BlockEdit, BlockId, BlockPatch, EditId, Editor, NewBlock, Result,
};
use engram_store::{SharedBlock, UndoPlan};

/// How many history entries a block keeps on show.
const HISTORY_LIMIT: usize = 200;

impl Blocks<'_> {
    /// Creates a block that belongs to no agent yet (attach it with
    /// [`attach`](Self::attach)). Errors: `invalid_input` for a bad label or a value
    /// over an explicit limit.
    pub async fn create(self, new: &NewBlock) -> Result<Block> {
        self.engram.backend.create_block(new).await
    }

    /// Every block, attached or not, oldest first; only those labelled `label` when given.
    pub async fn list(self, label: Option<&str>) -> Result<Vec<Block>> {
        self.engram.backend.list_blocks(label).await
    }

    /// A page of every block, paged by the database (Letta's `GET /v1/blocks/`; see
    /// [`BlockList`](engram_store::BlockList)).
    pub async fn page(self, q: &engram_store::BlockList) -> Result<Vec<Block>> {
        self.engram.backend.page_blocks(q).await
    }

    /// One block by id. Errors: `not_found`.
    pub async fn get(self, id: &BlockId) -> Result<Block> {
        self.engram.backend.get_block(id).await
    }

    /// One block of an agent by label. Errors: `not_found` for the agent or the label.
    pub async fn by_label(self, agent: &AgentId, label: &str) -> Result<Block> {
        self.engram.backend.agent_block(agent, label).await
    }

    /// The agent's blocks in the order they are compiled. Errors: `not_found`.
    pub async fn of_agent(self, agent: &AgentId) -> Result<Vec<Block>> {
        self.engram.backend.agent_blocks(agent).await
    }

    /// Changes a block by id (recorded in its history as a user edit); every agent it is
    /// attached to sees the change. With `patch.version` the block must still be at that
    /// version. Errors: `not_found`, `stale_version` (the current block in `details`),
    /// `invalid_input` (limit, label), `conflict` (label taken on an attached agent).
    pub async fn update(self, id: &BlockId, patch: &BlockPatch) -> Result<Block> {
        let block = self
            .engram
            .backend
            .update_block(id, patch, &Editor::User)
            .await?;
        self.engram.notify_block(id).await;
        Ok(block)
    }

    /// Deletes a block and detaches it from every agent. Errors: `not_found`.
    pub async fn delete(self, id: &BlockId) -> Result<()> {
        let agents = self.engram.backend.block_agents(id).await?;
        self.engram.backend.delete_block(id).await?;
        for agent_id in agents {
            self.engram.notify(Notice::MemoryChanged { agent_id });
        }
        Ok(())
    }

    /// Attaches an existing block to an agent (after its other blocks) and returns the agent.
    /// Attaching twice does nothing. Errors: `not_found`; `conflict` when the agent already has
    /// another block with that label.
    pub async fn attach(self, agent: &AgentId, block: &BlockId) -> Result<AgentState> {
        self.engram.backend.attach_block(agent, block).await?;
        self.engram.notify_block(block).await;
        self.engram.agents().get(agent).await
    }

    /// Detaches a block from an agent (the block stays) and returns the agent.
    /// Errors: `not_found`.
    pub async fn detach(self, agent: &AgentId, block: &BlockId) -> Result<AgentState> {
        self.engram.backend.detach_block(agent, block).await?;
        self.engram.notify(Notice::MemoryChanged {
            agent_id: agent.clone(),
        });
        self.engram.agents().get(agent).await
    }

    /// Creates a block and attaches it to `agent` after its other blocks, in one transaction
    /// (the memory panel's "add block"). Errors: `not_found` for the agent; `invalid_input`
    /// for a bad label or a value over an explicit limit; `conflict` when the label is taken.
    pub async fn create_for_agent(self, agent: &AgentId, new: &NewBlock) -> Result<Block> {
        let block = self.engram.backend.create_agent_block(agent, new).await?;
        self.engram.notify(Notice::MemoryChanged {
            agent_id: agent.clone(),
        });
        Ok(block)
    }

    /// Every block with the agents it is attached to (by id and name), oldest block first:
    /// where each block is shared, and what can be attached to another agent.
    /// Errors: `storage`.
    pub async fn shared(self) -> Result<Vec<SharedBlock>> {
        self.engram.backend.shared_blocks().await
    }
}

impl Blocks<'_> {
    /// Sets a block's value by hand (recorded in the block's history as a user edit).
    /// Errors: `not_found` for an unknown agent or label, `invalid_input` when over the limit.
    pub async fn set_value(self, agent: &AgentId, label: &str, value: &str) -> Result<Block> {
        let patch = BlockPatch {
            value: Some(value.to_owned()),
            ..BlockPatch::default()
        };
        self.update_by_label(agent, label, &patch).await
    }

    /// Changes a block of an agent (value, limit, description, label, read-only). With
    /// `patch.version` the block must still be at that version. Errors: `not_found`;
    /// `stale_version` (the current block in `details`); `invalid_input`; `conflict`.
    pub async fn update_by_label(
        self,
        agent: &AgentId,
        label: &str,
        patch: &BlockPatch,
    ) -> Result<Block> {
        self.update_by_label_as(agent, label, patch, &Editor::User)
            .await
    }

    /// Like [`update_by_label`](Self::update_by_label), recorded in the block's history
    /// as `editor`'s edit (a user tool calling the API back edits as its tool call).
    pub async fn update_by_label_as(
        self,
        agent: &AgentId,
        label: &str,
        patch: &BlockPatch,
        editor: &Editor,
    ) -> Result<Block> {
        let backend = &self.engram.backend;
        let block = backend.agent_block(agent, label).await?;
        let block = backend.update_block(&block.id, patch, editor).await?;
        self.engram.notify_block(&block.id).await;
        Ok(block)
    }

    /// The edit history of an agent's block, newest first. Errors: `not_found`.
    pub async fn history(self, agent: &AgentId, label: &str) -> Result<Vec<BlockEdit>> {
        let block = self.engram.backend.agent_block(agent, label).await?;
        self.engram
            .backend
            .block_history(&block.id, HISTORY_LIMIT)
            .await
    }

    /// Undoes one recorded edit, keeping every edit made after it: the text the edit changed
    /// is put back where it now stands (a reverse operation; see
    /// [`engram_store::revert_value`]). The undo is itself recorded, so it can be undone in
    /// turn. With `based_on` (the block version the person was looking at) it is refused when
    /// the block changed since. Errors: `not_found`; `stale_version` with the current block in
    /// `details`; `conflict` when later edits rewrote the text this edit changed (see
    /// [`undo_plan`](Self::undo_plan) and
    /// [`restore`](Self::restore)); `invalid_input` when the result no
    /// longer fits the limit.
    pub async fn undo(self, edit: &EditId, based_on: Option<u64>) -> Result<Block> {
        let block = if self.engram.shared {
            let plan = self.undo_plan(edit).await?;
            // A stale window hears so first, as on this machine's database.
            if let Some(v) = based_on
                && v != plan.block.version
            {
                return Err(engram_core::Error::StaleVersion {
                    based_on: v,
                    current: Box::new(plan.block),
                });
            }
            let Some(value) = plan.reverted.clone() else {
                return Err(engram_store::cannot_undo_alone(&plan));
            };
            self.write_undo(&plan, value, based_on).await?
        } else {
            self.engram.store.blocks().undo_edit(edit, based_on)?
        };
        self.engram.notify_block(&block.id).await;
        Ok(block)
    }

    /// What undoing `edit` would do now: the value after undoing just it (when it applies),
    /// the value a whole restore writes, and how many later edits a restore drops. Writes
    /// nothing. Errors: `not_found`.
    pub async fn undo_plan(self, edit: &EditId) -> Result<UndoPlan> {
        if !self.engram.shared {
            return self.engram.store.blocks().undo_plan(edit);
        }
        let backend = &self.engram.backend;
        let e = backend.block_edit(edit).await?;
        let block = backend.get_block(&e.block_id).await?;
        let later = backend
            .block_history(&e.block_id, usize::MAX)
            .await?
            .iter()
            .position(|h| h.id == *edit)
            .unwrap_or(0);
        Ok(UndoPlan {
            edit_id: edit.clone(),
            later_edits: u32::try_from(later).unwrap_or(u32::MAX),
            reverted: engram_store::revert_value(&e.old_value, &e.new_value, &block.value),
            restored: e.old_value,
            block,
        })
    }

    /// Writes `value` over the block of `plan` as an undo of its edit, through the storage
    /// interface: a whole-value write at the version the person saw (`based_on`) or, without
    /// one, at the version the plan read, so an edit made meanwhile is never overwritten
    /// unseen (`stale_version`).
    async fn write_undo(
        self,
        plan: &UndoPlan,
        value: String,
        based_on: Option<u64>,
    ) -> Result<Block> {
        let patch = BlockPatch {
            value: Some(value),
            version: Some(based_on.unwrap_or(plan.block.version)),
            ..BlockPatch::default()
        };
        let editor = Editor::Undo {
            edit_id: plan.edit_id.clone(),
        };
        self.engram
            .backend
            .update_block(&plan.block.id, &patch, &editor)
            .await
    }

    /// Restores the whole value `edit` replaced, dropping every later edit — only after the
    /// person saw what is lost ([`undo_plan`](Self::undo_plan)), so `based_on`
    /// should name the version they saw. Errors: `not_found`; `stale_version`;
    /// `invalid_input` when the old value no longer fits the limit.
    pub async fn restore(self, edit: &EditId, based_on: Option<u64>) -> Result<Block> {
        let block = if self.engram.shared {
            let plan = self.undo_plan(edit).await?;
            let value = plan.restored.clone();
            self.write_undo(&plan, value, based_on).await?
        } else {
            self.engram.store.blocks().restore_edit(edit, based_on)?
        };
        self.engram.notify_block(&block.id).await;
        Ok(block)
    }
}

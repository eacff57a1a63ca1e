//! Memory panel commands: core memory blocks (edit, history, undo, add, share, delete),
//! archival passages, recall search, and the context window's make-up.

use super::{Access, AppCall, Caller};
use crate::{
    AgentState, ContextBreakdown, ContextView, Engram, MessageHit, MessageQuery, PassageList,
    PassagePage, SharedBlock, UndoPlan,
};
use engram_core::{
    AgentAccess, AgentId, Block, BlockEdit, BlockId, BlockPatch, EditId, NewBlock, Passage,
    PassageHit, PassageId, Result, TagMatch, Timestamp,
};
use serde::Deserialize;
use std::sync::Arc;
use ts_rs::TS;

/// How many archival hits a search returns when the UI does not say.
const DEFAULT_TOP_K: usize = 20;

/// `list_blocks`: the agent's blocks.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ListBlocksArgs {
    agent_id: AgentId,
}

impl AppCall for ListBlocksArgs {
    const NAME: &'static str = "list_blocks";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = Vec<Block>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.blocks().of_agent(&self.agent_id).await
    }
}

/// `update_block`: edits a block by hand (recorded in its history). A patch naming a stale
/// version is refused (`conflict`), never written over.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct UpdateBlockArgs {
    agent_id: AgentId,
    label: String,
    patch: BlockPatch,
}

impl AppCall for UpdateBlockArgs {
    const NAME: &'static str = "update_block";
    const ACCESS: Access = Access::Agent(AgentAccess::Write);
    type Output = Block;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Block> {
        e.blocks()
            .update_by_label(&self.agent_id, &self.label, &self.patch)
            .await
    }
}

/// `block_history`: a block's edits, newest first.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct BlockHistoryArgs {
    agent_id: AgentId,
    label: String,
}

impl AppCall for BlockHistoryArgs {
    const NAME: &'static str = "block_history";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = Vec<BlockEdit>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.blocks().history(&self.agent_id, &self.label).await
    }
}

/// `undo_block_edit`: undoes one edit (itself recorded), keeping later ones.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct UndoBlockEditArgs {
    edit_id: EditId,
    /// The block version the window showed; a stale one is refused.
    #[ts(as = "Option<u32>")]
    version: Option<u64>,
}

impl AppCall for UndoBlockEditArgs {
    const NAME: &'static str = "undo_block_edit";
    type Output = Block;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Block> {
        e.blocks().undo(&self.edit_id, self.version).await
    }
}

/// `block_undo_plan`: what undoing an edit would do now (nothing is written).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct BlockUndoPlanArgs {
    edit_id: EditId,
}

impl AppCall for BlockUndoPlanArgs {
    const NAME: &'static str = "block_undo_plan";
    type Output = UndoPlan;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<UndoPlan> {
        e.blocks().undo_plan(&self.edit_id).await
    }
}

/// `restore_block_edit`: restores the whole value before an edit, dropping later edits.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct RestoreBlockEditArgs {
    edit_id: EditId,
    /// The block version the window showed; a stale one is refused.
    #[ts(as = "Option<u32>")]
    version: Option<u64>,
}

impl AppCall for RestoreBlockEditArgs {
    const NAME: &'static str = "restore_block_edit";
    type Output = Block;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Block> {
        e.blocks().restore(&self.edit_id, self.version).await
    }
}

/// `create_agent_block`: creates a block and attaches it to the agent, in one transaction.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct CreateAgentBlockArgs {
    agent_id: AgentId,
    new: NewBlock,
}

impl AppCall for CreateAgentBlockArgs {
    const NAME: &'static str = "create_agent_block";
    const ACCESS: Access = Access::Agent(AgentAccess::Write);
    type Output = Block;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Block> {
        e.blocks().create_for_agent(&self.agent_id, &self.new).await
    }
}

/// `shared_blocks`: every block with the agents it is attached to.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct SharedBlocksArgs {}

impl AppCall for SharedBlocksArgs {
    const NAME: &'static str = "shared_blocks";
    type Output = Vec<SharedBlock>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.blocks().shared().await
    }
}

/// `attach_block`: attaches an existing block to the agent (shared memory).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct AttachBlockArgs {
    agent_id: AgentId,
    block_id: BlockId,
}

impl AppCall for AttachBlockArgs {
    const NAME: &'static str = "attach_block";
    type Output = AgentState;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<AgentState> {
        e.blocks().attach(&self.agent_id, &self.block_id).await
    }
}

/// `detach_block`: detaches a block from the agent; the block stays for the others.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct DetachBlockArgs {
    agent_id: AgentId,
    block_id: BlockId,
}

impl AppCall for DetachBlockArgs {
    const NAME: &'static str = "detach_block";
    const ACCESS: Access = Access::Agent(AgentAccess::Write);
    type Output = AgentState;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<AgentState> {
        e.blocks().detach(&self.agent_id, &self.block_id).await
    }
}

/// `delete_block`: deletes a block for every agent it is attached to.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct DeleteBlockArgs {
    block_id: BlockId,
}

impl AppCall for DeleteBlockArgs {
    const NAME: &'static str = "delete_block";
    type Output = ();
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<()> {
        e.blocks().delete(&self.block_id).await
    }
}

/// `list_passages`: a page of archival memory (filters, order, cursor or offset in `list`)
/// with the filtered total and the page's position.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ListPassagesArgs {
    agent_id: AgentId,
    list: PassageList,
}

impl AppCall for ListPassagesArgs {
    const NAME: &'static str = "list_passages";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = PassagePage;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<PassagePage> {
        e.archival().page(&self.agent_id, &self.list).await
    }
}

/// `search_archival`: searches archival memory as the agent would, filtered by tags and
/// dates before the limit.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct SearchArchivalArgs {
    agent_id: AgentId,
    query: String,
    /// Only passages with these tags (see `tag_match`); none: no tag filter.
    tags: Option<Vec<String>>,
    /// Any (default) or all of `tags`.
    tag_match: Option<TagMatch>,
    /// Only passages created at or after this time.
    start: Option<Timestamp>,
    /// Only passages created at or before this time.
    end: Option<Timestamp>,
    /// At most this many hits; default 20.
    top_k: Option<usize>,
    /// Also passages that were superseded or merged (each says when and by what).
    include_superseded: Option<bool>,
}

impl AppCall for SearchArchivalArgs {
    const NAME: &'static str = "search_archival";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = Vec<PassageHit>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        let q = crate::PassageQuery {
            query: self.query,
            tags: self.tags.unwrap_or_default(),
            tag_match: self.tag_match.unwrap_or_default(),
            start: self.start,
            end: self.end,
            top_k: self.top_k.unwrap_or(DEFAULT_TOP_K),
            include_superseded: self.include_superseded.unwrap_or(false),
            ..crate::PassageQuery::default()
        };
        e.archival().search_by(&self.agent_id, q).await
    }
}

/// `add_passage`: adds a passage to archival memory.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct AddPassageArgs {
    agent_id: AgentId,
    text: String,
    tags: Option<Vec<String>>,
}

impl AppCall for AddPassageArgs {
    const NAME: &'static str = "add_passage";
    const ACCESS: Access = Access::Agent(AgentAccess::Write);
    type Output = Passage;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Passage> {
        let tags = self.tags.unwrap_or_default();
        e.archival().insert(&self.agent_id, &self.text, tags).await
    }
}

/// `delete_passage`: deletes a passage.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct DeletePassageArgs {
    agent_id: AgentId,
    passage_id: PassageId,
}

impl AppCall for DeletePassageArgs {
    const NAME: &'static str = "delete_passage";
    const ACCESS: Access = Access::Agent(AgentAccess::Write);
    type Output = ();
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<()> {
        e.archival().delete(&self.agent_id, &self.passage_id).await
    }
}

/// `edit_passage`: changes a passage's text and/or tags (embedded again when the agent has
/// an embedding model).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct EditPassageArgs {
    agent_id: AgentId,
    passage_id: PassageId,
    /// The new text; unchanged when absent.
    text: Option<String>,
    /// The new tags; unchanged when absent.
    tags: Option<Vec<String>>,
}

impl AppCall for EditPassageArgs {
    const NAME: &'static str = "edit_passage";
    const ACCESS: Access = Access::Agent(AgentAccess::Write);
    type Output = Passage;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Passage> {
        e.archival()
            .edit(
                &self.agent_id,
                &self.passage_id,
                self.text.as_deref(),
                self.tags,
            )
            .await
    }
}

/// `search_recall`: searches the whole conversation (recall memory).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct SearchRecallArgs {
    agent_id: AgentId,
    query: String,
    /// At most this many hits.
    limit: usize,
}

impl AppCall for SearchRecallArgs {
    const NAME: &'static str = "search_recall";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = Vec<MessageHit>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        let query = MessageQuery {
            query: self.query,
            roles: Vec::new(),
            start: None,
            end: None,
            limit: self.limit,
        };
        e.recall().search(&self.agent_id, &query).await
    }
}

/// `context_window`: how the agent's next context window splits, in tokens.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ContextWindowArgs {
    agent_id: AgentId,
}

impl AppCall for ContextWindowArgs {
    const NAME: &'static str = "context_window";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = ContextBreakdown;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<ContextBreakdown> {
        e.agents().context_breakdown(&self.agent_id).await
    }
}

/// `context_view`: the agent's next request as the model will receive it, with tokens per
/// part.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ContextViewArgs {
    agent_id: AgentId,
}

impl AppCall for ContextViewArgs {
    const NAME: &'static str = "context_view";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = ContextView;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<ContextView> {
        e.agents().context_view(&self.agent_id).await
    }
}

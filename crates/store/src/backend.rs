//! The SQLite store behind the storage interface ([`engram_store_api`]): each method calls the
//! store's own synchronous call in the matching room (`AgentStore` → [`Store::agents`] …), on
//! the caller's task (they are short, as the service's direct calls are today). Nothing inside
//! the store changes for it beyond two small additions: leases, kept in memory (`leases`), and
//! a message count. The words search over messages is the store's recall search
//! ([`MessageRows::rank`](crate::MessageRows::rank)) keeping BM25's order alone: no neighbour
//! smoothing, no vectors (those are the retrieval layer's).

use crate::{
    CandidateDepth, Candidates, MessageQuery, PassageList, PassagePage, PassageQuery, Ranking,
    SeqOrder, Store, leases, sql,
};
use async_trait::async_trait;
use engram_core::{
    Agent, AgentAccess, AgentFile, AgentId, AgentPatch, Block, BlockEdit, BlockId, BlockOp,
    BlockPatch, ChunkHit, EditId, Editor, EndpointKind, FileId, Folder, FolderFile, Message,
    MessageHit, MessageId, ModelPrice, NewBlock, NewMessage, NewPassage, OpOutcome, PassId,
    PassUsage, Passage, PassageHit, PassageId, PendingApproval, PendingEndpoint, Result, RunId,
    RunRecord, SleeptimePass, SleeptimeSettings, Step, Timestamp, Tool, ToolCall, ToolId, User,
    UserId,
};
use engram_store_api::{
    AgentStore, BlockStore, CommittedStep, ContextStore, FileWindow, FolderStore, Hit,
    ImportBundle, ImportStore, ImportedIds, Lease, LeaseGrant, LeaseStore, MessageSearch,
    MessageStore, MessageVector, MessageWindow, ModelUsage, PassBacklog, PassCommit, PassageRange,
    PassageSearch, PassageStore, ProviderRow, Ranker, RewriteStore, SettingStore, SleeptimeStore,
    StepCommit, StepStore, TextPart, ToolEdit, ToolStore, TurnRollback, UnembeddedMessage,
    UserStore,
};
use std::sync::MutexGuard;
use std::time::Duration;

#[async_trait]
impl AgentStore for Store {
    async fn create_agent(
        &self,
        agent: &Agent,
        blocks: &[NewBlock],
        attach: &[BlockId],
    ) -> Result<(Agent, Vec<Block>)> {
        self.agents().create(agent, blocks, attach)
    }

    async fn get_agent(&self, id: &AgentId) -> Result<Agent> {
        self.agents().get(id)
    }

    async fn list_agents(&self) -> Result<Vec<Agent>> {
        self.agents().list()
    }

    async fn page_agents(&self, q: &engram_store_api::AgentList) -> Result<Vec<Agent>> {
        self.agents().page(q)
    }

    async fn count_agents(&self, q: &engram_store_api::AgentList) -> Result<u64> {
        self.agents().count(q)
    }

    async fn update_agent(&self, id: &AgentId, patch: &AgentPatch) -> Result<Agent> {
        self.agents().update(id, patch)
    }

    async fn agent_tags(&self, id: &AgentId) -> Result<Vec<String>> {
        self.agents().get(id)?;
        self.agents().tags(id)
    }

    async fn set_agent_tags(&self, id: &AgentId, tags: &[String]) -> Result<()> {
        self.agents().set_tags(id, tags)
    }

    async fn delete_agent(&self, id: &AgentId) -> Result<()> {
        self.agents().delete(id)
    }
}

#[async_trait]
impl BlockStore for Store {
    async fn create_block(&self, new: &NewBlock) -> Result<Block> {
        self.blocks().create(new)
    }

    async fn create_agent_block(&self, agent: &AgentId, new: &NewBlock) -> Result<Block> {
        self.blocks().create_for_agent(agent, new)
    }

    async fn get_block(&self, id: &BlockId) -> Result<Block> {
        self.blocks().get(id)
    }

    async fn list_blocks(&self, label: Option<&str>) -> Result<Vec<Block>> {
        self.blocks().list(label)
    }

    async fn page_blocks(&self, q: &engram_store_api::BlockList) -> Result<Vec<Block>> {
        self.blocks().page(q)
    }

    async fn agent_blocks(&self, agent: &AgentId) -> Result<Vec<Block>> {
        self.blocks().of_agent(agent)
    }

    async fn agent_block(&self, agent: &AgentId, label: &str) -> Result<Block> {
        self.blocks().by_label(agent, label)
    }

    async fn attach_block(&self, agent: &AgentId, block: &BlockId) -> Result<()> {
        self.blocks().attach(agent, block)
    }

    async fn detach_block(&self, agent: &AgentId, block: &BlockId) -> Result<()> {
        self.blocks().detach(agent, block)
    }

    async fn shared_blocks(&self) -> Result<Vec<engram_store_api::SharedBlock>> {
        self.blocks().shared()
    }

    async fn block_agents(&self, block: &BlockId) -> Result<Vec<AgentId>> {
        self.blocks().agents_of(block)
    }

    async fn update_block(
        &self,
        id: &BlockId,
        patch: &BlockPatch,
        editor: &Editor,
    ) -> Result<Block> {
        self.blocks().update(id, patch, editor)
    }

    async fn apply_block_op(
        &self,
        id: &BlockId,
        op: &BlockOp,
        editor: &Editor,
    ) -> Result<OpOutcome> {
        self.blocks().apply_op(id, op, editor)
    }

    async fn block_edit(&self, id: &EditId) -> Result<BlockEdit> {
        self.blocks().edit(id)
    }

    async fn block_history(&self, id: &BlockId, limit: usize) -> Result<Vec<BlockEdit>> {
        self.blocks().history(id, limit)
    }

    async fn delete_block(&self, id: &BlockId) -> Result<()> {
        self.blocks().delete(id)
    }
}

impl Store {
    /// This database's lease table, locked.
    pub(crate) fn lease_table(&self) -> MutexGuard<'_, leases::Table> {
        self.leases.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The lease table, locked, once `lease` is checked to be the agent's current unexpired
    /// lease: a commit fenced by it keeps the guard until it is done, so the lease cannot pass
    /// to another holder in between. Errors: `LeaseLost`.
    pub(crate) fn hold_lease(&self, lease: &Lease) -> Result<MutexGuard<'_, leases::Table>> {
        let mut table = self.lease_table();
        if table.current(lease, sql::now()).is_none() {
            return Err(leases::lost(lease));
        }
        Ok(table)
    }
}

#[async_trait]
impl LeaseStore for Store {
    async fn acquire_lease(
        &self,
        agent: &AgentId,
        holder: &str,
        ttl: Duration,
    ) -> Result<LeaseGrant> {
        self.agents().get(agent)?;
        Ok(self.lease_table().acquire(agent, holder, ttl, sql::now()))
    }

    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease> {
        self.lease_table()
            .renew(lease, ttl, sql::now())
            .ok_or_else(|| crate::leases::lost(lease))
    }

    async fn release_lease(&self, lease: &Lease) -> Result<()> {
        self.lease_table().release(lease, sql::now());
        Ok(())
    }

    async fn apply_block_op_leased(
        &self,
        lease: &Lease,
        id: &BlockId,
        op: &BlockOp,
        editor: &Editor,
    ) -> Result<OpOutcome> {
        let held = self.hold_lease(lease)?;
        let out = self.blocks().apply_op(id, op, editor);
        drop(held);
        out
    }
}

#[async_trait]
impl ContextStore for Store {
    async fn in_context_messages(&self, agent: &AgentId) -> Result<Vec<Message>> {
        self.messages().in_context(agent)
    }

    async fn evict_messages(
        &self,
        agent: &AgentId,
        ids: &[MessageId],
        summary: &str,
    ) -> Result<()> {
        self.messages().evict(agent, ids, summary)
    }

    async fn agent_with_system_cache(
        &self,
        agent: &AgentId,
    ) -> Result<(Agent, Option<(String, String)>)> {
        let agents = self.agents();
        Ok((agents.get(agent)?, agents.system_cache(agent)?))
    }

    async fn set_system_cache(
        &self,
        agent: &AgentId,
        memory_section: &str,
        prompt: &str,
    ) -> Result<()> {
        self.agents()
            .set_system_cache(agent, memory_section, prompt)
    }

    async fn memory_counts(&self, agent: &AgentId) -> Result<(u64, u64)> {
        self.agents().memory_counts(agent)
    }

    async fn record_run(&self, run: &RunRecord) -> Result<()> {
        self.runs().record(run)
    }

    async fn list_runs(&self, agent: &AgentId, ids: Option<&[RunId]>) -> Result<Vec<RunRecord>> {
        self.runs().list(agent, ids)
    }
}

#[async_trait]
impl ImportStore for Store {
    async fn import_bundle(&self, bundle: &ImportBundle) -> Result<ImportedIds> {
        Store::import_bundle(self, bundle)
    }
}

#[async_trait]
impl StepStore for Store {
    async fn commit_step(&self, lease: Option<&Lease>, c: &StepCommit) -> Result<CommittedStep> {
        self.runs().commit_step_leased(lease, c)
    }

    async fn list_steps(&self, agent: &AgentId, run: Option<&RunId>) -> Result<Vec<Step>> {
        self.runs().list_steps(agent, run)
    }

    async fn tool_edits(&self, agent: &AgentId, runs: &[RunId]) -> Result<Vec<ToolEdit>> {
        self.runs().edits(agent, runs)
    }

    async fn usage_by_model(
        &self,
        agent: &AgentId,
        run: Option<&RunId>,
    ) -> Result<Vec<ModelUsage>> {
        self.settings().usage_by_model(agent, run)
    }

    async fn pending_approval(&self, agent: &AgentId) -> Result<Option<PendingApproval>> {
        self.runs().pending_approval(agent)
    }

    async fn drop_pending_approval(&self, agent: &AgentId) -> Result<bool> {
        self.runs().drop_pending_approval(agent)
    }

    async fn repair_tool_calls(&self, agent: &AgentId, now: Timestamp) -> Result<usize> {
        self.messages().repair_orphaned_tool_calls(agent, now)
    }
}

#[async_trait]
impl RewriteStore for Store {
    async fn rollback_preview(&self, agent: &AgentId, from: &MessageId) -> Result<TurnRollback> {
        self.messages().rollback_preview(agent, from)
    }

    async fn rollback_from(
        &self,
        lease: Option<&Lease>,
        agent: &AgentId,
        from: &MessageId,
    ) -> Result<TurnRollback> {
        Lease::check_for(lease, agent)?;
        self.messages().rollback_from(lease, agent, from)
    }

    async fn delete_message(
        &self,
        lease: Option<&Lease>,
        agent: &AgentId,
        id: &MessageId,
    ) -> Result<Vec<MessageId>> {
        Lease::check_for(lease, agent)?;
        self.messages().delete(lease, agent, id)
    }

    async fn reset_context(&self, lease: Option<&Lease>, agent: &AgentId) -> Result<usize> {
        Lease::check_for(lease, agent)?;
        self.messages().reset_context(lease, agent)
    }

    async fn update_message_text(
        &self,
        lease: Option<&Lease>,
        agent: &AgentId,
        id: &MessageId,
        content: &str,
        reasoning: Option<&str>,
        tool_calls: Option<&[ToolCall]>,
    ) -> Result<Message> {
        Lease::check_for(lease, agent)?;
        let _held = lease.map(|l| self.hold_lease(l)).transpose()?;
        self.messages()
            .update_text(agent, id, content, reasoning, tool_calls)
    }

    async fn last_user_message(&self, agent: &AgentId) -> Result<Option<Message>> {
        self.messages().last_user_message(agent)
    }
}

#[async_trait]
impl MessageStore for Store {
    async fn append_messages(&self, agent: &AgentId, msgs: &[NewMessage]) -> Result<Vec<Message>> {
        self.messages().append(agent, msgs)
    }

    async fn get_message(&self, id: &MessageId) -> Result<Message> {
        self.messages().get(id)
    }

    async fn page_messages(
        &self,
        agent: &AgentId,
        after_seq: Option<i64>,
        before_seq: Option<i64>,
        limit: usize,
        order: SeqOrder,
    ) -> Result<Vec<Message>> {
        self.messages()
            .page(agent, after_seq, before_seq, limit, order)
    }

    async fn count_messages(&self, agent: &AgentId) -> Result<u64> {
        self.messages().count(agent)
    }

    async fn message_window(
        &self,
        agent: &AgentId,
        at: &crate::WindowAt,
        limit: usize,
    ) -> Result<MessageWindow> {
        self.messages().window(agent, at, limit)
    }

    async fn search_messages(
        &self,
        agent: &AgentId,
        q: &MessageSearch,
    ) -> Result<Vec<Hit<Message>>> {
        let query = MessageQuery {
            query: q.query.clone(),
            roles: q.roles().to_vec(),
            start: q.start,
            end: q.end,
            limit: q.limit,
        };
        let depth = CandidateDepth {
            lexical: q.limit,
            vector: 0,
        };
        // BM25 as FTS5 ranks it, best first; the neighbours the store also reads are left to
        // the retrieval layer.
        let bm25 =
            |c: crate::Candidates| -> Ranking { c.lexical.map(|l| l.ranking).unwrap_or_default() };
        let found = self.messages().rank(agent, &query, None, depth, bm25)?;
        Ok(Hit::from_ranked(
            found.into_iter().map(|h| (h.message, h.score)),
        ))
    }

    async fn rank_messages(
        &self,
        agent: &AgentId,
        q: &MessageQuery,
        embedding: Option<&[f32]>,
        depth: CandidateDepth,
        rank: Ranker<'_>,
    ) -> Result<Vec<MessageHit>> {
        self.messages().rank(agent, q, embedding, depth, rank)
    }

    async fn messages_without_vectors(
        &self,
        agent: &AgentId,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<UnembeddedMessage>> {
        self.messages().without_vectors(agent, after, limit)
    }

    async fn count_messages_without_vectors(&self, agent: &AgentId) -> Result<u64> {
        self.messages().count_without_vectors(agent)
    }

    async fn fill_message_vectors(
        &self,
        agent: &AgentId,
        model: &str,
        filled: &[MessageVector],
    ) -> Result<usize> {
        self.messages().fill_vectors(agent, model, filled)
    }
}

/// BM25 as FTS5 ranks it, best first: the words search of the interface. The neighbours the
/// store also reads, and the fusion with vectors, are left to the retrieval layer.
fn bm25(c: Candidates) -> Ranking {
    c.lexical.map(|l| l.ranking).unwrap_or_default()
}

#[async_trait]
impl PassageStore for Store {
    async fn insert_passages(
        &self,
        agent: &AgentId,
        passages: &[NewPassage],
    ) -> Result<Vec<Passage>> {
        self.passages().insert(agent, passages)
    }

    async fn get_passage(&self, id: &PassageId) -> Result<Passage> {
        self.passages().get(id)
    }

    async fn list_passages(&self, agent: &AgentId, range: &PassageRange) -> Result<Vec<Passage>> {
        let list = PassageList {
            after: range.after.clone(),
            before: range.before.clone(),
            limit: range.limit,
            ascending: range.ascending,
            include_superseded: range.include_superseded,
            ..PassageList::default()
        };
        self.passages().list(agent, &list)
    }

    async fn passage_vectors(&self, agent: &AgentId) -> Result<Vec<(PassageId, Vec<f32>)>> {
        self.passages().vectors(agent)
    }

    async fn count_passages(&self, agent: &AgentId) -> Result<u64> {
        self.passages().count(agent, &PassageList::default())
    }

    async fn passages_with_words(
        &self,
        agent: &AgentId,
        query: &str,
        ids: &[PassageId],
    ) -> Result<Vec<PassageId>> {
        let found = self.passages().with_words(agent, query, ids)?;
        Ok(ids
            .iter()
            .filter(|id| found.contains(*id))
            .cloned()
            .collect())
    }

    async fn page_passages(&self, agent: &AgentId, list: &PassageList) -> Result<PassagePage> {
        self.passages().page(agent, list)
    }

    async fn passages_without_vectors(
        &self,
        agent: &AgentId,
        limit: usize,
    ) -> Result<Vec<Passage>> {
        self.passages().without_vectors(agent, limit)
    }

    async fn count_passages_without_vectors(&self, agent: &AgentId) -> Result<u64> {
        self.passages().count_without_vectors(agent)
    }

    async fn fill_passage_vectors(
        &self,
        agent: &AgentId,
        model: &str,
        filled: &[(PassageId, String, Vec<f32>)],
    ) -> Result<usize> {
        self.passages().fill_vectors(agent, model, filled)
    }

    async fn update_passage(
        &self,
        agent: &AgentId,
        id: &PassageId,
        text: Option<&str>,
        tags: Option<&[String]>,
        embedding: Option<&[f32]>,
    ) -> Result<Passage> {
        self.passages().update(agent, id, text, tags, embedding)
    }

    async fn delete_passage(&self, agent: &AgentId, id: &PassageId) -> Result<()> {
        self.passages().delete(agent, id)
    }

    async fn search_passages(
        &self,
        agent: &AgentId,
        q: &PassageSearch,
    ) -> Result<Vec<Hit<Passage>>> {
        let query = PassageQuery {
            query: q.query.clone(),
            tags: q.tags.clone(),
            tag_match: q.tag_match,
            start: q.start,
            end: q.end,
            top_k: q.limit,
            embedding: None,
            include_superseded: false,
        };
        let depth = CandidateDepth {
            lexical: q.limit,
            vector: 0,
        };
        let found = self.passages().rank(agent, &query, depth, bm25)?;
        Ok(Hit::from_ranked(
            found.into_iter().map(|h| (h.passage, h.score)),
        ))
    }

    async fn rank_passages(
        &self,
        agent: &AgentId,
        q: &PassageQuery,
        depth: CandidateDepth,
        rank: Ranker<'_>,
    ) -> Result<Vec<PassageHit>> {
        self.passages().rank(agent, q, depth, rank)
    }

    async fn passage_neighbours(
        &self,
        agent: &AgentId,
        q: &PassageQuery,
        ids: &[PassageId],
        reach: usize,
    ) -> Result<Vec<Vec<Passage>>> {
        self.passages().neighbours(agent, q, ids, reach)
    }
}

#[async_trait]
impl UserStore for Store {
    async fn create_user(&self, name: &str) -> Result<User> {
        self.users().create(name)
    }

    async fn user_by_name(&self, name: &str) -> Result<User> {
        self.users().by_name(name)
    }

    async fn list_users(&self) -> Result<Vec<User>> {
        self.users().list()
    }

    async fn delete_user(&self, id: &UserId) -> Result<bool> {
        self.users().delete(id)
    }

    async fn add_user_token(&self, user: &UserId, hash: &[u8; 32], label: &str) -> Result<()> {
        self.users().add_token(user, hash, label)
    }

    async fn user_by_token(&self, hash: &[u8; 32]) -> Result<Option<User>> {
        self.users().by_token(hash)
    }

    async fn revoke_user_tokens(&self, user: &UserId) -> Result<usize> {
        self.users().revoke_tokens(user)
    }

    async fn set_agent_access(
        &self,
        agent: &AgentId,
        user: &UserId,
        access: Option<AgentAccess>,
    ) -> Result<()> {
        self.users().set_access(agent, user, access)
    }

    async fn agent_access(&self, agent: &AgentId, user: &UserId) -> Result<Option<AgentAccess>> {
        self.users().access(agent, user)
    }

    async fn set_block_owner(&self, block: &BlockId, user: &UserId) -> Result<()> {
        self.users().set_block_owner(block, user)
    }

    async fn block_access(&self, block: &BlockId, user: &UserId) -> Result<Option<AgentAccess>> {
        self.users().block_access(block, user)
    }

    async fn user_agents(&self, user: &UserId) -> Result<Vec<(AgentId, AgentAccess)>> {
        self.users().agents(user)
    }
}

#[async_trait]
impl SettingStore for Store {
    async fn upsert_provider(&self, p: &ProviderRow) -> Result<()> {
        self.settings().upsert_provider(p)
    }

    async fn get_provider(&self, name: &str) -> Result<ProviderRow> {
        self.settings().get_provider(name)
    }

    async fn list_providers(&self) -> Result<Vec<ProviderRow>> {
        self.settings().list_providers()
    }

    async fn delete_provider(&self, name: &str) -> Result<()> {
        self.settings().delete_provider(name)
    }

    async fn get_setting(&self, key: &str) -> Result<Option<String>> {
        self.settings().get(key)
    }

    async fn set_setting(&self, key: &str, value: &str) -> Result<()> {
        self.settings().set(key, value)
    }

    async fn settings_with_prefix(&self, prefix: &str) -> Result<Vec<(String, String)>> {
        self.settings().with_prefix(prefix)
    }

    async fn model_prices(&self) -> Result<Vec<ModelPrice>> {
        self.settings().user_model_prices()
    }

    async fn set_model_price(&self, p: &ModelPrice) -> Result<()> {
        self.settings().set_model_price(p)
    }

    async fn delete_model_price(&self, model: &str) -> Result<bool> {
        self.settings().delete_model_price(model)
    }

    async fn pending_endpoints(&self, agent: &AgentId) -> Result<Vec<PendingEndpoint>> {
        self.settings().pending_endpoints(agent)
    }

    async fn accept_endpoint(&self, agent: &AgentId, kind: EndpointKind) -> Result<Agent> {
        self.settings().accept_endpoint(agent, kind)
    }

    async fn dismiss_endpoint(&self, agent: &AgentId, kind: EndpointKind) -> Result<()> {
        self.settings().dismiss_endpoint(agent, kind)
    }
}

#[async_trait]
impl SleeptimeStore for Store {
    async fn sleeptime_settings(&self, agent: &AgentId) -> Result<SleeptimeSettings> {
        self.sleeptime().settings(agent)
    }

    async fn set_sleeptime_settings(&self, agent: &AgentId, s: &SleeptimeSettings) -> Result<()> {
        self.sleeptime().set_settings(agent, s)
    }

    async fn last_read_seq(&self, agent: &AgentId) -> Result<i64> {
        self.sleeptime().last_seq(agent)
    }

    async fn record_pass(&self, pass: &SleeptimePass) -> Result<()> {
        self.sleeptime().record_pass(pass)
    }

    async fn commit_pass(&self, commit: &PassCommit) -> Result<SleeptimePass> {
        self.sleeptime().commit_pass(commit)
    }

    async fn get_pass(&self, id: &PassId) -> Result<SleeptimePass> {
        self.sleeptime().get_pass(id)
    }

    async fn list_passes(&self, agent: &AgentId, limit: usize) -> Result<Vec<SleeptimePass>> {
        self.sleeptime().list_passes(agent, limit)
    }

    async fn pass_backlog(&self, agent: &AgentId) -> Result<PassBacklog> {
        self.sleeptime().backlog(agent)
    }

    async fn pass_usage(&self, agent: Option<&AgentId>, since: Timestamp) -> Result<PassUsage> {
        self.sleeptime().usage(agent, since)
    }

    async fn undo_pass_changes(&self, pass: &PassId, index: Option<u32>) -> Result<SleeptimePass> {
        self.sleeptime().undo_changes(pass, index)
    }

    async fn claim_pass(&self, agent: &AgentId, pass: &PassId, ttl: Duration) -> Result<bool> {
        self.agents().get(agent)?;
        Ok(self.lease_table().claim_pass(agent, pass, ttl, sql::now()))
    }

    async fn release_pass(&self, agent: &AgentId, pass: &PassId) -> Result<()> {
        self.lease_table().release_pass(agent, pass);
        Ok(())
    }
}

#[async_trait]
impl ToolStore for Store {
    async fn upsert_tool(&self, tool: &Tool) -> Result<Tool> {
        self.tools().upsert(tool)
    }

    async fn replace_tool(&self, id: &ToolId, tool: &Tool) -> Result<Tool> {
        self.tools().replace(id, tool)
    }

    async fn trust_tool(&self, id: &ToolId, expected_hash: &str) -> Result<Tool> {
        self.tools().trust(id, expected_hash)
    }

    async fn untrust_tool(&self, id: &ToolId) -> Result<Tool> {
        self.tools().untrust(id)
    }

    async fn get_tool(&self, id: &ToolId) -> Result<Tool> {
        self.tools().get(id)
    }

    async fn tool_by_name(&self, name: &str) -> Result<Option<Tool>> {
        self.tools().by_name(name)
    }

    async fn list_tools(&self) -> Result<Vec<Tool>> {
        self.tools().list()
    }

    async fn tools_named(&self, names: &[String]) -> Result<Vec<Tool>> {
        self.tools().named(names)
    }

    async fn delete_tool(&self, id: &ToolId) -> Result<()> {
        self.tools().delete(id)
    }
}

#[async_trait]
impl FolderStore for Store {
    async fn agent_folders(&self, agent: &AgentId) -> Result<Vec<Folder>> {
        self.folders().of_agent(agent)
    }

    async fn agent_files(&self, agent: &AgentId) -> Result<Vec<AgentFile>> {
        self.folders().files_of_agent(agent)
    }

    async fn agent_file(&self, agent: &AgentId, name: &str) -> Result<Option<FolderFile>> {
        self.folders().file_of_agent(agent, name)
    }

    async fn folder_file(&self, id: &FileId) -> Result<FolderFile> {
        self.folders().get_file(id)
    }

    async fn open_file(
        &self,
        agent: &AgentId,
        file: &FileId,
        offset: u32,
        length: u32,
        max_open: usize,
    ) -> Result<Vec<FileId>> {
        self.folders()
            .open_file(agent, file, offset, length, max_open)
    }

    async fn close_all_files(&self, agent: &AgentId) -> Result<usize> {
        self.folders().close_all_files(agent)
    }

    async fn open_file_windows(&self, agent: &AgentId) -> Result<Vec<FileWindow>> {
        self.folders().open_file_windows(agent)
    }

    async fn file_text_part(&self, id: &FileId, idx: u32) -> Result<Option<TextPart>> {
        self.folders().text_part(id, idx)
    }

    async fn file_page_starts(&self, id: &FileId) -> Result<Vec<u32>> {
        self.folders().page_starts(id)
    }

    async fn rank_agent_files(
        &self,
        agent: &AgentId,
        query: &str,
        embedding: Option<(&str, &[f32])>,
        depth: CandidateDepth,
        rank: Ranker<'_>,
    ) -> Result<Vec<ChunkHit>> {
        self.folders()
            .rank_agent_files(agent, query, embedding, depth, rank)
    }
}

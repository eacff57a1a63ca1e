//! The [`Runtime`]: what runs agents, and what it checks before a run writes anything.

use super::setup::Setup;
use super::turn::{Claim, Turn, Turns};
use crate::context::{self, Context};
use crate::outcome::LoopSettings;
use crate::python::PythonHost;
use crate::tools::ToolContext;
use crate::window;
use crate::{Embedder, ModelResolver};
use engram_core::{AgentId, Result, Timestamp};
use engram_store::Store;
use engram_store_api::{Backend, FolderStore, LeaseStore};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// Runs agents. One run per agent at a time: a second message to a busy agent waits its turn,
/// so two runs never interleave their steps.
pub struct Runtime {
    /// Where agents, their memory and their runs are kept: the SQLite store of the desktop or
    /// a server's PostgreSQL.
    pub(super) store: Arc<dyn Backend>,
    /// Agents' folders and files (see [`FolderStore`]); `None` where the backend has none,
    /// and agents then have no file tools to call.
    pub(crate) folders: Option<Arc<dyn FolderStore>>,
    pub(crate) models: Arc<dyn ModelResolver>,
    pub(super) settings: LoopSettings,
    python: Arc<PythonHost>,
    /// Calls tools of MCP servers; `None` answers such calls with a `Failed` result.
    pub(crate) mcp: Option<Arc<dyn crate::McpCaller>>,
    /// Each agent's turn (see `turn`).
    turns: Turns,
    /// Where runs take their agent's lease (see `lease`): the store's own by default.
    pub(super) leases: Arc<dyn LeaseStore>,
    /// Agents warned about memory pressure in the current fill (since their context was last
    /// below the warning threshold), so the warning fires once per fill.
    pub(super) warned: Mutex<HashSet<AgentId>>,
}

impl Runtime {
    /// A runtime over the SQLite `store` (with its folders), resolving models with `models`.
    pub fn new(store: Store, models: Arc<dyn ModelResolver>) -> Self {
        Self::with_settings(store, models, LoopSettings::default())
    }

    /// Same, with custom thresholds.
    pub fn with_settings(
        store: Store,
        models: Arc<dyn ModelResolver>,
        settings: LoopSettings,
    ) -> Self {
        let folders: Arc<dyn FolderStore> = Arc::new(store.clone());
        Self::on_backend(Arc::new(store), Some(folders), models, settings)
    }

    /// A runtime over any `backend` (a server's PostgreSQL among them), with agents' folders
    /// from `folders` when there are any.
    pub fn on_backend(
        backend: Arc<dyn Backend>,
        folders: Option<Arc<dyn FolderStore>>,
        models: Arc<dyn ModelResolver>,
        settings: LoopSettings,
    ) -> Self {
        Self {
            leases: backend.clone(),
            store: backend,
            folders,
            models,
            settings,
            python: Arc::new(PythonHost::default()),
            mcp: None,
            turns: Turns::default(),
            warned: Mutex::new(HashSet::new()),
        }
    }

    /// Runs user tools with `python` (default: `python3` from `PATH`, 30 s per call).
    pub fn with_python(mut self, python: Arc<PythonHost>) -> Self {
        self.python = python;
        self
    }

    /// Calls tools of MCP servers through `mcp`.
    pub fn with_mcp(mut self, mcp: Arc<dyn crate::McpCaller>) -> Self {
        self.mcp = Some(mcp);
        self
    }

    /// Takes agents' leases from `leases` instead of the store (a database shared by
    /// replicas, or a test's own handle).
    pub fn with_leases(mut self, leases: Arc<dyn LeaseStore>) -> Self {
        self.leases = leases;
        self
    }

    /// Takes `agent`'s lease for `run` (see `lease`). Errors: `AgentBusy`; the store's.
    pub(crate) async fn take_lease(
        &self,
        agent: &AgentId,
        run: &engram_core::RunId,
    ) -> Result<super::LeaseHold> {
        super::LeaseHold::take(self.leases.clone(), agent, run, &self.settings).await
    }

    /// [`take_lease`](Self::take_lease) without waiting: `None` while another holder has it.
    pub(crate) async fn try_lease(
        &self,
        agent: &AgentId,
        run: &engram_core::RunId,
    ) -> Result<Option<super::LeaseHold>> {
        super::LeaseHold::try_take(self.leases.clone(), agent, run, &self.settings).await
    }

    /// Where user tools run.
    pub fn python(&self) -> &Arc<PythonHost> {
        &self.python
    }

    /// Where agents are kept.
    pub fn store(&self) -> &dyn Backend {
        &*self.store
    }

    /// The reranker archival search uses now (see [`engram_retrieval::rerank`]), if any.
    pub(crate) fn reranker(&self) -> Option<Arc<dyn crate::Reranker>> {
        self.models.reranker()
    }

    /// The context-window thresholds in use.
    pub fn settings(&self) -> &LoopSettings {
        &self.settings
    }

    /// The agent's context as the next call would see it (for the context-window meter).
    pub async fn context(&self, agent_id: &AgentId) -> Result<Context> {
        context::load(
            self.store(),
            self.folders.as_deref(),
            agent_id,
            chrono::Utc::now(),
            true,
        )
        .await
    }

    /// Checks what [`run`](Self::run) checks before it writes anything (the agent exists, its
    /// model resolves, the context window can hold it), so a caller about to change the
    /// conversation first (regenerate, edit & resend) can refuse before losing anything.
    ///
    /// Errors: `NotFound("agent")`, configuration errors (no provider, no key),
    /// `context_window_too_small`.
    pub async fn preflight(&self, agent_id: &AgentId) -> Result<()> {
        self.setup(agent_id).await.map(drop)
    }

    /// What a run needs before anything is written: the agent, its model clients, and the
    /// check that its context window can hold it.
    pub(crate) async fn setup(&self, agent_id: &AgentId) -> Result<Setup> {
        let now = chrono::Utc::now();
        let (agent, fixed) =
            context::fixed_part(self.store(), self.folders.as_deref(), agent_id, now).await?;
        let model = self.models.chat_model(&agent.llm)?;
        // Refused before anything is written, instead of a run that compacts on every step:
        // the fixed part (system prompt, blocks, tools) is the user's to fix.
        window::check(
            fixed,
            agent.llm.context_window as usize,
            &agent.llm.model,
            &self.settings,
        )?;
        let embedder = agent
            .embedding
            .as_ref()
            .map(|c| self.models.embedder(c))
            .transpose()?;
        Ok(Setup {
            agent,
            model,
            embedder,
            repair: true,
        })
    }

    /// Claims a place in the agent's queue: from now until the claim (or the turn it becomes)
    /// is dropped, [`is_busy`](Self::is_busy) says so and [`try_turn`](Self::try_turn) gives
    /// nothing. Errors: `Internal` if the lock table is poisoned.
    pub fn claim(&self, agent_id: &AgentId) -> Result<Claim> {
        self.turns.claim(agent_id)
    }

    /// Waits for the agent's turn: one run (or approval decision, or change to the
    /// conversation that must not overlap one) per agent at a time. Runs waiting for the turn
    /// get it in the order they asked. Errors: `Internal` if the lock table is poisoned.
    pub async fn turn(&self, agent_id: &AgentId) -> Result<Turn> {
        Ok(self.claim(agent_id)?.turn().await)
    }

    /// The agent's turn if nobody holds it or waits for it now, else `None` (a run is in
    /// flight or queued). Errors: `Internal` if the lock table is poisoned.
    pub fn try_turn(&self, agent_id: &AgentId) -> Result<Option<Turn>> {
        Ok(self.claim(agent_id)?.turn_alone())
    }

    /// Whether a run of the agent is in flight or queued, or its conversation is being
    /// changed.
    pub fn is_busy(&self, agent_id: &AgentId) -> bool {
        self.turns.is_busy(agent_id)
    }

    /// Where compaction aims: `compact_to` of the window, in tokens.
    pub(super) fn target_tokens(&self, ctx: &Context) -> usize {
        (ctx.breakdown.context_window as f32 * self.settings.compact_to) as usize
    }

    /// What the tools of one step see: the agent and its blocks as `ctx` read them (a
    /// model's whole-value rewrite is based on those versions), nothing queued yet, the
    /// step's clock `now`.
    pub(crate) fn tool_context<'a>(
        &'a self,
        ctx: &'a Context,
        embedder: Option<&'a Embedder>,
        reranker: Option<&'a dyn crate::Reranker>,
        now: Timestamp,
    ) -> ToolContext<'a> {
        ToolContext {
            agent: &ctx.agent,
            store: self.store(),
            folders: self.folders.as_deref(),
            blocks: ctx.blocks.clone(),
            read_versions: ctx
                .blocks
                .iter()
                .map(|b| (b.id.clone(), b.version))
                .collect(),
            writes: Vec::new(),
            passages: Vec::new(),
            embedder,
            reranker,
            now,
            custom: &ctx.custom_tools,
            python: &self.python,
            mcp: self.mcp.as_deref(),
        }
    }
}

//! Creating, reading, changing and deleting agents.

use crate::rooms::Agents;
use crate::{Engram, Notice};
use engram_agent::tools::default_tools;
use engram_agent::{calibrate, prompts, window};
use engram_core::agent::DEFAULT_MAX_STEPS;
use engram_core::{
    Agent, AgentId, AgentPatch, Block, BlockId, EmbeddingConfig, Error, LlmConfig, LoopStyle,
    NewAgent, NewBlock, Result,
};
use serde::{Deserialize, Serialize};

/// The model new agents get when none is given and no default is set.
pub const FALLBACK_MODEL: &str = "openai/gpt-4o-mini";
/// The settings key holding the default model handle.
pub const DEFAULT_MODEL_SETTING: &str = "default_model";
/// The settings key holding the embedding model new agents get (`none`: no embedding model,
/// archival search by words alone); unset means [`engram_embed::DEFAULT_MODEL`], the built-in
/// local model.
pub const DEFAULT_EMBEDDING_SETTING: &str = "default_embedding";

/// An agent with its core memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct AgentState {
    /// The agent.
    #[serde(flatten)]
    pub agent: Agent,
    /// Its blocks, in order.
    pub blocks: Vec<Block>,
}

impl Engram {
    /// Checks that `agent`'s model offers the context window it needs with `blocks`.
    pub(crate) async fn check_window(&self, agent: &Agent, blocks: &[Block]) -> Result<()> {
        let custom = self.backend.tools_named(&agent.tools).await?;
        let counter = calibrate::counter(&*self.backend, &agent.llm.model).await;
        window::check_agent(agent, blocks, &custom, &counter, self.runtime.settings())
    }

    /// Model settings for `handle` with the context window stored for it (the model picker's),
    /// else the guess of [`LlmConfig::new`].
    async fn llm_for(&self, handle: String) -> Result<LlmConfig> {
        let stored = self.stored_window(&handle).await?;
        let mut llm = LlmConfig::new(handle);
        if let Some(tokens) = stored {
            llm.context_window = tokens;
        }
        Ok(llm)
    }

    /// The existing blocks `ids` (to be attached), for the window check.
    async fn attached(&self, ids: &[BlockId]) -> Result<Vec<Block>> {
        let mut blocks = Vec::with_capacity(ids.len());
        for id in ids {
            blocks.push(self.backend.get_block(id).await?);
        }
        Ok(blocks)
    }
}

impl Agents<'_> {
    /// Creates an agent, filling what `new` leaves out: Engram's default instructions for the
    /// loop style, the default model, the default embedding model (the built-in
    /// `local/all-minilm-l6-v2` unless the `default_embedding` setting says otherwise), the
    /// built-in tools of the loop style, and `persona` / `human` blocks when no blocks are
    /// given at all. A remote embedding model's base URL is written into the agent as it
    /// resolves now, so its text never goes to another host later.
    ///
    /// Errors: `invalid_input` for an empty name, an unknown tool or a bad block; `conflict` for
    /// duplicate labels; `not_found` for an unknown block id to attach;
    /// `provider_not_configured` for an embedding model whose provider is unknown;
    /// `context_window_too_small` when the model's context window cannot hold the agent
    /// (details: `{model, needed, offered}` in tokens).
    pub async fn create(self, new: NewAgent) -> Result<AgentState> {
        let name = new.name.trim();
        if name.is_empty() {
            return Err(Error::invalid("an agent needs a name"));
        }
        let tools = new.tools.unwrap_or_else(|| default_tools(new.loop_style));
        self.engram.check_tool_names(&tools).await?;
        refuse_url_credentials(new.llm.as_ref(), new.embedding.as_ref())?;
        let mut llm = match new.llm {
            Some(llm) => llm,
            None => {
                self.engram
                    .llm_for(self.engram.models().default_chat()?)
                    .await?
            }
        };
        // A built-in model serves only the context its worker runs with.
        if let Some(max) = self.engram.local_window(&llm.model) {
            llm.context_window = llm.context_window.min(max);
        }
        let system = new
            .system
            .unwrap_or_else(|| default_system(new.loop_style).to_owned());
        let mut blocks = new.blocks;
        if blocks.is_empty() && new.block_ids.is_empty() {
            blocks = vec![NewBlock::new("persona", ""), NewBlock::new("human", "")];
        }
        let now = chrono::Utc::now();
        let agent = Agent {
            id: AgentId::new(),
            name: name.to_owned(),
            description: new.description,
            system,
            llm,
            embedding: match new.embedding {
                Some(cfg) => Some(self.engram.resolver.pin_embedding(cfg)?),
                None => self.engram.models().default_embedding()?,
            },
            loop_style: new.loop_style,
            max_steps: new.max_steps.unwrap_or(DEFAULT_MAX_STEPS).max(1),
            tools,
            summary: None,
            tool_rules: new.tool_rules,
            created_at: now,
            updated_at: now,
        };
        let attached = self.engram.attached(&new.block_ids).await?;
        self.engram
            .check_window(&agent, &planned_blocks(&blocks, &attached))
            .await?;
        let (agent, blocks) = self
            .engram
            .backend
            .create_agent(&agent, &blocks, &new.block_ids)
            .await?;
        self.engram.notify(Notice::AgentsChanged);
        Ok(AgentState { agent, blocks })
    }

    /// Every agent, oldest first.
    pub async fn list(self) -> Result<Vec<Agent>> {
        self.engram.backend.list_agents().await
    }

    /// A page of agents filtered and paged by the database (Letta's `GET /v1/agents/`; see
    /// [`AgentList`](engram_store::AgentList)).
    pub async fn page(self, q: &engram_store::AgentList) -> Result<Vec<Agent>> {
        self.engram.backend.page_agents(q).await
    }

    /// How many agents pass the filters of `q` (cursors and limit aside).
    pub async fn count(self, q: &engram_store::AgentList) -> Result<u64> {
        self.engram.backend.count_agents(q).await
    }

    /// One agent's settings, without its blocks (one read, where [`get`](Self::get) makes
    /// two). Errors: `not_found`.
    pub async fn settings(self, id: &AgentId) -> Result<Agent> {
        self.engram.backend.get_agent(id).await
    }

    /// One agent with its blocks. Errors: `not_found`.
    pub async fn get(self, id: &AgentId) -> Result<AgentState> {
        Ok(AgentState {
            agent: self.engram.backend.get_agent(id).await?,
            blocks: self.engram.backend.agent_blocks(id).await?,
        })
    }

    /// Changes an agent's settings. A new embedding model (or endpoint) has its base URL
    /// written down as on creation; the passages' old vectors are forgotten and re-embedded in
    /// the background (search uses words meanwhile; chat is not held up).
    ///
    /// Errors: `not_found`, `invalid_input`; `context_window_too_small` when a new model,
    /// context window, instructions or tool list would not fit the model's context window
    /// (nothing is changed then); `not_available` for a new embedding model on a shared server.
    pub async fn update(self, id: &AgentId, patch: &AgentPatch) -> Result<Agent> {
        let backend = &self.engram.backend;
        if let Some(name) = &patch.name
            && name.trim().is_empty()
        {
            return Err(Error::invalid("an agent needs a name"));
        }
        if let Some(tools) = &patch.tools {
            self.engram.check_tool_names(tools).await?;
        }
        refuse_url_credentials(
            patch.llm.as_ref(),
            patch.embedding.as_ref().and_then(Option::as_ref),
        )?;
        if patch.llm.is_some() || patch.system.is_some() || patch.tools.is_some() {
            let mut planned = backend.get_agent(id).await?;
            if let Some(llm) = &patch.llm {
                planned.llm = llm.clone();
            }
            if let Some(system) = &patch.system {
                planned.system = system.clone();
            }
            if let Some(tools) = &patch.tools {
                planned.tools = tools.clone();
            }
            if let Some(style) = patch.loop_style {
                planned.loop_style = style;
            }
            self.engram
                .check_window(&planned, &backend.agent_blocks(id).await?)
                .await?;
        }
        let mut patch = patch.clone();
        let before = match &patch.embedding {
            Some(new) => {
                // The old vectors are dropped and computed again in this machine's database.
                self.engram.local("changing an agent's embedding model")?;
                let before = backend.get_agent(id).await?.embedding;
                if let Some(cfg) = new {
                    patch.embedding = Some(Some(self.engram.resolver.pin_embedding(cfg.clone())?));
                }
                Some(before)
            }
            None => None,
        };
        let agent = backend.update_agent(id, &patch).await?;
        if let Some(before) = before
            && before != agent.embedding
        {
            self.engram.store.passages().clear_vectors(id)?;
            self.engram.spawn_backfill(id);
        }
        self.engram.notify(Notice::AgentChanged {
            agent_id: id.clone(),
        });
        Ok(agent)
    }

    /// Deletes an agent with its messages and passages; blocks it shares with other agents stay.
    /// Errors: `not_found`.
    pub async fn delete(self, id: &AgentId) -> Result<()> {
        self.engram.backend.delete_agent(id).await?;
        self.engram.notify(Notice::AgentsChanged);
        Ok(())
    }
}

/// The blocks an agent will have: `new` ones as the store will create them (values and limits
/// as given; the default description for well-known labels), then the `attached` ones.
fn planned_blocks(new: &[NewBlock], attached: &[Block]) -> Vec<Block> {
    let now = chrono::Utc::now();
    new.iter()
        .map(|b| Block {
            id: BlockId::from(String::from("block-planned")),
            label: b.label.clone(),
            value: b.value.clone(),
            limit: b
                .limit
                .unwrap_or(engram_core::memory::DEFAULT_BLOCK_LIMIT)
                .max(b.value.chars().count()),
            description: b
                .description
                .clone()
                .unwrap_or_else(|| engram_core::memory::default_description(&b.label)),
            read_only: b.read_only,
            version: 1,
            created_at: now,
            updated_at: now,
        })
        .chain(attached.iter().cloned())
        .collect()
}

/// Engram's default instructions for a loop style.
pub fn default_system(style: LoopStyle) -> &'static str {
    match style {
        LoopStyle::Classic => prompts::CLASSIC_SYSTEM,
        LoopStyle::ToolLoop => prompts::TOOL_LOOP_SYSTEM,
    }
}

/// Refuses base URLs that carry credentials in an agent's chat or embedding settings: they
/// would sit in SQLite, the UI and exports (keys belong in the keychain). Errors:
/// `invalid_input`.
fn refuse_url_credentials(
    llm: Option<&LlmConfig>,
    embedding: Option<&EmbeddingConfig>,
) -> Result<()> {
    if let Some(url) = llm.and_then(|l| l.base_url.as_deref()) {
        crate::url_check::refuse_credentials("the chat model's base URL", url)?;
    }
    if let Some(url) = embedding.and_then(|e| e.base_url.as_deref()) {
        crate::url_check::refuse_credentials("the embedding model's base URL", url)?;
    }
    Ok(())
}

impl Agents<'_> {
    /// The agent's tags, in order. Errors: `not_found` for an unknown agent.
    pub async fn tags(self, agent: &AgentId) -> Result<Vec<String>> {
        self.engram.backend.agent_tags(agent).await
    }

    /// Replaces the agent's tags (order kept; duplicates and blank tags dropped).
    /// Errors: `not_found`.
    pub async fn set_tags(self, agent: &AgentId, tags: &[String]) -> Result<()> {
        self.engram.backend.set_agent_tags(agent, tags).await?;
        self.engram.notify(Notice::AgentChanged {
            agent_id: agent.clone(),
        });
        Ok(())
    }

    /// `(messages, passages)`: how many messages the agent's recall memory holds and how many
    /// passages its archival memory holds. Errors: `not_found`.
    pub async fn memory_counts(self, agent: &AgentId) -> Result<(u64, u64)> {
        self.engram.backend.memory_counts(agent).await
    }
}

//! Whether an agent's chat model can be used as things are set up now, answered without asking
//! any server: so creating, importing or opening an agent whose provider is missing says so at
//! once, instead of a message failing seconds later after retries.

use crate::Engram;
use crate::rooms::{Agents, Models};
use engram_agent::ModelResolver;
use engram_core::agent::split_handle;
use engram_core::error::ProviderFault;
use engram_core::{AgentId, Error, LlmConfig, Result};
use serde::Serialize;
use ts_rs::TS;

/// Why an agent cannot talk to its chat model yet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ModelProblem {
    /// The agent.
    pub agent_id: AgentId,
    /// Its name, for lists of agents.
    pub agent_name: String,
    /// Its chat model's handle, `provider/model`.
    pub model: String,
    /// What is missing, in words a person reads: "No provider named 'openai' is set up".
    pub summary: String,
    /// The engine's full explanation, with the command that fixes it (for the CLI and logs).
    pub detail: String,
}

impl Engram {
    /// `llm` pointed at `handle`, keeping the agent's other settings: its own base URL named
    /// the old provider's server, and the context window becomes the one stored for `handle`
    /// when someone set it.
    async fn moved_llm(&self, mut llm: LlmConfig, handle: &str) -> Result<LlmConfig> {
        llm.model = handle.to_owned();
        llm.base_url = None;
        if let Some(tokens) = self.stored_window(handle).await? {
            llm.context_window = tokens;
        }
        Ok(llm)
    }

    /// Why `llm` cannot be used now as (summary, detail), or `None` when it can. Nothing is
    /// sent anywhere: this reads the stored providers, the keychain (a machine without one
    /// counts as holding no key) and the built-in models. A model that is set up but does not
    /// answer counts as usable: that shows when a message is sent.
    fn problem_of(&self, llm: &LlmConfig) -> Result<Option<(String, String)>> {
        match self.resolver.chat_model(llm) {
            Ok(_) => Ok(None),
            Err(Error::Provider {
                fault: ProviderFault::NotConfigured,
                message,
            }) => Ok(Some((self.summary_of(llm)?, message))),
            Err(Error::Invalid(why)) => Ok(Some((why.clone(), why))),
            Err(e) => Err(e),
        }
    }

    /// One line a person reads about why `llm` is not usable: which provider or built-in
    /// model is missing, or that a key is.
    fn summary_of(&self, llm: &LlmConfig) -> Result<String> {
        let (provider, name) = split_handle(&llm.model);
        if provider.eq_ignore_ascii_case(crate::local_llm::LOCAL_CHAT_PROVIDER)
            && llm.base_url.is_none()
        {
            return Ok(format!(
                "The built-in model '{name}' is not on this computer"
            ));
        }
        let configured = match self.store.settings().get_provider(provider) {
            Ok(_) => true,
            Err(Error::NotFound { .. }) => false,
            Err(e) => return Err(e),
        };
        Ok(if configured {
            format!("The provider '{provider}' has no API key")
        } else {
            format!("No provider named '{provider}' is set up")
        })
    }
}

impl Models<'_> {
    /// Why the chat model `handle` (`provider/model`, at its provider's usual server) cannot be
    /// used now, in words a person reads, or `None` when it can: what the new-agent form says
    /// before an agent is made with it.
    ///
    /// Errors: `Storage` when the database cannot be read.
    pub fn check(self, handle: &str) -> Result<Option<String>> {
        Ok(self
            .engram
            .problem_of(&LlmConfig::new(handle.trim().to_owned()))?
            .map(|(summary, _)| summary))
    }

    /// Why agent `id` cannot move to the chat model `handle` now, in words a person reads, or
    /// `None` when [`Agents::use_model`] would accept the move: the model is not set up, or
    /// the agent's memory and tools do not fit the context window stored for `handle`. What the
    /// window checks before it offers an agent a model. Nothing is sent anywhere.
    ///
    /// Errors: `not_found` for an unknown agent; `Storage`.
    pub async fn check_for(self, id: &AgentId, handle: &str) -> Result<Option<String>> {
        let handle = handle.trim();
        if let Some(problem) = self.check(handle)? {
            return Ok(Some(problem));
        }
        let mut planned = self.engram.backend.get_agent(id).await?;
        planned.llm = self.engram.moved_llm(planned.llm, handle).await?;
        match self
            .engram
            .check_window(&planned, &self.engram.backend.agent_blocks(id).await?)
            .await
        {
            Ok(()) => Ok(None),
            Err(e @ Error::ContextWindowTooSmall { .. }) => Ok(Some(e.to_string())),
            Err(e) => Err(e),
        }
    }
}

impl Agents<'_> {
    /// The problem with agent `id`'s chat model, or `None` when it can be used.
    ///
    /// Errors: `not_found` for an unknown agent; `Storage`.
    pub async fn model_problem(self, id: &AgentId) -> Result<Option<ModelProblem>> {
        let agent = self.engram.backend.get_agent(id).await?;
        Ok(self
            .engram
            .problem_of(&agent.llm)?
            .map(|(summary, detail)| ModelProblem {
                agent_id: agent.id,
                agent_name: agent.name,
                model: agent.llm.model,
                summary,
                detail,
            }))
    }

    /// Every agent whose chat model cannot be used now, oldest first: after a provider is
    /// added, these are the agents to offer it to.
    ///
    /// Errors: `Storage`.
    pub async fn without_model(self) -> Result<Vec<ModelProblem>> {
        let mut out = Vec::new();
        for agent in self.engram.backend.list_agents().await? {
            if let Some((summary, detail)) = self.engram.problem_of(&agent.llm)? {
                out.push(ModelProblem {
                    agent_id: agent.id,
                    agent_name: agent.name,
                    model: agent.llm.model,
                    summary,
                    detail,
                });
            }
        }
        Ok(out)
    }

    /// Points each of `agents` at the chat model `handle` (`provider/model`), keeping each
    /// agent's other model settings; the context window becomes the one stored for `handle`
    /// when someone set it, else the agent's own. Returns the changed agents.
    ///
    /// Errors: `invalid_input` when `handle` itself cannot be used (so nobody is moved from
    /// one missing model to another), or when the agents' memory would not fit its context
    /// window (checked per agent before any is changed); `not_found` for an unknown agent.
    pub async fn use_model(
        self,
        agents: &[AgentId],
        handle: &str,
    ) -> Result<Vec<engram_core::Agent>> {
        let handle = handle.trim();
        if !handle.contains('/') {
            return Err(Error::invalid(format!(
                "'{handle}' is not a model handle: write provider/model"
            )));
        }
        if let Some(summary) = self.engram.models().check(handle)? {
            return Err(Error::invalid(format!(
                "{handle} cannot be used either: {summary}"
            )));
        }
        let mut patches = Vec::with_capacity(agents.len());
        for id in agents {
            let llm = self
                .engram
                .moved_llm(self.engram.backend.get_agent(id).await?.llm, handle)
                .await?;
            patches.push((
                id.clone(),
                engram_core::AgentPatch {
                    llm: Some(llm),
                    ..Default::default()
                },
            ));
        }
        // Every agent is checked (its window, its tools) before the first one changes.
        for (id, patch) in &patches {
            let mut planned = self.engram.backend.get_agent(id).await?;
            planned.llm = patch.llm.clone().unwrap_or(planned.llm);
            self.engram
                .check_window(&planned, &self.engram.backend.agent_blocks(id).await?)
                .await?;
        }
        let mut changed = Vec::with_capacity(patches.len());
        for (id, patch) in &patches {
            changed.push(self.update(id, patch).await?);
        }
        Ok(changed)
    }
}

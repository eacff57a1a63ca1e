//! Trust decisions the user makes (DESIGN.md §8b): trusting a tool's exact source, accepting or
//! dismissing the base URLs an agent file asked for, and reading or changing an agent's base
//! URLs. The store keeps the rows; the agent loop refuses untrusted code and the resolver
//! withholds keys from foreign hosts, whatever a transport does.

use crate::rooms::{Tools, Trust};
use crate::{Engram, Notice};
use engram_core::error::ProviderFault;
use engram_core::{
    AgentId, AgentPatch, EndpointKind, Error, PendingEndpoint, Result, Tool, ToolLanguage,
};
use serde::{Deserialize, Serialize};

/// An agent's model endpoints: what it is set to, what it would use, and what waits for the
/// user's approval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct AgentEndpoints {
    /// The agent.
    pub agent_id: AgentId,
    /// The chat model handle (`provider/model`).
    pub llm_model: String,
    /// The agent's own chat base URL (`None`: the provider's).
    pub llm_base_url: Option<String>,
    /// The base URL chat requests go to now, when the provider is set up.
    pub llm_effective_url: Option<String>,
    /// The embedding model handle, when the agent has one.
    pub embedding_model: Option<String>,
    /// The agent's own embedding base URL (`None`: the provider's).
    pub embedding_base_url: Option<String>,
    /// Endpoints an imported file asked for, not used until accepted.
    pub pending: Vec<PendingEndpoint>,
}

/// The error of a run whose endpoint waits for the user and has no stand-in.
fn awaits_approval(p: &PendingEndpoint) -> Error {
    Error::provider(
        ProviderFault::NotConfigured,
        format!(
            "this agent's endpoint {} from {} awaits your approval: accept it (`engram agent endpoint accept {}`, \
             or the agent's settings in the window) or set up the model's provider",
            p.base_url, p.source, p.agent_id
        ),
    )
}

/// Checks that `url` is an absolute http(s) URL without credentials in it.
/// Errors: `invalid_input`.
fn check_url(url: &str) -> Result<()> {
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {
            crate::url_check::refuse_credentials("the agent's base URL", url)
        }
        _ => Err(Error::invalid(format!(
            "{url:?} is not a base URL: give an http:// or https:// address"
        ))),
    }
}

impl Engram {
    /// Before a run: an endpoint that waits for approval is replaced by the provider's own
    /// base URL when that provider is set up; otherwise the run is refused with an error that
    /// names the endpoint and its file. Errors: `provider` (not configured).
    pub(crate) async fn check_pending_endpoints(&self, agent: &AgentId) -> Result<()> {
        let pending = self.backend.pending_endpoints(agent).await?;
        if pending.is_empty() {
            return Ok(());
        }
        let a = self.backend.get_agent(agent).await?;
        for p in &pending {
            let usable = match p.kind {
                EndpointKind::Llm => self
                    .resolver
                    .config(a.llm.provider(), a.llm.base_url.as_deref())
                    .is_ok(),
                EndpointKind::Embedding => match &a.embedding {
                    None => true,
                    Some(e) => {
                        let (provider, _) = engram_core::agent::split_handle(&e.model);
                        self.resolver
                            .config(provider, e.base_url.as_deref())
                            .is_ok()
                    }
                },
            };
            if !usable {
                return Err(awaits_approval(p));
            }
        }
        Ok(())
    }
}

impl Tools<'_> {
    /// Trusts the current source of a user tool (by name or id), so the loop runs it.
    /// `expected_hash` must be the SHA-256 shown with the source (`Tool::source_hash`), so the
    /// user trusts exactly the code they reviewed. Returns the tool.
    ///
    /// Errors: `not_found`; `invalid_input` for a built-in tool; `conflict` naming the current
    /// hash when the source changed since it was shown.
    pub async fn trust(self, name_or_id: &str, expected_hash: &str) -> Result<Tool> {
        let tool = self.find(name_or_id).await?;
        if tool.language == ToolLanguage::Builtin {
            return Err(Error::invalid(format!(
                "'{}' is built into Engram; only user tools need trust",
                tool.name
            )));
        }
        let trusted = self
            .engram
            .backend
            .trust_tool(&tool.id, expected_hash)
            .await?;
        tracing::info!(tool = %trusted.name, hash = ?trusted.trusted_hash, "tool trusted");
        self.engram.notify(Notice::ToolsChanged);
        self.find(&trusted.name).await
    }

    /// Withdraws trust from a user tool (by name or id): calls fail until it is trusted again.
    /// Errors: `not_found`; `invalid_input` for a built-in tool.
    pub async fn untrust(self, name_or_id: &str) -> Result<Tool> {
        let tool = self.find(name_or_id).await?;
        if tool.language == ToolLanguage::Builtin {
            return Err(Error::invalid("built-in tools are always trusted"));
        }
        let t = self.engram.backend.untrust_tool(&tool.id).await?;
        self.engram.notify(Notice::ToolsChanged);
        self.find(&t.name).await
    }
}

impl Trust<'_> {
    /// The agent's endpoints (see [`AgentEndpoints`]). Errors: `not_found`.
    pub async fn endpoints(self, agent: &AgentId) -> Result<AgentEndpoints> {
        let a = self.engram.backend.get_agent(agent).await?;
        let llm_effective_url = self
            .engram
            .resolver
            .config(a.llm.provider(), a.llm.base_url.as_deref())
            .ok()
            .map(|c| c.base_url);
        Ok(AgentEndpoints {
            agent_id: a.id.clone(),
            llm_model: a.llm.model.clone(),
            llm_base_url: a.llm.base_url.clone(),
            llm_effective_url,
            embedding_model: a.embedding.as_ref().map(|e| e.model.clone()),
            embedding_base_url: a.embedding.as_ref().and_then(|e| e.base_url.clone()),
            pending: self.engram.backend.pending_endpoints(agent).await?,
        })
    }

    /// Sets (`Some`) or clears (`None`: use the provider's own) the agent's base URL for its
    /// chat or embedding model. A stored key still goes only to its provider's host.
    /// Errors: `not_found`; `invalid_input` for a URL that is not http(s) or carries a
    /// credential, or an embedding URL for an agent without an embedding model.
    pub async fn set_base_url(
        self,
        agent: &AgentId,
        kind: EndpointKind,
        base_url: Option<&str>,
    ) -> Result<AgentEndpoints> {
        let url = base_url.map(str::trim).filter(|u| !u.is_empty());
        if let Some(u) = url {
            check_url(u)?;
        }
        let a = self.engram.backend.get_agent(agent).await?;
        let mut patch = AgentPatch::default();
        match kind {
            EndpointKind::Llm => {
                let mut llm = a.llm.clone();
                llm.base_url = url.map(str::to_owned);
                patch.llm = Some(llm);
            }
            EndpointKind::Embedding => {
                let mut emb = a.embedding.clone().ok_or_else(|| {
                    Error::invalid("the agent has no embedding model; set one first")
                })?;
                emb.base_url = url.map(str::to_owned);
                patch.embedding = Some(Some(emb));
            }
        }
        self.engram.backend.update_agent(agent, &patch).await?;
        self.engram.notify(Notice::AgentChanged {
            agent_id: agent.clone(),
        });
        self.endpoints(agent).await
    }

    /// Accepts the agent's pending endpoint of `kind` (`None`: every pending one): its base
    /// URL becomes the agent's. Errors: `not_found` (also when nothing of that kind waits);
    /// `invalid_input` for an embedding endpoint of an agent without an embedding model.
    pub async fn accept_endpoint(
        self,
        agent: &AgentId,
        kind: Option<EndpointKind>,
    ) -> Result<AgentEndpoints> {
        let kinds: Vec<EndpointKind> = match kind {
            Some(k) => vec![k],
            None => self
                .engram
                .backend
                .pending_endpoints(agent)
                .await?
                .into_iter()
                .map(|p| p.kind)
                .collect(),
        };
        if kinds.is_empty() {
            return Err(Error::not_found("pending endpoint", agent.as_str()));
        }
        for k in kinds {
            self.engram.backend.accept_endpoint(agent, k).await?;
        }
        self.engram.notify(Notice::AgentChanged {
            agent_id: agent.clone(),
        });
        self.endpoints(agent).await
    }

    /// Drops the agent's pending endpoint of `kind` unused. Errors: `not_found`.
    pub async fn dismiss_endpoint(
        self,
        agent: &AgentId,
        kind: EndpointKind,
    ) -> Result<AgentEndpoints> {
        self.engram.backend.dismiss_endpoint(agent, kind).await?;
        self.engram.notify(Notice::AgentChanged {
            agent_id: agent.clone(),
        });
        self.endpoints(agent).await
    }
}

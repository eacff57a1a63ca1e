//! Import and export of agents: Agent Files (`.af`, Letta's format), Markdown and JSON for
//! people. The format work lives in `engram-agentfile`; this module adds what only the service
//! knows (the built-in tools and their schemas, which providers are configured) and reports.

use crate::Engram;
use engram_agent::tools::{BUILTIN_TOOLS, specs};
use engram_agentfile::{ExportOptions, ImportOptions, snapshot};
use engram_core::{AgentId, BlockId, Error, LoopStyle, Result};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What an import created, and what the user should know about it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct ImportReport {
    /// The new agents, in file order.
    pub agents: Vec<AgentId>,
    /// The new blocks (shared blocks once).
    pub blocks: Vec<BlockId>,
    /// Things kept but not live (custom tools, tool rules, groups), adjusted (raised block
    /// limits, an embedding model that is not configured) or to set up (an unconfigured
    /// provider: the agent was imported, change its model or add the provider).
    pub warnings: Vec<String>,
    /// Per agent, what the file brought that Engram keeps (and exports again) but does not
    /// run: tools of types it lacks, skills, documents, MCP servers, compaction and sleep-time
    /// settings. Empty when everything imported is active.
    pub inactive: Vec<engram_agentfile::Inactive>,
}

impl Engram {
    /// Imports an Agent File (v1 or v2, possibly double-encoded; at most
    /// [`MAX_FILE_BYTES`](engram_agentfile::MAX_FILE_BYTES)) in one transaction.
    ///
    /// Agents whose model provider is not configured are imported anyway, with a warning. An
    /// embedding model whose provider is not configured is dropped (search falls back to BM25;
    /// the original settings stay in the agent's file extras), so the agent can chat at once.
    ///
    /// Errors: `invalid_input` naming what is wrong and its JSON path (e.g. `agent file:
    /// unexpected value at agents[0].messages[3].role: …`); nothing is imported then.
    pub fn import_agent_file(&self, bytes: &[u8]) -> Result<ImportReport> {
        let file = engram_agentfile::parse(bytes)?;
        let default_model = self.default_model()?;
        let opts = ImportOptions {
            builtin_tools: BUILTIN_TOOLS,
            default_model: &default_model,
            now: chrono::Utc::now(),
        };
        let mut conv = engram_agentfile::to_bundle(&file, &opts)?;
        for ia in &mut conv.bundle.agents {
            let a = &mut ia.agent;
            if let Err(e) = self
                .resolver
                .config(a.llm.provider(), a.llm.base_url.as_deref())
            {
                conv.warnings.push(format!(
                    "{}: model {} is not usable yet ({e}); change the agent's model or set up the provider",
                    a.name, a.llm.model
                ));
            }
            if let Some(emb) = a.embedding.clone() {
                let (provider, _) = engram_core::agent::split_handle(&emb.model);
                if let Err(e) = self.resolver.config(provider, emb.base_url.as_deref()) {
                    conv.warnings.push(format!(
                        "{}: embedding model {} is not usable ({e}); archival search uses BM25 only until you set one",
                        a.name, emb.model
                    ));
                    a.embedding = None;
                    if let Some(extras) = ia.extras.as_mut().and_then(|x| x.as_object_mut()) {
                        extras.insert("dropped_embedding".into(), json!(emb));
                    }
                }
            }
        }
        let ids = self.store.import_bundle(&conv.bundle)?;
        tracing::info!(agents = ids.agents.len(), "imported an agent file");
        self.notify(crate::Notice::AgentsChanged);
        Ok(ImportReport {
            agents: ids.agents,
            blocks: ids.blocks,
            warnings: conv.warnings,
            inactive: conv.inactive,
        })
    }

    /// Exports agents as one Agent File v2 (pretty JSON, UTF-8): Letta's fields plus the
    /// `engram` extension with the full history, passages, block history and loop style.
    /// Never contains API keys. Errors: `not_found` for an unknown agent.
    pub fn export_agent_file(&self, agents: &[AgentId]) -> Result<Vec<u8>> {
        let snaps = self.snapshots(agents)?;
        let mut opts = ExportOptions {
            now: chrono::Utc::now(),
            ..ExportOptions::default()
        };
        let names: Vec<String> = BUILTIN_TOOLS.iter().map(|s| (*s).to_owned()).collect();
        for s in &snaps {
            for t in self.store.tools_named(&s.agent.tools)? {
                opts.user_tools.insert(t.name.clone(), t);
            }
            let style = s.agent.loop_style;
            for spec in specs(&names, style) {
                opts.tool_schemas.entry(spec.name.clone()).or_insert_with(|| {
                    json!({"name": spec.name, "description": spec.description, "parameters": spec.parameters})
                });
            }
        }
        if opts.tool_schemas.is_empty() {
            for spec in specs(&names, LoopStyle::ToolLoop) {
                opts.tool_schemas.insert(
                    spec.name.clone(),
                    json!({"name": spec.name, "description": spec.description, "parameters": spec.parameters}),
                );
            }
        }
        let file = engram_agentfile::export_v2(&snaps, &opts);
        to_pretty(&file)
    }

    /// Copies an agent — settings, blocks (as blocks of its own, not shared), history,
    /// archival memory — through an Agent File round trip, so a copy holds exactly what an
    /// export and re-import would. `name` renames the copy (default: the original's name +
    /// " (copy)"). Errors: `not_found`, `invalid_input` for an empty name.
    pub fn clone_agent(&self, agent: &AgentId, name: Option<&str>) -> Result<crate::AgentState> {
        let original = self.store.get_agent(agent)?;
        let name = match name.map(str::trim) {
            Some("") => return Err(Error::invalid("an agent needs a name")),
            Some(n) => n.to_owned(),
            None => format!("{} (copy)", original.name),
        };
        let report =
            self.import_agent_file(&self.export_agent_file(std::slice::from_ref(agent))?)?;
        let copy = report
            .agents
            .first()
            .ok_or_else(|| Error::Internal("the copy imported no agent".into()))?;
        self.update_agent(
            copy,
            &engram_core::AgentPatch {
                name: Some(name),
                ..Default::default()
            },
        )?;
        self.get_agent(copy)
    }

    /// One agent as a Markdown document. Errors: `not_found`.
    pub fn export_markdown(&self, agent: &AgentId) -> Result<String> {
        Ok(engram_agentfile::markdown::render(&snapshot(
            &self.store,
            agent,
        )?))
    }

    /// Agents in Engram's documented JSON shape (see `engram_agentfile::people`), pretty UTF-8.
    /// Errors: `not_found`.
    pub fn export_json(&self, agents: &[AgentId]) -> Result<Vec<u8>> {
        let snaps = self.snapshots(agents)?;
        to_pretty(&engram_agentfile::people::export(
            &snaps,
            chrono::Utc::now(),
        ))
    }

    fn snapshots(&self, agents: &[AgentId]) -> Result<Vec<engram_agentfile::AgentSnapshot>> {
        agents.iter().map(|id| snapshot(&self.store, id)).collect()
    }
}

fn to_pretty<T: Serialize>(v: &T) -> Result<Vec<u8>> {
    let mut out = serde_json::to_vec_pretty(v)
        .map_err(|e| engram_core::Error::Internal(format!("cannot serialize the export: {e}")))?;
    out.push(b'\n');
    Ok(out)
}

//! Import and export of agents: Agent Files (`.af`, Letta's format), Markdown and JSON for
//! people. The format work lives in `engram-agentfile`; this module adds what only the service
//! knows (the built-in tools and their schemas, which providers are configured) and reports.

use crate::Engram;
use crate::rooms::AgentFiles;
use engram_agent::tools::{BUILTIN_TOOLS, specs};
use engram_agentfile::{ExportOptions, ImportOptions, InactiveKind, snapshot};
use engram_core::trust::ImportedToolStatus;
use engram_core::{
    AgentId, BlockId, Error, LoopStyle, PendingEndpoint, Result, ToolId, ToolOrigin, ToolRule,
};
use engram_store::PendingMcpTool;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What an import created, and what the user should know about it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct ImportReport {
    /// The file's name as given (`(unnamed file)` when none was).
    pub file_name: String,
    /// The new agents, in file order.
    pub agents: Vec<AgentId>,
    /// The new blocks (shared blocks once).
    pub blocks: Vec<BlockId>,
    /// Per agent, what the file brings that the user should review: tools with code,
    /// endpoints, tool rules.
    pub details: Vec<ImportedAgent>,
    /// The file's MCP servers (never connected by an import).
    pub mcp_servers: Vec<ImportedMcpServer>,
    /// Things kept but not live (custom tools, tool rules, groups), adjusted (raised block
    /// limits, an embedding model that is not configured) or to set up (an unconfigured
    /// provider: the agent was imported, change its model or add the provider).
    pub warnings: Vec<String>,
    /// Per agent, what the file brought that Engram keeps (and exports again) but does not
    /// run: tools of types it lacks, skills, documents, MCP servers, compaction and sleep-time
    /// settings. Empty when everything imported is active.
    pub inactive: Vec<engram_agentfile::Inactive>,
}

impl ImportReport {
    /// Whether anything waits for the user's approval (an untrusted tool or a pending endpoint).
    pub fn needs_review(&self) -> bool {
        self.details
            .iter()
            .any(|d| !d.endpoints.is_empty() || d.tools.iter().any(|t| !t.trusted))
    }
}

/// What one imported agent brings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct ImportedAgent {
    /// The new agent.
    pub agent_id: AgentId,
    /// Its name.
    pub name: String,
    /// The tools with code the file carries for it.
    pub tools: Vec<ImportedToolReport>,
    /// Base URLs the file asked for, inactive until accepted.
    pub endpoints: Vec<PendingEndpoint>,
    /// Its tool rules (the loop enforces the known types).
    pub tool_rules: Vec<ToolRule>,
}

/// One tool with code from the file, as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct ImportedToolReport {
    /// The stored tool's id.
    pub tool_id: ToolId,
    /// Its name now (differs from `requested_name` when renamed).
    pub name: String,
    /// The name the file gave it.
    pub requested_name: String,
    /// Added, renamed (the name was taken by a different tool), or the same as a stored tool.
    pub status: ImportedToolStatus,
    /// Where the stored tool came from.
    pub origin: ToolOrigin,
    /// The Python source to review.
    pub source_code: String,
    /// SHA-256 of `source_code` (64 hex digits): what trusting it binds to.
    pub source_hash: String,
    /// Whether it may run (false for new code from a file until the user trusts it).
    pub trusted: bool,
}

/// An MCP server entry of the file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct ImportedMcpServer {
    /// Its name (`server_name`), or `?`.
    pub name: String,
    /// Its type as written (`stdio`, `sse`, `streamable_http`, …), or `?`.
    pub kind: String,
    /// Its URL, or its command line for stdio servers (empty when the file gives neither).
    pub target: String,
}

fn mcp_server(v: &serde_json::Value) -> ImportedMcpServer {
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| v[*k].as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    let command = match (&v["command"], &v["args"]) {
        (serde_json::Value::String(c), serde_json::Value::Array(args)) => {
            let args: Vec<&str> = args.iter().filter_map(|a| a.as_str()).collect();
            format!("{c} {}", args.join(" ")).trim().to_owned()
        }
        (serde_json::Value::String(c), _) => c.clone(),
        _ => String::new(),
    };
    let url = text(&["server_url", "url"]);
    let or_unknown = |s: String| if s.is_empty() { "?".to_owned() } else { s };
    ImportedMcpServer {
        name: or_unknown(text(&["server_name", "name"])),
        kind: or_unknown(text(&["type", "server_type"])),
        target: if url.is_empty() { command } else { url },
    }
}

/// The name imports record when the transport gives none.
pub const UNNAMED_FILE: &str = "(unnamed file)";

impl Engram {
    /// [`AgentFiles::export`], with the agents' folders or without them (a shared server has
    /// none yet).
    async fn export_file(&self, agents: &[AgentId], folders: bool) -> Result<Vec<u8>> {
        let snaps = self.snapshots(agents).await?;
        let mut opts = ExportOptions {
            now: chrono::Utc::now(),
            ..ExportOptions::default()
        };
        let names: Vec<String> = BUILTIN_TOOLS.iter().map(|s| (*s).to_owned()).collect();
        for s in &snaps {
            for t in self.backend.tools_named(&s.agent.tools).await? {
                // MCP servers are this machine's (a shared server has none yet).
                if let Some(m) = &t.mcp
                    && !self.is_shared()
                    && let Ok(server) = self.store.tools().find_mcp_server(m.server_id.as_str())
                {
                    opts.mcp_servers.insert(server.id.to_string(), server);
                }
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
        let mut file = engram_agentfile::export_v2(&snaps, &opts);
        if folders && !self.is_shared() {
            self.export_folders(agents, &mut file)?;
        }
        to_pretty(&file)
    }

    async fn snapshots(&self, agents: &[AgentId]) -> Result<Vec<engram_agentfile::AgentSnapshot>> {
        let mut out = Vec::with_capacity(agents.len());
        for id in agents {
            out.push(snapshot(self.backend.as_ref(), id).await?);
        }
        Ok(out)
    }
}

impl AgentFiles<'_> {
    /// Imports an Agent File (v1 or v2, possibly double-encoded; at most
    /// [`MAX_FILE_BYTES`](engram_agentfile::MAX_FILE_BYTES)) in one transaction, as
    /// [`import_named`](Self::import_named) with no file name.
    ///
    /// Errors: as `import_agent_file_named`.
    pub async fn import(self, bytes: &[u8]) -> Result<ImportReport> {
        self.import_named(bytes, UNNAMED_FILE).await
    }

    /// Imports an Agent File in one transaction; `file_name` is recorded as the origin of its
    /// tools and endpoints.
    ///
    /// Nothing the user has changes: the file's tools are stored untrusted (they do not run
    /// until the user trusts their source), a tool whose name is taken by a different tool is
    /// stored under a new name, and the file can attach only built-ins and tools it carries.
    /// Base URLs in Engram's extension wait as pending endpoints. The report lists, per agent,
    /// the tools with code, endpoints and tool rules, and the file's MCP servers.
    ///
    /// Agents whose model provider is not configured are imported anyway, with a warning. An
    /// embedding model whose provider is not configured is dropped (search falls back to BM25;
    /// the original settings stay in the agent's file extras), so the agent can chat at once.
    ///
    /// On a shared server the agents, blocks, history, passages and tools land in its
    /// database; the file's folders and MCP servers are left out with a warning (a shared
    /// server keeps neither yet).
    ///
    /// Errors: `invalid_input` naming what is wrong and its JSON path (e.g. `agent file:
    /// unexpected value at agents[0].messages[3].role: …`); nothing is imported then.
    pub async fn import_named(self, bytes: &[u8], file_name: &str) -> Result<ImportReport> {
        let file = engram_agentfile::parse(bytes)?;
        let default_model = self.engram.models().default_chat()?;
        let file_name = file_name.trim();
        let file_name = if file_name.is_empty() {
            UNNAMED_FILE
        } else {
            file_name
        };
        // The file tools come with a folder: they run when the file brings its folders.
        let has_folders =
            matches!(&file, engram_agentfile::AgentFile::V2(v2) if !v2.sources.is_empty());
        let runnable: Vec<&str> = BUILTIN_TOOLS
            .iter()
            .copied()
            .filter(|t| has_folders || !engram_store::FILE_TOOLS.contains(t))
            .collect();
        let opts = ImportOptions {
            builtin_tools: &runnable,
            default_model: &default_model,
            now: chrono::Utc::now(),
            file_name,
        };
        let mut conv = engram_agentfile::to_bundle(&file, &opts)?;
        // The agent keeps the file's MCP server entries (for the report and export) without
        // their secrets; the servers stored below take them to the keychain.
        for ia in &mut conv.bundle.agents {
            if let Some(list) = ia
                .extras
                .as_mut()
                .and_then(|x| x.get_mut("mcp_servers"))
                .and_then(|l| l.as_array_mut())
            {
                for entry in list {
                    *entry = crate::mcp_import::entry_without_secrets(entry);
                }
            }
        }
        for ia in &mut conv.bundle.agents {
            // A file's endpoint that carries a credential is not kept, not even as pending: it
            // would sit in the database and the next export (keys belong in the keychain).
            let name = ia.agent.name.clone();
            ia.pending_endpoints.retain(|p| {
                let (shown, secret) = engram_mcp::url_secrets::hide(&p.base_url);
                if secret {
                    conv.warnings.push(format!(
                        "{name}: the file's base URL {shown} carries a credential and was not kept; \
                         set the URL without it and put the key in the provider's API key field"
                    ));
                }
                !secret
            });
            let a = &mut ia.agent;
            if let Err(e) = self
                .engram
                .resolver
                .config(a.llm.provider(), a.llm.base_url.as_deref())
            {
                conv.warnings.push(format!(
                    "{}: model {} is not usable yet ({e}); change the agent's model or set up the provider",
                    a.name, a.llm.model
                ));
            }
            let keeps_embedding_url = ia
                .pending_endpoints
                .iter()
                .any(|p| p.kind == engram_core::EndpointKind::Embedding);
            if let Some(emb) = a.embedding.clone() {
                let (provider, name) = engram_core::agent::split_handle(&emb.model);
                // A built-in model has no endpoint: usable when Engram knows it.
                let usable = if provider.eq_ignore_ascii_case(engram_embed::PROVIDER) {
                    self.engram.resolver.local.get(name).map(|_| ())
                } else {
                    self.engram
                        .resolver
                        .config(provider, emb.base_url.as_deref())
                        .map(|_| ())
                };
                if !keeps_embedding_url && let Err(e) = usable {
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
        let ids = self.engram.backend.import_bundle(&conv.bundle).await?;
        let mut folder_warnings = Vec::new();
        let shared = self.engram.is_shared();
        if let engram_agentfile::AgentFile::V2(v2) = &file
            && shared
            && !v2.sources.is_empty()
        {
            folder_warnings.push(format!(
                "the file's {} folder(s) were not imported: a shared server keeps no folders yet",
                v2.sources.len()
            ));
        }
        if let engram_agentfile::AgentFile::V2(v2) = &file
            && !shared
        {
            folder_warnings = self.engram.import_folders(v2, &ids.agents)?;
            if !v2.sources.is_empty() {
                // The folders are live: their documents and the file tools no longer wait.
                conv.inactive.retain(|i| {
                    let live = match i.kind {
                        InactiveKind::Source | InactiveKind::File => true,
                        InactiveKind::Tool => engram_store::FILE_TOOLS.contains(&i.name.as_str()),
                        _ => false,
                    };
                    !live
                });
            }
        }
        tracing::info!(
            agents = ids.agents.len(),
            file = file_name,
            "imported an agent file"
        );
        let mut warnings = conv.warnings;
        warnings.extend(folder_warnings);
        for t in &ids.tools {
            if t.status == ImportedToolStatus::Renamed {
                warnings.push(format!(
                    "tool '{}' of the file was stored as '{}': you already have a different tool named '{}'",
                    t.requested_name, t.tool.name, t.requested_name
                ));
            }
        }
        let details = conv
            .bundle
            .agents
            .iter()
            .zip(&ids.agents)
            .map(|(ia, id)| ImportedAgent {
                agent_id: id.clone(),
                name: ia.agent.name.clone(),
                tools: ids
                    .tools
                    .iter()
                    .filter(|t| ia.agent.tools.contains(&t.requested_name))
                    .map(|t| ImportedToolReport {
                        tool_id: t.tool.id.clone(),
                        name: t.tool.name.clone(),
                        requested_name: t.requested_name.clone(),
                        status: t.status,
                        origin: t.tool.origin.clone(),
                        source_code: t.tool.source_code.clone().unwrap_or_default(),
                        source_hash: t.tool.source_hash.clone().unwrap_or_default(),
                        trusted: t.tool.trusted,
                    })
                    .collect(),
                endpoints: ia.pending_endpoints.clone(),
                tool_rules: ia.agent.tool_rules.clone(),
            })
            .collect();
        // The file's MCP servers are stored inactive: never started until the user accepts.
        // The tools the file's agents used from one are attached to them on acceptance.
        if shared && !conv.mcp_servers.is_empty() {
            warnings.push(format!(
                "the file's {} MCP server(s) were not stored: a shared server keeps no MCP servers yet",
                conv.mcp_servers.len()
            ));
        }
        for entry in conv.mcp_servers.iter().filter(|_| !shared) {
            let Some(server) = crate::mcp_import::server_from_agent_file(entry) else {
                continue;
            };
            let named = entry["server_name"]
                .as_str()
                .or(entry["name"].as_str())
                .unwrap_or_default();
            let pending: Vec<PendingMcpTool> = conv
                .mcp_tools
                .iter()
                .filter(|t| t.server == named)
                .filter_map(|t| {
                    Some(PendingMcpTool {
                        agent_id: ids.agents.get(t.agent)?.clone(),
                        tool_name: t.tool_name.clone(),
                        file_name: t.file_name.clone(),
                        description: t.description.clone(),
                        json_schema: t.json_schema.clone(),
                    })
                })
                .collect();
            match self.engram.store_inactive(server, file_name).and_then(|s| {
                self.engram
                    .store
                    .tools()
                    .add_pending_mcp_tools(&s.id, &pending)
                    .map(|()| s)
            }) {
                Ok(s) => {
                    let then = if pending.is_empty() {
                        String::new()
                    } else {
                        let mut names: Vec<&str> =
                            pending.iter().map(|p| p.tool_name.as_str()).collect();
                        names.dedup();
                        format!(
                            "; then its tools the file's agents use ({}) are attached to them",
                            names.join(", ")
                        )
                    };
                    warnings.push(format!(
                        "MCP server '{}' of the file is stored inactive: accept it in Settings → MCP servers or with `engram mcp accept {}`{then}",
                        s.name, s.name
                    ));
                }
                Err(e) => warnings.push(format!("an MCP server of the file was not stored: {e}")),
            }
        }
        self.engram.notify(crate::Notice::AgentsChanged);
        // Passages arrive without vectors (or with another model's): fill them in, in the
        // background; search works by words meanwhile.
        for agent in &ids.agents {
            self.engram.spawn_backfill(agent);
        }
        if !ids.tools.is_empty() {
            self.engram.notify(crate::Notice::ToolsChanged);
        }
        Ok(ImportReport {
            file_name: file_name.to_owned(),
            agents: ids.agents,
            blocks: ids.blocks,
            details,
            mcp_servers: conv
                .mcp_servers
                .iter()
                .map(|m| mcp_server(&crate::mcp_import::entry_without_secrets(m)))
                .collect(),
            warnings,
            inactive: conv.inactive,
        })
    }

    /// Exports agents as one Agent File v2 (pretty JSON, UTF-8): Letta's fields plus the
    /// `engram` extension with the full history, passages, block history and loop style.
    /// Never contains API keys. Errors: `not_found` for an unknown agent.
    pub async fn export(self, agents: &[AgentId]) -> Result<Vec<u8>> {
        self.engram.export_file(agents, true).await
    }

    /// Copies an agent — settings, blocks (as blocks of its own, not shared), history,
    /// archival memory; its folders are attached to the copy, not copied — through an Agent
    /// File round trip, so a copy holds exactly what an
    /// export and re-import would. `name` renames the copy (default: the original's name +
    /// " (copy)"). Errors: `not_found`, `invalid_input` for an empty name.
    pub async fn duplicate(self, agent: &AgentId, name: Option<&str>) -> Result<crate::AgentState> {
        let original = self.engram.backend.get_agent(agent).await?;
        let name = match name.map(str::trim) {
            Some("") => return Err(Error::invalid("an agent needs a name")),
            Some(n) => n.to_owned(),
            None => format!("{} (copy)", original.name),
        };
        // Folders are shared, not copied: the copy reads the original's, with its open files.
        let report = self
            .import_named(
                &self
                    .engram
                    .export_file(std::slice::from_ref(agent), false)
                    .await?,
                &format!("a copy of {}", original.name),
            )
            .await?;
        let copy = report
            .agents
            .first()
            .ok_or_else(|| Error::Internal("the copy imported no agent".into()))?;
        // A shared server keeps no folders (yet): there is nothing to share.
        if !self.engram.is_shared() {
            for folder in self.engram.store.folders().of_agent(agent)? {
                self.engram.store.folders().attach(copy, &folder.id)?;
            }
            for state in self.engram.store.folders().files_of_agent(agent)? {
                if state.is_open || state.last_accessed_at.is_some() {
                    self.engram
                        .store
                        .folders()
                        .restore_file_state(copy, &state.file_id, &state)?;
                }
            }
        }
        // The endpoints are the original's, which the user already has: keep them live.
        if report.details.iter().any(|d| !d.endpoints.is_empty()) {
            self.engram.trust().accept_endpoint(copy, None).await?;
        }
        self.engram
            .agents()
            .update(
                copy,
                &engram_core::AgentPatch {
                    name: Some(name),
                    ..Default::default()
                },
            )
            .await?;
        self.engram.agents().get(copy).await
    }

    /// One agent as a Markdown document. Errors: `not_found`.
    pub async fn export_markdown(self, agent: &AgentId) -> Result<String> {
        Ok(engram_agentfile::markdown::render(
            &snapshot(self.engram.backend.as_ref(), agent).await?,
        ))
    }

    /// Agents in Engram's documented JSON shape (see `engram_agentfile::people`), pretty UTF-8.
    /// Errors: `not_found`.
    pub async fn export_json(self, agents: &[AgentId]) -> Result<Vec<u8>> {
        let snaps = self.engram.snapshots(agents).await?;
        to_pretty(&engram_agentfile::people::export(
            &snaps,
            chrono::Utc::now(),
        ))
    }
}

fn to_pretty<T: Serialize>(v: &T) -> Result<Vec<u8>> {
    let mut out = serde_json::to_vec_pretty(v)
        .map_err(|e| engram_core::Error::Internal(format!("cannot serialize the export: {e}")))?;
    out.push(b'\n');
    Ok(out)
}

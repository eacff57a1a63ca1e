//! The service layer: the one API every transport calls (desktop IPC, REST, CLI).
//!
//! [`Engram`] owns the store, the keychain and the agent runtime. Transports parse their input,
//! call one method here and map the [`Error`](engram_core::Error) to their wire shape
//! (`{code, message, details?}`); no transport holds logic of its own.

mod agentfile;
mod agentfile_folders;
mod agents;
mod api_token;
mod approval;
mod archival;
mod backfill_state;
mod blocks;
mod built_in_models;
mod chat;
pub mod commands;
mod context_view;
pub mod db_copy;
mod embeddings;
mod env;
mod export;
mod folder_ingest;
mod folder_stream;
#[cfg(test)]
mod folder_stream_tests;
mod folder_sync;
mod folder_watch;
mod folder_watchers;
mod folders;
mod index_builds;
pub mod letta;
mod local_llm;
mod local_model;
mod mcp;
mod mcp_import;
pub mod mcp_memory;
mod mcp_servers;
mod model_catalogue;
mod model_check;
mod model_pull;
pub mod models;
mod notices;
mod origins;
mod prices;
mod providers;
mod pulls;
mod recall;
mod replica_notices;
mod rerank;
mod resolve;
mod rooms;
#[cfg(test)]
mod run_tests;
mod runs;
mod server_link;
mod sleeptime;
mod sleeptime_api;
mod templates;
mod tool_python;
mod tools;
mod trust;
mod turns;
mod url_check;
mod users;

pub use agentfile::{
    ImportReport, ImportedAgent, ImportedMcpServer, ImportedToolReport, UNNAMED_FILE,
};
pub use agents::{AgentState, DEFAULT_EMBEDDING_SETTING};
pub use api_token::REST_TOKEN_SECRET;
pub use chat::{Run, RunRequest};
pub use context_view::{ContextMessage, ContextTool, ContextView};
pub use embeddings::BackfillReport;
pub use engram_agentfile::MAX_FILE_BYTES as AGENT_FILE_MAX_BYTES;
pub use engram_retrieval::tuning::{
    LATE_INTERACTION_CONTEXT_SHARE, LATE_INTERACTION_DEPTH, LATE_INTERACTION_NEIGHBOUR_REACH,
    LATE_INTERACTION_WEIGHT,
};
pub use engram_store::{AgentList, BlockList, PassageList, PassagePage, PassageQuery};
pub use engram_store::{Compaction, MessageWindow, WindowAt};
pub use engram_store::{FILE_TOOLS, FolderPatch};
pub use engram_store::{MessageHit, MessageQuery, SharedBlock, UndoPlan, VectorIndexBuild};
pub use env::EnvLookup;
pub use export::{ExportFile, ExportFormat};
pub use folder_ingest::{FileAdded, check_file_name};
pub use folder_sync::{SyncReport, ignored_name};
pub use folders::MAX_SHOWN_TEXT_BYTES;
pub use index_builds::VectorIndexStatus;
pub use local_llm::{
    DEFAULT_CONTEXT as LOCAL_CHAT_DEFAULT_CONTEXT, LLM_IDLE_ENV, LLM_THREADS_ENV, LLM_WORKER_ENV,
    LOCAL_CHAT_PROVIDER, LocalChatModel,
};
pub use local_model::{
    LOCAL_MODEL_DIR_SETTING, LOCAL_MODEL_IDLE_ENV, LOCAL_MODEL_URL_ENV, LocalModelStatus,
};
pub use mcp::ADDED_BY_USER;
pub use mcp_import::parse_mcp_servers_block;
pub use model_catalogue::{CatalogueModel, HUGGING_FACE, LLM_MIRROR_ENV};
pub use model_check::ModelProblem;
pub use model_pull::CatalogueEntry;
pub use models::{ChatModel, KnownModel, ModelWindow};
pub use notices::{Notice, PullState};
pub use providers::{LocalServer, ProviderInfo, ProviderSetup};
pub use pulls::PullProgress;
pub use recall::{MAX_PAGE, MessagePage, Order};
pub use rerank::{RERANK_MODEL_DIR_SETTING, RERANK_SETTING, RerankerStatus};
pub use rooms::{
    AgentFiles, Agents, Archival, Blocks, Folders, Mcp, MemoryServer, Models, Providers, Recall,
    Runs, Sleeptime, Tools, Trust, Users,
};
pub use runs::{RunEvents, RunningRun};
pub use templates::Template;
pub use tool_python::{LETTA_CLIENT_REQUIREMENT, TOOL_VENV_DIR, ToolPython};
pub use tools::{BlockChange, ToolPatch, ToolSandboxSettings, ToolTrial};
pub use trust::AgentEndpoints;
// Types transports hand on unchanged. Transports depend on this crate and `engram-core` only
// (`tests/it/architecture.rs` checks it), so what they name from the engine crates is re-exported
// here.
pub use engram_agent::{ContextBreakdown, EventSink, RunOutcome};
pub use engram_agent::{ToolApi, ToolApiError, ToolApiGrant, ToolScope};
pub use engram_agentfile::{InactiveKind, MAX_FILE_BYTES};
/// The largest document a folder reads, in **bytes**.
pub use engram_documents::MAX_FILE_BYTES as MAX_DOCUMENT_BYTES;
pub use engram_documents::MAX_STREAM_BYTES as MAX_STREAMED_DOCUMENT_BYTES;
pub use engram_embed::{DEFAULT_MODEL as LOCAL_EMBEDDING_MODEL, MODEL_DIR_ENV};
pub use engram_providers::ProviderKind;

/// The built-in tools (memory, archival, recall, `send_message`): their names and schemas.
pub mod builtin_tools {
    pub use engram_agent::tools::{BUILTIN_TOOLS, default_tools, specs};
}
pub use engram_providers::ModelInfo;
pub use engram_store::{BlockRevert, RunRecord, ToolEdit, TurnRollback};
pub use secrecy::{ExposeSecret, SecretString};
pub use server_link::ServerLink;

use engram_agent::{PythonHost, Runtime};
use engram_core::{Error, Result};
use engram_secrets::SecretStore;
use engram_store::Store;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// The file name of the database inside the data directory.
pub const DB_FILE: &str = "engram.db";

/// How to open Engram.
pub struct Options {
    /// The data directory; `None` uses `ENGRAM_HOME`, else the platform data dir + `engram`.
    pub home: Option<PathBuf>,
    /// Where API keys live (the OS keychain in the apps, memory in tests).
    pub secrets: Arc<dyn SecretStore>,
    /// Environment lookups (`OPENAI_BASE_URL`, `ENGRAM_HOME`, `ENGRAM_PYTHON` — the interpreter
    /// user tools run in, default `python3` on `PATH` —, `ENGRAM_TOOL_TIMEOUT`, seconds a
    /// user tool may run, default 30, and `ENGRAM_BWRAP`, the bubblewrap program of the tool
    /// sandbox, default `bwrap` on `PATH`; `ENGRAM_MCP_TIMEOUT`, seconds one MCP request may
    /// take, default 60; `ENGRAM_MCP_IDLE`, seconds an unused stdio MCP server keeps running,
    /// default 300; `ENGRAM_STEP_TIMEOUT`, seconds one model call of a step may take, streaming
    /// included, default 300; `ENGRAM_LLM_WORKER`, the built-in chat models' worker program,
    /// default `engram-llm-worker` beside the executable; `ENGRAM_LLM_IDLE`, seconds an unused
    /// worker keeps its model loaded, default 300; `ENGRAM_LEASE_TTL`, seconds a run's lease on
    /// its agent lasts unless renewed, default 30, and `ENGRAM_LEASE_WAIT`, seconds a new run
    /// waits for an agent another replica is running before `agent_busy`, default 30).
    pub env: EnvLookup,
}

impl Options {
    /// Options with the real environment and the default secret store.
    pub fn from_env(home: Option<PathBuf>) -> Self {
        Self {
            home,
            secrets: engram_secrets::default_store(),
            env: Arc::new(|k| std::env::var(k).ok().filter(|v| !v.is_empty())),
        }
    }

    /// These options with the secrets a server's secrets file holds (provider keys, the REST
    /// API's token) answered from it, before the store they had (see
    /// [`engram_secrets::FileOverride`] for the file's form and checks).
    /// Errors: `Secrets` when the file cannot be used (unreadable, readable by others, broken).
    pub fn with_secrets_file(mut self, path: &Path) -> Result<Self> {
        self.secrets = Arc::new(engram_secrets::FileOverride::open(path, self.secrets)?);
        Ok(self)
    }
}

/// The data directory: explicit, else `ENGRAM_HOME`, else the platform data dir + `engram`.
pub fn resolve_home(
    explicit: Option<PathBuf>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<PathBuf> {
    explicit
        .or_else(|| env("ENGRAM_HOME").map(PathBuf::from))
        .or_else(|| dirs::data_dir().map(|d| d.join("engram")))
        .ok_or_else(|| Error::invalid("no data directory: set ENGRAM_HOME or pass --home DIR"))
}

/// The app's version and data directory, and whether the local REST API is on.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
#[ts(export)]
pub struct AppInfo {
    /// Engram's version.
    pub version: String,
    /// The data directory in use.
    pub home: String,
    /// The local REST API.
    pub rest_api: RestApiStatus,
    /// The user of a shared server whose token the window uses (`None`: the administrator
    /// or the desktop). Their window hides what only the administrator may change.
    pub user: Option<String>,
    /// What this engine does not offer where it runs (a shared server has no folders yet,
    /// …): the window leaves these out instead of showing an error. Empty on the desktop.
    pub unavailable: Vec<Feature>,
}

/// A part of the app an engine may not offer where it runs (see [`AppInfo::unavailable`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum Feature {
    /// Folders of files agents read (`list_folders`, `agent_files`, …).
    Folders,
    /// MCP servers, and Engram's memory served to AI tools over MCP.
    Mcp,
    /// Built-in models: GGUF files this machine runs, and downloading them.
    BuiltInModels,
    /// Setting up providers from the window (a shared server's replicas take theirs from
    /// their own configuration).
    ProviderSetup,
    /// The local reranker's settings.
    Reranker,
    /// The Python environment user tools run in.
    ToolPython,
}

impl Feature {
    /// What a shared server does not offer yet: each of these reads or writes a replica's
    /// own machine.
    const NOT_SHARED: [Feature; 6] = [
        Feature::Folders,
        Feature::Mcp,
        Feature::BuiltInModels,
        Feature::ProviderSetup,
        Feature::Reranker,
        Feature::ToolPython,
    ];
}

/// Whether the local REST API (for `letta-client` scripts) is being served.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
#[ts(export)]
pub struct RestApiStatus {
    /// Serving or not.
    pub enabled: bool,
    /// `http://127.0.0.1:PORT` while serving.
    pub url: Option<String>,
}

/// Engram's engine, opened on one data directory. Cheap to share behind an `Arc`.
pub struct Engram {
    home: PathBuf,
    /// This machine's SQLite database: everything on the desktop; on a shared server only
    /// what belongs to this replica (its providers' settings, downloaded models).
    store: Store,
    /// Agents, their memory, runs, tools and users through the storage interface: the same
    /// SQLite database on the desktop, a server's PostgreSQL when [`shared`](Self::shared).
    backend: Arc<dyn engram_store_api::Backend>,
    /// Whether `backend` is a database other replicas share (see [`Engram::open_shared`]).
    shared: bool,
    /// On a shared server: where this replica's notices go and the others' come from.
    link: Option<Arc<replica_notices::Link>>,
    secrets: Arc<dyn SecretStore>,
    resolver: Arc<resolve::Resolver>,
    runtime: Runtime,
    python: Arc<PythonHost>,
    /// Whether `ENGRAM_PYTHON` chose the interpreter (then a Python Engram sets up is not used).
    python_from_env: bool,
    /// Every run in flight (or waiting its turn): cancel tokens, and what each streamed so
    /// far for windows that attach late.
    runs: Arc<runs::Registry>,
    notices: tokio::sync::broadcast::Sender<Notice>,
    /// One connection per MCP server, shared by every agent.
    mcp: Arc<engram_mcp::Hub>,
    /// Agents whose missing vectors are being filled in now (one backfill per agent).
    backfills: Arc<backfill_state::Backfills>,
    /// Agents whose embedding model failed since it last worked: the next success starts a
    /// backfill of what was stored meanwhile (a search that works does not look otherwise).
    embedding_outages: Arc<Mutex<std::collections::HashSet<engram_core::AgentId>>>,
    /// How long an agent's vector index stays in memory unsearched: the built-in model's idle
    /// time (`ENGRAM_LOCAL_MODEL_IDLE_SECS`, default 300 s), so both go on one schedule.
    index_idle: std::time::Duration,
    /// Sleep-time passes: when they run, one per agent at a time, within budgets.
    sleeper: sleeptime::Sleeper,
    /// The REST API token of this run on a machine without a keychain (see `rest_api_token`).
    run_token: Arc<std::sync::OnceLock<secrecy::SecretString>>,
    /// Catalogue models downloading now, and the last failures.
    pulls: Arc<pulls::Pulls>,
    /// Folders kept in step with a directory on disk by this process.
    watchers: folder_watchers::Watchers,
    /// Files being read now, by folder and name, with what cancels their reading.
    file_reads: Mutex<
        std::collections::HashMap<
            (engram_core::FolderId, String),
            tokio_util::sync::CancellationToken,
        >,
    >,
    /// The engine's own `Arc` (every engine lives in the one [`Engram::open`] made), for work
    /// that outlives a call: a run's task, a folder's watcher, a download.
    me: std::sync::Weak<Engram>,
}

#[cfg(test)]
impl Engram {
    /// An Engram over the data directory `dir` with an in-memory keychain and no environment
    /// variables: what the unit tests of this crate open.
    pub(crate) fn open_for_test(dir: &std::path::Path) -> Arc<Self> {
        Self::open(Options {
            home: Some(dir.to_owned()),
            secrets: Arc::new(engram_secrets::MemoryStore::default()),
            env: Arc::new(|_| None),
        })
        .expect("open")
    }
}

impl Engram {
    /// Opens (creating if needed) the data directory and its database. The engine comes in
    /// an `Arc`: its rooms start work (runs, watchers, downloads) that holds on to it.
    pub fn open(options: Options) -> Result<Arc<Self>> {
        Self::open_on(options, None, None)
    }

    /// Opens Engram as one replica of a server whose agents, memory, runs, tools and users
    /// live in `backend` (PostgreSQL), shared with the other replicas. The data directory
    /// keeps only this replica's own settings (providers, downloaded models). Calls that
    /// have not moved onto the storage interface yet refuse with `not_available` rather than
    /// read or write this replica's own database (see `docs/postgres.md`). Changes to shared
    /// data are announced to the other replicas on `bus`, and theirs reach this one's
    /// [`notices`](Self::notices) (call it inside a tokio runtime to hear them).
    /// Errors: as [`open`](Self::open).
    pub fn open_shared(
        options: Options,
        backend: Arc<dyn engram_store_api::Backend>,
        bus: Arc<dyn engram_store_api::NoticeBus>,
    ) -> Result<Arc<Self>> {
        Self::open_on(options, Some(backend), Some(bus))
    }

    fn open_on(
        options: Options,
        shared: Option<Arc<dyn engram_store_api::Backend>>,
        bus: Option<Arc<dyn engram_store_api::NoticeBus>>,
    ) -> Result<Arc<Self>> {
        let home = resolve_home(options.home, &*options.env)?;
        // Private to the user: 0700 when Engram creates it (DESIGN.md §8b).
        engram_store::private::create_dir(&home)?;
        let store = Store::open(&home.join(DB_FILE))?;
        let python = Arc::new(python_host(&*options.env, &home));
        let python_from_env = (options.env)("ENGRAM_PYTHON").is_some();
        let env = options.env.clone();
        let notices = notices::channel();
        index_builds::forward(&store, notices.clone());
        let local = Arc::new(local_model::LocalModels::new(
            home.clone(),
            store.clone(),
            options.env.clone(),
            notices.clone(),
        ));
        let rerankers = rerank::Rerankers::new(
            store.clone(),
            options.env.clone(),
            notices.clone(),
            local.clone(),
        );
        let llms = local_llm::LocalLlms::new(store.clone(), options.env.clone());
        let resolver = Arc::new(resolve::Resolver::new(
            store.clone(),
            options.secrets.clone(),
            options.env,
            local,
            llms,
            rerankers,
        ));
        let seconds = |name: &str, default: std::time::Duration| {
            env(name)
                .and_then(|t| t.trim().parse::<f64>().ok())
                .filter(|t| t.is_finite() && *t > 0.0)
                .map(std::time::Duration::from_secs_f64)
                .unwrap_or(default)
        };
        let index_idle = seconds(
            local_model::LOCAL_MODEL_IDLE_ENV,
            engram_embed::local::DEFAULT_IDLE,
        );
        let mcp = Arc::new(engram_mcp::Hub::new(
            seconds("ENGRAM_MCP_TIMEOUT", engram_mcp::Hub::DEFAULT_TIMEOUT),
            seconds("ENGRAM_MCP_IDLE", engram_mcp::Hub::DEFAULT_IDLE),
        ));
        let bridge = Arc::new(mcp::McpBridge {
            store: store.clone(),
            secrets: options.secrets.clone(),
            hub: mcp.clone(),
            notices: notices.clone(),
        });
        let defaults = engram_agent::LoopSettings::default();
        let loop_settings = engram_agent::LoopSettings {
            step_time_limit: seconds(
                "ENGRAM_STEP_TIMEOUT",
                engram_agent::LoopSettings::DEFAULT_STEP_TIME_LIMIT,
            ),
            lease_ttl: seconds("ENGRAM_LEASE_TTL", defaults.lease_ttl),
            lease_wait: seconds("ENGRAM_LEASE_WAIT", defaults.lease_wait),
            ..defaults
        };
        // Passes get a runtime of their own: they never take an agent's turn, so a chat is
        // never queued behind one.
        let backend: Arc<dyn engram_store_api::Backend> = match &shared {
            Some(backend) => backend.clone(),
            None => Arc::new(store.clone()),
        };
        // Folders are still this machine's alone: a shared server's agents have none yet.
        let folders: Option<Arc<dyn engram_store_api::FolderStore>> = match &shared {
            Some(_) => None,
            None => Some(Arc::new(store.clone())),
        };
        let runtime = || {
            Runtime::on_backend(
                backend.clone(),
                folders.clone(),
                resolver.clone(),
                loop_settings,
            )
            .with_python(python.clone())
        };
        let pass_runtime = Arc::new(runtime());
        let runs = Arc::new(runs::Registry::default());
        let link = bus.map(|bus| {
            Arc::new(replica_notices::Link::join(
                bus,
                notices.clone(),
                runs.clone(),
            ))
        });
        let announce = {
            let (notices, link) = (notices.clone(), link.clone());
            Arc::new(move |pass: &engram_core::SleeptimePass| {
                let agent_id = pass.agent_id.clone();
                let send = |n| announce(link.as_deref(), &notices, n);
                send(Notice::SleeptimePass {
                    agent_id: agent_id.clone(),
                    pass_id: pass.id.clone(),
                    status: pass.status,
                    reason: pass.reason.clone(),
                });
                if !pass.changes.is_empty() {
                    send(Notice::MemoryChanged {
                        agent_id: agent_id.clone(),
                    });
                    send(Notice::ArchivalChanged { agent_id });
                }
            })
        };
        let sleeper = sleeptime::Sleeper::new(backend.clone(), pass_runtime, announce);
        let main_runtime = runtime().with_mcp(bridge);
        let engram = Arc::new_cyclic(|me| Self {
            me: me.clone(),
            sleeper,
            run_token: Arc::default(),
            pulls: pulls::Pulls::new(env.clone()),
            runtime: main_runtime,
            mcp,
            python,
            python_from_env,
            resolver,
            home,
            shared: shared.is_some(),
            link,
            backend,
            store,
            secrets: options.secrets,
            runs,
            notices,
            backfills: Arc::default(),
            embedding_outages: Arc::default(),
            index_idle,
            watchers: folder_watchers::Watchers::default(),
            file_reads: Mutex::default(),
        });
        engram.secure_mcp_urls();
        engram.clear_stored_credentials();
        Ok(engram)
    }

    /// Gives user tools a way to call Engram's API back while they run (the tutorials'
    /// `letta_client` pattern); installed once by each transport that runs agents (see
    /// `engram_server::tool_api::install`). A later call replaces the earlier one.
    pub fn set_tool_api(&self, api: Arc<dyn engram_agent::ToolApi>) {
        self.python.set_tool_api(api);
    }

    /// The data directory.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// What the "About" screen shows; `rest_api` is the transport's to fill in (whether the
    /// local REST API is being served, and where).
    pub fn app_info(&self, rest_api: RestApiStatus) -> AppInfo {
        AppInfo {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            home: self.home.display().to_string(),
            rest_api,
            user: None,
            unavailable: if self.shared {
                Feature::NOT_SHARED.to_vec()
            } else {
                Vec::new()
            },
        }
    }

    /// Moves everything committed into the database file and empties its write-ahead log, so
    /// a process that is about to exit leaves one self-contained file (see
    /// [`Store::checkpoint`]). Errors: `Storage` if SQLite cannot checkpoint.
    pub fn checkpoint(&self) -> Result<()> {
        self.store.checkpoint().map(|_| ())
    }

    /// Gives back memory the database holds but does not need (SQLite's page cache, and the
    /// vector indexes of agents not searched for as long as the built-in model stays loaded
    /// unused), for a long-running server between bursts of work. Errors: `Storage`.
    pub fn release_memory(&self) -> Result<()> {
        self.store.release_memory_after(self.index_idle)
    }

    /// The engine's `Arc`, for work that outlives the call that starts it. Errors:
    /// `Internal` only while the engine is being dropped (no caller can hold it then).
    pub(crate) fn handle(&self) -> Result<Arc<Engram>> {
        self.me
            .upgrade()
            .ok_or_else(|| engram_core::Error::Internal("the engine is shutting down".into()))
    }

    /// Subscribes to notices from now on. Every transport's changes arrive here.
    pub fn notices(&self) -> broadcast::Receiver<Notice> {
        self.notices.subscribe()
    }

    /// Announces a change; nobody listening is fine.
    pub(crate) fn notify(&self, notice: Notice) {
        announce(self.link.as_deref(), &self.notices, notice);
    }

    /// Announces a change to a block to every agent it is attached to.
    pub(crate) async fn notify_block(&self, block: &engram_core::BlockId) {
        let agents = self.backend.block_agents(block).await;
        for agent_id in agents.unwrap_or_default() {
            self.notify(Notice::MemoryChanged { agent_id });
        }
    }

    /// Whether the engine can serve: its database answers a read. For a server's health check
    /// (`GET /healthz`), which a load balancer in front of replicas polls.
    ///
    /// Errors: `storage` when the database does not answer.
    pub async fn health(&self) -> Result<()> {
        self.store.ping()?;
        if self.shared {
            // Any read that reaches the shared database.
            self.backend.get_setting("health").await?;
        }
        Ok(())
    }

    /// Whether this engine is one replica of a shared server (see [`open_shared`](Self::open_shared)).
    pub fn is_shared(&self) -> bool {
        self.shared
    }

    /// This machine's database, for `what`: a call that has not moved onto the storage
    /// interface yet. Errors: `not_available` on a shared server, where this database holds
    /// none of the agents.
    pub(crate) fn local(&self, what: &str) -> Result<&Store> {
        if self.shared {
            return Err(Error::NotAvailable(format!(
                "{what} is not available on a shared server yet"
            )));
        }
        Ok(&self.store)
    }

    /// The store, for whole-system tests and benchmarks that check what was written. Transports
    /// never call it: they use the service's methods (`tests/it/architecture.rs` checks).
    pub fn store(&self) -> &Store {
        &self.store
    }
}

/// The Python host of user tools, as the environment configures it.
/// Tools run in `ENGRAM_PYTHON`, else the Python Engram set up in the data directory, else
/// `python3` on `PATH`.
fn python_host(env: &dyn Fn(&str) -> Option<String>, home: &Path) -> PythonHost {
    let managed = tool_python::venv_python(&home.join(TOOL_VENV_DIR));
    let program = env("ENGRAM_PYTHON").unwrap_or_else(|| {
        if managed.exists() {
            managed.to_string_lossy().into_owned()
        } else {
            "python3".to_owned()
        }
    });
    let timeout = env("ENGRAM_TOOL_TIMEOUT")
        .and_then(|t| t.trim().parse::<f64>().ok())
        .filter(|t| t.is_finite() && *t > 0.0)
        .map(std::time::Duration::from_secs_f64)
        .unwrap_or(engram_tools::PythonRunner::DEFAULT_TIMEOUT);
    let host = PythonHost::new(program, timeout);
    match env("ENGRAM_BWRAP") {
        Some(bwrap) => host.with_bwrap(bwrap),
        None => host,
    }
}

/// Sends `notice` to this engine's windows and, on a shared server, to the other replicas'
/// (through `link`). Nobody listening is fine.
fn announce(
    link: Option<&replica_notices::Link>,
    notices: &broadcast::Sender<Notice>,
    notice: Notice,
) {
    if let Some(link) = link {
        link.publish(&notice);
    }
    let _ = notices.send(notice);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_dir_is_explicit_then_engram_home_then_the_platform_dir() {
        let env = |k: &str| (k == "ENGRAM_HOME").then(|| "/from/env".to_owned());
        let none = |_: &str| None;
        assert_eq!(
            resolve_home(Some("/explicit".into()), &env).unwrap(),
            PathBuf::from("/explicit")
        );
        assert_eq!(
            resolve_home(None, &env).unwrap(),
            PathBuf::from("/from/env")
        );
        let platform = resolve_home(None, &none).unwrap();
        assert!(platform.ends_with("engram"), "{}", platform.display());
    }
}

//! Settings commands: app info, model providers and the default model, the model picker's
//! context windows, model prices, the Python tools run in, and MCP servers.

use super::{Access, AppCall, Caller, blocking, require_user};
use crate::{
    AppInfo, ChatModel, Engram, LocalServer, ModelInfo, ModelWindow, ProviderInfo, ProviderSetup,
    ToolPython,
};
use engram_core::{
    AgentAccess, AgentId, McpServer, ModelPrice, NewMcpServer, Result, RunId, Tool, UsageCost,
};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use ts_rs::TS;

/// `app_info`: the version, data directory and REST API state.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct AppInfoArgs {}

impl AppCall for AppInfoArgs {
    const NAME: &'static str = "app_info";
    const ACCESS: Access = Access::Scoped;
    type Output = AppInfo;
    async fn call(self, e: &Arc<Engram>, caller: &Caller) -> Result<AppInfo> {
        let mut info = e.app_info(caller.rest_api.clone());
        if let Some(user) = &caller.user {
            // The server's data directory is the administrator's business.
            info.home = String::new();
            info.user = Some(user.name.clone());
        }
        Ok(info)
    }
}

/// `set_rest_api` (desktop only, answered by the shell): serves the local REST API on
/// 127.0.0.1:8283, or stops it, and remembers the choice.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct SetRestApiArgs {
    /// Serve it (true) or stop it.
    pub enabled: bool,
}

/// `connect_server` (desktop only, answered by the shell): the window works on the engine of
/// a remote `engram serve` from now on, and after a restart, until `disconnect_server`. The
/// token goes to the keychain; the address and fingerprint to this computer's settings.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ConnectServerArgs {
    /// The server's address, `https://name:port` (as `engram serve` prints it; a `#token=…`
    /// in it is used when `token` is empty).
    pub url: String,
    /// The bearer token: the server's (`engram serve --show-token`) or a user's
    /// (`engram user token NAME`).
    #[serde(default)]
    #[ts(optional)]
    pub token: Option<String>,
    /// The SHA-256 of the server's certificate (`AB:CD:…`), for a self-signed one: only that
    /// certificate is trusted.
    #[serde(default)]
    #[ts(optional)]
    pub fingerprint: Option<String>,
}

/// `disconnect_server` (desktop only): back to this computer's engine; the server's address
/// and token are forgotten. Answers `null`.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct DisconnectServerArgs {}

/// `server_connection` (desktop only): the server the window works on, or `null` for this
/// computer's engine.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ServerConnectionArgs {}

/// The remote server a desktop window works on.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct ServerConnection {
    /// Its address, e.g. `https://desk.lan:8283/`.
    pub url: String,
    /// Its host name, how the window names it (`desk.lan`).
    pub host: String,
    /// The user the token belongs to; `None` for the server's administrator token.
    pub user: Option<String>,
    /// The pinned certificate fingerprint, if any.
    pub fingerprint: Option<String>,
    /// The server's Engram version, once reached.
    pub version: Option<String>,
    /// Whether the window works on it now; `false` when it could not be reached at start
    /// (see `error`) — the window then shows this computer's engine until it is reached.
    pub connected: bool,
    /// Why it could not be reached, when it was not.
    pub error: Option<String>,
}

/// `list_providers`: the configured model providers (never their keys).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ListProvidersArgs {}

impl AppCall for ListProvidersArgs {
    const NAME: &'static str = "list_providers";
    type Output = Vec<ProviderInfo>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.providers().list()
    }
}

/// What the provider form sends: the settings, and the key once (it goes to the keychain and
/// never comes back).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct ProviderForm {
    #[serde(flatten)]
    settings: ProviderSetup,
    /// The API key; empty or absent keeps the stored one.
    api_key: Option<String>,
}

/// `set_provider`: saves a provider; its key goes to the keychain.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct SetProviderArgs {
    setup: ProviderForm,
}

impl AppCall for SetProviderArgs {
    const NAME: &'static str = "set_provider";
    type Output = ProviderInfo;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<ProviderInfo> {
        let mut settings = self.setup.settings;
        settings.api_key = self.setup.api_key.filter(|k| !k.is_empty()).map(Into::into);
        e.providers().set(settings)
    }
}

/// `delete_provider`: removes a provider and its key.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct DeleteProviderArgs {
    name: String,
}

impl AppCall for DeleteProviderArgs {
    const NAME: &'static str = "delete_provider";
    type Output = ();
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<()> {
        e.providers().delete(&self.name)
    }
}

/// `test_provider`: asks the provider for its models (the connection test).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct TestProviderArgs {
    name: String,
}

impl AppCall for TestProviderArgs {
    const NAME: &'static str = "test_provider";
    type Output = Vec<ModelInfo>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.providers().test(&self.name).await
    }
}

/// `detect_local_providers`: Ollama and LM Studio servers answering on their default ports.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct DetectLocalProvidersArgs {}

impl AppCall for DetectLocalProvidersArgs {
    const NAME: &'static str = "detect_local_providers";
    type Output = Vec<LocalServer>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        Ok(e.providers().detect_local().await)
    }
}

/// `list_local_models`: the GGUF chat models registered on this computer (`local/<name>`),
/// which run inside Engram without any server.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ListLocalModelsArgs {}

impl AppCall for ListLocalModelsArgs {
    const NAME: &'static str = "list_local_models";
    type Output = Vec<crate::LocalChatModel>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.models().list_local()
    }
}

/// `add_local_model`: registers a GGUF chat model file on this computer as `local/<name>`
/// (the file stays where it is; Engram runs it with llama.cpp in a worker of its own). Only
/// the user may: it makes Engram run a program on a file they name.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct AddLocalModelArgs {
    /// The `.gguf` file's path on the machine Engram runs on.
    path: String,
    /// The context size to run it with, in tokens (default: its training context, at most
    /// 4,096).
    context_window: Option<u32>,
}

impl AppCall for AddLocalModelArgs {
    const NAME: &'static str = "add_local_model";
    type Output = crate::LocalChatModel;
    async fn call(self, e: &Arc<Engram>, caller: &Caller) -> Result<Self::Output> {
        require_user(caller.authenticated, "adding a built-in model")?;
        let path = std::path::PathBuf::from(self.path.trim());
        let engram = e.clone();
        blocking("add_local_model", move || {
            engram.models().add_local(&path, self.context_window)
        })
        .await
    }
}

/// `remove_local_model`: forgets a built-in model (`local/` optional) and stops its worker;
/// the file stays.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct RemoveLocalModelArgs {
    name: String,
}

impl AppCall for RemoveLocalModelArgs {
    const NAME: &'static str = "remove_local_model";
    type Output = ();
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<()> {
        e.models().remove_local(&self.name).await
    }
}

/// `model_catalogue`: the recommended GGUF chat models Engram can download, each with its
/// size, memory needed, licence and tool-calling quality, and where it stands here
/// (downloaded, registered, a resumable part, a download running, the last failure).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ModelCatalogueArgs {}

impl AppCall for ModelCatalogueArgs {
    const NAME: &'static str = "model_catalogue";
    type Output = Vec<crate::CatalogueEntry>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.models().catalogue()
    }
}

/// `pull_model`: starts downloading a catalogue model (resuming an unfinished download); its
/// progress and end arrive as `chat_model_pull` notices, and once verified it is registered
/// as `local/<name>`. Only the user may: it writes gigabytes to this computer.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct PullModelArgs {
    /// The catalogue model's name.
    name: String,
}

impl AppCall for PullModelArgs {
    const NAME: &'static str = "pull_model";
    type Output = ();
    async fn call(self, e: &Arc<Engram>, caller: &Caller) -> Result<()> {
        require_user(caller.authenticated, "downloading a built-in model")?;
        e.models().start_pull(&self.name)
    }
}

/// `cancel_model_pull`: stops a catalogue model's download, keeping what arrived for a
/// resume; `false` when none was running.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct CancelModelPullArgs {
    /// The catalogue model's name.
    name: String,
}

impl AppCall for CancelModelPullArgs {
    const NAME: &'static str = "cancel_model_pull";
    type Output = bool;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<bool> {
        Ok(e.models().cancel_pull(&self.name))
    }
}

/// `delete_downloaded_model`: deletes a downloaded catalogue model's file (and any
/// unfinished part) and forgets its registration.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct DeleteDownloadedModelArgs {
    /// The catalogue model's name.
    name: String,
}

impl AppCall for DeleteDownloadedModelArgs {
    const NAME: &'static str = "delete_downloaded_model";
    type Output = ();
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<()> {
        e.models().delete_downloaded(&self.name).await
    }
}

/// `retry_embedding_model`: tries the agent's built-in embedding model again now (its
/// download, when that failed; a retry by hand does not wait for the back-off), then fills in
/// the vectors stored without one meanwhile. `null` when the agent's model is not a built-in
/// one (nothing to download).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct RetryEmbeddingModelArgs {
    agent_id: AgentId,
}

impl AppCall for RetryEmbeddingModelArgs {
    const NAME: &'static str = "retry_embedding_model";
    type Output = Option<crate::LocalModelStatus>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.models().retry_embedding_model(&self.agent_id).await
    }
}

/// `get_default_model`: the model handle new agents get.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct GetDefaultModelArgs {}

impl AppCall for GetDefaultModelArgs {
    const NAME: &'static str = "get_default_model";
    // New agents in a user's window start on the server's default model too.
    const ACCESS: Access = Access::Scoped;
    type Output = String;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<String> {
        e.models().default_chat()
    }
}

/// `set_default_model`: sets the model handle new agents get (`provider/model`).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct SetDefaultModelArgs {
    handle: String,
}

impl AppCall for SetDefaultModelArgs {
    const NAME: &'static str = "set_default_model";
    type Output = ();
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<()> {
        e.models().set_default_chat(&self.handle)
    }
}

/// `chat_models`: the provider's chat models with their context windows (embedding models
/// left out).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ChatModelsArgs {
    /// The provider's name.
    name: String,
}

impl AppCall for ChatModelsArgs {
    const NAME: &'static str = "chat_models";
    type Output = Vec<ChatModel>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.models().chat(&self.name).await
    }
}

/// `model_windows`: the context windows stored per model.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ModelWindowsArgs {}

impl AppCall for ModelWindowsArgs {
    const NAME: &'static str = "model_windows";
    type Output = Vec<ModelWindow>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.models().windows().await
    }
}

/// `set_model_window`: stores a model's context window.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct SetModelWindowArgs {
    /// The model handle (`provider/model`).
    handle: String,
    /// In tokens.
    context_window: u32,
}

impl AppCall for SetModelWindowArgs {
    const NAME: &'static str = "set_model_window";
    type Output = ();
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<()> {
        e.models()
            .set_window(&self.handle, self.context_window)
            .await
    }
}

/// `model_prices`: every known price (the built-in table with the user's prices over it).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ModelPricesArgs {}

impl AppCall for ModelPricesArgs {
    const NAME: &'static str = "model_prices";
    type Output = Vec<ModelPrice>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.models().prices().await
    }
}

/// `set_model_price`: sets the user's price of a model (US dollars per million tokens).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct SetModelPriceArgs {
    price: ModelPrice,
}

impl AppCall for SetModelPriceArgs {
    const NAME: &'static str = "set_model_price";
    type Output = ();
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<()> {
        e.models().set_price(&self.price).await
    }
}

/// `delete_model_price`: removes the user's price of a model (a built-in one applies again);
/// answers whether there was one.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct DeleteModelPriceArgs {
    model: String,
}

impl AppCall for DeleteModelPriceArgs {
    const NAME: &'static str = "delete_model_price";
    type Output = bool;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<bool> {
        e.models().delete_price(&self.model).await
    }
}

/// `usage_cost`: tokens and cost of an agent, or of one of its runs.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct UsageCostArgs {
    agent_id: AgentId,
    /// Only this run; the whole agent when absent.
    run_id: Option<RunId>,
}

impl AppCall for UsageCostArgs {
    const NAME: &'static str = "usage_cost";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = UsageCost;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<UsageCost> {
        e.models()
            .usage_cost(&self.agent_id, self.run_id.as_ref())
            .await
    }
}

/// `tool_python`: which Python tools run in, and whether it has letta-client.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ToolPythonArgs {}

impl AppCall for ToolPythonArgs {
    const NAME: &'static str = "tool_python";
    type Output = ToolPython;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<ToolPython> {
        let e = e.clone();
        blocking("python status", move || Ok(e.tools().python())).await
    }
}

/// `set_up_tool_python`: sets up a Python for tools in the data directory with letta-client
/// (progress arrives as `python_setup` notices). pip runs the install code of what it
/// installs with the user's rights, so only the user may ask.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct SetUpToolPythonArgs {
    /// What to install instead of letta-client (a pip requirement).
    requirement: Option<String>,
}

impl AppCall for SetUpToolPythonArgs {
    const NAME: &'static str = "set_up_tool_python";
    type Output = ToolPython;
    async fn call(self, e: &Arc<Engram>, caller: &Caller) -> Result<ToolPython> {
        require_user(caller.authenticated, "setting up the tools' Python")?;
        let e = e.clone();
        blocking("python setup", move || {
            e.tools()
                .set_up_python(self.requirement.as_deref(), &mut |_| {})
        })
        .await
    }
}

/// `list_mcp_servers`: every configured MCP server, by name.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ListMcpServersArgs {}

impl AppCall for ListMcpServersArgs {
    const NAME: &'static str = "list_mcp_servers";
    type Output = Vec<McpServer>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.mcp().list()
    }
}

/// `add_mcp_server`: adds a server the user configured (secrets go to the keychain). A stdio
/// server is a program run with the user's rights, so only the user may add one.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct AddMcpServerArgs {
    server: NewMcpServer,
}

impl AppCall for AddMcpServerArgs {
    const NAME: &'static str = "add_mcp_server";
    type Output = McpServer;
    async fn call(self, e: &Arc<Engram>, caller: &Caller) -> Result<McpServer> {
        require_user(caller.authenticated, "adding an MCP server")?;
        e.mcp().add_server(self.server)
    }
}

/// `remove_mcp_server`: removes a server, its tools and its secrets.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct RemoveMcpServerArgs {
    /// Server id or name.
    server: String,
}

impl AppCall for RemoveMcpServerArgs {
    const NAME: &'static str = "remove_mcp_server";
    type Output = ();
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<()> {
        e.mcp().remove(&self.server).await
    }
}

/// `set_mcp_server_active`: accepts (or deactivates) a server. Accepting lets it run, so only
/// the user may.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct SetMcpServerActiveArgs {
    /// Server id or name.
    server: String,
    active: bool,
}

impl AppCall for SetMcpServerActiveArgs {
    const NAME: &'static str = "set_mcp_server_active";
    type Output = McpServer;
    async fn call(self, e: &Arc<Engram>, caller: &Caller) -> Result<McpServer> {
        if self.active {
            require_user(caller.authenticated, "accepting an MCP server")?;
        }
        e.mcp().set_active(&self.server, self.active).await
    }
}

/// `import_mcp_servers`: stores the servers of a pasted `mcpServers` block, inactive.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct ImportMcpServersArgs {
    /// The `mcpServers` JSON block as pasted.
    text: String,
    /// Where it came from (e.g. a file name); default `pasted config`.
    source: Option<String>,
}

impl AppCall for ImportMcpServersArgs {
    const NAME: &'static str = "import_mcp_servers";
    type Output = Vec<McpServer>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        let source = self.source.as_deref().unwrap_or("pasted config");
        e.mcp().import(&self.text, source)
    }
}

/// `list_mcp_tools`: connects to the server and lists (and stores) its tools.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct ListMcpToolsArgs {
    /// Server id or name.
    server: String,
}

impl AppCall for ListMcpToolsArgs {
    const NAME: &'static str = "list_mcp_tools";
    type Output = Vec<Tool>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.mcp().list_tools(&self.server).await
    }
}

/// `stored_mcp_tools`: the server's tools as last listed, without contacting it.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct StoredMcpToolsArgs {
    /// Server id or name.
    server: String,
}

impl AppCall for StoredMcpToolsArgs {
    const NAME: &'static str = "stored_mcp_tools";
    type Output = Vec<Tool>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.mcp().stored_tools(&self.server)
    }
}

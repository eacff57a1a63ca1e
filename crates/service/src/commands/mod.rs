//! The window's commands, each defined once: an argument struct (JSON
//! object of snake_case fields, deriving `Deserialize` and `ts_rs::TS`), its result type, and
//! the one function that answers it over [`Engram`].
//!
//! A command is one of:
//! - a **call** ([`AppCall`]): arguments in, one result out. Both transports answer every call
//!   with one generic dispatch over [`call`]: `engram serve` at `POST /app/{name}`, the desktop
//!   shell from its invoke handler. Adding one touches its definition here (and the UI that
//!   uses it).
//! - a **run** ([`AppRun`]): arguments name an agent and a [`RunRequest`]; the transports
//!   stream the run's events (Server-Sent Events, a Tauri `Channel`) through [`run_request`].
//! - an **adapter**: answered by hand in a transport because it needs what only that
//!   transport has (the desktop's REST API switch and native dialogs, joining a run in flight).
//!   Its arguments and result are still declared here, so the UI's types cover it.
//!
//! [`list`] is every command in the order of `engram_core::commands::APP_COMMANDS` (which the
//! desktop's build script reads as plain data to make one permission per command; a test
//! checks the two agree), and [`typescript`] writes the UI's `Commands` map from it
//! (`ui/src/lib/bindings/commands.ts`, by `cargo test -p engram-service export_bindings`).

mod agents;
mod folders;
mod mcp_memory;
mod memory;
mod search;
mod settings;
mod sleeptime;
mod tools;
mod ts_type;
mod turns;
mod typescript;

pub use agents::*;
pub use folders::*;
pub use mcp_memory::*;
pub use memory::*;
pub use search::*;
pub use settings::*;
pub use sleeptime::*;
pub use tools::*;
pub use turns::*;
pub use typescript::typescript;

use crate::{Engram, RestApiStatus, RunRequest};
use engram_core::commands::CommandKind;
use engram_core::{AgentId, Error, Result};
use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::sync::{Arc, LazyLock};
use ts_rs::TS;

/// Who is calling, as far as a command needs to know.
#[derive(Clone, Debug, Default)]
pub struct Caller {
    /// The local REST API's state, for `app_info` (the desktop knows whether it serves it; a
    /// browser reached Engram through it, so it is on there).
    pub rest_api: RestApiStatus,
    /// Whether the request is known to come from the user: the desktop window, or an HTTP
    /// request that carried the API token. Acts that start programs with the user's rights
    /// (adding or accepting an MCP server, installing the tools' Python) refuse others.
    pub authenticated: bool,
}

/// Refuses `what` (e.g. "adding an MCP server") unless the caller is known to be the user:
/// an `invalid_input` error that says where to do it instead.
///
/// # Errors
/// [`Error::InvalidInput`] when `authenticated` is false.
pub fn require_user(authenticated: bool, what: &str) -> Result<()> {
    if authenticated {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "{what} runs a program with your rights, so it needs the API token; this server runs without one (--no-auth): use the CLI or the desktop app"
        )))
    }
}

/// A command answered with one result. The implementing type is the command's arguments.
pub trait AppCall: DeserializeOwned + TS + Send + 'static {
    /// The command's name: the Tauri command and the `/app/{name}` route.
    const NAME: &'static str;
    /// Whether `engram serve` answers it (false for what only makes sense in the desktop app).
    const HTTP: bool = true;
    /// What it answers (serialized as the command's JSON result).
    type Output: Serialize + TS + 'static;
    /// Answers the command.
    ///
    /// # Errors
    /// The engine's, passed on to the caller as `{code, message, details?}`.
    fn call(
        self,
        engram: &Arc<Engram>,
        caller: &Caller,
    ) -> impl Future<Output = Result<Self::Output>> + Send;
}

/// A command that starts a run and streams its events until `done`. The implementing type is
/// the command's arguments.
pub trait AppRun: DeserializeOwned + TS + Send + 'static {
    /// The command's name.
    const NAME: &'static str;
    /// The agent to run and what to run.
    fn into_run(self) -> (AgentId, RunRequest);
}

type CallFn = fn(Arc<Engram>, Caller, serde_json::Value) -> BoxFuture<'static, Result<String>>;
type RunFn = fn(serde_json::Value) -> Result<(AgentId, RunRequest)>;
type TsFn = fn(&ts_rs::Config) -> ts_type::TsType;

/// How a command is answered.
#[derive(Clone, Copy)]
enum Answer {
    Call(CallFn),
    Run(RunFn),
    /// By hand, in the transports that offer it.
    Adapter,
}

/// One command of the window: its name, kind and TypeScript shapes, and how it is answered.
pub struct CommandDef {
    /// Its name: the Tauri command and the `/app/{name}` route.
    pub name: &'static str,
    /// How it answers.
    pub kind: CommandKind,
    /// Whether `engram serve` answers it at `POST /app/{name}`.
    pub http: bool,
    args_ts: TsFn,
    output_ts: Option<TsFn>,
    answer: Answer,
}

impl CommandDef {
    /// Whether the transports answer it by hand rather than through [`call`] / [`run_request`].
    pub fn is_adapter(&self) -> bool {
        matches!(self.answer, Answer::Adapter)
    }
}

fn parse<A: DeserializeOwned>(name: &str, args: serde_json::Value) -> Result<A> {
    // A command without arguments may be sent none at all.
    let args = match args {
        serde_json::Value::Null => serde_json::Value::Object(Default::default()),
        other => other,
    };
    serde_json::from_value(args).map_err(|e| Error::invalid(format!("{name}: {e}")))
}

fn answer<C: AppCall>(
    engram: Arc<Engram>,
    caller: Caller,
    args: serde_json::Value,
) -> BoxFuture<'static, Result<String>> {
    Box::pin(async move {
        let args: C = parse(C::NAME, args)?;
        let output = args.call(&engram, &caller).await?;
        // Straight to text, not through `serde_json::Value`, which widens an `f32` (a
        // temperature of 0.4 would read 0.4000000059604645).
        serde_json::to_string(&output).map_err(|e| Error::Internal(format!("{}: {e}", C::NAME)))
    })
}

fn start<R: AppRun>(args: serde_json::Value) -> Result<(AgentId, RunRequest)> {
    Ok(parse::<R>(R::NAME, args)?.into_run())
}

fn ts<T: TS + 'static>(cfg: &ts_rs::Config) -> ts_type::TsType {
    ts_type::TsType::of::<T>(cfg)
}

fn call_def<C: AppCall>() -> CommandDef {
    CommandDef {
        name: C::NAME,
        kind: CommandKind::Call,
        http: C::HTTP,
        args_ts: ts::<C>,
        output_ts: Some(ts::<C::Output>),
        answer: Answer::Call(answer::<C>),
    }
}

fn run_def<R: AppRun>() -> CommandDef {
    CommandDef {
        name: R::NAME,
        kind: CommandKind::Run,
        http: true,
        args_ts: ts::<R>,
        output_ts: None,
        answer: Answer::Run(start::<R>),
    }
}

/// A command a transport answers by hand, with its arguments `A` and result `O`.
fn adapter<A: TS + 'static, O: TS + 'static>(
    name: &'static str,
    kind: CommandKind,
    http: bool,
) -> CommandDef {
    CommandDef {
        name,
        kind,
        http,
        args_ts: ts::<A>,
        output_ts: Some(ts::<O>),
        answer: Answer::Adapter,
    }
}

/// Every command of the window, in the order of `engram_core::commands::APP_COMMANDS`.
static COMMANDS: LazyLock<Vec<CommandDef>> = LazyLock::new(|| {
    use CommandKind::{Attach, Call, Dialog};
    vec![
        call_def::<AppInfoArgs>(),
        adapter::<SetRestApiArgs, RestApiStatus>("set_rest_api", Call, false),
        call_def::<ListProvidersArgs>(),
        call_def::<SetProviderArgs>(),
        call_def::<DeleteProviderArgs>(),
        call_def::<TestProviderArgs>(),
        call_def::<DetectLocalProvidersArgs>(),
        call_def::<ListLocalModelsArgs>(),
        call_def::<AddLocalModelArgs>(),
        call_def::<RemoveLocalModelArgs>(),
        call_def::<ModelCatalogueArgs>(),
        call_def::<PullModelArgs>(),
        call_def::<CancelModelPullArgs>(),
        call_def::<DeleteDownloadedModelArgs>(),
        call_def::<RetryEmbeddingModelArgs>(),
        call_def::<GetDefaultModelArgs>(),
        call_def::<SetDefaultModelArgs>(),
        call_def::<ListAgentsArgs>(),
        call_def::<GetAgentArgs>(),
        call_def::<CreateAgentArgs>(),
        call_def::<UpdateAgentArgs>(),
        call_def::<CloneAgentArgs>(),
        call_def::<DeleteAgentArgs>(),
        call_def::<CheckModelArgs>(),
        call_def::<AgentModelProblemArgs>(),
        call_def::<AgentsWithoutModelArgs>(),
        call_def::<UseModelForArgs>(),
        call_def::<ListMessagesArgs>(),
        run_def::<SendMessageArgs>(),
        call_def::<CancelRunArgs>(),
        call_def::<PendingApprovalArgs>(),
        run_def::<ResolveApprovalArgs>(),
        call_def::<SetToolApprovalArgs>(),
        call_def::<ListBlocksArgs>(),
        call_def::<UpdateBlockArgs>(),
        call_def::<BlockHistoryArgs>(),
        call_def::<UndoBlockEditArgs>(),
        call_def::<ListPassagesArgs>(),
        call_def::<SearchArchivalArgs>(),
        call_def::<AddPassageArgs>(),
        call_def::<DeletePassageArgs>(),
        call_def::<EditPassageArgs>(),
        call_def::<SearchRecallArgs>(),
        call_def::<SleeptimeSettingsArgs>(),
        call_def::<SetSleeptimeSettingsArgs>(),
        call_def::<SleeptimePassesArgs>(),
        call_def::<RunSleeptimePassArgs>(),
        call_def::<UndoSleeptimeChangeArgs>(),
        call_def::<UndoSleeptimePassArgs>(),
        call_def::<SleeptimeBudgetArgs>(),
        call_def::<SetSleeptimeBudgetArgs>(),
        call_def::<ContextWindowArgs>(),
        call_def::<ExportAgentArgs>(),
        call_def::<ImportAgentFileArgs>(),
        call_def::<ListTemplatesArgs>(),
        call_def::<ListToolsArgs>(),
        call_def::<AgentToolsArgs>(),
        call_def::<UpsertToolArgs>(),
        call_def::<DeleteToolArgs>(),
        call_def::<AttachToolArgs>(),
        call_def::<DetachToolArgs>(),
        call_def::<TryToolArgs>(),
        call_def::<TrustToolArgs>(),
        call_def::<UntrustToolArgs>(),
        call_def::<AgentEndpointsArgs>(),
        call_def::<SetAgentBaseUrlArgs>(),
        call_def::<AcceptEndpointArgs>(),
        call_def::<DismissEndpointArgs>(),
        call_def::<ToolPythonArgs>(),
        call_def::<SetUpToolPythonArgs>(),
        call_def::<MessageWindowArgs>(),
        adapter::<AttachRunArgs, bool>("attach_run", Attach, true),
        call_def::<CreateAgentBlockArgs>(),
        call_def::<SharedBlocksArgs>(),
        call_def::<AttachBlockArgs>(),
        call_def::<DetachBlockArgs>(),
        call_def::<DeleteBlockArgs>(),
        call_def::<BlockUndoPlanArgs>(),
        call_def::<RestoreBlockEditArgs>(),
        call_def::<ContextViewArgs>(),
        call_def::<ChatModelsArgs>(),
        call_def::<ModelWindowsArgs>(),
        call_def::<SetModelWindowArgs>(),
        call_def::<RegeneratePreviewArgs>(),
        call_def::<RollbackPreviewArgs>(),
        run_def::<RegenerateArgs>(),
        run_def::<EditAndResendArgs>(),
        call_def::<DeleteMessageArgs>(),
        call_def::<ResetMessagesArgs>(),
        call_def::<RunRecordsArgs>(),
        call_def::<RunEditsArgs>(),
        call_def::<ModelPricesArgs>(),
        call_def::<SetModelPriceArgs>(),
        call_def::<DeleteModelPriceArgs>(),
        call_def::<UsageCostArgs>(),
        call_def::<ExportAgentsArgs>(),
        adapter::<ExportAgentsArgs, Option<String>>("export_to_file", Dialog, false),
        adapter::<ImportFromFileArgs, Option<crate::ImportReport>>(
            "import_from_file",
            Dialog,
            false,
        ),
        call_def::<ListMcpServersArgs>(),
        call_def::<AddMcpServerArgs>(),
        call_def::<RemoveMcpServerArgs>(),
        call_def::<SetMcpServerActiveArgs>(),
        call_def::<ImportMcpServersArgs>(),
        call_def::<ListMcpToolsArgs>(),
        call_def::<StoredMcpToolsArgs>(),
        call_def::<McpMemoryClientsArgs>(),
        call_def::<McpMemoryConfigArgs>(),
        call_def::<SetMemoryClientAccessArgs>(),
        call_def::<PendingClientWritesArgs>(),
        call_def::<DecideClientWriteArgs>(),
        call_def::<RerankerStatusArgs>(),
        call_def::<SetRerankModelDirArgs>(),
        call_def::<SetRerankEnabledArgs>(),
        adapter::<PickRerankModelDirArgs, Option<crate::RerankerStatus>>(
            "pick_rerank_model_dir",
            Dialog,
            false,
        ),
        call_def::<VectorIndexBuildsArgs>(),
        call_def::<ListFoldersArgs>(),
        call_def::<CreateFolderArgs>(),
        call_def::<DeleteFolderArgs>(),
        call_def::<FolderFilesArgs>(),
        call_def::<UploadFolderFileArgs>(),
        call_def::<DeleteFolderFileArgs>(),
        call_def::<AttachFolderArgs>(),
        call_def::<DetachFolderArgs>(),
        call_def::<AgentFoldersArgs>(),
        call_def::<AgentFilesArgs>(),
        call_def::<OpenAgentFileArgs>(),
        call_def::<CloseAgentFileArgs>(),
        call_def::<FolderFileTextArgs>(),
        call_def::<FolderWatchesArgs>(),
        call_def::<WatchFolderArgs>(),
        call_def::<UnwatchFolderArgs>(),
        call_def::<CancelFolderFileArgs>(),
    ]
});

/// Every command of the window, in the order of `engram_core::commands::APP_COMMANDS`.
pub fn list() -> &'static [CommandDef] {
    &COMMANDS
}

/// The command called `name`, if there is one.
pub fn find(name: &str) -> Option<&'static CommandDef> {
    COMMANDS.iter().find(|c| c.name == name)
}

/// Answers the call `name` with `args` (its JSON arguments object; `null` counts as `{}`),
/// as JSON text serialized straight from the result type. `None` when `name` is no call the service answers (a run, an adapter, unknown),
/// so the transport goes on to its own commands or says "not found".
///
/// The future's errors: `invalid_input` for arguments that do not fit the command (naming
/// the command and the field), else the engine's.
pub fn call(
    engram: &Arc<Engram>,
    caller: Caller,
    name: &str,
    args: serde_json::Value,
) -> Option<BoxFuture<'static, Result<String>>> {
    match find(name)?.answer {
        Answer::Call(f) => Some(f(engram.clone(), caller, args)),
        Answer::Run(_) | Answer::Adapter => None,
    }
}

/// The agent and request of the run command `name` with `args`, for
/// [`Engram::start_run`]. `None` when `name` is not a run command.
///
/// # Errors
/// `invalid_input` for arguments that do not fit the command.
pub fn run_request(name: &str, args: serde_json::Value) -> Option<Result<(AgentId, RunRequest)>> {
    match find(name)?.answer {
        Answer::Run(f) => Some(f(args)),
        Answer::Call(_) | Answer::Adapter => None,
    }
}

/// Runs a blocking engine call (one that starts `python3`, or reads and writes a whole
/// export) on a blocking thread, so a transport's async workers stay free.
async fn blocking<T: Send + 'static>(
    what: &str,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Internal(format!("{what}: {e}")))?
}

#[cfg(test)]
mod tests;

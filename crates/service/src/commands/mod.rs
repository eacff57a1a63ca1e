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
//! desktop's build script reads as plain data to make one permission per command; the two are
//! checked equal when this crate compiles, and a test shows where they differ), and [`typescript`] writes the UI's `Commands` map from it
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
use engram_core::{AgentAccess, AgentId, Error, Result, User};
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
    /// A user of a shared server (their own token), or `None` for the administrator and the
    /// desktop window. Commands open to users ([`Access::Scoped`]) answer for them alone.
    pub user: Option<User>,
}

/// Who may call a command on a shared `engram serve` with a user's token (the server's own
/// token and the desktop window reach every command). The transport checks it before the
/// command runs; what is not named stays the administrator's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// The administrator's: providers, models, tools, MCP servers, folders, settings.
    Admin,
    /// Every user: the command answers for [`Caller::user`] alone (their agents, their info).
    Scoped,
    /// A user with at least this access to the agent named by the `agent_id` argument. An
    /// agent they may not see is "not found".
    Agent(AgentAccess),
}

/// Refuses `what` (e.g. "adding an MCP server") unless the caller is known to be the user:
/// an `invalid_input` error that says where to do it instead.
///
/// # Errors
/// `invalid_input` when `authenticated` is false.
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
    /// Who may call it with a user's token.
    const ACCESS: Access = Access::Admin;
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
    /// Who may call it with a user's token: a run changes the agent's history.
    const ACCESS: Access = Access::Agent(AgentAccess::Write);
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
    /// Who may call it with a user's token.
    pub access: Access,
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
        access: C::ACCESS,
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
        access: R::ACCESS,
        args_ts: ts::<R>,
        output_ts: None,
        answer: Answer::Run(start::<R>),
    }
}

/// A command a transport answers by hand, with its arguments `A` and result `O`. Joining a
/// run reads the agent; the others are the desktop's own or the administrator's.
fn adapter<A: TS + 'static, O: TS + 'static>(
    name: &'static str,
    kind: CommandKind,
    http: bool,
) -> CommandDef {
    CommandDef {
        name,
        kind,
        http,
        access: if kind == CommandKind::Attach {
            Access::Agent(AgentAccess::Read)
        } else {
            Access::Admin
        },
        args_ts: ts::<A>,
        output_ts: Some(ts::<O>),
        answer: Answer::Adapter,
    }
}

/// Expands one entry of `commands!` to its definition.
macro_rules! command_def {
    (call $args:ty) => {
        call_def::<$args>()
    };
    (run $args:ty) => {
        run_def::<$args>()
    };
    (adapter $args:ty => $out:ty, $name:literal, $kind:ident, $http:literal) => {
        adapter::<$args, $out>($name, CommandKind::$kind, $http)
    };
}

/// Expands one entry of `commands!` to its name, kind and whether `engram serve` answers it,
/// known when this crate compiles.
macro_rules! command_spec {
    (call $args:ty) => {
        (
            <$args as AppCall>::NAME,
            CommandKind::Call,
            <$args as AppCall>::HTTP,
        )
    };
    (run $args:ty) => {
        (<$args as AppRun>::NAME, CommandKind::Run, true)
    };
    (adapter $args:ty => $out:ty, $name:literal, $kind:ident, $http:literal) => {
        ($name, CommandKind::$kind, $http)
    };
}

/// The service's list of commands, written once: each entry is `[call Args]`, `[run Args]`
/// or `[adapter Args => Output, "name", Kind, http]`. Makes the table the transports
/// dispatch over (`COMMANDS`) and its names, kinds and transports (`SPECS`), which must equal
/// `engram_core::commands::APP_COMMANDS` entry by entry or this crate does not compile.
macro_rules! commands {
    ($([$($entry:tt)*])*) => {
        /// Every command of the window, in the order of `engram_core::commands::APP_COMMANDS`.
        static COMMANDS: LazyLock<Vec<CommandDef>> =
            LazyLock::new(|| vec![$(command_def!($($entry)*)),*]);

        /// Each command's name, kind and whether `engram serve` answers it, in list order.
        const SPECS: &[(&str, CommandKind, bool)] = &[$(command_spec!($($entry)*)),*];
    };
}

commands! {
    [call AppInfoArgs]
    [adapter SetRestApiArgs => RestApiStatus, "set_rest_api", Call, false]
    [adapter ConnectServerArgs => ServerConnection, "connect_server", Call, false]
    [adapter DisconnectServerArgs => Option<ServerConnection>, "disconnect_server", Call, false]
    [adapter ServerConnectionArgs => Option<ServerConnection>, "server_connection", Call, false]
    [call ListProvidersArgs]
    [call SetProviderArgs]
    [call DeleteProviderArgs]
    [call TestProviderArgs]
    [call DetectLocalProvidersArgs]
    [call ListLocalModelsArgs]
    [call AddLocalModelArgs]
    [call RemoveLocalModelArgs]
    [call ModelCatalogueArgs]
    [call PullModelArgs]
    [call CancelModelPullArgs]
    [call DeleteDownloadedModelArgs]
    [call RetryEmbeddingModelArgs]
    [call GetDefaultModelArgs]
    [call SetDefaultModelArgs]
    [call ListAgentsArgs]
    [call GetAgentArgs]
    [call CreateAgentArgs]
    [call UpdateAgentArgs]
    [call CloneAgentArgs]
    [call DeleteAgentArgs]
    [call CheckModelArgs]
    [call AgentModelProblemArgs]
    [call AgentsWithoutModelArgs]
    [call UseModelForArgs]
    [call ListMessagesArgs]
    [run SendMessageArgs]
    [call CancelRunArgs]
    [call PendingApprovalArgs]
    [run ResolveApprovalArgs]
    [call SetToolApprovalArgs]
    [call ListBlocksArgs]
    [call UpdateBlockArgs]
    [call BlockHistoryArgs]
    [call UndoBlockEditArgs]
    [call ListPassagesArgs]
    [call SearchArchivalArgs]
    [call AddPassageArgs]
    [call DeletePassageArgs]
    [call EditPassageArgs]
    [call SearchRecallArgs]
    [call SleeptimeSettingsArgs]
    [call SetSleeptimeSettingsArgs]
    [call SleeptimePassesArgs]
    [call RunSleeptimePassArgs]
    [call UndoSleeptimeChangeArgs]
    [call UndoSleeptimePassArgs]
    [call SleeptimeBudgetArgs]
    [call SetSleeptimeBudgetArgs]
    [call ContextWindowArgs]
    [call ExportAgentArgs]
    [call ImportAgentFileArgs]
    [call ListTemplatesArgs]
    [call ListToolsArgs]
    [call AgentToolsArgs]
    [call UpsertToolArgs]
    [call DeleteToolArgs]
    [call AttachToolArgs]
    [call DetachToolArgs]
    [call TryToolArgs]
    [call TrustToolArgs]
    [call UntrustToolArgs]
    [call AgentEndpointsArgs]
    [call SetAgentBaseUrlArgs]
    [call AcceptEndpointArgs]
    [call DismissEndpointArgs]
    [call ToolPythonArgs]
    [call SetUpToolPythonArgs]
    [call MessageWindowArgs]
    [adapter AttachRunArgs => bool, "attach_run", Attach, true]
    [call CreateAgentBlockArgs]
    [call SharedBlocksArgs]
    [call AttachBlockArgs]
    [call DetachBlockArgs]
    [call DeleteBlockArgs]
    [call BlockUndoPlanArgs]
    [call RestoreBlockEditArgs]
    [call ContextViewArgs]
    [call ChatModelsArgs]
    [call ModelWindowsArgs]
    [call SetModelWindowArgs]
    [call RegeneratePreviewArgs]
    [call RollbackPreviewArgs]
    [run RegenerateArgs]
    [run EditAndResendArgs]
    [call DeleteMessageArgs]
    [call ResetMessagesArgs]
    [call RunRecordsArgs]
    [call RunEditsArgs]
    [call ModelPricesArgs]
    [call SetModelPriceArgs]
    [call DeleteModelPriceArgs]
    [call UsageCostArgs]
    [call ExportAgentsArgs]
    [adapter ExportAgentsArgs => Option<String>, "export_to_file", Dialog, false]
    [adapter ImportFromFileArgs => Option<crate::ImportReport>, "import_from_file", Dialog, false]
    [call ListMcpServersArgs]
    [call AddMcpServerArgs]
    [call RemoveMcpServerArgs]
    [call SetMcpServerActiveArgs]
    [call ImportMcpServersArgs]
    [call ListMcpToolsArgs]
    [call StoredMcpToolsArgs]
    [call McpMemoryClientsArgs]
    [call McpMemoryConfigArgs]
    [call SetMemoryClientAccessArgs]
    [call PendingClientWritesArgs]
    [call DecideClientWriteArgs]
    [call RerankerStatusArgs]
    [call SetRerankModelDirArgs]
    [call SetRerankEnabledArgs]
    [adapter PickRerankModelDirArgs => Option<crate::RerankerStatus>, "pick_rerank_model_dir", Dialog, false]
    [call VectorIndexBuildsArgs]
    [call ListFoldersArgs]
    [call CreateFolderArgs]
    [call DeleteFolderArgs]
    [call FolderFilesArgs]
    [call UploadFolderFileArgs]
    [call DeleteFolderFileArgs]
    [call AttachFolderArgs]
    [call DetachFolderArgs]
    [call AgentFoldersArgs]
    [call AgentFilesArgs]
    [call OpenAgentFileArgs]
    [call CloseAgentFileArgs]
    [call FolderFileTextArgs]
    [call FolderWatchesArgs]
    [call WatchFolderArgs]
    [call UnwatchFolderArgs]
    [adapter PickWatchDirArgs => Option<engram_core::FolderWatch>, "pick_watch_dir", Dialog, false]
    [call CancelFolderFileArgs]
}

// The shell's build script reads `APP_COMMANDS` as plain data (one permission each): the two
// lists agree or the build stops here.
const _: () = assert!(
    agrees(SPECS, engram_core::commands::APP_COMMANDS),
    "engram_service::commands and engram_core::commands::APP_COMMANDS disagree (the service's test says where)"
);

/// Whether `ours` names the same commands as `core`, in the same order, with the same kinds
/// and transports (a `const fn`: `==` on strings is not available at compile time).
const fn agrees(
    ours: &[(&str, CommandKind, bool)],
    core: &[engram_core::commands::AppCommand],
) -> bool {
    if ours.len() != core.len() {
        return false;
    }
    let mut i = 0;
    while i < ours.len() {
        let (name, kind, http) = ours[i];
        let (a, b) = (name.as_bytes(), core[i].name.as_bytes());
        if a.len() != b.len() || kind as u8 != core[i].kind as u8 || http != core[i].http {
            return false;
        }
        let mut j = 0;
        while j < a.len() {
            if a[j] != b[j] {
                return false;
            }
            j += 1;
        }
        i += 1;
    }
    true
}

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
/// [`Runs::start`](crate::Runs::start). `None` when `name` is not a run command.
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

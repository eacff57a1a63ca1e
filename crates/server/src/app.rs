//! `/app/…`: the desktop UI's own API over HTTP, so the same UI runs in a browser (end-to-end
//! tests, a second window) as in the Tauri shell.
//!
//! Every command of the shell's IPC has a route here with the same name and the same
//! arguments: `POST /app/{command}` with a JSON object of snake_case arguments, answering the
//! command's JSON result, or `{code, message, details?}` with an error status. `send_message`
//! answers Server-Sent Events, one [`RunEvent`] per `data:` line, ending after `done`;
//! `GET /app/notices` streams [`Notice`](engram_service::Notice)s. Letta's `/v1` routes keep
//! Letta's shapes; these keep Engram's.

use crate::AppState;
use crate::errors::status_of;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use engram_core::{
    AgentId, AgentPatch, BlockPatch, EditId, Error, ErrorBody, MessageId, NewAgent, NewTool,
    PassageId, RunId, TagMatch, Timestamp, ToolId,
};
use engram_service::{MessageQuery, PassageList};
use engram_service::{ProviderSetup, RestApiStatus, RunRequest};
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::convert::Infallible;

/// The routes; mounted under the same guard as `/v1`.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/app/app_info", post(app_info))
        .route("/app/list_providers", post(list_providers))
        .route("/app/set_provider", post(set_provider))
        .route("/app/delete_provider", post(delete_provider))
        .route("/app/test_provider", post(test_provider))
        .route("/app/detect_local_providers", post(detect_local_providers))
        .route("/app/get_default_model", post(get_default_model))
        .route("/app/set_default_model", post(set_default_model))
        .route("/app/list_agents", post(list_agents))
        .route("/app/get_agent", post(get_agent))
        .route("/app/create_agent", post(create_agent))
        .route("/app/update_agent", post(update_agent))
        .route("/app/clone_agent", post(clone_agent))
        .route("/app/delete_agent", post(delete_agent))
        .route("/app/list_messages", post(list_messages))
        .route("/app/send_message", post(send_message))
        .route("/app/cancel_run", post(cancel_run))
        .route("/app/list_blocks", post(list_blocks))
        .route("/app/update_block", post(update_block))
        .route("/app/block_history", post(block_history))
        .route("/app/undo_block_edit", post(undo_block_edit))
        .route("/app/list_passages", post(list_passages))
        .route("/app/search_archival", post(search_archival))
        .route("/app/add_passage", post(add_passage))
        .route("/app/delete_passage", post(delete_passage))
        .route("/app/edit_passage", post(edit_passage))
        .route("/app/search_recall", post(search_recall))
        .route("/app/context_window", post(context_window))
        .route("/app/export_agent", post(export_agent))
        .route("/app/import_agent_file", post(import_agent_file))
        .route("/app/list_templates", post(list_templates))
        .route("/app/list_tools", post(list_tools))
        .route("/app/agent_tools", post(agent_tools))
        .route("/app/upsert_tool", post(upsert_tool))
        .route("/app/delete_tool", post(delete_tool))
        .route("/app/attach_tool", post(attach_tool))
        .route("/app/detach_tool", post(detach_tool))
        .route("/app/try_tool", post(try_tool))
        .route("/app/notices", get(notices))
        .merge(crate::app_trust::routes())
        .merge(crate::app_python::routes())
        .merge(crate::app_chat::routes())
        .merge(crate::app_memory::routes())
        .merge(crate::app_approval::routes())
        .merge(crate::app_turns::routes())
        .merge(crate::app_prices::routes())
        .merge(crate::app_search::routes())
        .merge(crate::app_files::routes())
}

/// An engine error as `{code, message, details?}` with the status the `/v1` routes would give.
pub(crate) struct AppError(Error);

impl From<Error> for AppError {
    fn from(e: Error) -> Self {
        Self(e)
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = status_of(&self.0);
        if status.is_server_error() {
            tracing::warn!(%status, error = %self.0, "app command failed");
        }
        (status, Json(ErrorBody::from(&self.0))).into_response()
    }
}

pub(crate) type AppResult<T> = Result<Json<T>, AppError>;

pub(crate) fn done<T>(r: engram_core::Result<T>) -> AppResult<T> {
    Ok(Json(r?))
}

/// A command's arguments: a JSON object; anything else is 400 `invalid_input`.
pub(crate) struct Args<T>(pub(crate) T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Args<T> {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Response> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(Args(v)),
            Err(rejection) => {
                let status = match rejection {
                    JsonRejection::MissingJsonContentType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    ref r if r.status() == StatusCode::PAYLOAD_TOO_LARGE => r.status(),
                    _ => StatusCode::BAD_REQUEST,
                };
                let body = ErrorBody {
                    code: "invalid_input".into(),
                    message: rejection.body_text(),
                    details: None,
                };
                Err((status, Json(body)).into_response())
            }
        }
    }
}

#[derive(Deserialize)]
struct AgentArg {
    agent_id: AgentId,
}

#[derive(Deserialize)]
struct NameArg {
    name: String,
}

/// What the provider form sends: the settings, and the key once (it goes to the keychain).
#[derive(Deserialize)]
struct SetupArg {
    setup: SetupIn,
}

#[derive(Deserialize)]
struct SetupIn {
    #[serde(flatten)]
    settings: ProviderSetup,
    api_key: Option<String>,
}

#[derive(Deserialize)]
struct HandleArg {
    handle: String,
}

#[derive(Deserialize)]
struct CreateArg {
    new: NewAgent,
    template: Option<String>,
}

#[derive(Deserialize)]
struct NewToolArg {
    new: NewTool,
}

#[derive(Deserialize)]
struct ToolArg {
    tool_id: ToolId,
}

#[derive(Deserialize)]
struct AgentToolArg {
    agent_id: AgentId,
    tool_id: ToolId,
}

#[derive(Deserialize)]
struct TryToolArg {
    tool_id: ToolId,
    agent_id: Option<AgentId>,
    args: serde_json::Value,
}

#[derive(Deserialize)]
struct UpdateAgentArg {
    agent_id: AgentId,
    patch: AgentPatch,
}

#[derive(Deserialize)]
struct CloneArg {
    agent_id: AgentId,
    name: Option<String>,
}

#[derive(Deserialize)]
struct ListMessagesArg {
    agent_id: AgentId,
    before: Option<MessageId>,
    limit: usize,
}

#[derive(Deserialize)]
struct SendArg {
    agent_id: AgentId,
    text: String,
}

#[derive(Deserialize)]
struct BlockArg {
    agent_id: AgentId,
    label: String,
}

#[derive(Deserialize)]
struct UpdateBlockArg {
    agent_id: AgentId,
    label: String,
    patch: BlockPatch,
}

#[derive(Deserialize)]
struct EditArg {
    edit_id: EditId,
    /// The block version the window showed; a stale one is refused.
    #[serde(default)]
    version: Option<u64>,
}

#[derive(Deserialize)]
struct ListPassagesArg {
    agent_id: AgentId,
    list: PassageList,
}

#[derive(Deserialize)]
struct SearchArchivalArg {
    agent_id: AgentId,
    query: String,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    tag_match: TagMatch,
    start: Option<Timestamp>,
    end: Option<Timestamp>,
    top_k: Option<usize>,
}

#[derive(Deserialize)]
struct AddPassageArg {
    agent_id: AgentId,
    text: String,
    #[serde(default)]
    tags: Vec<String>,
}

#[derive(Deserialize)]
struct PassageArg {
    agent_id: AgentId,
    passage_id: PassageId,
}

#[derive(Deserialize)]
struct EditPassageArg {
    agent_id: AgentId,
    passage_id: PassageId,
    text: Option<String>,
    tags: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct SearchRecallArg {
    agent_id: AgentId,
    query: String,
    limit: usize,
}

#[derive(Deserialize)]
struct ContentsArg {
    contents: String,
    /// The file's name, recorded as the origin of its tools and endpoints.
    #[serde(default)]
    file_name: Option<String>,
}

/// How many archival hits a search returns when the UI does not say.
const DEFAULT_TOP_K: usize = 20;

async fn app_info(State(s): State<AppState>) -> Json<engram_service::AppInfo> {
    // A browser reaches this through the REST API itself, so it is on; its address is the
    // one the browser already uses.
    Json(s.engram.app_info(RestApiStatus {
        enabled: true,
        url: None,
    }))
}

async fn list_providers(State(s): State<AppState>) -> AppResult<impl Serialize> {
    done(s.engram.list_providers())
}

async fn set_provider(
    State(s): State<AppState>,
    Args(a): Args<SetupArg>,
) -> AppResult<impl Serialize> {
    let mut setup = a.setup.settings;
    setup.api_key = a.setup.api_key.filter(|k| !k.is_empty()).map(Into::into);
    done(s.engram.set_provider(setup))
}

async fn delete_provider(State(s): State<AppState>, Args(a): Args<NameArg>) -> AppResult<()> {
    done(s.engram.delete_provider(&a.name))
}

async fn test_provider(
    State(s): State<AppState>,
    Args(a): Args<NameArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.test_provider(&a.name).await)
}

async fn detect_local_providers(State(s): State<AppState>) -> Json<impl Serialize> {
    Json(s.engram.detect_local_providers().await)
}

async fn get_default_model(State(s): State<AppState>) -> AppResult<String> {
    done(s.engram.default_model())
}

async fn set_default_model(State(s): State<AppState>, Args(a): Args<HandleArg>) -> AppResult<()> {
    done(s.engram.set_default_model(&a.handle))
}

async fn list_agents(State(s): State<AppState>) -> AppResult<impl Serialize> {
    done(s.engram.list_agents())
}

async fn get_agent(
    State(s): State<AppState>,
    Args(a): Args<AgentArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.get_agent(&a.agent_id))
}

async fn create_agent(
    State(s): State<AppState>,
    Args(a): Args<CreateArg>,
) -> AppResult<impl Serialize> {
    done(match a.template {
        Some(template) => s.engram.create_agent_from_template(&template, a.new),
        None => s.engram.create_agent(a.new),
    })
}

async fn update_agent(
    State(s): State<AppState>,
    Args(a): Args<UpdateAgentArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.update_agent(&a.agent_id, &a.patch))
}

async fn clone_agent(
    State(s): State<AppState>,
    Args(a): Args<CloneArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.clone_agent(&a.agent_id, a.name.as_deref()))
}

async fn delete_agent(State(s): State<AppState>, Args(a): Args<AgentArg>) -> AppResult<()> {
    done(s.engram.delete_agent(&a.agent_id))
}

async fn list_messages(
    State(s): State<AppState>,
    Args(a): Args<ListMessagesArg>,
) -> AppResult<impl Serialize> {
    done(
        s.engram
            .messages_before(&a.agent_id, a.before.as_ref(), a.limit),
    )
}

/// The run as SSE, one [`RunEvent`](engram_core::RunEvent) per event, ending after `done`.
/// The run goes on if the browser goes away (stop it with `cancel_run`), so the stored
/// conversation stays whole.
async fn send_message(
    State(s): State<AppState>,
    Args(a): Args<SendArg>,
) -> Result<Response, AppError> {
    let request = RunRequest::Message { text: a.text };
    crate::app_chat::start(s, a.agent_id, request).await
}

#[derive(Deserialize)]
struct CancelArg {
    agent_id: AgentId,
    /// Only this run; every run of the agent when absent.
    #[serde(default)]
    run_id: Option<RunId>,
}

async fn cancel_run(State(s): State<AppState>, Args(a): Args<CancelArg>) -> Json<usize> {
    Json(s.engram.cancel_agent_run(&a.agent_id, a.run_id.as_ref()))
}

async fn list_blocks(
    State(s): State<AppState>,
    Args(a): Args<AgentArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.agent_blocks(&a.agent_id))
}

async fn update_block(
    State(s): State<AppState>,
    Args(a): Args<UpdateBlockArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.update_agent_block(&a.agent_id, &a.label, &a.patch))
}

async fn block_history(
    State(s): State<AppState>,
    Args(a): Args<BlockArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.block_history(&a.agent_id, &a.label))
}

async fn undo_block_edit(
    State(s): State<AppState>,
    Args(a): Args<EditArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.undo_block_edit(&a.edit_id, a.version))
}

async fn list_passages(
    State(s): State<AppState>,
    Args(a): Args<ListPassagesArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.passage_page(&a.agent_id, &a.list))
}

async fn search_archival(
    State(s): State<AppState>,
    Args(a): Args<SearchArchivalArg>,
) -> AppResult<impl Serialize> {
    let top_k = a.top_k.unwrap_or(DEFAULT_TOP_K);
    let hits = s
        .engram
        .search_archival(
            &a.agent_id,
            &a.query,
            a.tags,
            a.tag_match,
            (a.start, a.end),
            top_k,
        )
        .await;
    done(hits)
}

async fn add_passage(
    State(s): State<AppState>,
    Args(a): Args<AddPassageArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.add_passage(&a.agent_id, &a.text, a.tags).await)
}

async fn delete_passage(State(s): State<AppState>, Args(a): Args<PassageArg>) -> AppResult<()> {
    done(s.engram.delete_passage(&a.agent_id, &a.passage_id))
}

async fn edit_passage(
    State(s): State<AppState>,
    Args(a): Args<EditPassageArg>,
) -> AppResult<impl Serialize> {
    let edited = s
        .engram
        .edit_passage(&a.agent_id, &a.passage_id, a.text.as_deref(), a.tags)
        .await;
    done(edited)
}

async fn search_recall(
    State(s): State<AppState>,
    Args(a): Args<SearchRecallArg>,
) -> AppResult<impl Serialize> {
    let query = MessageQuery {
        query: a.query,
        roles: Vec::new(),
        start: None,
        end: None,
        limit: a.limit,
    };
    done(s.engram.search_recall(&a.agent_id, &query).await)
}

async fn context_window(
    State(s): State<AppState>,
    Args(a): Args<AgentArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.context_breakdown(&a.agent_id))
}

async fn export_agent(State(s): State<AppState>, Args(a): Args<AgentArg>) -> AppResult<String> {
    let bytes = s
        .engram
        .export_agent_file(std::slice::from_ref(&a.agent_id))?;
    done(String::from_utf8(bytes).map_err(|e| Error::Internal(e.to_string())))
}

async fn import_agent_file(
    State(s): State<AppState>,
    Args(a): Args<ContentsArg>,
) -> AppResult<impl Serialize> {
    done(
        s.engram.import_agent_file_named(
            a.contents.as_bytes(),
            a.file_name
                .as_deref()
                .unwrap_or(engram_service::UNNAMED_FILE),
        ),
    )
}

async fn list_templates(State(s): State<AppState>) -> Json<impl Serialize> {
    Json(s.engram.list_templates())
}

async fn list_tools(State(s): State<AppState>) -> AppResult<impl Serialize> {
    done(s.engram.list_tools())
}

async fn agent_tools(
    State(s): State<AppState>,
    Args(a): Args<AgentArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.agent_tools(&a.agent_id))
}

/// Generating the schema runs `python3`, so it waits on a blocking thread.
async fn upsert_tool(
    State(s): State<AppState>,
    Args(a): Args<NewToolArg>,
) -> AppResult<impl Serialize> {
    let engram = s.engram.clone();
    done(
        tokio::task::spawn_blocking(move || engram.upsert_tool(a.new))
            .await
            .map_err(|e| Error::Internal(e.to_string()))
            .and_then(|r| r),
    )
}

async fn delete_tool(State(s): State<AppState>, Args(a): Args<ToolArg>) -> AppResult<()> {
    done(s.engram.delete_tool(&a.tool_id))
}

async fn attach_tool(
    State(s): State<AppState>,
    Args(a): Args<AgentToolArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.attach_tool(&a.agent_id, &a.tool_id))
}

async fn detach_tool(
    State(s): State<AppState>,
    Args(a): Args<AgentToolArg>,
) -> AppResult<impl Serialize> {
    done(s.engram.detach_tool(&a.agent_id, &a.tool_id))
}

async fn try_tool(
    State(s): State<AppState>,
    Args(a): Args<TryToolArg>,
) -> AppResult<impl Serialize> {
    done(
        s.engram
            .try_tool(&a.tool_id, a.agent_id.as_ref(), a.args)
            .await,
    )
}

/// Every [`Notice`](engram_service::Notice) from now on, as SSE. A listener that fell behind
/// gets `agents_changed`, so it re-reads what it shows.
async fn notices(State(s): State<AppState>) -> impl IntoResponse {
    use tokio::sync::broadcast::error::RecvError;
    let rx = s.engram.notices();
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        let notice = match rx.recv().await {
            Ok(n) => n,
            Err(RecvError::Lagged(_)) => engram_service::Notice::AgentsChanged,
            Err(RecvError::Closed) => return None,
        };
        Some((notice, rx))
    })
    .filter_map(|n| async move { Event::default().json_data(&n).ok().map(Ok::<_, Infallible>) });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

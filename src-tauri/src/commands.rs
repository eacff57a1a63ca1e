//! The window's commands: each one parses its arguments, calls the service layer, and maps the
//! error. Names and arguments match the HTTP transport's `/app/{command}` routes
//! (`crates/server/src/app.rs`), so the UI's two backends are interchangeable.

use crate::Desktop;
use crate::chat_commands::stream;
use crate::error::IpcResult;
use engram_core::{
    Agent, AgentId, AgentPatch, Block, BlockEdit, BlockPatch, EditId, Message, NewAgent, NewTool,
    Passage, PassageHit, PassageId, RunEvent, TagMatch, Timestamp, Tool, ToolId,
};
use engram_service::{
    AgentState, AppInfo, ImportReport, LocalServer, PassagePage, ProviderInfo, ProviderSetup,
    RestApiStatus, Template, ToolTrial,
};
use engram_service::{MessageHit, MessageQuery, PassageList, RunRequest};
use serde::Deserialize;
use tauri::State;
use tauri::ipc::Channel;

/// How many archival hits a search returns when the UI does not say.
const DEFAULT_TOP_K: usize = 20;

/// The provider form: settings, and the key once (it goes to the keychain, never back).
#[derive(Deserialize)]
pub struct SetupIn {
    #[serde(flatten)]
    settings: ProviderSetup,
    api_key: Option<String>,
}

/// The version, data directory and REST API state.
#[tauri::command(rename_all = "snake_case")]
pub fn app_info(d: State<'_, Desktop>) -> AppInfo {
    d.engram.app_info(d.rest.status())
}

/// Serves the local REST API on 127.0.0.1:8283 (or stops it), and remembers the choice.
#[tauri::command(rename_all = "snake_case")]
pub async fn set_rest_api(d: State<'_, Desktop>, enabled: bool) -> IpcResult<RestApiStatus> {
    d.engram.set_rest_api_enabled(enabled)?;
    if enabled {
        Ok(d.rest.start(d.engram.clone()).await?)
    } else {
        Ok(d.rest.stop())
    }
}

/// The configured model providers (never their keys).
#[tauri::command(rename_all = "snake_case")]
pub fn list_providers(d: State<'_, Desktop>) -> IpcResult<Vec<ProviderInfo>> {
    Ok(d.engram.list_providers()?)
}

/// Saves a provider; its key goes to the keychain.
#[tauri::command(rename_all = "snake_case")]
pub fn set_provider(d: State<'_, Desktop>, setup: SetupIn) -> IpcResult<ProviderInfo> {
    let mut settings = setup.settings;
    settings.api_key = setup.api_key.filter(|k| !k.is_empty()).map(Into::into);
    Ok(d.engram.set_provider(settings)?)
}

/// Removes a provider and its key.
#[tauri::command(rename_all = "snake_case")]
pub fn delete_provider(d: State<'_, Desktop>, name: String) -> IpcResult<()> {
    Ok(d.engram.delete_provider(&name)?)
}

/// Asks the provider for its models: the connection test and the model picker's list.
#[tauri::command(rename_all = "snake_case")]
pub async fn test_provider(
    d: State<'_, Desktop>,
    name: String,
) -> IpcResult<Vec<engram_service::ModelInfo>> {
    Ok(d.engram.test_provider(&name).await?)
}

/// Ollama and LM Studio servers answering on their default local ports.
#[tauri::command(rename_all = "snake_case")]
pub async fn detect_local_providers(d: State<'_, Desktop>) -> IpcResult<Vec<LocalServer>> {
    Ok(d.engram.detect_local_providers().await)
}

/// The model handle new agents get.
#[tauri::command(rename_all = "snake_case")]
pub fn get_default_model(d: State<'_, Desktop>) -> IpcResult<String> {
    Ok(d.engram.default_model()?)
}

/// Sets the model handle new agents get.
#[tauri::command(rename_all = "snake_case")]
pub fn set_default_model(d: State<'_, Desktop>, handle: String) -> IpcResult<()> {
    Ok(d.engram.set_default_model(&handle)?)
}

/// Every agent, oldest first.
#[tauri::command(rename_all = "snake_case")]
pub fn list_agents(d: State<'_, Desktop>) -> IpcResult<Vec<Agent>> {
    Ok(d.engram.list_agents()?)
}

/// One agent with its blocks.
#[tauri::command(rename_all = "snake_case")]
pub fn get_agent(d: State<'_, Desktop>, agent_id: AgentId) -> IpcResult<AgentState> {
    Ok(d.engram.get_agent(&agent_id)?)
}

/// Creates an agent, from a template when one is named (fields given in `new` win).
#[tauri::command(rename_all = "snake_case")]
pub fn create_agent(
    d: State<'_, Desktop>,
    new: NewAgent,
    template: Option<String>,
) -> IpcResult<AgentState> {
    Ok(match template {
        Some(template) => d.engram.create_agent_from_template(&template, new)?,
        None => d.engram.create_agent(new)?,
    })
}

/// Changes an agent's settings (rename, model, loop style…).
#[tauri::command(rename_all = "snake_case")]
pub fn update_agent(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    patch: AgentPatch,
) -> IpcResult<Agent> {
    Ok(d.engram.update_agent(&agent_id, &patch)?)
}

/// Copies an agent with its memory and history.
#[tauri::command(rename_all = "snake_case")]
pub fn clone_agent(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    name: Option<String>,
) -> IpcResult<AgentState> {
    Ok(d.engram.clone_agent(&agent_id, name.as_deref())?)
}

/// Deletes an agent with its history and archival memory.
#[tauri::command(rename_all = "snake_case")]
pub fn delete_agent(d: State<'_, Desktop>, agent_id: AgentId) -> IpcResult<()> {
    Ok(d.engram.delete_agent(&agent_id)?)
}

/// Scrolling back: the `limit` messages before `before` (the newest without it), oldest first.
#[tauri::command(rename_all = "snake_case")]
pub fn list_messages(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    before: Option<engram_core::MessageId>,
    limit: usize,
) -> IpcResult<Vec<Message>> {
    Ok(d.engram
        .messages_before(&agent_id, before.as_ref(), limit)?)
}

/// Runs the agent's turn, streaming its events over `on_event`; resolves when the run ends.
/// Errors found before the run starts (no key, empty message) reject the call; later ones
/// arrive as `error` events followed by `done`.
#[tauri::command(rename_all = "snake_case")]
pub async fn send_message(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    text: String,
    on_event: Channel<RunEvent>,
) -> IpcResult<()> {
    let run = d
        .engram
        .start_run(&agent_id, RunRequest::Message { text })
        .await?;
    stream(run, &on_event).await
}

/// Stops the agent's run `run_id`, or all its runs without one; what already arrived stays.
/// Returns how many runs were told to stop.
#[tauri::command(rename_all = "snake_case")]
pub fn cancel_run(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    run_id: Option<engram_core::RunId>,
) -> usize {
    d.engram.cancel_agent_run(&agent_id, run_id.as_ref())
}

/// The agent's blocks.
#[tauri::command(rename_all = "snake_case")]
pub fn list_blocks(d: State<'_, Desktop>, agent_id: AgentId) -> IpcResult<Vec<Block>> {
    Ok(d.engram.agent_blocks(&agent_id)?)
}

/// Edits a block by hand (recorded in its history).
#[tauri::command(rename_all = "snake_case")]
pub fn update_block(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    label: String,
    patch: BlockPatch,
) -> IpcResult<Block> {
    Ok(d.engram.update_agent_block(&agent_id, &label, &patch)?)
}

/// A block's edits, newest first.
#[tauri::command(rename_all = "snake_case")]
pub fn block_history(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    label: String,
) -> IpcResult<Vec<BlockEdit>> {
    Ok(d.engram.block_history(&agent_id, &label)?)
}

/// Undoes one edit (itself recorded); with `version`, only if the block is still at it.
#[tauri::command(rename_all = "snake_case")]
pub fn undo_block_edit(
    d: State<'_, Desktop>,
    edit_id: EditId,
    version: Option<u64>,
) -> IpcResult<Block> {
    Ok(d.engram.undo_block_edit(&edit_id, version)?)
}

/// A page of archival memory (filters, order, cursor or offset in `list`) with the filtered
/// total and the page's position.
#[tauri::command(rename_all = "snake_case")]
pub fn list_passages(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    list: PassageList,
) -> IpcResult<PassagePage> {
    Ok(d.engram.passage_page(&agent_id, &list)?)
}

/// Searches archival memory as the agent would, filtered by tags and dates before the limit.
// A command's parameters are its named IPC arguments, the same as `/app/search_archival`'s.
#[allow(clippy::too_many_arguments)]
#[tauri::command(rename_all = "snake_case")]
pub async fn search_archival(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    query: String,
    tags: Option<Vec<String>>,
    tag_match: Option<TagMatch>,
    start: Option<Timestamp>,
    end: Option<Timestamp>,
    top_k: Option<usize>,
) -> IpcResult<Vec<PassageHit>> {
    let hits = d
        .engram
        .search_archival(
            &agent_id,
            &query,
            tags.unwrap_or_default(),
            tag_match.unwrap_or_default(),
            (start, end),
            top_k.unwrap_or(DEFAULT_TOP_K),
        )
        .await?;
    Ok(hits)
}

/// Adds a passage to archival memory.
#[tauri::command(rename_all = "snake_case")]
pub async fn add_passage(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    text: String,
    tags: Option<Vec<String>>,
) -> IpcResult<Passage> {
    Ok(d.engram
        .add_passage(&agent_id, &text, tags.unwrap_or_default())
        .await?)
}

/// Deletes a passage.
#[tauri::command(rename_all = "snake_case")]
pub fn delete_passage(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    passage_id: PassageId,
) -> IpcResult<()> {
    Ok(d.engram.delete_passage(&agent_id, &passage_id)?)
}

/// Changes a passage's text and/or tags (embedded again when the agent has an embedding
/// model).
#[tauri::command(rename_all = "snake_case")]
pub async fn edit_passage(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    passage_id: PassageId,
    text: Option<String>,
    tags: Option<Vec<String>>,
) -> IpcResult<Passage> {
    Ok(d.engram
        .edit_passage(&agent_id, &passage_id, text.as_deref(), tags)
        .await?)
}

/// Searches the whole conversation (recall memory).
#[tauri::command(rename_all = "snake_case")]
pub async fn search_recall(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    query: String,
    limit: usize,
) -> IpcResult<Vec<MessageHit>> {
    let query = MessageQuery {
        query,
        roles: Vec::new(),
        start: None,
        end: None,
        limit,
    };
    Ok(d.engram.search_recall(&agent_id, &query).await?)
}

/// How the agent's next context window splits, in tokens.
#[tauri::command(rename_all = "snake_case")]
pub fn context_window(
    d: State<'_, Desktop>,
    agent_id: AgentId,
) -> IpcResult<engram_service::ContextBreakdown> {
    Ok(d.engram.context_breakdown(&agent_id)?)
}

/// The agent as an Agent File (JSON text).
#[tauri::command(rename_all = "snake_case")]
pub fn export_agent(d: State<'_, Desktop>, agent_id: AgentId) -> IpcResult<String> {
    let bytes = d
        .engram
        .export_agent_file(std::slice::from_ref(&agent_id))?;
    String::from_utf8(bytes).map_err(|e| engram_core::Error::Internal(e.to_string()).into())
}

/// Imports an Agent File (Letta v1/v2 or Engram); `file_name` is recorded as the origin of
/// its tools and endpoints. The report lists what waits for the user's review.
#[tauri::command(rename_all = "snake_case")]
pub fn import_agent_file(
    d: State<'_, Desktop>,
    contents: String,
    file_name: Option<String>,
) -> IpcResult<ImportReport> {
    Ok(d.engram.import_agent_file_named(
        contents.as_bytes(),
        file_name.as_deref().unwrap_or(engram_service::UNNAMED_FILE),
    )?)
}

/// The agent templates (a plain memory agent, the task-queue agent…).
#[tauri::command(rename_all = "snake_case")]
pub fn list_templates(d: State<'_, Desktop>) -> Vec<Template> {
    d.engram.list_templates()
}

/// Every tool, built-in and user-written, with whether it can run here.
#[tauri::command(rename_all = "snake_case")]
pub fn list_tools(d: State<'_, Desktop>) -> IpcResult<Vec<Tool>> {
    Ok(d.engram.list_tools()?)
}

/// The agent's tools, in the order the model sees them.
#[tauri::command(rename_all = "snake_case")]
pub fn agent_tools(d: State<'_, Desktop>, agent_id: AgentId) -> IpcResult<Vec<Tool>> {
    Ok(d.engram.agent_tools(&agent_id)?)
}

/// Saves a Python tool (schema generated from its signature and docstring). Generating the
/// schema runs `python3`, so it waits on a blocking thread.
#[tauri::command(rename_all = "snake_case")]
pub async fn upsert_tool(d: State<'_, Desktop>, new: NewTool) -> IpcResult<Tool> {
    let engram = d.engram.clone();
    let tool = tauri::async_runtime::spawn_blocking(move || engram.upsert_tool(new))
        .await
        .map_err(|e| engram_core::Error::Internal(e.to_string()))??;
    Ok(tool)
}

/// Deletes a user tool (detaching it everywhere).
#[tauri::command(rename_all = "snake_case")]
pub fn delete_tool(d: State<'_, Desktop>, tool_id: ToolId) -> IpcResult<()> {
    Ok(d.engram.delete_tool(&tool_id)?)
}

/// Gives the agent a tool; returns its tools.
#[tauri::command(rename_all = "snake_case")]
pub fn attach_tool(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    tool_id: ToolId,
) -> IpcResult<Vec<Tool>> {
    Ok(d.engram.attach_tool(&agent_id, &tool_id)?)
}

/// Takes a tool from the agent; returns its tools.
#[tauri::command(rename_all = "snake_case")]
pub fn detach_tool(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    tool_id: ToolId,
) -> IpcResult<Vec<Tool>> {
    Ok(d.engram.detach_tool(&agent_id, &tool_id)?)
}

/// Runs a tool once against an agent's memory without storing anything (the editor's "try it").
#[tauri::command(rename_all = "snake_case")]
pub async fn try_tool(
    d: State<'_, Desktop>,
    tool_id: ToolId,
    agent_id: Option<AgentId>,
    args: serde_json::Value,
) -> IpcResult<ToolTrial> {
    Ok(d.engram.try_tool(&tool_id, agent_id.as_ref(), args).await?)
}

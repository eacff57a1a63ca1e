//! The window's MCP server commands (Settings → MCP servers). Same names and arguments as
//! `/app/{command}` (`crates/server/src/app_mcp.rs`).

use crate::Desktop;
use crate::error::IpcResult;
use engram_core::{McpServer, NewMcpServer, Tool};
use tauri::State;

/// Every configured server, by name.
#[tauri::command(rename_all = "snake_case")]
pub fn list_mcp_servers(d: State<'_, Desktop>) -> IpcResult<Vec<McpServer>> {
    Ok(d.engram.list_mcp_servers()?)
}

/// Adds a server the user configured (secrets go to the keychain).
#[tauri::command(rename_all = "snake_case")]
pub fn add_mcp_server(d: State<'_, Desktop>, server: NewMcpServer) -> IpcResult<McpServer> {
    Ok(d.engram.add_mcp_server(server)?)
}

/// Removes a server, its tools and its secrets.
#[tauri::command(rename_all = "snake_case")]
pub async fn remove_mcp_server(d: State<'_, Desktop>, server: String) -> IpcResult<()> {
    Ok(d.engram.remove_mcp_server(&server).await?)
}

/// Accepts (or deactivates) a server.
#[tauri::command(rename_all = "snake_case")]
pub async fn set_mcp_server_active(
    d: State<'_, Desktop>,
    server: String,
    active: bool,
) -> IpcResult<McpServer> {
    Ok(d.engram.set_mcp_server_active(&server, active).await?)
}

/// Stores the servers of a pasted `mcpServers` block, inactive.
#[tauri::command(rename_all = "snake_case")]
pub fn import_mcp_servers(
    d: State<'_, Desktop>,
    text: String,
    source: Option<String>,
) -> IpcResult<Vec<McpServer>> {
    let source = source.unwrap_or_else(|| "pasted config".to_owned());
    Ok(d.engram.import_mcp_servers(&text, &source)?)
}

/// Connects to the server and lists (and stores) its tools.
#[tauri::command(rename_all = "snake_case")]
pub async fn list_mcp_tools(d: State<'_, Desktop>, server: String) -> IpcResult<Vec<Tool>> {
    Ok(d.engram.list_mcp_tools(&server).await?)
}

/// The server's tools as last listed, without contacting it.
#[tauri::command(rename_all = "snake_case")]
pub fn stored_mcp_tools(d: State<'_, Desktop>, server: String) -> IpcResult<Vec<Tool>> {
    Ok(d.engram.stored_mcp_tools(&server)?)
}

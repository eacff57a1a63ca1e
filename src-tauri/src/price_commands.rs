//! The window's commands for model prices and what runs and agents cost. Same names and
//! arguments as `/app/{command}` (`crates/server/src/app_prices.rs`).

use crate::Desktop;
use crate::error::IpcResult;
use engram_core::{AgentId, ModelPrice, RunId, UsageCost};
use tauri::State;

/// Every known price (built-in table with the user's prices over it).
#[tauri::command(rename_all = "snake_case")]
pub fn model_prices(d: State<'_, Desktop>) -> IpcResult<Vec<ModelPrice>> {
    Ok(d.engram.model_prices()?)
}

/// Sets the user's price of a model (USD per million tokens).
#[tauri::command(rename_all = "snake_case")]
pub fn set_model_price(d: State<'_, Desktop>, price: ModelPrice) -> IpcResult<()> {
    Ok(d.engram.set_model_price(&price)?)
}

/// Removes the user's price of a model (a built-in one applies again).
#[tauri::command(rename_all = "snake_case")]
pub fn delete_model_price(d: State<'_, Desktop>, model: String) -> IpcResult<bool> {
    Ok(d.engram.delete_model_price(&model)?)
}

/// Tokens and cost of an agent, or of one of its runs.
#[tauri::command(rename_all = "snake_case")]
pub fn usage_cost(
    d: State<'_, Desktop>,
    agent_id: AgentId,
    run_id: Option<RunId>,
) -> IpcResult<UsageCost> {
    Ok(d.engram.usage_cost(&agent_id, run_id.as_ref())?)
}

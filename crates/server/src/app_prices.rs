//! `/app/…` commands for model prices and what runs and agents cost. Same names and
//! arguments as the desktop shell's commands (`src-tauri/src/price_commands.rs`).

use crate::AppState;
use crate::app::{AppResult, Args, done};
use axum::Router;
use axum::extract::State;
use axum::routing::post;
use engram_core::{AgentId, ModelPrice, RunId, UsageCost};
use serde::Deserialize;

/// The routes, merged into [`crate::app::routes`].
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/app/model_prices", post(model_prices))
        .route("/app/set_model_price", post(set_model_price))
        .route("/app/delete_model_price", post(delete_model_price))
        .route("/app/usage_cost", post(usage_cost))
}

#[derive(Deserialize)]
struct NoArgs {}

#[derive(Deserialize)]
struct PriceArg {
    price: ModelPrice,
}

#[derive(Deserialize)]
struct ModelArg {
    model: String,
}

#[derive(Deserialize)]
struct UsageArg {
    agent_id: AgentId,
    #[serde(default)]
    run_id: Option<RunId>,
}

async fn model_prices(
    State(s): State<AppState>,
    Args(_): Args<NoArgs>,
) -> AppResult<Vec<ModelPrice>> {
    done(s.engram.model_prices())
}

async fn set_model_price(State(s): State<AppState>, Args(a): Args<PriceArg>) -> AppResult<()> {
    done(s.engram.set_model_price(&a.price))
}

async fn delete_model_price(State(s): State<AppState>, Args(a): Args<ModelArg>) -> AppResult<bool> {
    done(s.engram.delete_model_price(&a.model))
}

async fn usage_cost(State(s): State<AppState>, Args(a): Args<UsageArg>) -> AppResult<UsageCost> {
    done(s.engram.usage_cost(&a.agent_id, a.run_id.as_ref()))
}

//! The storage contract: every test body here is generic over the backend and runs on both
//! (`sqlite::…` and `postgres::…`). What one backend does, the other must do the same way.

mod agents;
mod blocks;
mod concurrency;
mod context;
mod import;
mod leases;
mod lists;
mod message_vectors;
mod messages;
mod ops;
mod pages;
mod passages;
mod ranking;
mod repair;
mod rewrite;
mod settings;
mod sleeptime;
mod sleeptime_upkeep;
mod steps;
mod tools;
mod users;

use engram_core::{Agent, Block, Editor, Error, LlmConfig, NewBlock};
use engram_store_api::Backend;

/// A new agent (not stored yet).
pub fn agent(name: &str) -> Agent {
    Agent::new(name, LlmConfig::new("openai/gpt-4o-mini"))
}

/// An agent stored with `blocks` (label, value).
pub async fn agent_with(
    b: &impl Backend,
    name: &str,
    blocks: &[(&str, &str)],
) -> (Agent, Vec<Block>) {
    let new: Vec<NewBlock> = blocks.iter().map(|(l, v)| NewBlock::new(*l, *v)).collect();
    b.create_agent(&agent(name), &new, &[]).await.unwrap()
}

/// Edits by hand.
pub fn user() -> Editor {
    Editor::User
}

/// The error's stable code (`not_found`, `conflict`, `invalid_input`, `stale_version`).
pub fn code<T: std::fmt::Debug>(r: Result<T, Error>) -> &'static str {
    r.expect_err("an error").code()
}

//! Shared helpers: temp stores and ready-made agents.

use chrono::{DateTime, Utc};
use engram_core::{Agent, Block, LlmConfig, NewBlock};
use engram_store::Store;
use tempfile::TempDir;

/// A store in a fresh file inside a temp dir (the dir must outlive the store).
pub fn temp_store() -> (TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("data").join("engram.db")).unwrap();
    (dir, store)
}

/// An agent struct as the service layer would build it.
pub fn agent(name: &str) -> Agent {
    Agent {
        system: "You are a test agent.".into(),
        tools: vec!["send_message".into()],
        ..Agent::new(name, LlmConfig::new("openai/gpt-4o-mini"))
    }
}

/// Creates an agent with `persona` and `human` blocks.
pub fn create(store: &Store, name: &str) -> (Agent, Vec<Block>) {
    store
        .agents()
        .create(
            &agent(name),
            &[
                NewBlock::new("persona", "I am helpful."),
                NewBlock::new("human", ""),
            ],
            &[],
        )
        .unwrap()
}

/// A fixed UTC time from RFC 3339.
pub fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().to_utc()
}

//! Shared helpers: temp stores and ready-made agents.

use chrono::{DateTime, Utc};
use engram_core::{Agent, AgentId, Block, LlmConfig, LoopStyle, NewBlock};
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
    let now = Utc::now();
    Agent {
        id: AgentId::new(),
        name: name.into(),
        description: String::new(),
        system: "You are a test agent.".into(),
        llm: LlmConfig::new("openai/gpt-4o-mini"),
        embedding: None,
        loop_style: LoopStyle::ToolLoop,
        max_steps: 50,
        tools: vec!["send_message".into()],
        tool_rules: Vec::new(),
        summary: None,
        created_at: now,
        updated_at: now,
    }
}

/// Creates an agent with `persona` and `human` blocks.
pub fn create(store: &Store, name: &str) -> (Agent, Vec<Block>) {
    store
        .create_agent(
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

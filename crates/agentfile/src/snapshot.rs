//! Everything Engram stores about one agent, read in one place for the exporters.

use engram_core::{
    Agent, AgentId, Block, BlockEdit, BlockId, Message, Passage, PassageId, Result,
    SleeptimeSettings, Step,
};
use engram_store::{PassageList, Store};
use std::collections::HashMap;

/// One agent with its memory: settings, blocks (context order) with their edit history,
/// the whole message history (by `seq`), archival passages (oldest first) and the agent-file
/// extras an import kept, the stored passage vectors and the step (usage) history.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentSnapshot {
    /// The agent.
    pub agent: Agent,
    /// Its blocks, in context order.
    pub blocks: Vec<Block>,
    /// Edits per block, oldest first.
    pub history: HashMap<BlockId, Vec<BlockEdit>>,
    /// Every message, oldest first.
    pub messages: Vec<Message>,
    /// Every passage, oldest first.
    pub passages: Vec<Passage>,
    /// Agent-file extras (custom tools, tool rules…), if an import kept some.
    pub extras: Option<serde_json::Value>,
    /// The agent's tags, in order.
    pub tags: Vec<String>,
    /// Stored passage vectors by passage (made by the agent's embedding model).
    pub vectors: HashMap<PassageId, Vec<f32>>,
    /// Every step (LLM call with its usage), oldest first.
    pub steps: Vec<Step>,
    /// Its sleep-time settings.
    pub sleeptime: SleeptimeSettings,
}

/// Reads agent `id` whole. Errors: `NotFound("agent")`, `Storage`.
pub fn snapshot(store: &Store, id: &AgentId) -> Result<AgentSnapshot> {
    let agent = store.agents().get(id)?;
    let blocks = store.blocks().of_agent(id)?;
    let mut history = HashMap::new();
    for b in &blocks {
        let mut edits = store.blocks().history(&b.id, usize::MAX)?;
        edits.reverse();
        history.insert(b.id.clone(), edits);
    }
    let messages = store.messages().list(id, None, usize::MAX)?;
    let passages = store.passages().list(
        id,
        &PassageList {
            limit: usize::MAX,
            ascending: true,
            // An export keeps the history of facts that changed.
            include_superseded: true,
            ..PassageList::default()
        },
    )?;
    Ok(AgentSnapshot {
        agent,
        blocks,
        history,
        messages,
        passages,
        extras: store.agent_file_extras(id)?,
        tags: store.agents().tags(id)?,
        vectors: store.passages().vectors(id)?.into_iter().collect(),
        steps: store.runs().list_steps(id, None)?,
        sleeptime: store.sleeptime().settings(id)?,
    })
}

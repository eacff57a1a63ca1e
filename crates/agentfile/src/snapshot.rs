//! Everything Engram stores about one agent, read in one place for the exporters.

use engram_core::{
    Agent, AgentId, Block, BlockEdit, BlockId, Error, Message, Passage, PassageId, Result,
    SleeptimeSettings, Step,
};
use engram_store_api::{Backend, EXTRAS_SETTING_PREFIX, PassageRange, SeqOrder};
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

/// Reads agent `id` whole, through the storage interface (the desktop's SQLite file or a
/// shared server's PostgreSQL alike). Not one transaction: an export made while the agent
/// runs holds each part as it was when read.
///
/// Errors: `NotFound("agent")`, `Storage`.
pub async fn snapshot(store: &dyn Backend, id: &AgentId) -> Result<AgentSnapshot> {
    let agent = store.get_agent(id).await?;
    let blocks = store.agent_blocks(id).await?;
    let mut history = HashMap::new();
    for b in &blocks {
        let mut edits = store.block_history(&b.id, usize::MAX).await?;
        edits.reverse();
        history.insert(b.id.clone(), edits);
    }
    let messages = store
        .page_messages(id, None, None, usize::MAX, SeqOrder::Asc)
        .await?;
    let passages = store
        .list_passages(
            id,
            &PassageRange {
                limit: usize::MAX,
                ascending: true,
                // An export keeps the history of facts that changed.
                include_superseded: true,
                ..PassageRange::default()
            },
        )
        .await?;
    let extras = store
        .get_setting(&format!("{EXTRAS_SETTING_PREFIX}{id}"))
        .await?
        .map(|text| {
            serde_json::from_str(&text)
                .map_err(|e| Error::Storage(format!("agent file extras of {id}: {e}")))
        })
        .transpose()?;
    Ok(AgentSnapshot {
        extras,
        tags: store.agent_tags(id).await?,
        vectors: store.passage_vectors(id).await?.into_iter().collect(),
        steps: store.list_steps(id, None).await?,
        sleeptime: store.sleeptime_settings(id).await?,
        agent,
        blocks,
        history,
        messages,
        passages,
    })
}

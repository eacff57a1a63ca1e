//! Archival memory through the service, as the reranking tests use it: an agent holding a
//! few passages, a search as the window runs it, and the texts of its hits.

use engram_core::{AgentId, NewAgent, PassageHit, TagMatch};
use engram_service::Engram;

/// A new agent named `name` (default settings, so the built-in embedding model) holding
/// `passages`, each added through the service as the agent's tool would.
pub async fn agent_with_passages(engram: &Engram, name: &str, passages: &[&str]) -> AgentId {
    let id = engram
        .create_agent(NewAgent {
            name: name.into(),
            ..NewAgent::default()
        })
        .unwrap()
        .agent
        .id;
    for p in passages {
        engram.add_passage(&id, p, vec![]).await.unwrap();
    }
    id
}

/// The window's archival search for `q`: no tag or date filter, the first `k` hits.
pub async fn search(engram: &Engram, agent: &AgentId, q: &str, k: usize) -> Vec<PassageHit> {
    engram
        .search_archival(agent, q, vec![], TagMatch::Any, (None, None), k)
        .await
        .unwrap()
}

/// The texts of `hits`, in order.
pub fn texts(hits: &[PassageHit]) -> Vec<&str> {
    hits.iter().map(|h| h.passage.text.as_str()).collect()
}

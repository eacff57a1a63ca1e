//! Archival memory through the service, as the reranking tests use it: an agent holding a
//! few passages, a search as the window runs it, and the texts of its hits.

use engram_core::{AgentId, NewAgent, PassageHit, TagMatch};
use engram_service::Engram;

/// A new agent named `name` (default settings, so the built-in embedding model) holding
/// `passages`, each added through the service as the agent's tool would, with the
/// background backfill (token vectors) finished.
pub async fn agent_with_passages(engram: &Engram, name: &str, passages: &[&str]) -> AgentId {
    let id = engram
        .agents()
        .create(NewAgent {
            name: name.into(),
            ..NewAgent::default()
        })
        .await
        .unwrap()
        .agent
        .id;
    for p in passages {
        engram.archival().insert(&id, p, vec![]).await.unwrap();
    }
    // The background pass that stores each passage's token vectors has finished, so searches
    // read what is stored (as they do once an app has been open a moment).
    let started = std::time::Instant::now();
    while engram.archival().backfill_running(&id) {
        assert!(
            started.elapsed().as_secs() < 120,
            "the backfill did not finish"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    id
}

/// The window's archival search for `q`: no tag or date filter, the first `k` hits.
pub async fn search(engram: &Engram, agent: &AgentId, q: &str, k: usize) -> Vec<PassageHit> {
    engram
        .archival()
        .search(agent, q, vec![], TagMatch::Any, (None, None), k)
        .await
        .unwrap()
}

/// The texts of `hits`, in order.
pub fn texts(hits: &[PassageHit]) -> Vec<&str> {
    hits.iter().map(|h| h.passage.text.as_str()).collect()
}

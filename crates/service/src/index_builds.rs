//! The vector index's background builds, made visible: the store reports
//! each build's progress through an observer, which turns it into
//! [`Notice::VectorIndexBuild`] for every open window; [`Archival::index_builds`] answers
//! the current state for a window opened or reloaded mid-build.

use crate::Notice;
use engram_core::AgentId;
use engram_store::{BuildObserver, Store, VectorIndexBuild};
use std::sync::Arc;
use tokio::sync::broadcast;

/// Forwards the store's build reports to the notice channel (sent from the build's threads;
/// a broadcast send does not block).
pub(crate) fn forward(store: &Store, notices: broadcast::Sender<Notice>) {
    let observer: BuildObserver = Arc::new(move |b: &VectorIndexBuild| {
        let _ = notices.send(Notice::VectorIndexBuild {
            agent_id: AgentId::from(b.agent_id.clone()),
            done: b.done as u64,
            total: b.total as u64,
            finished: b.finished,
        });
    });
    store.on_vector_index_build(observer);
}

/// The state of one agent's vector index build, for `engram agent show` and
/// `GET /v1/agents/{agent_id}/archival-memory/index`, e.g.
/// `{"building":{"agent_id":"agent-…","done":512,"total":100000,"seconds":2,"finished":false},"pending":true}`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct VectorIndexStatus {
    /// The build running in this process, if one does (archival search is exact but slower
    /// until it is done).
    pub building: Option<VectorIndexBuild>,
    /// A build that will save its graph has started and not saved it yet: running here, in
    /// another process on the same data directory, or cut short by a quit (it starts again
    /// when `engram serve` or the desktop app starts).
    pub pending: bool,
}

#[cfg(test)]
mod tests {
    //! A real held build over a real SQLite file: the window's notices and the query command
    //! both show it, and its end.
    use crate::commands::{self, Caller};
    use crate::{Engram, Notice};
    use engram_core::{AgentId, LlmConfig, NewAgent, NewPassage};
    use engram_store::{PassageQuery, VectorIndexConfig};
    use std::sync::Arc;

    const DIM: usize = 16;

    /// A deterministic spread of vectors (no two alike).
    fn vector(i: u64) -> Vec<f32> {
        (0..DIM as u64)
            .map(|d| (((i + 1) * 2_654_435_761 + d * 40_503) % 1_000) as f32 / 500.0 - 1.0)
            .collect()
    }

    async fn agent_with_vectors(engram: &Engram, n: u64) -> AgentId {
        let new = NewAgent {
            name: "Ada".into(),
            llm: Some(LlmConfig::new("openai/mock-small")),
            ..NewAgent::default()
        };
        let id = engram.agents().create(new).await.expect("agent").agent.id;
        let ps: Vec<NewPassage> = (0..n)
            .map(|i| NewPassage {
                text: format!("passage {i}"),
                embedding: Some(vector(i)),
                ..Default::default()
            })
            .collect();
        engram.store.passages().insert(&id, &ps).expect("passages");
        id
    }

    fn search(engram: &Engram, agent: &AgentId) {
        let q = PassageQuery {
            query: "passage".into(),
            embedding: Some(vector(7)),
            top_k: 3,
            ..Default::default()
        };
        let hits = engram_retrieval::HybridSearch::search_passages(&engram.store, agent, &q)
            .expect("search");
        assert_eq!(hits.len(), 3);
    }

    fn builds_notices(rx: &mut tokio::sync::broadcast::Receiver<Notice>) -> Vec<(u64, u64, bool)> {
        let mut out = Vec::new();
        while let Ok(n) = rx.try_recv() {
            if let Notice::VectorIndexBuild {
                done,
                total,
                finished,
                ..
            } = n
            {
                out.push((done, total, finished));
            }
        }
        out
    }

    async fn asked(engram: &Arc<Engram>) -> serde_json::Value {
        let json = commands::call(
            engram,
            Caller::default(),
            "vector_index_builds",
            serde_json::Value::Null,
        )
        .expect("a call")
        .await
        .expect("answered");
        serde_json::from_str(&json).expect("json")
    }

    #[tokio::test]
    async fn a_build_is_announced_asked_for_and_announced_again_when_done() {
        let dir = tempfile::tempdir().unwrap();
        let engram = Engram::open_for_test(dir.path());
        engram.store.set_vector_index_config(VectorIndexConfig {
            exact_below: 50,
            persist_above: 100,
            ..VectorIndexConfig::default()
        });
        let agent = agent_with_vectors(&engram, 300).await;
        let mut rx = engram.notices();
        engram.store.hold_vector_index_builds(true);
        search(&engram, &agent);

        assert_eq!(builds_notices(&mut rx), [(0, 300, false)]);
        let now = asked(&engram).await;
        assert_eq!(now.as_array().map(Vec::len), Some(1), "{now}");
        assert_eq!(now[0]["agent_id"], agent.as_str());
        assert_eq!(
            (now[0]["done"].as_u64(), now[0]["total"].as_u64()),
            (Some(0), Some(300))
        );
        assert!(engram.archival().index_build_pending(&agent));
        let status = engram.archival().index_status(&agent).unwrap();
        assert_eq!(status.building.map(|b| (b.done, b.total)), Some((0, 300)));
        assert!(status.pending);
        assert!(
            engram
                .archival()
                .index_status(&AgentId::from("agent-none"))
                .is_err()
        );

        engram.store.hold_vector_index_builds(false);
        engram.store.wait_for_vector_index_builds();
        let heard = builds_notices(&mut rx);
        assert_eq!(heard.last(), Some(&(300, 300, true)), "{heard:?}");
        assert_eq!(asked(&engram).await, serde_json::json!([]));
        assert!(!engram.archival().index_build_pending(&agent));
        let status = engram.archival().index_status(&agent).unwrap();
        assert_eq!((status.building, status.pending), (None, false));
        search(&engram, &agent);
    }

    #[tokio::test]
    async fn a_build_cut_short_by_a_quit_is_pending_until_the_next_start_resumes_it() {
        let dir = tempfile::tempdir().unwrap();
        let config = VectorIndexConfig {
            exact_below: 50,
            persist_above: 100,
            ..VectorIndexConfig::default()
        };
        let agent = {
            let engram = Engram::open_for_test(dir.path());
            engram.store.set_vector_index_config(config);
            let agent = agent_with_vectors(&engram, 300).await;
            engram.store.hold_vector_index_builds(true);
            search(&engram, &agent);
            agent
        };
        let engram = Engram::open_for_test(dir.path());
        assert!(engram.archival().index_build_pending(&agent));
        assert!(
            engram.archival().index_builds().is_empty(),
            "nothing runs yet"
        );
        engram.store.set_vector_index_config(config);
        let mut rx = engram.notices();
        engram.store.hold_vector_index_builds(true);
        assert_eq!(engram.archival().resume_index_builds().unwrap(), 1);
        assert_eq!(builds_notices(&mut rx), [(0, 300, false)]);
        assert_eq!(asked(&engram).await[0]["total"].as_u64(), Some(300));
        engram.store.hold_vector_index_builds(false);
        engram.store.wait_for_vector_index_builds();
        assert_eq!(builds_notices(&mut rx).last(), Some(&(300, 300, true)));
        assert!(!engram.archival().index_build_pending(&agent));
    }
}

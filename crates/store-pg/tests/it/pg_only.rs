//! Lease behaviour only PostgreSQL can show: replicas with pools of their own racing for one
//! agent's lease.

use crate::harness::{Harness, Postgres};
use engram_core::{Agent, LlmConfig};
use engram_store_api::{AgentStore, LeaseGrant, LeaseStore};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_racing_for_one_lease_get_one_holder() {
    let h = Postgres::fresh().await;
    let agent = Agent::new("contended", LlmConfig::new("openai/gpt-4o-mini"));
    h.backend().create_agent(&agent, &[], &[]).await.unwrap();
    let mut tasks = Vec::new();
    for n in 0..6 {
        let replica = h.replica().await;
        let id = agent.id.clone();
        tasks.push(tokio::spawn(async move {
            replica
                .acquire_lease(&id, &format!("replica-{n}"), Duration::from_secs(10))
                .await
                .unwrap()
        }));
    }
    let mut holders = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            LeaseGrant::Granted(lease) => holders.push(lease),
            LeaseGrant::Busy { .. } => {}
        }
    }
    assert_eq!(holders.len(), 1, "{holders:?}");
    assert_eq!(holders[0].token, 1);
}

/// The database restarted under a store: calls fail while it is down, with an error that says
/// so, and work again once it is back, on fresh connections, without reopening the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_recovers_when_the_database_comes_back() {
    let cluster = engram_test_postgres::Cluster::start().expect("a private cluster starts");
    let url = cluster.database().unwrap().url();
    let store = engram_store_pg::PgStore::connect_with_pool_size(&url, 2)
        .await
        .unwrap();
    let agent = Agent::new("survivor", LlmConfig::new("openai/gpt-4o-mini"));
    store.create_agent(&agent, &[], &[]).await.unwrap();

    cluster.stop().unwrap();
    match store.get_agent(&agent.id).await {
        Err(engram_core::Error::Storage(msg)) => assert!(!msg.is_empty()),
        other => panic!("expected a storage error while the database is down, got {other:?}"),
    }
    cluster.restart().unwrap();
    // The pool drops the connections the restart closed and opens new ones: the very next
    // call works.
    assert_eq!(store.get_agent(&agent.id).await.unwrap().name, "survivor");
    let again = Agent::new("after the restart", LlmConfig::new("openai/gpt-4o-mini"));
    store.create_agent(&again, &[], &[]).await.unwrap();
    assert_eq!(store.list_agents().await.unwrap().len(), 2);
}

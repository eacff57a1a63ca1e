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

//! Leases per agent: one holder at a time, a new fencing token at each acquisition, and a
//! commit under a lease refused once the lease is no longer current — the holder paused past
//! its expiry can never write.
//!
//! Expiry is made with short renewals and sleeps twice as long; "still held" checks use
//! leases of 10 s, so a slow machine cannot make them expire early.

use super::agent_with;
use crate::harness::{Harness, on_both_backends};
use engram_core::{AgentId, BlockOp, Editor, Error, OpOutcome};
use engram_store_api::{BlockStore, Lease, LeaseGrant, LeaseStore};
use std::time::Duration;

on_both_backends!(
    a_lease_has_one_holder_and_passes_on_when_it_expires,
    a_holder_paused_past_its_lease_cannot_commit,
    a_released_lease_is_free_at_once,
    leases_of_unknown_agents_are_not_found,
    concurrent_acquisitions_grant_one_lease,
);

const LONG: Duration = Duration::from_secs(10);
const SHORT: Duration = Duration::from_millis(150);
const PAST_SHORT: Duration = Duration::from_millis(350);

fn granted(g: LeaseGrant) -> Lease {
    match g {
        LeaseGrant::Granted(lease) => lease,
        LeaseGrant::Busy { holder, .. } => panic!("expected the lease, {holder} holds it"),
    }
}

fn busy_holder(g: LeaseGrant) -> String {
    match g {
        LeaseGrant::Busy { holder, .. } => holder,
        LeaseGrant::Granted(lease) => panic!("expected a busy lease, got {lease:?}"),
    }
}

fn is_lost<T: std::fmt::Debug>(r: Result<T, Error>, lease: &Lease) {
    match r {
        Err(Error::LeaseLost { agent, token }) => {
            assert_eq!((agent, token), (lease.agent_id.to_string(), lease.token));
        }
        other => panic!("expected the lease to be lost, got {other:?}"),
    }
}

async fn a_lease_has_one_holder_and_passes_on_when_it_expires<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, _) = agent_with(&b, "busy", &[]).await;
    let a = granted(b.acquire_lease(&agent.id, "replica-a", LONG).await.unwrap());
    assert_eq!((a.holder.as_str(), &a.agent_id), ("replica-a", &agent.id));
    assert_eq!(
        busy_holder(b.acquire_lease(&agent.id, "replica-b", LONG).await.unwrap()),
        "replica-a"
    );
    assert_eq!(
        busy_holder(b.acquire_lease(&agent.id, "replica-a", LONG).await.unwrap()),
        "replica-a",
        "a holder renews; it does not acquire twice"
    );
    let renewed = b.renew_lease(&a, SHORT).await.unwrap();
    assert_eq!(renewed.token, a.token);
    assert!(renewed.expires_at < a.expires_at);
    tokio::time::sleep(PAST_SHORT).await;
    let next = granted(b.acquire_lease(&agent.id, "replica-b", LONG).await.unwrap());
    assert_eq!(
        next.token,
        a.token + 1,
        "each acquisition gets a newer fencing token"
    );
    assert_eq!(next.holder, "replica-b");
}

async fn a_holder_paused_past_its_lease_cannot_commit<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, blocks) = agent_with(&b, "paused", &[("notes", "")]).await;
    let notes = &blocks[0].id;
    let append = |text: &str| BlockOp::Append { text: text.into() };
    let by = |agent: &AgentId| Editor::Agent {
        agent_id: agent.clone(),
        tool_call_id: None,
    };

    let a = granted(b.acquire_lease(&agent.id, "replica-a", LONG).await.unwrap());
    let out = b
        .apply_block_op_leased(&a, notes, &append("from a"), &by(&agent.id))
        .await
        .unwrap();
    assert!(matches!(out, OpOutcome::Changed(_)), "{out:?}");

    // Paused past its lease: even with nobody else holding it, its commit is refused.
    b.renew_lease(&a, SHORT).await.unwrap();
    tokio::time::sleep(PAST_SHORT).await;
    is_lost(
        b.apply_block_op_leased(&a, notes, &append("late a"), &by(&agent.id))
            .await,
        &a,
    );

    let other = h.replica().await;
    let b2 = granted(
        other
            .acquire_lease(&agent.id, "replica-b", LONG)
            .await
            .unwrap(),
    );
    assert_eq!(b2.token, a.token + 1);
    is_lost(
        b.apply_block_op_leased(&a, notes, &append("stale a"), &by(&agent.id))
            .await,
        &a,
    );
    is_lost(b.renew_lease(&a, LONG).await, &a);
    b.release_lease(&a).await.unwrap(); // a lease no longer held: nothing happens
    assert_eq!(
        busy_holder(
            other
                .acquire_lease(&agent.id, "replica-c", LONG)
                .await
                .unwrap()
        ),
        "replica-b"
    );

    let out = other
        .apply_block_op_leased(&b2, notes, &append("from b"), &by(&agent.id))
        .await
        .unwrap();
    assert!(matches!(out, OpOutcome::Changed(_)), "{out:?}");
    let stored = b.get_block(notes).await.unwrap();
    assert_eq!(
        stored.value, "from a\nfrom b",
        "the stale holder's edits left nothing"
    );
    assert_eq!(b.block_history(notes, 10).await.unwrap().len(), 2);
}

async fn a_released_lease_is_free_at_once<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, blocks) = agent_with(&b, "handover", &[("notes", "")]).await;
    let a = granted(b.acquire_lease(&agent.id, "replica-a", LONG).await.unwrap());
    b.release_lease(&a).await.unwrap();
    let next = granted(b.acquire_lease(&agent.id, "replica-b", LONG).await.unwrap());
    assert_eq!(next.token, a.token + 1);
    let op = BlockOp::Append {
        text: "after release".into(),
    };
    is_lost(
        b.apply_block_op_leased(&a, &blocks[0].id, &op, &Editor::User)
            .await,
        &a,
    );
    assert_eq!(
        b.get_block(&blocks[0].id).await.unwrap().version,
        1,
        "nothing written"
    );
}

async fn leases_of_unknown_agents_are_not_found<H: Harness>(h: H) {
    let b = h.backend();
    let ghost = super::agent("never stored").id;
    assert_eq!(
        super::code(b.acquire_lease(&ghost, "replica-a", LONG).await),
        "not_found"
    );
}

async fn concurrent_acquisitions_grant_one_lease<H: Harness>(h: H) {
    let (agent, _) = agent_with(&h.backend(), "contended", &[]).await;
    let tasks: Vec<_> = (0..8)
        .map(|n| {
            let b = h.backend();
            let agent = agent.id.clone();
            tokio::spawn(async move {
                b.acquire_lease(&agent, &format!("replica-{n}"), LONG)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut winners = 0;
    for t in tasks {
        if let LeaseGrant::Granted(lease) = t.await.unwrap() {
            assert_eq!(lease.token, 1);
            winners += 1;
        }
    }
    assert_eq!(winners, 1);
}

//! What only PostgreSQL can show: replicas with pools of their own racing for one agent's
//! lease, a store outliving a database restart, notices between replicas, and a repair asked
//! for only when one is needed.

use crate::harness::{Harness, Postgres};
use engram_core::{Agent, AgentId, LlmConfig, NewMessage, ToolCall};
use engram_store_api::{AgentStore, LeaseGrant, LeaseStore, MessageStore, StepStore};
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

/// The next event a listener hears within `wait`, or `None`.
async fn heard(
    listener: &mut engram_store_pg::Listener,
    wait: Duration,
) -> Option<engram_store_pg::BusEvent> {
    tokio::time::timeout(wait, listener.recv())
        .await
        .ok()
        .flatten()
}

/// A notice one replica publishes reaches a listener on another, in order; one sent inside a
/// transaction arrives when it commits and never when it rolls back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notices_reach_other_replicas_on_commit_only() {
    use engram_store_pg::BusEvent::Notice;
    let h = Postgres::fresh().await;
    let replica = h.replica().await;
    let mut listener = replica.listen().await.unwrap();
    let publisher = h.backend();
    publisher.publish("first").await.unwrap();
    publisher.publish("second").await.unwrap();
    let short = Duration::from_secs(5);
    assert_eq!(
        heard(&mut listener, short).await,
        Some(Notice("first".into()))
    );
    assert_eq!(
        heard(&mut listener, short).await,
        Some(Notice("second".into()))
    );

    // A writer's own transaction, as a step's commit will send its notices.
    let (mut client, connection) = tokio_postgres::connect(h.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let tx = client.transaction().await.unwrap();
    tx.execute("SELECT pg_notify('engram_notices', 'rolled back')", &[])
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    let tx = client.transaction().await.unwrap();
    tx.execute("SELECT pg_notify('engram_notices', 'committed')", &[])
        .await
        .unwrap();
    assert_eq!(
        heard(&mut listener, Duration::from_millis(300)).await,
        None,
        "nothing before the commit"
    );
    tx.commit().await.unwrap();
    assert_eq!(
        heard(&mut listener, short).await,
        Some(Notice("committed".into()))
    );

    let big = "x".repeat(engram_store_pg::MAX_NOTICE_BYTES + 1);
    assert!(matches!(
        publisher.publish(&big).await,
        Err(engram_core::Error::Invalid(_))
    ));
}

/// The database restarted under a listener: it listens again on its own and says so, since
/// notices sent while it was away are lost; then it hears new ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_comes_back_after_the_database_restarts_and_says_so() {
    use engram_store_pg::BusEvent::{Notice, Resync};
    let cluster = engram_test_postgres::Cluster::start().expect("a private cluster starts");
    let url = cluster.database().unwrap().url();
    let store = engram_store_pg::PgStore::connect_with_pool_size(&url, 2)
        .await
        .unwrap();
    let mut listener = store.listen().await.unwrap();
    store.publish("before").await.unwrap();
    let wait = Duration::from_secs(20);
    assert_eq!(
        heard(&mut listener, wait).await,
        Some(Notice("before".into()))
    );

    cluster.stop().unwrap();
    // Published while the database is down: lost, as the listener will say.
    assert!(store.publish("while down").await.is_err());
    cluster.restart().unwrap();
    assert_eq!(heard(&mut listener, wait).await, Some(Resync));
    store.publish("after").await.unwrap();
    assert_eq!(
        heard(&mut listener, wait).await,
        Some(Notice("after".into()))
    );
}

/// PostgreSQL cannot store a NUL character in text, where SQLite keeps it: a message, a
/// passage or a block holding one is the caller's invalid input, said plainly, and nothing is
/// written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_with_a_nul_character_is_refused_as_invalid_input() {
    use engram_core::{BlockPatch, Editor, NewBlock, NewMessage, NewPassage};
    use engram_store_api::{BlockStore, MessageStore, PassageRange, PassageStore};
    let h = Postgres::fresh().await;
    let b = h.backend();
    let agent = Agent::new("nul", LlmConfig::new("openai/gpt-4o-mini"));
    let (_, blocks) = b
        .create_agent(&agent, &[NewBlock::new("human", "Ana")], &[])
        .await
        .unwrap();
    let refused = |r: engram_core::Result<()>| match r {
        Err(engram_core::Error::Invalid(m)) => assert!(m.contains("NUL"), "{m}"),
        other => panic!("expected invalid input, got {other:?}"),
    };
    let message = b
        .append_messages(&agent.id, &[NewMessage::user("a\0b")])
        .await;
    refused(message.map(drop));
    let passage = NewPassage {
        text: "a\0b".into(),
        tags: vec![],
        embedding: None,
        created_at: None,
    };
    refused(b.insert_passages(&agent.id, &[passage]).await.map(drop));
    let patch = BlockPatch {
        value: Some("a\0b".into()),
        ..BlockPatch::default()
    };
    refused(
        b.update_block(&blocks[0].id, &patch, &Editor::User)
            .await
            .map(drop),
    );
    assert!(
        b.page_messages(&agent.id, None, None, 10, engram_store_api::SeqOrder::Asc)
            .await
            .unwrap()
            .is_empty()
    );
    let range = PassageRange {
        limit: 10,
        ..PassageRange::default()
    };
    assert!(b.list_passages(&agent.id, &range).await.unwrap().is_empty());
    assert_eq!(b.get_block(&blocks[0].id).await.unwrap().value, "Ana");
}

/// SQLite leaves the check to the repair itself (`needs_repair` answers true); PostgreSQL reads
/// it, so a run on a clean context makes no repair's round trip.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repair_is_needed_only_while_a_call_is_open() {
    let h = Postgres::fresh().await;
    let b = h.backend();
    let agent = Agent::new("ana", LlmConfig::new("openai/gpt-4o-mini"));
    b.create_agent(&agent, &[], &[]).await.unwrap();
    assert!(
        !b.needs_repair(&agent.id).await.unwrap(),
        "an empty context"
    );
    let open = ToolCall {
        id: "c1".into(),
        name: "core_memory_append".into(),
        arguments: "{}".into(),
    };
    b.append_messages(
        &agent.id,
        &[
            NewMessage::user("remember this"),
            NewMessage::assistant("", None, vec![open]),
        ],
    )
    .await
    .unwrap();
    assert!(b.needs_repair(&agent.id).await.unwrap(), "c1 has no result");
    assert_eq!(
        b.repair_tool_calls(&agent.id, chrono::Utc::now())
            .await
            .unwrap(),
        1
    );
    assert!(!b.needs_repair(&agent.id).await.unwrap(), "repaired");
    assert!(matches!(
        b.needs_repair(&AgentId::new()).await,
        Err(engram_core::Error::NotFound { .. })
    ));
}

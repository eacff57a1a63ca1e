//! What only the PostgreSQL store has: its migrations, applied once under an advisory lock
//! however many replicas open a fresh database at the same moment.

use engram_store_pg::{MIGRATIONS, PgError, PgStore};

fn applied_all() -> Vec<(i32, String)> {
    MIGRATIONS
        .iter()
        .map(|m| (m.version, m.name.to_owned()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_opening_a_fresh_database_together_migrate_it_once() {
    let url = engram_test_postgres::database().url();
    let opens = (0..8).map(|_| {
        let url = url.clone();
        tokio::spawn(async move { PgStore::connect_with_pool_size(&url, 2).await })
    });
    let stores: Vec<PgStore> = futures::future::join_all(opens)
        .await
        .into_iter()
        .map(|r| r.unwrap().expect("every replica opens the database"))
        .collect();
    for s in &stores {
        assert_eq!(s.applied_migrations().await.unwrap(), applied_all());
    }
    // Opening again finds nothing to do.
    let again = PgStore::connect(&url).await.unwrap();
    assert_eq!(again.applied_migrations().await.unwrap(), applied_all());
}

#[tokio::test]
async fn a_database_from_a_newer_engram_is_refused() {
    let url = engram_test_postgres::database().url();
    PgStore::connect(&url).await.unwrap();
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
        .execute(
            "INSERT INTO engram_migrations (version, name) VALUES (999, 'from the future')",
            &[],
        )
        .await
        .unwrap();
    match PgStore::connect(&url).await {
        Err(e @ PgError::TooNew { found: 999, .. }) => {
            assert!(e.to_string().contains("upgrade Engram"), "{e}");
        }
        other => panic!("expected the database to be refused, got {other:?}"),
    }
}

#[tokio::test]
async fn an_unreachable_database_says_so() {
    // A port nothing listens on: the cluster's port with a database name that does not exist
    // gives a server error instead, so use a closed port.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = PgStore::connect(&format!("postgres://postgres@127.0.0.1:{closed}/engram"))
        .await
        .unwrap_err();
    assert!(matches!(err, PgError::Connect(_)), "{err:?}");
    assert!(
        err.to_string().starts_with("cannot reach the database"),
        "{err}"
    );
    let err = PgStore::connect("postgres://[::1").await.unwrap_err();
    assert!(matches!(err, PgError::Url(_)), "{err:?}");
}

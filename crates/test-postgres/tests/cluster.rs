//! The helper against the installed PostgreSQL: a private cluster starts, serves databases,
//! restarts and goes away on drop; the shared one hands each test its own database.

use engram_test_postgres::{Cluster, database};
use std::net::TcpStream;

#[test]
fn a_private_cluster_serves_databases_restarts_and_stops_on_drop() {
    let cluster = Cluster::start().expect("a test cluster starts");
    let port = cluster.port();
    assert!(TcpStream::connect(("127.0.0.1", port)).is_ok());
    let a = cluster.database().unwrap();
    let b = cluster.database().unwrap();
    assert_ne!(a.name, b.name);
    assert_eq!(
        a.url(),
        format!("postgres://postgres@127.0.0.1:{port}/{}", a.name)
    );

    cluster.stop().unwrap();
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
    cluster.restart().unwrap();
    assert!(cluster.database().is_ok(), "the restarted server answers");

    drop(cluster);
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the server stops when the cluster is dropped"
    );
}

#[test]
fn each_test_gets_its_own_database_in_the_shared_cluster() {
    let a = database();
    let b = database();
    assert_eq!(a.port, b.port, "one cluster per test binary");
    assert_ne!(a.name, b.name);
    assert!(TcpStream::connect(("127.0.0.1", a.port)).is_ok());
}

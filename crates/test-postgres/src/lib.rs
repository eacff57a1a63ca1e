//! A real PostgreSQL for Engram's tests, started by the tests themselves.
//!
//! Debian's `postgresql` package provides the server binaries (`initdb`, `pg_ctl`, `postgres`,
//! `psql`); this crate makes a cluster of its own in a temp dir, listening on `127.0.0.1` on a
//! free port only (its unix socket sits in the temp dir too), with `trust` authentication for
//! the superuser `postgres`. PostgreSQL refuses to run as root, so when the tests run as root
//! the cluster's files belong to `nobody` and its commands run through `runuser -u nobody --`.
//!
//! Two ways to get one:
//! - [`database`]: a fresh database (`CREATE DATABASE`) in the cluster shared by every test of
//!   the test binary. nextest runs each test in its own process, so "shared" means across
//!   processes: the first test starts the cluster under a file lock, the others find it
//!   running; each test process holds a shared lock for its whole life, and a small watcher
//!   started with the cluster stops and removes it once no test process has held that lock for
//!   [`IDLE_STOP`]. A test pays for one `CREATE DATABASE` (~0.1 s), not a cluster.
//! - [`Cluster::start`]: a private cluster, stopped and removed on drop, for tests that stop or
//!   restart the server.
//!
//! PostgreSQL missing is an error ([`ClusterError::NotInstalled`]) that [`database`] turns into a
//! failed test saying what to install: a backend that cannot be tested is never skipped quietly.

mod bin;
mod cluster;
mod shared;

pub use bin::PgBin;
pub use cluster::Cluster;
pub use shared::{IDLE_STOP, database, try_database};

use std::path::PathBuf;

/// Why a test cluster or database could not be had.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// No PostgreSQL server binaries were found.
    #[error(
        "PostgreSQL is not installed: no initdb in {searched}. Install Debian's `postgresql` \
         package (bash .ci/setup.sh does), or set ENGRAM_PG_BIN to the directory holding \
         initdb and pg_ctl"
    )]
    NotInstalled {
        /// The places looked in, comma-separated.
        searched: String,
    },
    /// A file or directory of the cluster could not be made or read.
    #[error("test cluster files at {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A PostgreSQL command failed.
    #[error("{command} failed: {output}")]
    Command {
        /// The command, e.g. `pg_ctl start`.
        command: String,
        /// Its stderr and stdout (or the server log's tail), trimmed.
        output: String,
    },
}

impl ClusterError {
    fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> ClusterError {
        let path = path.into();
        move |source| ClusterError::Io { path, source }
    }
}

/// One database of a test cluster, for one test. Connect to [`url`](Self::url); every
/// connection to it (several pools, as replicas would have) sees the same data.
#[derive(Clone, Debug)]
pub struct TestDatabase {
    /// The database's name, e.g. `t_4242_1_…`.
    pub name: String,
    /// Always `127.0.0.1`.
    pub host: String,
    /// The cluster's TCP port.
    pub port: u16,
    /// The superuser the tests connect as (`postgres`, no password).
    pub user: String,
}

impl TestDatabase {
    /// `postgres://postgres@127.0.0.1:PORT/NAME`.
    pub fn url(&self) -> String {
        format!(
            "postgres://{}@{}:{}/{}",
            self.user, self.host, self.port, self.name
        )
    }
}

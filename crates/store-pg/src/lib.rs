//! Engram's PostgreSQL store: the storage interface ([`engram_store_api`]) on one PostgreSQL
//! database that several `engram serve` replicas share.
//!
//! [`PgStore`] is a pool of connections (`deadpool-postgres` over `tokio-postgres`); clones
//! share it. Opening one applies the store's own numbered migrations (`migrations`) under a
//! PostgreSQL advisory lock, so replicas that start together apply each migration once.
//!
//! What differs from the SQLite store, and why:
//! - **Row locks instead of one writer.** SQLite serialises every write (`BEGIN IMMEDIATE`);
//!   here a block edit locks only its block (`SELECT … FOR UPDATE`), re-applies its operation
//!   to the value stored then, re-checks the limit and writes the history row in the same
//!   transaction. Edits of different blocks run in parallel; edits of one block queue, and none
//!   is lost.
//! - **Label uniqueness per agent under the agent's row lock.** A label lives on the
//!   (shareable) block, so no index can enforce it; attaching or relabelling locks the agents
//!   concerned first, so two replicas cannot both pass the check.
//! - **Retries of conflicts the database detects.** Two transactions that lock the same rows in
//!   opposite orders (a relabel and an attach) may deadlock; PostgreSQL aborts one, and it is
//!   run again from the start (`tx::retry`).
//! - **Leases per agent** (`leases`): a row per agent with a fencing token and an expiry from
//!   the database's clock; a commit under a lease locks that row after checking it.
//! - **Appends under the agent's row lock.** The next message `seq` follows the agent's last
//!   one; an append locks the agent's row before reading it, so appends from several replicas
//!   queue and each batch gets its own run of numbers (`messages`).
//! - **Full-text search with `tsvector`.** The words of messages and passages are generated
//!   `tsvector` columns with GIN indexes, stemmed like the SQLite store's FTS5 tables; ranked by
//!   `ts_rank`, not BM25. Passage tags are a `text[]` (GIN index) and vectors plain bytes.
//! - **Notices between replicas** (`notices`): `LISTEN`/`NOTIFY`, delivered on commit; a
//!   listener that lost its connection listens again and says so, as notices are not kept.
//! - **Types.** Timestamps are `timestamptz` (microseconds, as the SQLite store keeps them);
//!   JSON-valued fields are `jsonb`.
//!
//! Connections are plain TCP: for now a server reaches its database on the same host or a
//! private network (TLS to the database comes with remote serving).

mod agent_list;
mod agents;
mod block_list;
mod blocks;
mod context;
mod created_page;
mod error;
mod import;
mod leases;
mod message_vectors;
mod messages;
mod migrations;
mod notices;
mod passage_page;
mod passages;
mod ranking;
mod repair;
mod rewrite;
mod rows;
mod settings;
mod sleeptime;
mod steps;
mod tools;
mod tx;
mod users;

pub use engram_store_api::BusEvent;
pub use error::PgError;
pub use migrations::{MIGRATIONS, Migration};
pub use notices::{Listener, MAX_NOTICE_BYTES, NOTICE_CHANNEL};

use deadpool_postgres::{Manager, ManagerConfig, Pool, QueueMode, RecyclingMethod};
use std::str::FromStr;

/// Connections a store opens at most, unless told otherwise.
pub const DEFAULT_POOL_SIZE: usize = 16;

/// Handle to an Engram database on PostgreSQL. Cheap to clone; clones share one pool.
#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    /// Where the database is, for connections outside the pool (a notice listener's).
    config: tokio_postgres::Config,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let status = self.pool.status();
        f.debug_struct("PgStore")
            .field("connections", &status.size)
            .field("max", &status.max_size)
            .finish()
    }
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://user@host:port/dbname`, or libpq's
    /// `key=value` form) with a pool of up to [`DEFAULT_POOL_SIZE`] connections, and applies
    /// pending migrations.
    ///
    /// Errors: [`PgError::Url`] for a URL `tokio-postgres` cannot read; [`PgError::Connect`]
    /// when the database cannot be reached; [`PgError::Migration`] or [`PgError::TooNew`].
    pub async fn connect(url: &str) -> Result<PgStore, PgError> {
        Self::connect_with_pool_size(url, DEFAULT_POOL_SIZE).await
    }

    /// Like [`connect`](Self::connect), with at most `size` connections (at least 1).
    ///
    /// Errors: as [`connect`](Self::connect).
    pub async fn connect_with_pool_size(url: &str, size: usize) -> Result<PgStore, PgError> {
        let config = tokio_postgres::Config::from_str(url).map_err(PgError::Url)?;
        let manager = Manager::from_config(
            config.clone(),
            tokio_postgres::NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        // The connection used last goes out first: a lone request keeps reusing the few
        // connections whose statements are prepared and whose server process is warm, rather
        // than going round every connection the pool ever opened.
        let pool = Pool::builder(manager)
            .max_size(size.max(1))
            .queue_mode(QueueMode::Lifo)
            .build()
            .map_err(|e| PgError::Pool(e.to_string()))?;
        let store = PgStore { pool, config };
        let mut client = store.client().await?;
        migrations::run(&mut client).await?;
        Ok(store)
    }

    /// The migrations applied to this database, oldest first: `(version, name)`.
    ///
    /// Errors: [`PgError::Connect`], [`PgError::Db`].
    pub async fn applied_migrations(&self) -> Result<Vec<(i32, String)>, PgError> {
        let client = self.client().await?;
        migrations::applied(&client).await
    }

    /// A connection from the pool. Errors: [`PgError::Connect`].
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Client, PgError> {
        Ok(self.pool.get().await?)
    }
}

//! Engram's persistence: everything an agent is and remembers, in one SQLite file.
//!
//! [`Store`] owns one connection behind a mutex; every method is synchronous and short, and every
//! write that belongs together (a step's messages and memory edits, a block edit and its history
//! row) runs in one transaction. Search runs on FTS5 (BM25, one index per agent: see
//! `fts_partitions`), blended with vector similarity from a per-agent index (`vector_index`)
//! when the caller brings a query embedding.
//!
//! The store also implements the storage interface ([`engram_store_api`], in `backend`), by
//! calling its own methods; the PostgreSQL store implements the same interface.
//!
//! Layout: `migrations` holds the schema; one module per kind of row (`agents`, `blocks`,
//! `messages`, `passages`, `steps`, `settings`); `import` writes whole agent files; `repair`
//! fixes orphaned tool calls; `search` builds safe FTS5 queries and fuses rankings; `sql` maps
//! rows and errors.
//!
//! Timestamps are stored as INTEGER unix **microseconds** (they sort and filter as integers);
//! every struct a method returns is truncated to microseconds so it equals what later reads return.

mod agent_list;
mod agents;
mod approvals;
mod backend;
mod base_urls;
mod block_list;
mod block_ops;
mod blocks;
mod calibration;
mod candidates;
mod client_writes;
mod created_page;
mod endpoints;
mod file_chunks;
mod file_pieces;
mod file_state;
mod folder_files;
mod folder_vectors;
mod folder_watches;
mod folders;
mod fts_partitions;
mod import;
mod leases;
mod mcp;
mod mcp_pending;
mod message_pages;
mod message_rows;
mod message_vectors;
mod messages;
mod migration_client_writes;
mod migration_folders;
mod migration_users;
mod migrations;
mod model_windows;
mod pass_commit;
mod passage_list;
mod passage_neighbours;
mod passage_rows;
mod passage_tokens;
mod passage_vectors;
mod passage_words;
mod passages;
mod prices;
pub mod private;
mod repair;
mod rewrite;
mod rollback;
mod rooms;
mod runs;
mod search;
mod settings;
mod sharing;
mod sleeptime;
mod sql;
mod step_edits;
mod steps;
mod term_stats;
mod tools;
mod undo;
mod users;
mod vector_build;
mod vector_index;

pub use base_urls::{BaseUrlOwner, BaseUrlRewrite, StoredBaseUrl};
pub use candidates::{Bm25, CandidateDepth, Candidates, NeighbourMap, Ranking};
pub use client_writes::ClientWriteState;
pub use engram_core::OpOutcome;
pub use engram_core::RunRecord;
pub use engram_store_api::{AgentList, BlockList, PassageList, PassagePage};
pub use engram_store_api::{
    ApprovalWrite, BlockChange, BlockWrite, CommittedStep, StepCommit, StepStore,
};
pub use engram_store_api::{CALIBRATION_SETTING_PREFIX, Calibration};
pub use engram_store_api::{
    EXTRAS_SETTING_PREFIX, ImportAgent, ImportBlock, ImportBundle, ImportMessage,
    ImportSupersession, ImportedIds, ImportedTool,
};
pub use engram_store_api::{MessageVector, UnembeddedMessage, embeddable_text};
pub use engram_store_api::{PassCommit, PassageOp};
pub use file_chunks::UnembeddedChunk;
pub use file_pieces::{NewPiece, TextPart};
pub use file_state::{FileWindow, MAX_WINDOW_CHARS, qualified_name, window as file_window};
pub use folder_files::{FileUpload, NewChunk, ParsedFile, Upserted};
pub use folders::{FILE_TOOLS, FolderPatch};
pub use mcp_pending::{AttachedMcpTools, PendingMcpTool};
pub use message_pages::{Compaction, MessageWindow, SeqOrder, WindowAt};
pub use messages::{MessageHit, MessageQuery, SEQ_GAP};
pub use model_windows::MODEL_WINDOW_SETTING_PREFIX;
pub use passage_rows::PassageQuery;
pub use rollback::{BlockRevert, TurnRollback};
pub use rooms::{
    AgentRows, BlockRows, ClientWriteRows, FolderRows, MessageRows, PassageRows, RunRows,
    SettingRows, SleeptimeRows, ToolRows, UserRows,
};
pub use runs::ToolEdit;
pub use settings::ProviderRow;
pub use sharing::{BlockAgent, SharedBlock};
pub use term_stats::TermStats;
pub use undo::{UndoPlan, cannot_undo_alone, revert_value};
pub use vector_build::{BuildObserver, REPORT_EVERY, VectorIndexBuild};
pub use vector_index::VectorIndexConfig;

#[allow(unused_imports)] // named in docs
use engram_core::Error;
use engram_core::Result;
use rusqlite::{Connection, Transaction, TransactionBehavior};
use sql::DbResult;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// How many prepared statements each connection keeps; search builds a few SQL variants per
/// filter combination, so the default of 16 would evict hot insert statements.
const STATEMENT_CACHE: usize = 128;

/// Handle to an Engram database. Cheap to clone; clones share one connection.
///
/// All methods are synchronous and hold the connection only for the duration of the call, so
/// async callers may call them directly for short operations. Errors are
/// [`Error::Storage`] for SQLite failures, [`Error::NotFound`] for missing rows,
/// [`Error::Invalid`] for bad input and [`Error::Conflict`] for label or id clashes.
#[derive(Clone)]
pub struct Store {
    conn: Arc<Mutex<Connection>>,
    /// Per-agent vector indexes over passages (see `vector_index`). Locked after `conn`,
    /// never before it.
    vectors: Arc<Mutex<vector_index::Indexes>>,
    /// Leases per agent of the storage interface (see `leases`), shared by every handle this
    /// process has on the file. Taken before `conn` when both are held, never after it.
    leases: Arc<Mutex<leases::Table>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (creating if needed) the database at `path`, creating missing parent directories
    /// (mode 0700 on Unix) and the file (0600; SQLite gives its WAL and shared-memory files the
    /// database file's mode),
    /// setting the connection PRAGMAs (WAL, foreign keys, `synchronous=NORMAL`, 5 s busy timeout)
    /// and running pending migrations.
    ///
    /// Errors: [`Error::Storage`] if the directory or file cannot be created or opened, the file
    /// is not a database, or a migration fails.
    pub fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            private::create_dir(dir)?;
        }
        private::create_file(path)?;
        let conn = Connection::open(path).db()?;
        tracing::debug!(path = %path.display(), "opening store");
        // Saved vector indexes live beside the database: `engram.db` → `engram.db.vectors/`.
        let mut dir = path.as_os_str().to_owned();
        dir.push(".vectors");
        Self::init(conn, Some(dir.into()), leases::table_for(Some(path)))
    }

    /// Opens a fresh private in-memory database (for tests and throwaway sessions).
    ///
    /// Errors: [`Error::Storage`] if SQLite cannot allocate it.
    pub fn open_in_memory() -> Result<Store> {
        Self::init(
            Connection::open_in_memory().db()?,
            None,
            leases::table_for(None),
        )
    }

    fn init(
        mut conn: Connection,
        vector_dir: Option<std::path::PathBuf>,
        leases: Arc<Mutex<leases::Table>>,
    ) -> Result<Store> {
        // WAL + NORMAL: commits do not fsync (only checkpoints do), which is what makes one
        // transaction per archival insert fast; a crash can lose the last commits but never
        // corrupts the file. Checkpoints every 8,000 pages (~32 MB of WAL) instead of 1,000:
        // each one fsyncs, and at the default they halved the one-passage-per-call insert rate.
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             PRAGMA foreign_keys = ON;
             PRAGMA temp_store = MEMORY;
             PRAGMA cache_size = -32000;
             PRAGMA wal_autocheckpoint = 8000;",
        )
        .db()?;
        conn.busy_timeout(Duration::from_millis(5000)).db()?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        migrations::run(&mut conn)?;
        Ok(Store {
            conn: Arc::new(Mutex::new(conn)),
            vectors: Arc::new(Mutex::new(vector_index::Indexes::new(vector_dir))),
            leases,
        })
    }

    /// Runs `PRAGMA integrity_check` and returns its rows joined by newlines: `"ok"` for a
    /// healthy file, otherwise SQLite's list of problems.
    ///
    /// Errors: [`Error::Storage`] if the check itself cannot run.
    pub fn integrity_check(&self) -> Result<String> {
        self.read(|c| {
            let mut stmt = c.prepare("PRAGMA integrity_check").db()?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0)).db()?;
            let lines = rows.collect::<rusqlite::Result<Vec<_>>>().db()?;
            Ok(lines.join("\n"))
        })
    }

    /// Whether the database answers a read now (a load balancer's health check asks).
    ///
    /// Errors: [`Error::Storage`] when it does not (the file is gone, locked past the busy
    /// timeout, unreadable).
    pub fn ping(&self) -> Result<()> {
        self.read(|c| {
            c.query_row("SELECT count(*) FROM agents", [], |_| Ok(()))
                .db()
        })
    }

    /// Copies every committed page from the write-ahead log into the database file and empties
    /// the log (`PRAGMA wal_checkpoint(TRUNCATE)`), so a process that stops leaves one
    /// self-contained file. Returns SQLite's `(busy, log pages, checkpointed pages)`; `busy` is
    /// 1 when another connection (a second process) kept the log from being emptied.
    ///
    /// Errors: [`Error::Storage`] if the checkpoint cannot run.
    pub fn checkpoint(&self) -> Result<(i64, i64, i64)> {
        self.read(|c| {
            c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .db()
        })
    }

    /// Gives back the memory SQLite holds in this connection's page cache for pages not in use
    /// (`sqlite3_db_release_memory`); later reads refill it from the OS's file cache. Up to
    /// `cache_size` (32 MB) stays allocated otherwise after a large export or search.
    ///
    /// Errors: [`Error::Storage`] if SQLite refuses.
    pub fn release_memory(&self) -> Result<()> {
        self.release_memory_after(vector_index::IDLE_UNLOAD)
    }

    /// Like [`release_memory`](Self::release_memory), dropping the vector indexes unused for
    /// `idle` (the service passes the built-in model's idle time, so an agent's index goes
    /// with the model). Errors: [`Error::Storage`] if SQLite refuses.
    pub fn release_memory_after(&self, idle: Duration) -> Result<()> {
        self.read(|c| c.release_memory().db())?;
        // Vector indexes of agents nobody searched for a while go too (they reload on demand).
        self.vector_indexes().drop_idle(idle);
        Ok(())
    }

    /// Replaces the vector index thresholds (see [`VectorIndexConfig`]) and drops the loaded
    /// indexes, which rebuild or load under the new ones on the next search. For tests and
    /// benchmarks; the defaults suit the app.
    pub fn set_vector_index_config(&self, config: VectorIndexConfig) {
        self.vector_indexes().set_config(config);
    }

    /// Bytes of memory the loaded vector indexes hold (usearch's estimate; 0 when none is
    /// loaded), with the folders' in-memory vector copies. For benchmarks and diagnostics.
    pub fn vector_index_memory(&self) -> usize {
        self.vector_indexes().memory_usage()
    }

    /// Vector graphs being built in the background, with their progress (empty when none is).
    /// A search of such an agent meanwhile scans its vectors exhaustively (see
    /// [`VectorIndexConfig`]); the service can show this as "building the search index".
    pub fn vector_index_builds(&self) -> Vec<VectorIndexBuild> {
        self.vector_indexes().builds()
    }

    /// Sends the progress of every background build of a vector graph started from now on to
    /// `observer`: a report when it starts, at most every [`REPORT_EVERY`] (half a second)
    /// while it runs, and a last one with `finished` set. It runs on the build's threads (or
    /// the searching one, for the first report), so it should only pass the report on. A
    /// later call replaces the observer.
    pub fn on_vector_index_build(&self, observer: BuildObserver) {
        self.vector_indexes().set_observer(observer);
    }

    /// Starts again, in the background, the graph builds a quit interrupted: a build that
    /// would save its graph leaves a marker beside the database until it is saved, and this
    /// picks each one up as the agent's next search would (a saved graph is loaded instead,
    /// markers of deleted agents or vanished vectors are removed). Searches are not blocked
    /// beyond reading each agent's vectors once. Returns how many builds now run.
    ///
    /// Errors: [`Error::Storage`] if the database cannot be read.
    pub fn resume_vector_index_builds(&self) -> Result<usize> {
        self.read(|c| self.vector_indexes().resume(c))
    }

    /// Whether a pending-build marker names the agent: a graph build that will save its
    /// result started (in this or another process on this database) and has not saved it yet
    /// — running, or cut short by a quit (then [`Store::resume_vector_index_builds`] starts it
    /// again).
    pub fn vector_index_build_pending(&self, agent: &str) -> bool {
        self.vector_indexes().is_pending(agent)
    }

    /// While `hold` is true, background builds of vector graphs wait before they start, so a
    /// test can search during one; `false` lets them run. Off by default.
    pub fn hold_vector_index_builds(&self, hold: bool) {
        self.vector_indexes().hold_builds(hold);
    }

    /// Blocks until every background build of a vector graph is done, so the next search uses
    /// the graph. For tests and benchmarks (searches wait meanwhile).
    pub fn wait_for_vector_index_builds(&self) {
        self.vector_indexes().wait_for_builds();
    }

    fn vector_indexes(&self) -> MutexGuard<'_, vector_index::Indexes> {
        self.vectors
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Locks the connection. A panic while it was held cannot leave a half-done write behind
    /// (an unwinding `Transaction` rolls back), so a poisoned lock is safe to reuse.
    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs read-only work on the connection.
    fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let conn = self.lock();
        f(&conn)
    }

    /// Runs `f` in one immediate transaction: committed if `f` returns `Ok`, rolled back
    /// otherwise. Immediate so a second process (the CLI next to the app) waits at `BEGIN`
    /// instead of failing half-way with `SQLITE_BUSY`.
    fn write<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .db()?;
        let out = f(&tx)?;
        // Rows whose text changed reach their agent's full-text tables in this transaction.
        fts_partitions::flush(&tx)?;
        tx.commit().db()?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_is_shareable_across_threads() {
        fn assert_send_sync<T: Send + Sync + Clone>() {}
        assert_send_sync::<Store>();
    }

    #[test]
    fn in_memory_store_is_healthy() {
        let store = Store::open_in_memory().unwrap();
        assert_eq!(store.integrity_check().unwrap(), "ok");
    }
}

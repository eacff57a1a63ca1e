//! The store's own errors (opening, migrating, reaching the database), and how database errors
//! become the engine's [`engram_core::Error`] at the interface.

use engram_core::Error;

/// What can go wrong opening or talking to the database.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// The database URL cannot be read.
    #[error("invalid database URL: {0}")]
    Url(#[source] tokio_postgres::Error),
    /// The connection pool cannot be built (a bad setting).
    #[error("cannot set up the database connection pool: {0}")]
    Pool(String),
    /// No connection could be had: the server is down, unreachable or refuses us.
    #[error("cannot reach the database: {}", pool_message(.0))]
    Connect(#[from] deadpool_postgres::PoolError),
    /// A statement failed.
    #[error("database: {}", describe(.0))]
    Db(#[from] tokio_postgres::Error),
    /// A migration failed; nothing of it was applied.
    #[error("database migration {version} ({name}) failed: {}", describe(.source))]
    Migration {
        /// The migration's number.
        version: i32,
        /// Its name.
        name: &'static str,
        /// What PostgreSQL said.
        source: tokio_postgres::Error,
    },
    /// The database was migrated by a newer Engram.
    #[error(
        "the database is at migration {found}, newer than this Engram knows ({known}); \
         upgrade Engram before using it"
    )]
    TooNew {
        /// The newest migration applied to the database.
        found: i32,
        /// The newest migration this build knows.
        known: i32,
    },
}

impl From<PgError> for Error {
    fn from(e: PgError) -> Self {
        match &e {
            PgError::Db(db) => engine_error(db),
            _ => Error::Storage(e.to_string()),
        }
    }
}

/// A failed statement as the engine's error: text PostgreSQL cannot hold (a NUL character,
/// which SQLite keeps) is the caller's `Invalid` input, named as such; the rest is `Storage`.
pub(crate) fn engine_error(e: &tokio_postgres::Error) -> Error {
    use tokio_postgres::error::SqlState;
    match e.code() {
        Some(c)
            if *c == SqlState::CHARACTER_NOT_IN_REPERTOIRE
                || *c == SqlState::UNTRANSLATABLE_CHARACTER =>
        {
            Error::invalid(
                "the text holds a NUL character (\\0), which a shared server's database cannot \
                 store; remove it and try again",
            )
        }
        _ => Error::Storage(describe(e)),
    }
}

/// PostgreSQL's own message (severity, text, detail) when the server sent one, else the
/// client's (`tokio-postgres` prints only "db error" for server errors).
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut text = format!("{}: {}", db.severity(), db.message());
            if let Some(detail) = db.detail() {
                text.push_str(&format!(" ({detail})"));
            }
            text
        }
        None => e.to_string(),
    }
}

fn pool_message(e: &deadpool_postgres::PoolError) -> String {
    match e {
        deadpool_postgres::PoolError::Backend(pg) => describe(pg),
        other => other.to_string(),
    }
}

//! Transactions, run again when PostgreSQL aborts them for a conflict it detected.

use crate::error::describe;
use engram_core::{Error, Result};
use tokio_postgres::error::SqlState;

/// How often a transaction aborted by a deadlock or serialization failure is run again.
const ATTEMPTS: usize = 5;

/// Why a transaction body stopped: the engine's answer (not found, a conflict, bad input), or
/// a database error, which may be a conflict worth running the body again for.
#[derive(Debug)]
pub(crate) enum TxError {
    /// An answer for the caller.
    Engine(Error),
    /// A failed statement.
    Db(tokio_postgres::Error),
}

impl From<Error> for TxError {
    fn from(e: Error) -> Self {
        TxError::Engine(e)
    }
}

impl From<tokio_postgres::Error> for TxError {
    fn from(e: tokio_postgres::Error) -> Self {
        TxError::Db(e)
    }
}

impl From<TxError> for Error {
    fn from(e: TxError) -> Self {
        match e {
            TxError::Engine(e) => e,
            TxError::Db(e) => crate::error::engine_error(&e),
        }
    }
}

/// What a transaction body returns.
pub(crate) type TxResult<T> = std::result::Result<T, TxError>;

/// Runs `$body` in one transaction on a connection of `$store` (READ COMMITTED), committed
/// when it finishes, rolled back when a `?` in it returns early. When PostgreSQL aborts it for a
/// deadlock or a serialization failure (two transactions locking the same rows in opposite
/// orders), the whole body runs again, up to [`ATTEMPTS`] times; other errors return at once.
/// Evaluates to `engram_core::Result<T>`, the body's value or its error.
macro_rules! transaction {
    ($store:expr, |$tx:ident| $body:block) => {{
        let mut client = $store.client().await?;
        let mut attempt = 1;
        loop {
            let out = async {
                let $tx = client.transaction().await?;
                let out = $body;
                $tx.commit().await?;
                Ok::<_, $crate::tx::TxError>(out)
            }
            .await;
            if let Some(done) = $crate::tx::settle(out, &mut attempt) {
                break done;
            }
        }
    }};
}
pub(crate) use transaction;

/// What a finished attempt means: `None` to run the transaction again (a conflict, attempts
/// left), else its result.
pub(crate) fn settle<T>(out: TxResult<T>, attempt: &mut usize) -> Option<Result<T>> {
    match out {
        Err(TxError::Db(e)) if *attempt < ATTEMPTS && is_conflict(&e) => {
            tracing::debug!(attempt = *attempt, error = %describe(&e), "transaction aborted by a conflict; running it again");
            *attempt += 1;
            None
        }
        other => Some(other.map_err(Error::from)),
    }
}

/// Whether PostgreSQL aborted the statement for a conflict that running it again resolves.
fn is_conflict(e: &tokio_postgres::Error) -> bool {
    e.code().is_some_and(|c| {
        *c == SqlState::T_R_DEADLOCK_DETECTED || *c == SqlState::T_R_SERIALIZATION_FAILURE
    })
}

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

/// Runs `$body` as one transaction sent in a single round trip: `BEGIN`, the body's statements
/// and `COMMIT` go out in one pipeline (see [`pipelined`]), on a connection of `$store`, run
/// again on a conflict as [`transaction!`] does. Every statement `$body` sends is listed in
/// `prepare [...]` (prepared first, so each goes out on its first poll), and `$body` keeps
/// [`pipelined`]'s other rule. Evaluates to `engram_core::Result<T>`.
macro_rules! one_trip {
    ($store:expr, prepare [$($sql:expr),* $(,)?], |$c:ident| $body:expr) => {{
        let $c = $store.client().await?;
        $(
            $c.prepare_cached($sql)
                .await
                .map_err($crate::tx::TxError::from)?;
        )*
        let mut attempt = 1;
        loop {
            let out = $crate::tx::pipelined(&$c, $body).await;
            if let Some(done) = $crate::tx::settle(out, &mut attempt) {
                break done;
            }
        }
    }};
}
pub(crate) use one_trip;

/// Sends `BEGIN`, then `body`'s statements, then `COMMIT`, before reading any answer. When a
/// statement fails PostgreSQL aborts the transaction and answers the `COMMIT` with a
/// rollback; a connection dropped midway rolls back too; and the client never holds a
/// connection inside a transaction between two round trips, so dropping this future leaves
/// the pooled connection clean.
///
/// The rules `body` keeps, for its writes to be all or nothing:
/// - **every statement goes out on its first poll**: prepared beforehand (`prepare_cached`),
///   polled in order (`join!(biased; …)`, [`in_order`]), nothing awaited before a send;
/// - **it fails only by a failing statement**: whatever may fail on the client (a conversion,
///   a check of an answer) is done before, or backed by a statement that fails in the same
///   case (a row that is not there refused by a foreign key), since the `COMMIT` is already
///   on its way.
pub(crate) async fn pipelined<T>(
    c: &impl deadpool_postgres::GenericClient,
    body: impl Future<Output = TxResult<T>>,
) -> TxResult<T> {
    let (begun, out, committed) = tokio::join!(
        biased;
        c.batch_execute("BEGIN"),
        body,
        c.batch_execute("COMMIT"),
    );
    begun?;
    let out = out?;
    committed?;
    Ok(out)
}

/// Awaits `futures` together, polling them in the order given every time (unlike
/// `join_all`, whose order for long lists is its own business): statements they send on their
/// first poll go out, and so run, in that order. Their outputs, in order.
pub(crate) async fn in_order<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut all: Vec<_> = futures
        .into_iter()
        .map(|f| Box::pin(futures::future::maybe_done(f)))
        .collect();
    std::future::poll_fn(|cx| {
        let mut done = true;
        for f in &mut all {
            done &= f.as_mut().poll(cx).is_ready();
        }
        if done {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    all.iter_mut()
        .map(|f| f.as_mut().take_output().expect("each future is done"))
        .collect()
}

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

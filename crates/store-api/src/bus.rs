//! Notices between the replicas of a shared server: what one replica changed (a memory edit,
//! new messages, a run's end) is announced to the others, so the windows and streams connected
//! to them read it again. A database one process uses alone (SQLite) needs none: its process
//! announces its own changes.

use async_trait::async_trait;
use engram_core::Result;
use tokio::sync::mpsc;

/// What a listener on a [`NoticeBus`] hears.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BusEvent {
    /// A notice some replica published (its payload), after its transaction committed.
    Notice(String),
    /// The listening connection was lost and is back: notices sent meanwhile are gone, so what
    /// is shown from stored data should be read again.
    Resync,
}

/// The channel replicas announce changes on (PostgreSQL's `LISTEN`/`NOTIFY`).
#[async_trait]
pub trait NoticeBus: Send + Sync {
    /// Sends `payload` to every listener on the bus, this replica's own included.
    /// Errors: `Invalid` for a payload over the bus's size limit; `Storage` when the bus
    /// cannot be reached.
    async fn publish(&self, payload: &str) -> Result<()>;

    /// Hears every notice published from when this returns, in commit order, for as long as
    /// the receiver is kept (connecting again, with a [`BusEvent::Resync`], when cut off).
    /// Errors: `Storage` when the bus cannot be reached.
    async fn subscribe(&self) -> Result<mpsc::Receiver<BusEvent>>;
}

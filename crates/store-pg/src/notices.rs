//! Notices between replicas, on PostgreSQL's `LISTEN`/`NOTIFY`: what one replica changed (a
//! memory edit, a run's end) reaches the windows and streams connected to every other one.
//!
//! A notice sent inside a transaction is delivered when that transaction commits, and never if
//! it rolls back, so a listener never hears of a change it cannot read yet. PostgreSQL does not
//! keep notices for a listener that is away: when the listening connection is lost (the
//! database restarted, the network broke), the [`Listener`] connects again and says
//! [`BusEvent::Resync`], so whoever shows stored data reads it again.

use crate::PgStore;
use crate::error::PgError;
use crate::rows::Cached;
use crate::tx::TxError;
use engram_core::{Error, Result};
use engram_store_api::{BusEvent, NoticeBus};
use std::future::poll_fn;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_postgres::tls::NoTlsStream;
use tokio_postgres::{AsyncMessage, Client, Config, Connection, NoTls, Socket};

/// The channel every replica listens on.
pub const NOTICE_CHANNEL: &str = "engram_notices";

/// The longest payload, in **bytes** (PostgreSQL refuses 8,000 and more).
pub const MAX_NOTICE_BYTES: usize = 7_999;

/// Notices a listener may hold before the database has to keep the rest for it.
const BUFFERED: usize = 1_024;

/// Waits between attempts to listen again: from the first to the longest.
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_MOST: Duration = Duration::from_secs(2);

/// Hears every notice published on the database from when [`PgStore::listen`] returned, in
/// commit order, until dropped (which closes its connection).
pub struct Listener {
    events: mpsc::Receiver<BusEvent>,
    task: tokio::task::JoinHandle<()>,
}

impl Listener {
    /// The next event; `None` only if the listening task ended, which it does not on its own.
    pub async fn recv(&mut self) -> Option<BusEvent> {
        self.events.recv().await
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl PgStore {
    /// Publishes `payload` to every [`Listener`] on the database (every replica), at once.
    ///
    /// Errors: `Invalid` for a payload of [`MAX_NOTICE_BYTES`] or more; `Storage` when the
    /// database cannot be reached.
    pub async fn publish(&self, payload: &str) -> Result<()> {
        check_payload(payload)?;
        let c = self.client().await?;
        c.exec("SELECT pg_notify($1, $2)", &[&NOTICE_CHANNEL, &payload])
            .await
            .map_err(TxError::from)?;
        Ok(())
    }

    /// Starts listening on a connection of its own (outside the pool); every notice published
    /// after this returns is heard.
    ///
    /// Errors: [`PgError::Db`] when the database cannot be reached.
    pub async fn listen(&self) -> std::result::Result<Listener, PgError> {
        let (tx, events) = mpsc::channel(BUFFERED);
        let first = listening(&self.config).await?;
        let config = self.config.clone();
        let task = tokio::spawn(async move {
            let mut conn = Some(first);
            loop {
                let (client, connection) = match conn.take() {
                    Some(c) => c,
                    None => match listen_again(&config, &tx).await {
                        Some(c) => c,
                        None => return,
                    },
                };
                forward(connection, &tx).await;
                drop(client);
                if tx.is_closed() {
                    return;
                }
            }
        });
        Ok(Listener { events, task })
    }
}

#[async_trait::async_trait]
impl NoticeBus for PgStore {
    async fn publish(&self, payload: &str) -> Result<()> {
        PgStore::publish(self, payload).await
    }

    async fn subscribe(&self) -> Result<mpsc::Receiver<BusEvent>> {
        let mut listener = self
            .listen()
            .await
            .map_err(|e| Error::Storage(e.to_string()))?;
        let (tx, rx) = mpsc::channel(BUFFERED);
        // The listener (and its connection) lives as long as someone receives.
        tokio::spawn(async move {
            while let Some(event) = listener.recv().await {
                if tx.send(event).await.is_err() {
                    return;
                }
            }
        });
        Ok(rx)
    }
}

fn check_payload(payload: &str) -> Result<()> {
    if payload.len() > MAX_NOTICE_BYTES {
        return Err(Error::invalid(format!(
            "a notice holds at most {MAX_NOTICE_BYTES} bytes; this one has {}",
            payload.len()
        )));
    }
    Ok(())
}

type Conn = (Client, Connection<Socket, NoTlsStream>);

/// A new connection that has run `LISTEN`.
async fn listening(config: &Config) -> std::result::Result<Conn, PgError> {
    let (client, mut connection) = config.connect(NoTls).await?;
    {
        // The answer to LISTEN arrives only while the connection is driven.
        let sql = format!("LISTEN {NOTICE_CHANNEL}");
        let listen = client.batch_execute(&sql);
        tokio::pin!(listen);
        loop {
            tokio::select! {
                done = &mut listen => {
                    done?;
                    break;
                }
                message = poll_fn(|cx| connection.poll_message(cx)) => match message {
                    Some(Err(e)) => return Err(e.into()),
                    None => return Err(PgError::Pool("the database closed the connection".into())),
                    Some(Ok(_)) => {}
                },
            }
        }
    }
    Ok((client, connection))
}

/// Connects and listens again, waiting longer after each failure; then says
/// [`BusEvent::Resync`]. `None` once nobody listens any more.
async fn listen_again(config: &Config, tx: &mpsc::Sender<BusEvent>) -> Option<Conn> {
    let mut wait = RETRY_FIRST;
    loop {
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = tx.closed() => return None,
        }
        match listening(config).await {
            Ok(conn) => {
                tx.send(BusEvent::Resync).await.ok()?;
                return Some(conn);
            }
            Err(e) => {
                tracing::debug!(error = %e, "listening for notices again failed");
                wait = (wait * 2).min(RETRY_MOST);
            }
        }
    }
}

/// Hands the connection's notices on until it ends or nobody listens.
async fn forward(mut connection: Connection<Socket, NoTlsStream>, tx: &mpsc::Sender<BusEvent>) {
    loop {
        let message = tokio::select! {
            m = poll_fn(|cx| connection.poll_message(cx)) => m,
            () = tx.closed() => return,
        };
        match message {
            Some(Ok(AsyncMessage::Notification(n))) => {
                if tx
                    .send(BusEvent::Notice(n.payload().to_owned()))
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                tracing::debug!(error = %e, "the notice connection ended");
                return;
            }
            None => return,
        }
    }
}

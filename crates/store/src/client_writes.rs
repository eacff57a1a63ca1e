//! MCP clients' memory writes waiting for the user's approval (rows of `client_writes`).
//!
//! The memory server that asked (often another process than the window) inserts the row,
//! marks it alive while it waits, and reads the outcome; the window lists the waiting rows
//! and decides one. Every change of state is one conditional `UPDATE … WHERE status =
//! 'pending'`, so a decision, a timeout and a withdrawal cannot both win.

use crate::rooms::ClientWriteRows;
use crate::sql::{self, DbResult, json, micros};
use engram_core::{ClientWriteId, PendingClientWrite, Result, Timestamp};
use rusqlite::{OptionalExtension, params};

/// Where a client write stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientWriteState {
    /// Waiting for the user.
    Pending,
    /// Approved; being applied now.
    Applying,
    /// Decided or given up: the status (`applied`, `refused`, `denied`, `timed_out`,
    /// `withdrawn`) and the answer for the client.
    Done {
        /// The status.
        status: String,
        /// The answer (empty when none was stored).
        message: String,
    },
}

impl ClientWriteRows<'_> {
    /// Stores a write waiting for approval, with `call` (JSON) to replay when approved.
    /// Errors: `Storage`.
    pub fn insert(self, pending: &PendingClientWrite, call: &str) -> Result<()> {
        let now = micros(sql::now());
        self.store.write(|tx| {
            tx.prepare_cached(
                "INSERT INTO client_writes (id, pending, call, status, requested_at, expires_at, alive_at)
                 VALUES (?1, ?2, ?3, 'pending', ?4, ?5, ?6)",
            )
            .db()?
            .execute(params![
                pending.id.as_str(),
                sql::to_json(pending)?,
                call,
                micros(pending.requested_at),
                micros(pending.expires_at),
                now
            ])
            .db()?;
            Ok(())
        })
    }

    /// Notes that the server asking for `id` still waits (a row whose server went quiet is
    /// dropped by [`pending`](Self::pending)). Errors: `Storage`.
    pub fn alive(self, id: &ClientWriteId) -> Result<()> {
        self.store.write(|tx| {
            tx.prepare_cached("UPDATE client_writes SET alive_at = ?2 WHERE id = ?1")
                .db()?
                .execute(params![id.as_str(), micros(sql::now())])
                .db()?;
            Ok(())
        })
    }

    /// Where `id` stands; `None` when the row is gone. Errors: `Storage`.
    pub fn state(self, id: &ClientWriteId) -> Result<Option<ClientWriteState>> {
        self.store.read(|c| {
            c.prepare_cached("SELECT status, message FROM client_writes WHERE id = ?1")
                .db()?
                .query_row([id.as_str()], |r| {
                    let status: String = r.get(0)?;
                    let message: Option<String> = r.get(1)?;
                    Ok(match status.as_str() {
                        "pending" => ClientWriteState::Pending,
                        "applying" => ClientWriteState::Applying,
                        _ => ClientWriteState::Done {
                            status,
                            message: message.unwrap_or_default(),
                        },
                    })
                })
                .optional()
                .db()
        })
    }

    /// Moves `id` from `pending` to `status` with `message`; `false` when it was no longer
    /// pending (decided, withdrawn, gone). Errors: `Storage`.
    pub fn settle(self, id: &ClientWriteId, status: &str, message: &str) -> Result<bool> {
        self.store.write(|tx| {
            let n = tx
                .prepare_cached(
                    "UPDATE client_writes SET status = ?2, message = ?3
                     WHERE id = ?1 AND status = 'pending'",
                )
                .db()?
                .execute(params![id.as_str(), status, message])
                .db()?;
            Ok(n == 1)
        })
    }

    /// Claims `id` for applying: the row must be pending, not expired, and its server must
    /// have shown life since `alive_since`. Returns the write and its call (JSON), or `None`
    /// when it cannot be applied any more (see [`state`](Self::state)
    /// for why). Errors: `Storage`.
    pub fn claim(
        self,
        id: &ClientWriteId,
        alive_since: Timestamp,
    ) -> Result<Option<(PendingClientWrite, String)>> {
        self.store.write(|tx| {
            let n = tx
                .prepare_cached(
                    "UPDATE client_writes SET status = 'applying'
                     WHERE id = ?1 AND status = 'pending' AND expires_at > ?2 AND alive_at >= ?3",
                )
                .db()?
                .execute(params![
                    id.as_str(),
                    micros(sql::now()),
                    micros(alive_since)
                ])
                .db()?;
            if n == 0 {
                return Ok(None);
            }
            tx.prepare_cached("SELECT pending, call FROM client_writes WHERE id = ?1")
                .db()?
                .query_row([id.as_str()], |r| Ok((json(r, 0)?, r.get(1)?)))
                .optional()
                .db()
        })
    }

    /// Records what applying a claimed write did (`applied` or `refused`) and the answer for
    /// the client. Errors: `Storage`.
    pub fn finish(self, id: &ClientWriteId, status: &str, message: &str) -> Result<()> {
        self.store.write(|tx| {
            tx.prepare_cached(
                "UPDATE client_writes SET status = ?2, message = ?3
                 WHERE id = ?1 AND status = 'applying'",
            )
            .db()?
            .execute(params![id.as_str(), status, message])
            .db()?;
            Ok(())
        })
    }

    /// Forgets `id` (its server read the outcome). Errors: `Storage`.
    pub fn delete(self, id: &ClientWriteId) -> Result<()> {
        self.store.write(|tx| {
            tx.prepare_cached("DELETE FROM client_writes WHERE id = ?1")
                .db()?
                .execute([id.as_str()])
                .db()?;
            Ok(())
        })
    }

    /// The writes waiting for the user, oldest first. Rows nobody waits for any more (expired,
    /// or whose server has not shown life since `alive_since`: it stopped without withdrawing
    /// them) are deleted first. Errors: `Storage`.
    pub fn pending(self, alive_since: Timestamp) -> Result<Vec<PendingClientWrite>> {
        let stale = "status = 'pending' AND (expires_at <= ?1 OR alive_at < ?2)";
        let now = micros(sql::now());
        let any_stale: bool = self.store.read(|c| {
            c.prepare_cached(&format!(
                "SELECT EXISTS (SELECT 1 FROM client_writes WHERE {stale})"
            ))
            .db()?
            .query_row(params![now, micros(alive_since)], |r| r.get(0))
            .db()
        })?;
        if any_stale {
            // A write lock only when there is something to drop: the window polls this.
            self.store.write(|tx| {
                tx.prepare_cached(&format!("DELETE FROM client_writes WHERE {stale}"))
                    .db()?
                    .execute(params![now, micros(alive_since)])
                    .db()?;
                Ok(())
            })?;
        }
        self.store.read(|c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT pending FROM client_writes WHERE status = 'pending'
                     ORDER BY requested_at, id",
                )
                .db()?;
            let rows = stmt.query_map([], |r| json(r, 0)).db()?;
            rows.collect::<rusqlite::Result<Vec<PendingClientWrite>>>()
                .db()
        })
    }

    /// One stored write, whatever its state. Errors: `Storage`.
    pub fn get(self, id: &ClientWriteId) -> Result<Option<PendingClientWrite>> {
        self.store.read(|c| {
            c.prepare_cached("SELECT pending FROM client_writes WHERE id = ?1")
                .db()?
                .query_row([id.as_str()], |r| json(r, 0))
                .optional()
                .db()
        })
    }
}

//! Leases per agent on PostgreSQL: a row per agent with its holder, fencing token and expiry,
//! all times from the database's clock (`clock_timestamp()`, not the transaction's start, so
//! a statement that waited on a lock still sees the time it runs at).
//!
//! Acquiring is one upsert that takes the row only when the lease has expired, bumping the
//! token. A commit under a lease locks the lease row (`FOR UPDATE`) after checking token and
//! expiry, so no one can acquire the lease until that commit is done. The check is a statement
//! that fails when the lease is lost (`engram_hold_lease`, migration 16), so it aborts the
//! transaction whether or not the client reads its answer before the `COMMIT`.

use crate::PgStore;
use crate::blocks;
use crate::rows::{self, Cached};
use crate::tx::{TxError, TxResult, transaction};
use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_core::{AgentId, BlockId, BlockOp, Editor, Error, OpOutcome, Result, Timestamp};
use engram_store_api::{Lease, LeaseGrant, LeaseStore};
use std::time::Duration;

fn lost(lease: &Lease) -> Error {
    Error::LeaseLost {
        agent: lease.agent_id.to_string(),
        token: lease.token,
    }
}

fn seconds(ttl: Duration) -> f64 {
    ttl.as_secs_f64()
}

fn token(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// The statement of [`hold`].
pub(crate) const HOLD_SQL: &str = "SELECT engram_hold_lease($1, $2)";

/// The SQLSTATE `engram_hold_lease` fails with when the lease is lost.
const LOST: &str = "EG001";

/// Locks `lease`'s row while it is the agent's current, unexpired lease. Errors: `LeaseLost`
/// (the statement failed, so the transaction is aborted). Nothing fails before the statement
/// is sent, so it may go in a pipeline that ends with `COMMIT` (see `tx::pipelined`).
pub(crate) async fn hold(c: &impl GenericClient, lease: &Lease) -> TxResult<()> {
    // A token past `bigint` was never stored: -1 matches no lease, so the check fails.
    let token = i64::try_from(lease.token).unwrap_or(-1);
    match c.one(HOLD_SQL, &[&lease.agent_id.as_str(), &token]).await {
        Ok(_) => Ok(()),
        Err(e) if e.code().is_some_and(|c| c.code() == LOST) => Err(lost(lease).into()),
        Err(e) => Err(e.into()),
    }
}

#[async_trait]
impl LeaseStore for PgStore {
    async fn acquire_lease(
        &self,
        agent: &AgentId,
        holder: &str,
        ttl: Duration,
    ) -> Result<LeaseGrant> {
        let c = self.client().await?;
        // Concurrent upserts of one row serialise; the loser's WHERE sees the winner's expiry.
        // Taken before every run: one statement (for a missing agent the foreign key refuses
        // the row).
        let granted = c
            .one_opt(
                "INSERT INTO agent_leases AS l (agent_id, holder, token, expires_at)
                 VALUES ($1, $2, 1, clock_timestamp() + make_interval(secs => $3))
                 ON CONFLICT (agent_id) DO UPDATE
                    SET holder = excluded.holder, token = l.token + 1,
                        expires_at = clock_timestamp() + make_interval(secs => $3)
                    WHERE l.expires_at <= clock_timestamp()
                 RETURNING token, expires_at",
                &[&agent.as_str(), &holder, &seconds(ttl)],
            )
            .await
            .map_err(|e| blocks::missing_agent(e, agent))?;
        if let Some(r) = granted {
            return Ok(LeaseGrant::Granted(Lease {
                agent_id: agent.clone(),
                holder: holder.to_owned(),
                token: token(r.get(0)),
                expires_at: r.get(1),
            }));
        }
        let held = c
            .one(
                "SELECT holder, expires_at FROM agent_leases WHERE agent_id = $1",
                &[&agent.as_str()],
            )
            .await
            .map_err(TxError::from)?;
        let expires_at: Timestamp = held.get(1);
        Ok(LeaseGrant::Busy {
            holder: held.get(0),
            expires_at,
        })
    }

    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease> {
        let c = self.client().await?;
        let renewed = c
            .one_opt(
                "UPDATE agent_leases SET expires_at = clock_timestamp() + make_interval(secs => $3)
                 WHERE agent_id = $1 AND token = $2 AND expires_at > clock_timestamp()
                 RETURNING expires_at",
                &[
                    &lease.agent_id.as_str(),
                    &rows::int(lease.token, "token")?,
                    &seconds(ttl),
                ],
            )
            .await
            .map_err(TxError::from)?;
        match renewed {
            Some(r) => Ok(Lease {
                expires_at: r.get(0),
                ..lease.clone()
            }),
            None => Err(lost(lease)),
        }
    }

    async fn release_lease(&self, lease: &Lease) -> Result<()> {
        let c = self.client().await?;
        c.exec(
            "UPDATE agent_leases SET expires_at = clock_timestamp()
             WHERE agent_id = $1 AND token = $2 AND expires_at > clock_timestamp()",
            &[&lease.agent_id.as_str(), &rows::int(lease.token, "token")?],
        )
        .await
        .map_err(TxError::from)?;
        Ok(())
    }

    async fn apply_block_op_leased(
        &self,
        lease: &Lease,
        id: &BlockId,
        op: &BlockOp,
        editor: &Editor,
    ) -> Result<OpOutcome> {
        transaction!(self, |tx| {
            hold(&tx, lease).await?;
            blocks::apply_op(&tx, id, op, editor).await?
        })
    }
}

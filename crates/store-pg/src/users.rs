//! A shared server's users on PostgreSQL: accounts, token hashes and access to agents, in the
//! same shape as the SQLite store's (`engram_store::UserRows`).

use crate::PgStore;
use crate::blocks::{self, Lock};
use crate::rows::{self, Cached};
use crate::tx::{TxError, TxResult, transaction};
use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_core::{AgentAccess, AgentId, BlockId, Error, Result, User, UserId};
use engram_store_api::UserStore;
use tokio_postgres::Row;

const USER_COLS: &str = "id, name, created_at";

fn user_of(r: &Row) -> User {
    User {
        id: UserId::from(r.get::<_, String>(0)),
        name: r.get(1),
        created_at: r.get(2),
    }
}

fn access_of(text: &str) -> Result<AgentAccess> {
    AgentAccess::parse(text)
        .ok_or_else(|| Error::Storage(format!("unknown agent access '{text}' in the database")))
}

/// Checks that the user exists and keeps it from being deleted until the transaction ends.
async fn ensure_user(c: &impl GenericClient, id: &UserId) -> TxResult<()> {
    match c
        .one_opt(
            "SELECT 1 FROM users WHERE id = $1 FOR KEY SHARE",
            &[&id.as_str()],
        )
        .await?
    {
        Some(_) => Ok(()),
        None => Err(Error::not_found("user", id.as_str()).into()),
    }
}

#[async_trait]
impl UserStore for PgStore {
    async fn create_user(&self, name: &str) -> Result<User> {
        let user = User {
            id: UserId::new(),
            name: name.to_owned(),
            created_at: rows::now(),
        };
        let c = self.client().await?;
        let inserted = c
            .exec(
                "INSERT INTO users (id, name, created_at) VALUES ($1, $2, $3)
                 ON CONFLICT DO NOTHING",
                &[&user.id.as_str(), &user.name, &user.created_at],
            )
            .await
            .map_err(TxError::from)?;
        if inserted == 0 {
            return Err(Error::Conflict(format!(
                "a user named '{name}' already exists"
            )));
        }
        Ok(user)
    }

    async fn user_by_name(&self, name: &str) -> Result<User> {
        let c = self.client().await?;
        c.one_opt(
            &format!("SELECT {USER_COLS} FROM users WHERE name = $1"),
            &[&name],
        )
        .await
        .map_err(TxError::from)?
        .map(|r| user_of(&r))
        .ok_or_else(|| Error::not_found("user", name))
    }

    async fn list_users(&self) -> Result<Vec<User>> {
        let c = self.client().await?;
        Ok(
            c.rows(&format!("SELECT {USER_COLS} FROM users ORDER BY name"), &[])
                .await
                .map_err(TxError::from)?
                .iter()
                .map(user_of)
                .collect(),
        )
    }

    async fn delete_user(&self, id: &UserId) -> Result<bool> {
        let c = self.client().await?;
        Ok(c.exec("DELETE FROM users WHERE id = $1", &[&id.as_str()])
            .await
            .map_err(TxError::from)?
            > 0)
    }

    async fn add_user_token(&self, user: &UserId, hash: &[u8; 32], label: &str) -> Result<()> {
        transaction!(self, |tx| {
            ensure_user(&tx, user).await?;
            let inserted = tx
                .exec(
                    "INSERT INTO user_tokens (hash, user_id, label, created_at)
                     VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                    &[&&hash[..], &user.as_str(), &label, &rows::now()],
                )
                .await?;
            if inserted == 0 {
                return Err(Error::Conflict("that token is already stored".into()).into());
            }
        })
    }

    async fn user_by_token(&self, hash: &[u8; 32]) -> Result<Option<User>> {
        let c = self.client().await?;
        Ok(c.one_opt(
            "SELECT u.id, u.name, u.created_at FROM user_tokens t
                 JOIN users u ON u.id = t.user_id WHERE t.hash = $1",
            &[&&hash[..]],
        )
        .await
        .map_err(TxError::from)?
        .map(|r| user_of(&r)))
    }

    async fn revoke_user_tokens(&self, user: &UserId) -> Result<usize> {
        let c = self.client().await?;
        let n = c
            .exec(
                "DELETE FROM user_tokens WHERE user_id = $1",
                &[&user.as_str()],
            )
            .await
            .map_err(TxError::from)?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    async fn set_agent_access(
        &self,
        agent: &AgentId,
        user: &UserId,
        access: Option<AgentAccess>,
    ) -> Result<()> {
        transaction!(self, |tx| {
            ensure_user(&tx, user).await?;
            blocks::ensure_agent(&tx, agent, Lock::KeyShare).await?;
            match access {
                Some(a) => {
                    tx.exec(
                        "INSERT INTO agent_access (agent_id, user_id, access) VALUES ($1, $2, $3)
                         ON CONFLICT (agent_id, user_id) DO UPDATE SET access = excluded.access",
                        &[&agent.as_str(), &user.as_str(), &a.as_str()],
                    )
                    .await?
                }
                None => {
                    tx.exec(
                        "DELETE FROM agent_access WHERE agent_id = $1 AND user_id = $2",
                        &[&agent.as_str(), &user.as_str()],
                    )
                    .await?
                }
            };
        })
    }

    async fn agent_access(&self, agent: &AgentId, user: &UserId) -> Result<Option<AgentAccess>> {
        let c = self.client().await?;
        c.one_opt(
            "SELECT access FROM agent_access WHERE agent_id = $1 AND user_id = $2",
            &[&agent.as_str(), &user.as_str()],
        )
        .await
        .map_err(TxError::from)?
        .map(|r| access_of(r.get(0)))
        .transpose()
    }

    async fn set_block_owner(&self, block: &BlockId, user: &UserId) -> Result<()> {
        transaction!(self, |tx| {
            ensure_user(&tx, user).await?;
            blocks::load(&tx, block, Lock::KeyShare).await?;
            tx.exec(
                "INSERT INTO block_owners (block_id, user_id) VALUES ($1, $2)
                 ON CONFLICT (block_id) DO UPDATE SET user_id = excluded.user_id",
                &[&block.as_str(), &user.as_str()],
            )
            .await?;
        })
    }

    async fn block_access(&self, block: &BlockId, user: &UserId) -> Result<Option<AgentAccess>> {
        let c = self.client().await?;
        let found = c
            .rows(
                "SELECT a.access FROM agent_blocks b
                 JOIN agent_access a ON a.agent_id = b.agent_id
                 WHERE b.block_id = $1 AND a.user_id = $2
                 UNION ALL
                 SELECT 'owner' FROM block_owners WHERE block_id = $1 AND user_id = $2",
                &[&block.as_str(), &user.as_str()],
            )
            .await
            .map_err(TxError::from)?;
        let mut best = None;
        for r in &found {
            best = best.max(Some(access_of(r.get(0))?));
        }
        Ok(best)
    }

    async fn user_agents(&self, user: &UserId) -> Result<Vec<(AgentId, AgentAccess)>> {
        let c = self.client().await?;
        c.rows(
            "SELECT agent_id, access FROM agent_access WHERE user_id = $1 ORDER BY agent_id",
            &[&user.as_str()],
        )
        .await
        .map_err(TxError::from)?
        .iter()
        .map(|r| Ok((AgentId::from(r.get::<_, String>(0)), access_of(r.get(1))?)))
        .collect()
    }
}

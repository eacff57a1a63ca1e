//! A shared server's users: accounts, the hashes of their tokens, and which agents each may
//! use. The store never sees a token itself: callers hash it (see `engram_service`'s users).

use crate::rooms::UserRows;
use crate::sql::{self, DbResult, ts};
use engram_core::{AgentAccess, AgentId, BlockId, Error, Result, User, UserId};
use rusqlite::{Connection, OptionalExtension, Row, params};

const USER_COLS: &str = "id, name, created_at";

fn user_from_row(r: &Row<'_>) -> rusqlite::Result<User> {
    Ok(User {
        id: UserId::from(r.get::<_, String>(0)?),
        name: r.get(1)?,
        created_at: ts(r, 2)?,
    })
}

fn access_of(text: &str) -> Result<AgentAccess> {
    AgentAccess::parse(text)
        .ok_or_else(|| Error::Storage(format!("unknown agent access '{text}' in the database")))
}

fn load(c: &Connection, id: &UserId) -> Result<User> {
    c.prepare_cached(&format!("SELECT {USER_COLS} FROM users WHERE id = ?1"))
        .db()?
        .query_row([id.as_str()], user_from_row)
        .optional()
        .db()?
        .ok_or_else(|| Error::not_found("user", id.as_str()))
}

impl UserRows<'_> {
    /// Makes a user named `name` (checked by the caller).
    /// Errors: `Conflict` when the name is taken.
    pub fn create(self, name: &str) -> Result<User> {
        let user = User {
            id: UserId::new(),
            name: name.to_owned(),
            created_at: sql::now(),
        };
        self.store.write(|tx| {
            tx.prepare_cached("INSERT INTO users (id, name, created_at) VALUES (?1, ?2, ?3)")
                .db()?
                .execute(params![
                    user.id.as_str(),
                    user.name,
                    sql::micros(user.created_at)
                ])
                .map_err(|e| match sql::db_error(e) {
                    Error::Conflict(_) => {
                        Error::Conflict(format!("a user named '{name}' already exists"))
                    }
                    other => other,
                })?;
            Ok(())
        })?;
        Ok(user)
    }

    /// Every user, by name.
    pub fn list(self) -> Result<Vec<User>> {
        self.store.read(|c| {
            c.prepare_cached(&format!("SELECT {USER_COLS} FROM users ORDER BY name"))
                .db()?
                .query_map([], user_from_row)
                .db()?
                .collect::<rusqlite::Result<_>>()
                .db()
        })
    }

    /// The user named `name`. Errors: `NotFound("user")`.
    pub fn by_name(self, name: &str) -> Result<User> {
        self.store.read(|c| {
            c.prepare_cached(&format!("SELECT {USER_COLS} FROM users WHERE name = ?1"))
                .db()?
                .query_row([name], user_from_row)
                .optional()
                .db()?
                .ok_or_else(|| Error::not_found("user", name))
        })
    }

    /// Deletes a user with their tokens and access rows (agents they own stay, the
    /// administrator's alone from then on); `false` when there was no such user.
    pub fn delete(self, id: &UserId) -> Result<bool> {
        self.store.write(|tx| {
            Ok(tx
                .prepare_cached("DELETE FROM users WHERE id = ?1")
                .db()?
                .execute([id.as_str()])
                .db()?
                > 0)
        })
    }

    /// Stores the SHA-256 `hash` of a new token of `user`, with a label for lists.
    /// Errors: `NotFound("user")`.
    pub fn add_token(self, user: &UserId, hash: &[u8; 32], label: &str) -> Result<()> {
        self.store.write(|tx| {
            load(tx, user)?;
            tx.prepare_cached(
                "INSERT INTO user_tokens (hash, user_id, label, created_at) VALUES (?1, ?2, ?3, ?4)",
            )
            .db()?
            .execute(params![&hash[..], user.as_str(), label, sql::micros(sql::now())])
            .db()?;
            Ok(())
        })
    }

    /// Forgets every token of `user`; returns how many there were.
    pub fn revoke_tokens(self, user: &UserId) -> Result<usize> {
        self.store.write(|tx| {
            tx.prepare_cached("DELETE FROM user_tokens WHERE user_id = ?1")
                .db()?
                .execute([user.as_str()])
                .db()
        })
    }

    /// The user whose token hashes to `hash`, if any.
    pub fn by_token(self, hash: &[u8; 32]) -> Result<Option<User>> {
        self.store.read(|c| {
            c.prepare_cached(
                "SELECT u.id, u.name, u.created_at FROM user_tokens t
                 JOIN users u ON u.id = t.user_id WHERE t.hash = ?1",
            )
            .db()?
            .query_row([&hash[..]], user_from_row)
            .optional()
            .db()
        })
    }

    /// Gives `user` `access` to `agent` (replacing what they had), or takes it away with
    /// `None`. Errors: `NotFound("agent")`, `NotFound("user")`.
    pub fn set_access(
        self,
        agent: &AgentId,
        user: &UserId,
        access: Option<AgentAccess>,
    ) -> Result<()> {
        self.store.write(|tx| {
            load(tx, user)?;
            crate::agents::load(tx, agent)?;
            match access {
                Some(a) => tx
                    .prepare_cached(
                        "INSERT INTO agent_access (agent_id, user_id, access) VALUES (?1, ?2, ?3)
                         ON CONFLICT (agent_id, user_id) DO UPDATE SET access = excluded.access",
                    )
                    .db()?
                    .execute(params![agent.as_str(), user.as_str(), a.as_str()])
                    .db()?,
                None => tx
                    .prepare_cached("DELETE FROM agent_access WHERE agent_id = ?1 AND user_id = ?2")
                    .db()?
                    .execute(params![agent.as_str(), user.as_str()])
                    .db()?,
            };
            Ok(())
        })
    }

    /// What `user` may do with `agent`; `None`: nothing (also when either does not exist).
    pub fn access(self, agent: &AgentId, user: &UserId) -> Result<Option<AgentAccess>> {
        self.store.read(|c| {
            c.prepare_cached("SELECT access FROM agent_access WHERE agent_id = ?1 AND user_id = ?2")
                .db()?
                .query_row(params![agent.as_str(), user.as_str()], |r| {
                    r.get::<_, String>(0)
                })
                .optional()
                .db()?
                .map(|a| access_of(&a))
                .transpose()
        })
    }

    /// Records `user` as the owner of `block`, which they made on their own.
    /// Errors: `NotFound("user" | "block")`.
    pub fn set_block_owner(self, block: &BlockId, user: &UserId) -> Result<()> {
        self.store.write(|tx| {
            load(tx, user)?;
            crate::blocks::load(tx, block)?;
            tx.prepare_cached(
                "INSERT INTO block_owners (block_id, user_id) VALUES (?1, ?2)
                 ON CONFLICT (block_id) DO UPDATE SET user_id = excluded.user_id",
            )
            .db()?
            .execute(params![block.as_str(), user.as_str()])
            .db()?;
            Ok(())
        })
    }

    /// The most `user` may do with `block`: `owner` when they made it on their own, else the
    /// most the agents it is attached to allow them; `None` when neither.
    pub fn block_access(self, block: &BlockId, user: &UserId) -> Result<Option<AgentAccess>> {
        self.store.read(|c| {
            let found = c
                .prepare_cached(
                    "SELECT a.access FROM agent_blocks b
                     JOIN agent_access a ON a.agent_id = b.agent_id
                     WHERE b.block_id = ?1 AND a.user_id = ?2
                     UNION ALL
                     SELECT 'owner' FROM block_owners WHERE block_id = ?1 AND user_id = ?2",
                )
                .db()?
                .query_map(params![block.as_str(), user.as_str()], |r| {
                    r.get::<_, String>(0)
                })
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>()
                .db()?;
            Ok(found
                .iter()
                .map(|a| access_of(a))
                .collect::<Result<Vec<_>>>()?
                .into_iter()
                .max())
        })
    }

    /// The agents `user` may use, with what they may do, by agent id.
    pub fn agents(self, user: &UserId) -> Result<Vec<(AgentId, AgentAccess)>> {
        self.store.read(|c| {
            let rows = c
                .prepare_cached(
                    "SELECT agent_id, access FROM agent_access WHERE user_id = ?1 ORDER BY agent_id",
                )
                .db()?
                .query_map([user.as_str()], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                })
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>()
                .db()?;
            rows.into_iter()
                .map(|(id, a)| Ok((AgentId::from(id), access_of(&a)?)))
                .collect()
        })
    }
}

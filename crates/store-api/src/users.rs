//! A shared server's users: accounts, the hashes of their tokens, and which agents each may
//! use (see [`engram_core::user`] for what the access levels mean). A backend never sees a
//! token itself, only the SHA-256 its caller made of it.

use async_trait::async_trait;
use engram_core::{AgentAccess, AgentId, BlockId, Result, User, UserId};

/// Users and their access to agents.
#[async_trait]
pub trait UserStore: Send + Sync {
    /// Makes a user named `name` (checked by the caller) with a fresh id.
    ///
    /// Errors: `Conflict` when the name is taken; `Storage`.
    async fn create_user(&self, name: &str) -> Result<User>;

    /// The user named `name`. Errors: `NotFound("user")`; `Storage`.
    async fn user_by_name(&self, name: &str) -> Result<User>;

    /// Every user, by name. Errors: `Storage`.
    async fn list_users(&self) -> Result<Vec<User>>;

    /// Deletes a user with their tokens and access rows (agents they own stay); `false` when
    /// there was no such user. Errors: `Storage`.
    async fn delete_user(&self, id: &UserId) -> Result<bool>;

    /// Stores the SHA-256 `hash` of a new token of `user`, with a label for lists.
    ///
    /// Errors: `NotFound("user")`; `Conflict` for a hash already stored; `Storage`.
    async fn add_user_token(&self, user: &UserId, hash: &[u8; 32], label: &str) -> Result<()>;

    /// The user whose token hashes to `hash`, if any. Errors: `Storage`.
    async fn user_by_token(&self, hash: &[u8; 32]) -> Result<Option<User>>;

    /// Forgets every token of `user`; how many there were. Errors: `Storage`.
    async fn revoke_user_tokens(&self, user: &UserId) -> Result<usize>;

    /// Gives `user` `access` to `agent` (replacing what they had), or takes it away (`None`).
    ///
    /// Errors: `NotFound("user" | "agent")`; `Storage`.
    async fn set_agent_access(
        &self,
        agent: &AgentId,
        user: &UserId,
        access: Option<AgentAccess>,
    ) -> Result<()>;

    /// What `user` may do with `agent`; `None`: nothing (also when either does not exist).
    /// Errors: `Storage`.
    async fn agent_access(&self, agent: &AgentId, user: &UserId) -> Result<Option<AgentAccess>>;

    /// Records `user` as the owner of `block`, which they made on their own.
    ///
    /// Errors: `NotFound("user" | "block")`; `Storage`.
    async fn set_block_owner(&self, block: &BlockId, user: &UserId) -> Result<()>;

    /// The most `user` may do with `block`: `owner` when they made it on their own, else the
    /// most the agents it is attached to allow them; `None` when neither. Errors: `Storage`.
    async fn block_access(&self, block: &BlockId, user: &UserId) -> Result<Option<AgentAccess>>;

    /// The agents `user` may use, with what they may do, by agent id. Errors: `Storage`.
    async fn user_agents(&self, user: &UserId) -> Result<Vec<(AgentId, AgentAccess)>>;
}

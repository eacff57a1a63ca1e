//! A shared server's users: accounts made by the administrator, tokens shown once and kept
//! only as SHA-256 hashes, and which agents each user may use.
//!
//! A token is 32 random bytes from the OS-seeded CSPRNG, so a plain SHA-256 is enough to keep
//! it: there is nothing to guess that a slow hash would protect (unlike a password).

use crate::rooms::Users;
use engram_core::{AgentAccess, AgentId, BlockId, Error, Result, User, UserId, valid_user_name};
use rand::RngCore;
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};

/// How every user token starts, so one is told apart from the server's own token (`engram-`)
/// and found by secret scanners.
pub const USER_TOKEN_PREFIX: &str = "engram-user-";

/// Random bytes in a user token (256 bits).
const TOKEN_BYTES: usize = 32;

fn hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Users<'_> {
    /// Makes a user. Errors: `Invalid` for a name outside 1–64 letters, digits, `.`, `_`,
    /// `-`; `Conflict` when the name is taken.
    pub async fn create(self, name: &str) -> Result<User> {
        if !valid_user_name(name) {
            return Err(Error::invalid(format!(
                "a user name is 1 to 64 letters, digits, '.', '_' or '-', not '{name}'"
            )));
        }
        self.engram.backend.create_user(name).await
    }

    /// Every user, by name.
    pub async fn list(self) -> Result<Vec<User>> {
        self.engram.backend.list_users().await
    }

    /// The user named `name`. Errors: `NotFound("user")`.
    pub async fn get(self, name: &str) -> Result<User> {
        self.engram.backend.user_by_name(name).await
    }

    /// Deletes the user named `name` with their tokens and access (agents they own stay, the
    /// administrator's alone). Errors: `NotFound("user")`.
    pub async fn delete(self, name: &str) -> Result<()> {
        let user = self.get(name).await?;
        self.engram.backend.delete_user(&user.id).await?;
        Ok(())
    }

    /// A new token for the user named `name`: `engram-user-` and 64 hex digits. It is returned
    /// once, here; only its hash is stored. Errors: `NotFound("user")`.
    pub async fn issue_token(self, name: &str, label: &str) -> Result<SecretString> {
        let user = self.get(name).await?;
        let mut bytes = [0u8; TOKEN_BYTES];
        rand::rng().fill_bytes(&mut bytes);
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let token = SecretString::from(format!("{USER_TOKEN_PREFIX}{hex}"));
        self.engram
            .backend
            .add_user_token(&user.id, &hash(token.expose_secret()), label)
            .await?;
        Ok(token)
    }

    /// Makes every token of the user named `name` stop working; returns how many there were.
    /// Errors: `NotFound("user")`.
    pub async fn revoke_tokens(self, name: &str) -> Result<usize> {
        let user = self.get(name).await?;
        self.engram.backend.revoke_user_tokens(&user.id).await
    }

    /// The user a bearer token belongs to; `None` for a token no user has (or any other
    /// string). The lookup is by hash, so it takes the same time whatever the token shares
    /// with a stored one.
    pub async fn authenticate(self, token: &str) -> Result<Option<User>> {
        if !token.starts_with(USER_TOKEN_PREFIX) {
            return Ok(None);
        }
        self.engram.backend.user_by_token(&hash(token)).await
    }

    /// Gives the user named `name` `access` to `agent`, or takes it away (`None`).
    /// Errors: `NotFound("user" | "agent")`.
    pub async fn share(
        self,
        agent: &AgentId,
        name: &str,
        access: Option<AgentAccess>,
    ) -> Result<()> {
        let user = self.get(name).await?;
        self.engram
            .backend
            .set_agent_access(agent, &user.id, access)
            .await
    }

    /// Records `user` as the owner of `agent` (which they just made).
    /// Errors: `NotFound("user" | "agent")`.
    pub async fn make_owner(self, agent: &AgentId, user: &UserId) -> Result<()> {
        self.engram
            .backend
            .set_agent_access(agent, user, Some(AgentAccess::Owner))
            .await
    }

    /// Creates an agent for `user` with `create` (a plain or template creation) and records
    /// them as its owner; the agent is removed again if that fails, so it is never left the
    /// administrator's alone. A user brings in only blocks they may already change (their
    /// own, or through one of their agents): `block_ids` are checked first.
    ///
    /// Errors: `NotFound("block")` for a block in `block_ids` the user may not change (as if
    /// it did not exist); `create`'s; `NotFound("user")`.
    pub async fn create_agent(
        self,
        user: &UserId,
        block_ids: &[BlockId],
        create: impl Future<Output = Result<crate::AgentState>>,
    ) -> Result<crate::AgentState> {
        for block in block_ids {
            if self.block_access(block, user).await? < Some(AgentAccess::Write) {
                return Err(Error::not_found("block", block.as_str()));
            }
        }
        let state = create.await?;
        if let Err(e) = self.make_owner(&state.agent.id, user).await {
            let _ = self.engram.agents().delete(&state.agent.id).await;
            return Err(e);
        }
        Ok(state)
    }

    /// Records `user` as the owner of `block` (which they just made on their own).
    /// Errors: `NotFound("user" | "block")`.
    pub async fn make_block_owner(self, block: &BlockId, user: &UserId) -> Result<()> {
        self.engram.backend.set_block_owner(block, user).await
    }

    /// What `user` may do with `agent`; `None`: nothing.
    pub async fn access(self, agent: &AgentId, user: &UserId) -> Result<Option<AgentAccess>> {
        self.engram.backend.agent_access(agent, user).await
    }

    /// The most `user` may do with `block`: as its owner, or through the agents it is
    /// attached to.
    pub async fn block_access(self, block: &BlockId, user: &UserId) -> Result<Option<AgentAccess>> {
        self.engram.backend.block_access(block, user).await
    }

    /// The agents `user` may use, with what they may do with each.
    pub async fn agents(self, user: &UserId) -> Result<Vec<(AgentId, AgentAccess)>> {
        self.engram.backend.user_agents(user).await
    }
}

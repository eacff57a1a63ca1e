//! Users of a shared `engram serve` and what each may do with an agent.
//!
//! A server has one administrator (whoever holds the server's own token, as before users
//! existed) and any number of users with tokens of their own. A user reaches an agent only
//! through an [`AgentAccess`] row: the agents they made (owner) and those shared with them.
//! Blocks are reached only through agents: a user may read a block attached to an agent they
//! may read, and change it through an agent they may write.

use crate::{Timestamp, UserId};
use serde::{Deserialize, Serialize};

/// A user account of a shared server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// `user-<uuid>`.
    pub id: UserId,
    /// A unique name, 1–64 characters of letters, digits, `.`, `_` and `-`.
    pub name: String,
    /// When the account was made.
    pub created_at: Timestamp,
}

/// What a user may do with an agent, weakest first (so `Write >= Read`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentAccess {
    /// See its memory, messages and settings.
    Read,
    /// Also chat with it and change its memory and settings.
    Write,
    /// Also delete it and share it with others: the user who made it.
    Owner,
}

impl AgentAccess {
    /// The stored and printed name: `read`, `write` or `owner`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Owner => "owner",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s names; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "read" => Some(Self::Read),
            "write" => Some(Self::Write),
            "owner" => Some(Self::Owner),
            _ => None,
        }
    }
}

/// Whether `name` is a valid user name (see [`User::name`]).
pub fn valid_user_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_is_ordered_and_round_trips() {
        assert!(AgentAccess::Owner > AgentAccess::Write && AgentAccess::Write > AgentAccess::Read);
        for a in [AgentAccess::Read, AgentAccess::Write, AgentAccess::Owner] {
            assert_eq!(AgentAccess::parse(a.as_str()), Some(a));
        }
        assert_eq!(AgentAccess::parse("admin"), None);
    }

    #[test]
    fn user_names_are_plain() {
        assert!(valid_user_name("ana.lopez-2"));
        assert!(!valid_user_name(""));
        assert!(!valid_user_name("a b"));
        assert!(!valid_user_name(&"x".repeat(65)));
    }
}

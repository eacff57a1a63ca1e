//! The schema of a shared server's users (appended to `migrations::MIGRATIONS`; never edit
//! once released). Read and written by `users`.

/// Users, their tokens (only a hash of each is kept: a token is shown once, when made), which
/// agents each may use, and the blocks each made on their own (before attaching them to an
/// agent). An agent or block without rows here is the administrator's alone.
pub(crate) const USERS: &str = r#"
CREATE TABLE users (
    id         TEXT PRIMARY KEY NOT NULL,
    name       TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
);

CREATE TABLE user_tokens (
    hash       BLOB PRIMARY KEY NOT NULL,   -- SHA-256 of the whole token
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    label      TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX user_tokens_by_user ON user_tokens (user_id);

CREATE TABLE agent_access (
    agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    user_id  TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    access   TEXT NOT NULL,                 -- read | write | owner
    PRIMARY KEY (agent_id, user_id)
) WITHOUT ROWID;
CREATE INDEX agent_access_by_user ON agent_access (user_id, agent_id);

CREATE TABLE block_owners (
    block_id TEXT PRIMARY KEY NOT NULL REFERENCES blocks (id) ON DELETE CASCADE,
    user_id  TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE
) WITHOUT ROWID;
"#;

//! The schema of MCP clients' writes waiting for the user's approval (appended to
//! `migrations::MIGRATIONS`; never edit once released). Read and written by `client_writes`.

/// One row per waiting write, kept until the memory server that asked has read the outcome.
pub(crate) const CLIENT_WRITES: &str = r#"
CREATE TABLE client_writes (
    id           TEXT PRIMARY KEY NOT NULL,
    pending      TEXT NOT NULL,               -- JSON PendingClientWrite, as the window shows it
    call         TEXT NOT NULL,               -- JSON of the write, replayed when approved
    status       TEXT NOT NULL,               -- pending | applying | applied | refused | denied | timed_out | withdrawn
    message      TEXT,                        -- the answer for the client once decided
    requested_at INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    alive_at     INTEGER NOT NULL             -- the asking server's last sign of life
) WITHOUT ROWID;
"#;

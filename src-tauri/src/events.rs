//! The events the shell emits to its windows.

/// The event the window listens to for the engine's [`Notice`](engram_service::Notice)s (or,
/// while it works on a server, that server's).
pub const NOTICE_EVENT: &str = "engram://notice";

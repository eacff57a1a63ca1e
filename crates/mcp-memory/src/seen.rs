//! Noting which clients use the server (for the window's Settings), at most once a minute per
//! client so a busy client costs no write per call.

use engram_service::Engram;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a client's "last seen" is written at most.
const EVERY: Duration = Duration::from_secs(60);

/// The last time each client was noted, for one server.
#[derive(Default)]
pub(crate) struct Seen {
    noted: Mutex<HashMap<String, Instant>>,
}

impl Seen {
    /// Notes `name` over `transport` unless it was noted in the last minute.
    pub(crate) fn note(&self, engram: &Engram, name: &str, transport: &str) {
        {
            let mut noted = self
                .noted
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if noted.get(name).is_some_and(|t| t.elapsed() < EVERY) {
                return;
            }
            noted.insert(name.to_owned(), Instant::now());
        }
        if let Err(e) = engram.memory_server().note_client(name, transport) {
            tracing::warn!(%e, client = name, "memory server: cannot note the client");
        }
    }
}

//! Change notifications: who listens for which block, and the watcher that tells them.
//!
//! The watcher compares snapshots of the served agents' blocks (path → version, one cheap read)
//! on every memory notice of this process and on a short tick, so it also sees edits made by
//! other processes on the same database (an agent running in the desktop app, `engram serve`).
//! Clients on protocol 2026-07-28 listen with `subscriptions/listen`; older ones with
//! `resources/subscribe` and get notifications on their session.

use crate::uri::uri_of;
use engram_service::mcp_memory::{MemoryChange, MemoryClient};
use engram_service::{Engram, Notice};
use rmcp::RoleServer;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, SubscriptionSink};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// How often the watcher looks for changes made by other processes, unless
/// `ENGRAM_MCP_MEMORY_POLL_MS` says otherwise.
pub const DEFAULT_POLL: Duration = Duration::from_millis(500);

/// A session on an older protocol that subscribed to some resources.
struct Session {
    peer: Peer<RoleServer>,
    uris: Arc<Mutex<HashSet<String>>>,
}

/// Everyone listening for changes of one server's memory.
#[derive(Default)]
pub struct Subscribers {
    sessions: Mutex<Vec<(u64, Session)>>,
    listeners: Mutex<Vec<(u64, SubscriptionSink)>>,
    next: AtomicU64,
}

impl Subscribers {
    /// The subscribers of a server over `client`'s agents, with a watcher task that notifies
    /// them (it ends when the last handle is dropped).
    pub fn start(engram: Arc<Engram>, client: &MemoryClient) -> Arc<Self> {
        let this = Arc::new(Self::default());
        let poll = std::env::var("ENGRAM_MCP_MEMORY_POLL_MS")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|ms| *ms > 0)
            .map_or(DEFAULT_POLL, Duration::from_millis);
        tokio::spawn(watch(engram, client.clone(), Arc::downgrade(&this), poll));
        this
    }

    /// Registers an older-protocol session whose subscribed URIs are `uris`; returns its key.
    pub(crate) fn add_session(
        &self,
        peer: Peer<RoleServer>,
        uris: Arc<Mutex<HashSet<String>>>,
    ) -> u64 {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.sessions).push((key, Session { peer, uris }));
        key
    }

    /// Registers a `subscriptions/listen` stream; returns its key for [`remove_listener`].
    pub(crate) fn add_listener(&self, sink: SubscriptionSink) -> u64 {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.listeners).push((key, sink));
        key
    }

    /// Forgets a listen stream (it ended).
    pub(crate) fn remove_listener(&self, key: u64) {
        lock(&self.listeners).retain(|(k, _)| *k != key);
    }

    async fn tell(&self, change: &MemoryChange) {
        let sessions: Vec<(u64, Peer<RoleServer>)> = lock(&self.sessions)
            .iter()
            .filter(|(_, s)| match change {
                MemoryChange::Updated(path) => lock(&s.uris).contains(&uri_of(path)),
                MemoryChange::ListChanged => true,
            })
            .map(|(k, s)| (*k, s.peer.clone()))
            .collect();
        let mut gone = Vec::new();
        for (key, peer) in sessions {
            let sent = match change {
                MemoryChange::Updated(path) => {
                    peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri_of(
                        path,
                    )))
                    .await
                }
                MemoryChange::ListChanged => peer.notify_resource_list_changed().await,
            };
            if sent.is_err() {
                gone.push(key);
            }
        }
        lock(&self.sessions).retain(|(k, _)| !gone.contains(k));
        let listeners: Vec<(u64, SubscriptionSink)> = lock(&self.listeners).clone();
        let mut gone = Vec::new();
        for (key, sink) in listeners {
            let sent = match change {
                MemoryChange::Updated(path) => sink.notify_resource_updated(uri_of(path)).await,
                MemoryChange::ListChanged => sink.notify_resource_list_changed().await,
            };
            // A filter that did not ask for this resource is fine; a closed stream is gone.
            if matches!(
                sent,
                Err(rmcp::service::SubscriptionSendError::SubscriptionClosed)
                    | Err(rmcp::service::SubscriptionSendError::Service(_))
            ) {
                gone.push(key);
            }
        }
        lock(&self.listeners).retain(|(k, _)| !gone.contains(k));
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether a notice may concern the served agents' blocks.
fn concerns(notice: &Notice, client: &MemoryClient) -> bool {
    match notice {
        Notice::MemoryChanged { agent_id } | Notice::AgentChanged { agent_id } => {
            client.grants.iter().any(|g| g.agent_id == *agent_id)
        }
        Notice::AgentsChanged => true,
        _ => false,
    }
}

async fn watch(
    engram: Arc<Engram>,
    client: MemoryClient,
    subscribers: Weak<Subscribers>,
    poll: Duration,
) {
    let mut notices = engram.notices();
    let mut tick = tokio::time::interval(poll);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut seen = engram.memory_server().snapshot(&client).unwrap_or_default();
    loop {
        tokio::select! {
            notice = notices.recv() => match notice {
                Ok(n) if !concerns(&n, &client) => continue,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            },
            _ = tick.tick() => {}
        }
        let Some(subscribers) = subscribers.upgrade() else {
            return;
        };
        let now = match engram.memory_server().snapshot(&client) {
            Ok(now) => now,
            Err(e) => {
                tracing::warn!(%e, "memory server: cannot read the blocks");
                continue;
            }
        };
        for change in seen.changes(&now) {
            subscribers.tell(&change).await;
        }
        seen = now;
    }
}

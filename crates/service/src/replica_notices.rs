//! Notices between the replicas of a shared server. A change this replica makes to shared data
//! (an agent, its memory, its messages, its passages, tools, a sleep-time pass) goes out on the
//! database's notice bus once the write has returned, so after its commit; the other replicas'
//! changes come in and reach this replica's windows and streams as if made here. When the bus
//! was cut off, notices may have been missed: `AgentsChanged` has every window read everything
//! again. A request to stop an agent's runs travels the same way, so it works from whichever
//! replica a client reaches.

use crate::Notice;
use crate::runs::Registry;
use engram_core::{AgentId, RunId};
use engram_store_api::{BusEvent, NoticeBus};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// This replica's end of the bus. Dropping it stops hearing the others.
pub(crate) struct Link {
    /// Who sent a notice, so a replica does not hear its own twice.
    id: String,
    bus: Arc<dyn NoticeBus>,
    stop: CancellationToken,
}

/// What travels on the bus, with the replica that sent it.
#[derive(Serialize, Deserialize)]
struct Envelope {
    from: String,
    #[serde(flatten)]
    body: Body,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Body {
    /// Shared data changed.
    Notice { notice: Notice },
    /// Stop the agent's runs (`run` alone when given) wherever they run.
    Cancel {
        agent_id: AgentId,
        run_id: Option<RunId>,
    },
}

impl Link {
    /// Joins `bus`: the others' notices are passed on to `notices`, and their requests to stop
    /// runs reach `runs`, from now on (when a tokio runtime is running; otherwise this replica
    /// only sends).
    pub(crate) fn join(
        bus: Arc<dyn NoticeBus>,
        notices: broadcast::Sender<Notice>,
        runs: Arc<Registry>,
    ) -> Self {
        let link = Self {
            id: format!("replica-{:016x}", rand::random::<u64>()),
            bus,
            stop: CancellationToken::new(),
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(hear(
                    link.bus.clone(),
                    link.id.clone(),
                    notices,
                    runs,
                    link.stop.clone(),
                ));
            }
            Err(_) => tracing::warn!("no runtime: this replica will not hear the others"),
        }
        link
    }

    /// Sends `notice` to the other replicas when it is about data they share.
    pub(crate) fn publish(&self, notice: &Notice) {
        if is_shared(notice) {
            self.send(Body::Notice {
                notice: notice.clone(),
            });
        }
    }

    /// Asks the other replicas to stop the agent's runs (`run` alone when given).
    pub(crate) fn cancel(&self, agent: &AgentId, run: Option<&RunId>) {
        self.send(Body::Cancel {
            agent_id: agent.clone(),
            run_id: run.cloned(),
        });
    }

    fn send(&self, body: Body) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let envelope = Envelope {
            from: self.id.clone(),
            body,
        };
        let Ok(payload) = serde_json::to_string(&envelope) else {
            return;
        };
        let bus = self.bus.clone();
        runtime.spawn(async move {
            if let Err(e) = bus.publish(&payload).await {
                tracing::warn!(%e, "a notice did not reach the other replicas");
            }
        });
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Whether `notice` is about data every replica shares (not this machine's downloads, models,
/// MCP connections or Python).
fn is_shared(notice: &Notice) -> bool {
    matches!(
        notice,
        Notice::AgentsChanged
            | Notice::AgentChanged { .. }
            | Notice::MemoryChanged { .. }
            | Notice::MessagesChanged { .. }
            | Notice::ArchivalChanged { .. }
            | Notice::SleeptimePass { .. }
            | Notice::ToolsChanged
    )
}

/// Passes the notices other replicas publish on to `notices`, and their requests to stop runs
/// to `runs`, until `stop`.
async fn hear(
    bus: Arc<dyn NoticeBus>,
    me: String,
    notices: broadcast::Sender<Notice>,
    runs: Arc<Registry>,
    stop: CancellationToken,
) {
    let mut events = match bus.subscribe().await {
        Ok(events) => events,
        Err(e) => {
            tracing::warn!(%e, "cannot hear the other replicas");
            return;
        }
    };
    loop {
        let event = tokio::select! {
            () = stop.cancelled() => return,
            event = events.recv() => event,
        };
        let body = match event {
            None => return,
            Some(BusEvent::Resync) => Body::Notice {
                notice: Notice::AgentsChanged,
            },
            Some(BusEvent::Notice(payload)) => match serde_json::from_str::<Envelope>(&payload) {
                Ok(e) if e.from != me => e.body,
                Ok(_) => continue,
                Err(e) => {
                    tracing::debug!(%e, "not a notice of ours on the bus");
                    continue;
                }
            },
        };
        match body {
            Body::Notice { notice } => {
                let _ = notices.send(notice);
            }
            Body::Cancel { agent_id, run_id } => {
                runs.cancel(|id, a| *a == agent_id && run_id.as_ref().is_none_or(|r| r == id));
            }
        }
    }
}

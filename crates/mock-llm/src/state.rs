//! The mock server's state, shared by its model routes (`server.rs`), its control routes
//! (`control.rs`) and the [`MockLlm`](crate::MockLlm) handle: queued replies, the request log,
//! limits and how answers are streamed.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use axum::http::{HeaderMap, header};
use serde_json::Value;
use tokio::sync::watch;

use crate::limits::{self, Limits};
use crate::view::ChatView;
use crate::{Recorded, Reply, Script};

/// How streamed answers are paced and shaped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamStyle {
    /// Pause between SSE frames (zero by default: tests stay fast; set it for UI tests that
    /// need to see tokens arrive or to press "stop" mid-stream).
    pub chunk_delay: Duration,
    /// Send the argument pieces of parallel tool calls round-robin instead of one call after
    /// the other (OpenAI API only; the protocol allows both).
    pub interleave_tool_calls: bool,
}

/// What every route of one mock server reads and writes.
pub(crate) struct Shared {
    pub(crate) script: Script,
    pub(crate) queue: Mutex<VecDeque<Reply>>,
    pub(crate) log: Mutex<Log>,
    pub(crate) counter: AtomicU64,
    pub(crate) style: Mutex<StreamStyle>,
    pub(crate) reject_invalid: AtomicBool,
    pub(crate) limits: Mutex<Option<Limits>>,
    pub(crate) refusals: AtomicU64,
    pub(crate) prompt_counts: Mutex<Vec<u64>>,
    pub(crate) shutdown: watch::Sender<bool>,
}

#[derive(Default)]
pub(crate) struct Log {
    pub(crate) requests: Vec<Recorded>,
    pub(crate) violations: Vec<String>,
}

/// Locks a mutex, ignoring poisoning: a panicking test thread must not hide the log from the
/// assertions that explain it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    pub(crate) fn record(&self, path: &str, headers: &HeaderMap, body: Value) -> usize {
        let text = |name: header::HeaderName| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let mut log = lock(&self.log);
        log.requests.push(Recorded {
            path: path.to_string(),
            body,
            authorization: text(header::AUTHORIZATION),
            api_key_header: text(header::HeaderName::from_static("x-api-key")),
        });
        log.requests.len() - 1
    }

    pub(crate) fn violate(&self, index: usize, path: &str, problem: &str) {
        tracing::warn!(index, path, problem, "mock-llm: protocol violation");
        lock(&self.log)
            .violations
            .push(format!("request {index} ({path}): {problem}"));
    }

    pub(crate) fn next_id(&self) -> u64 {
        self.counter.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn push(&self, replies: Vec<Reply>) {
        lock(&self.queue).extend(replies);
    }

    pub(crate) fn log_snapshot(&self) -> (Vec<Recorded>, Vec<String>) {
        let log = lock(&self.log);
        (log.requests.clone(), log.violations.clone())
    }

    pub(crate) fn set_limits(&self, limits: Option<Limits>) {
        *lock(&self.limits) = limits;
    }

    /// The queued reply if there is one, else a rambling summary when asked to ramble, else
    /// the script's.
    pub(crate) fn next_reply(&self, view: &ChatView, ramble: bool) -> Reply {
        let queued = lock(&self.queue).pop_front();
        queued.unwrap_or_else(|| {
            if ramble && view.tools.is_empty() && crate::brain::is_summary_request(view) {
                Reply::Text(limits::ramble(view))
            } else {
                self.script.answer(view)
            }
        })
    }

    /// Waits out delays and hangs; `None` when the server shut down meanwhile.
    pub(crate) async fn settle(&self, mut reply: Reply) -> Option<Reply> {
        let mut stop = self.shutdown.subscribe();
        loop {
            match reply {
                Reply::Delayed(delay, inner) => {
                    tokio::select! {
                        () = tokio::time::sleep(delay) => reply = *inner,
                        _ = stop.wait_for(|s| *s) => return None,
                    }
                }
                Reply::Hang => {
                    let _ = stop.wait_for(|s| *s).await;
                    return None;
                }
                other => return Some(other),
            }
        }
    }
}

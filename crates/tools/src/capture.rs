//! Reading a child's stdout and stderr to the end while keeping at most a byte budget of both,
//! so a loud tool never blocks on a full pipe and never fills Engram's memory.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use tokio::io::{AsyncRead, AsyncReadExt};

/// What was kept of both streams, shared by their two readers.
pub(crate) struct Capture {
    /// Bytes of stdout and stderr still to keep.
    budget: AtomicUsize,
    truncated: AtomicBool,
    stdout: Mutex<Vec<u8>>,
    stderr: Mutex<Vec<u8>>,
}

/// Which pipe a reader drains.
#[derive(Clone, Copy)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

impl Capture {
    /// Keeps up to `budget` bytes of the two streams together.
    pub(crate) fn new(budget: usize) -> Capture {
        Capture {
            budget: AtomicUsize::new(budget),
            truncated: AtomicBool::new(false),
            stdout: Mutex::default(),
            stderr: Mutex::default(),
        }
    }

    /// True when bytes were dropped.
    pub(crate) fn truncated(&self) -> bool {
        self.truncated.load(Ordering::SeqCst)
    }

    /// Takes what was kept of `stream`.
    pub(crate) fn take(&self, stream: Stream) -> Vec<u8> {
        let m = match stream {
            Stream::Stdout => &self.stdout,
            Stream::Stderr => &self.stderr,
        };
        std::mem::take(&mut *m.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Reads `pipe` to its end, keeping bytes while the shared budget lasts.
pub(crate) async fn drain(
    mut pipe: impl AsyncRead + Unpin,
    capture: std::sync::Arc<Capture>,
    stream: Stream,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let left = capture
            .budget
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                Some(left.saturating_sub(n))
            })
            .unwrap_or(0);
        let keep = left.min(n);
        if keep > 0 {
            let target = match stream {
                Stream::Stdout => &capture.stdout,
                Stream::Stderr => &capture.stderr,
            };
            target
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend_from_slice(&buf[..keep]);
        }
        if keep < n {
            capture.truncated.store(true, Ordering::SeqCst);
        }
    }
}

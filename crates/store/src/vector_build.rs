//! Building an agent's HNSW graph in the background, and answering exactly meanwhile.
//!
//! Building the graph of 100,000 vectors took 145–237 s on the shared 2-core VM, and it used
//! to happen inside the first vector search, holding the store's connection all that time.
//! Now the first search that needs a graph reads the agent's vectors once into a [`Flat`] copy
//! (8-bit, quantised exactly as usearch quantises them: 384 bytes a vector at 384 dimensions)
//! and hands it to a thread that inserts them into a new graph. Until the graph is ready every
//! search scans the flat copy exhaustively and re-scores its best candidates from the stored
//! `f32` vectors (so scores are true cosines, as with the graph); rows written since the copy
//! was read (the vector log) are left out of the scan and scored from SQLite directly. When the
//! thread is done the next search takes the graph, catches it up with the log like a loaded
//! one, and saves it.

use crate::sql::DbResult;
use engram_core::{Error, Result};
use rusqlite::{Connection, params};
use std::collections::{BinaryHeap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};
use usearch::Index;

/// An agent's vectors as usearch's `i8` quantisation stores them, in one contiguous block.
pub(crate) struct Flat {
    dim: usize,
    keys: Vec<i64>,
    data: Vec<i8>,
}

/// `v` scaled to unit length and into `-127..=127`, truncated toward zero — usearch's own cast
/// to `i8` (`cast_to_i8_gt`), so a graph built from these rows holds what adding the `f32`
/// vectors would have stored. `false` (nothing written) for a zero or non-finite vector.
pub(crate) fn quantise(v: &[f32], out: &mut Vec<i8>) -> bool {
    let magnitude = v
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    if !(magnitude > 0.0 && magnitude.is_finite()) {
        return false;
    }
    out.extend(
        v.iter()
            .map(|&x| (f64::from(x) * 127.0 / magnitude).clamp(-127.0, 127.0) as i8),
    );
    true
}

impl Flat {
    /// Reads the agent's `dim`-dimensional vectors (rows of another dimension, zero or damaged
    /// vectors are skipped).
    pub(crate) fn read(conn: &Connection, agent: &str, dim: usize) -> Result<Flat> {
        Self::read_rows(
            conn,
            "SELECT pk, embedding FROM passages WHERE agent_id = ?1 AND embedding_dim = ?2",
            params![agent, dim as i64],
            dim,
        )
    }

    /// Reads the `dim`-dimensional vectors of the rows `(row key, little-endian f32s)` that
    /// `sql` selects with `args`, skipping those of another length, zero or damaged ones.
    pub(crate) fn read_rows(
        conn: &Connection,
        sql: &str,
        args: impl rusqlite::Params,
        dim: usize,
    ) -> Result<Flat> {
        let mut flat = Flat {
            dim,
            keys: Vec::new(),
            data: Vec::new(),
        };
        let mut stmt = conn.prepare_cached(sql).db()?;
        let mut rows = stmt.query(args).db()?;
        let mut v: Vec<f32> = Vec::with_capacity(dim);
        while let Some(r) = rows.next().db()? {
            let Ok(blob) = r.get_ref(1).db()?.as_blob() else {
                continue;
            };
            if blob.len() != dim * 4 {
                continue;
            }
            v.clear();
            v.extend(
                blob.chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            );
            if quantise(&v, &mut flat.data) {
                flat.keys.push(r.get(0).db()?);
            }
        }
        flat.keys.shrink_to_fit();
        flat.data.shrink_to_fit();
        Ok(flat)
    }

    /// How many vectors it holds.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// Bytes it holds.
    pub(crate) fn memory_usage(&self) -> usize {
        self.data.len() + self.keys.len() * 8
    }

    fn row(&self, i: usize) -> &[i8] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }

    /// The row keys of up to `want` rows with the largest dot product with the quantised unit
    /// query `q`, skipping keys `skip` names. An exhaustive scan: 8-bit products summed in
    /// 32 bits, which the compiler vectorises.
    pub(crate) fn nearest(&self, q: &[i8], want: usize, skip: impl Fn(i64) -> bool) -> Vec<i64> {
        // A min-heap of the best so far: (score, key) with the worst on top.
        let mut best: BinaryHeap<std::cmp::Reverse<(i32, i64)>> =
            BinaryHeap::with_capacity(want + 1);
        if want == 0 {
            return Vec::new();
        }
        for (i, &key) in self.keys.iter().enumerate() {
            let dot: i32 = self
                .row(i)
                .iter()
                .zip(q)
                .map(|(&a, &b)| i32::from(a) * i32::from(b))
                .sum();
            if best.len() == want && best.peek().is_some_and(|w| w.0.0 >= dot) {
                continue;
            }
            if skip(key) {
                continue;
            }
            best.push(std::cmp::Reverse((dot, key)));
            if best.len() > want {
                best.pop();
            }
        }
        best.into_iter().map(|r| r.0.1).collect()
    }
}

/// What a build thread hands back: the graph, and whether it was saved to disk.
pub(crate) type Built = Result<(Index, bool)>;

/// Saves a finished graph beside the database (run on the build thread).
pub(crate) type Save = Box<dyn FnOnce(&Index) -> Result<()> + Send>;

/// A graph being built for one agent, and what searches need meanwhile.
pub(crate) struct Building {
    /// Dimension of the vectors.
    pub(crate) dim: usize,
    /// The log position the flat copy reflects (and so the graph, once built).
    pub(crate) seq: i64,
    flat: Arc<Flat>,
    /// Rows named by log entries after `seq`: scored from SQLite, not from the copy.
    changed: HashSet<i64>,
    /// The last log entry folded into `changed`.
    applied: i64,
    progress: Arc<AtomicUsize>,
    cancel: Arc<AtomicBool>,
    /// Set by the thread when it has nothing more to do (built, failed or stopped).
    over: Arc<AtomicBool>,
    done: Receiver<Built>,
    result: Option<Built>,
    started: Instant,
}

/// Progress of one background build of an agent's vector graph, e.g.
/// `{"agent_id":"agent-…","done":40960,"total":100000,"seconds":61,"finished":false}`. Counts
/// are vectors (one per archival passage with a vector of the agent's embedding model).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, ts_rs::TS)]
#[ts(export)]
pub struct VectorIndexBuild {
    /// The agent.
    pub agent_id: String,
    /// Vectors inserted into the graph so far.
    #[ts(type = "number")]
    pub done: usize,
    /// Vectors to insert.
    #[ts(type = "number")]
    pub total: usize,
    /// Seconds since the build started.
    #[ts(type = "number")]
    pub seconds: u64,
    /// `true` in the last report of a build: the graph is built (and searches use it from
    /// the next one on), or the build failed or was stopped (the store closed, the agent was
    /// deleted). Never set in [`crate::Store::vector_index_builds`]' answer.
    pub finished: bool,
}

/// Called with a build's progress: once when it starts, at most every [`REPORT_EVERY`] while
/// it runs, and once with `finished` set when it ends. Runs on the build's threads, so it
/// must be quick (send a message, not do the work).
pub type BuildObserver = Arc<dyn Fn(&VectorIndexBuild) + Send + Sync>;

/// How often a running build reports its progress: often enough for a progress bar, rare
/// enough that a 1M-vector build sends a few thousand reports, not a million.
pub const REPORT_EVERY: Duration = Duration::from_millis(500);

/// Sends one build's progress to its observer, no more often than [`REPORT_EVERY`].
struct Reporter {
    agent: String,
    total: usize,
    started: Instant,
    /// Milliseconds since `started` of the last report.
    last: AtomicU64,
    observer: Option<BuildObserver>,
}

impl Reporter {
    fn send(&self, done: usize, finished: bool) {
        if let Some(observer) = &self.observer {
            observer(&VectorIndexBuild {
                agent_id: self.agent.clone(),
                done,
                total: self.total,
                seconds: self.started.elapsed().as_secs(),
                finished,
            });
        }
    }

    /// Reports `done` if the last report is [`REPORT_EVERY`] old (one thread wins the race).
    fn tick(&self, done: &AtomicUsize) {
        if self.observer.is_none() {
            return;
        }
        let now = self.started.elapsed().as_millis() as u64;
        let last = self.last.load(Ordering::Relaxed);
        if now.saturating_sub(last) >= REPORT_EVERY.as_millis() as u64
            && self
                .last
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.send(done.load(Ordering::Relaxed), false);
        }
    }
}

impl Building {
    /// Starts a thread that builds a graph from `flat` (read at log position `seq`) with
    /// `make` (which creates the empty index) and, when `save` is given, saves it through it.
    /// While `hold` is set the thread waits before it starts (tests hold builds to search
    /// during one). `observer` hears of the progress of the agent's build (see
    /// [`BuildObserver`]); its first report is sent before this returns.
    pub(crate) fn start(
        agent: &str,
        flat: Flat,
        seq: i64,
        make: impl FnOnce(usize) -> Result<Index> + Send + 'static,
        save: Option<Save>,
        hold: Arc<AtomicBool>,
        observer: Option<BuildObserver>,
    ) -> Building {
        let flat = Arc::new(flat);
        let progress = Arc::new(AtomicUsize::new(0));
        let cancel = Arc::new(AtomicBool::new(false));
        let over = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let reporter = Reporter {
            agent: agent.to_owned(),
            total: flat.len(),
            started,
            last: AtomicU64::new(0),
            observer,
        };
        reporter.send(0, false);
        let (tx, done) = mpsc::channel();
        let job = (flat.clone(), progress.clone(), cancel.clone(), over.clone());
        let spawned = std::thread::Builder::new()
            .name("engram-vector-build".into())
            .spawn(move || {
                let (flat, progress, cancel, over) = job;
                while hold.load(Ordering::Relaxed) && !cancel.load(Ordering::Relaxed) {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                let built = build_graph(&flat, make, &progress, &cancel, &reporter).map(|index| {
                    let saved = match save {
                        Some(save) if !cancel.load(Ordering::Relaxed) => match save(&index) {
                            Ok(()) => true,
                            Err(e) => {
                                tracing::warn!(error = %e, "vector index not saved");
                                false
                            }
                        },
                        _ => false,
                    };
                    (index, saved)
                });
                over.store(true, Ordering::Relaxed);
                reporter.send(progress.load(Ordering::Relaxed), true);
                let _ = tx.send(built);
            });
        let mut building = Building {
            dim: flat.dim,
            seq,
            flat,
            changed: HashSet::new(),
            applied: seq,
            progress,
            cancel,
            over,
            done,
            result: None,
            started,
        };
        if let Err(e) = spawned {
            building.over.store(true, Ordering::Relaxed);
            building.result = Some(Err(Error::Storage(format!(
                "vector index: cannot start a build thread: {e}"
            ))));
        }
        building
    }

    /// The finished graph, if the thread is done (`None` while it runs). A thread that died
    /// without an answer is an error.
    pub(crate) fn finished(&mut self) -> Option<Built> {
        if self.result.is_none() {
            match self.done.try_recv() {
                Ok(built) => self.result = Some(built),
                Err(TryRecvError::Empty) => return None,
                Err(TryRecvError::Disconnected) => {
                    self.result = Some(Err(Error::Storage(
                        "vector index: the build thread stopped".into(),
                    )))
                }
            }
        }
        self.result.take()
    }

    /// Blocks until the thread is done (for tests and benchmarks); the next search takes the
    /// graph.
    pub(crate) fn wait(&mut self) {
        if self.result.is_none() {
            self.result = Some(self.done.recv().unwrap_or_else(|_| {
                Err(Error::Storage(
                    "vector index: the build thread stopped".into(),
                ))
            }));
        }
    }

    /// Asks the thread to stop (its graph is no longer wanted).
    pub(crate) fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// Stops the thread and waits for it, so it writes no file after this returns.
    pub(crate) fn stop(mut self) {
        self.cancel();
        self.wait();
    }

    /// Bytes the flat copy holds (the graph's own memory is not counted until it is taken).
    pub(crate) fn memory_usage(&self) -> usize {
        self.flat.memory_usage()
    }

    /// Progress, for the service and the UI; `None` once the thread is over (its graph waits
    /// for the next search to take it).
    pub(crate) fn progress(&self, agent: &str) -> Option<VectorIndexBuild> {
        (!self.over.load(Ordering::Relaxed)).then(|| VectorIndexBuild {
            agent_id: agent.to_owned(),
            done: self.progress.load(Ordering::Relaxed),
            total: self.flat.len(),
            seconds: self.started.elapsed().as_secs(),
            finished: false,
        })
    }

    /// Folds log entries after the last one seen into the set of changed rows.
    pub(crate) fn catch_up(&mut self, conn: &Connection, agent: &str) -> Result<()> {
        let mut stmt = conn
            .prepare_cached(
                "SELECT seq, pk FROM passage_vector_log WHERE agent_id = ?1 AND seq > ?2",
            )
            .db()?;
        let mut rows = stmt.query(params![agent, self.applied]).db()?;
        while let Some(r) = rows.next().db()? {
            self.applied = self.applied.max(r.get(0).db()?);
            self.changed.insert(r.get(1).db()?);
        }
        Ok(())
    }

    /// Candidates for the `want` nearest rows to `query` (`allowed`: only these keys): the
    /// best of an exhaustive scan of the flat copy, plus every row changed since it was read.
    /// The caller re-scores them exactly from SQLite.
    pub(crate) fn candidates(
        &self,
        query: &[f32],
        want: usize,
        allowed: Option<&HashSet<i64>>,
    ) -> Vec<u64> {
        let mut q = Vec::with_capacity(self.dim);
        if !quantise(query, &mut q) {
            return Vec::new();
        }
        let passes = |k: i64| allowed.is_none_or(|a| a.contains(&k));
        let mut keys = self
            .flat
            .nearest(&q, want, |k| self.changed.contains(&k) || !passes(k));
        keys.extend(self.changed.iter().copied().filter(|&k| passes(k)));
        keys.into_iter().map(|k| k as u64).collect()
    }
}

impl Drop for Building {
    /// A build nobody will take (the store closed, the agent's index was replaced) stops.
    fn drop(&mut self) {
        self.cancel();
    }
}

/// Inserts every row of `flat` into the index `make` creates, on up to four threads.
fn build_graph(
    flat: &Flat,
    make: impl FnOnce(usize) -> Result<Index>,
    progress: &AtomicUsize,
    cancel: &AtomicBool,
    reporter: &Reporter,
) -> Result<Index> {
    let n = flat.len();
    let index = make(n)?;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(4);
    index
        .reserve_capacity_and_threads((n + n / 8).max(64), threads)
        .map_err(|e| Error::Storage(format!("vector index: reserve: {e}")))?;
    let chunk = n.div_ceil(threads).max(1);
    let stopped = || Error::Storage("vector index: build cancelled".into());
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .step_by(chunk)
            .map(|from| {
                let index = &index;
                s.spawn(move || -> Result<()> {
                    for i in from..(from + chunk).min(n) {
                        if i % 1_024 == 0 {
                            if cancel.load(Ordering::Relaxed) {
                                return Err(stopped());
                            }
                            reporter.tick(progress);
                        }
                        index
                            .add(flat.keys[i] as u64, flat.row(i))
                            .map_err(|e| Error::Storage(format!("vector index: add: {e}")))?;
                        progress.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or_else(|_| Err(Error::Storage("vector index: a thread panicked".into())))
        })
    })?;
    tracing::debug!(n, "vector graph built in the background");
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantisation_matches_usearch_and_the_scan_finds_the_nearest() {
        let mut out = Vec::new();
        assert!(quantise(&[3.0, -4.0, 0.0], &mut out));
        // 3/5 · 127 = 76.2 → 76; −4/5 · 127 = −101.6 → −101 (toward zero, as C++'s cast).
        assert_eq!(out, [76, -101, 0]);
        assert!(!quantise(&[0.0, 0.0], &mut out));
        assert!(!quantise(&[f32::NAN, 1.0], &mut out));

        let rows: [[f32; 3]; 4] = [
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.7, 0.7, 0.0],
            [0.0, 0.0, 1.0],
        ];
        let mut flat = Flat {
            dim: 3,
            keys: Vec::new(),
            data: Vec::new(),
        };
        for (i, r) in rows.iter().enumerate() {
            assert!(quantise(r, &mut flat.data));
            flat.keys.push(i as i64 + 10);
        }
        let mut q = Vec::new();
        quantise(&[0.9, 0.3, 0.0], &mut q);
        let mut two = flat.nearest(&q, 2, |_| false);
        two.sort_unstable();
        assert_eq!(two, [10, 12]);
        // A skipped key leaves room for the next best.
        let mut skipping = flat.nearest(&q, 2, |k| k == 10);
        skipping.sort_unstable();
        assert_eq!(skipping, [11, 12]);
        assert!(flat.nearest(&q, 0, |_| false).is_empty());
    }
}

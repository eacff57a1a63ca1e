//! Per-agent vector indexes over archival passages, kept consistent with SQLite.
//!
//! Brute force read every stored vector from SQLite and decoded it per query: 2.0 s at 100,000
//! passages. Here each agent whose passages are searched by vector gets an index in memory,
//! built lazily from its rows with [`usearch`] (HNSW graph, cosine metric):
//! - below [`VectorIndexConfig::exact_below`] vectors the index keeps `f32` vectors and is
//!   searched exhaustively (exact, a flat scan in memory);
//! - above it, vectors are quantised to `i8` (384 bytes a vector at 384 dimensions) and the
//!   graph is searched approximately; the candidates are then re-scored exactly from the `f32`
//!   vectors stored in SQLite, so scores are always true cosine similarities and a passage that
//!   is gone or changed since is never returned with a stale score. The graph is built on a
//!   thread of its own (`vector_build`); until it is ready, searches scan an 8-bit copy of the
//!   vectors exhaustively, re-scored the same way.
//!
//! **SQLite is the truth.** Triggers append every passage whose vector appeared, changed or went
//! away to `passage_vector_log` (agent, row key). An index remembers the last log entry it
//! applied; before each search it applies the newer entries by making each named row agree
//! with SQLite (remove the key, add it back if the row still has a vector of the index's
//! dimension) — idempotent, so applying an entry twice is harmless. Large indexes (above
//! [`VectorIndexConfig::persist_above`]) are saved beside the database
//! (`<database>.vectors/<agent hex>.usearch` plus a `.json` of the log position, dimension,
//! count and file length) and loaded on the next start; a missing, truncated, corrupt or
//! foreign file, one ahead of the log, one whose log was pruned past it, or one whose count
//! disagrees with SQLite's after catching up is rebuilt from the rows, never an error. Vectors of
//! another dimension are never mixed in: an index has one dimension, and a query of another
//! rebuilds it for that one (the store forgets old vectors when an agent's model changes, which
//! the log carries into the index).

use crate::folder_vectors::FolderVectors;
use crate::search;
use crate::sql::{self, DbResult};
use crate::vector_build::{BuildObserver, Building, Flat, Save, VectorIndexBuild};
use engram_core::{Error, Result};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

/// When the store uses an exact scan and when the graph; sizes are counts of vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VectorIndexConfig {
    /// Below this many vectors an agent's index is an exact `f32` scan (default 20,000: about
    /// 4 ms per query at 384 dimensions and 31 MB of memory; 5,000 took about 1 ms). Exact up
    /// to where the graph is also saved to disk, because the graph's recall on real embeddings
    /// at scale is not measured yet. An exact index is built inside the search that needs it;
    /// a graph in the background (see `vector_build`).
    pub exact_below: usize,
    /// Indexes of at least this many vectors are saved to disk beside the database and loaded on
    /// the next start instead of rebuilt (default 20,000; smaller ones rebuild in well under a
    /// second).
    pub persist_above: usize,
    /// A filtered search (tags, dates) whose filter leaves at most this many passages with
    /// vectors scores exactly those rows from SQLite instead of walking the graph (default
    /// 2,000): a selective filter would otherwise leave the graph search too few candidates.
    pub exact_filtered: usize,
    /// An unfiltered hybrid search walks an index of at least this many vectors on a thread of
    /// its own while its lexical side runs (default 5,000: a walk there costs about a
    /// millisecond, a thread about 30 µs). `0`: always; `usize::MAX`: never.
    pub parallel_from: usize,
}

impl Default for VectorIndexConfig {
    fn default() -> Self {
        VectorIndexConfig {
            exact_below: 20_000,
            persist_above: 20_000,
            exact_filtered: 2_000,
            parallel_from: 5_000,
        }
    }
}

/// HNSW links per node (usearch's default); 16 keeps the graph at about 130 bytes a vector.
const CONNECTIVITY: usize = 16;
/// Candidates kept while inserting (usearch's default is 128; 64 halves the build, which on
/// this shared 2-core machine took 237 s for 100,000 vectors at 128).
const EXPANSION_ADD: usize = 64;
/// Candidates kept while searching: recall against cost, measured in `benches/search_scale.rs`.
const EXPANSION_SEARCH: usize = 128;
/// Version of the sidecar file's layout.
const META_FORMAT: u32 = 1;
/// Indexes unused this long are dropped by [`Indexes::drop_idle`].
pub(crate) const IDLE_UNLOAD: Duration = Duration::from_secs(300);

/// What is written next to a saved index.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Meta {
    format: u32,
    agent: String,
    dim: usize,
    /// The last log entry the saved index reflects.
    seq: i64,
    count: usize,
    /// Length of the `.usearch` file in bytes (a truncated file is rebuilt).
    bytes: u64,
}

/// One agent's loaded index.
struct AgentIndex {
    dim: usize,
    exact: bool,
    index: Index,
    /// The last log entry applied.
    seq: i64,
    /// Log entries applied since the index was built or saved.
    unsaved: usize,
    used: Instant,
}

/// The loaded indexes of one store.
pub(crate) struct Indexes {
    dir: Option<PathBuf>,
    config: VectorIndexConfig,
    loaded: HashMap<String, AgentIndex>,
    /// Graphs being built in the background, by agent (none of them also in `loaded`).
    building: HashMap<String, Building>,
    /// While set, new background builds wait before they start (see `Store::hold_…`).
    hold: Arc<AtomicBool>,
    /// Hears of every background build's progress (see `Store::on_vector_index_build`).
    observer: Option<BuildObserver>,
    /// Copies of folders' passage vectors (see `folder_vectors`), dropped with idle indexes.
    pub(crate) folders: FolderVectors,
}

/// What a pending-build marker (`<agent hex>.building` beside the saved indexes) holds: a
/// graph that will be saved was being built for this agent and dimension. Written when the
/// build starts, removed once its graph is saved (or the agent is deleted), so one left
/// behind by a quit names a build to start again on the next start.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Pending {
    agent: String,
    dim: usize,
}

/// What an agent's vector search runs on.
enum Ready<'a> {
    /// Its index, in step with SQLite.
    Index(&'a mut AgentIndex),
    /// A scan of its vectors while the graph builds.
    Interim(&'a mut Building),
}

fn index_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Storage(format!("vector index: {what}: {e}"))
}

/// A vector scaled to unit length (`i8` quantisation expects components in -1..1; cosine is
/// unchanged by scaling). `None` for a zero vector.
fn unit(v: &[f32]) -> Option<Vec<f32>> {
    let n = search::norm(v);
    (n > 0.0 && n.is_finite()).then(|| v.iter().map(|x| x / n).collect())
}

fn new_index(dim: usize, exact: bool, capacity: usize) -> Result<Index> {
    let options = IndexOptions {
        dimensions: dim,
        metric: MetricKind::Cos,
        quantization: if exact {
            ScalarKind::F32
        } else {
            ScalarKind::I8
        },
        connectivity: CONNECTIVITY,
        expansion_add: EXPANSION_ADD,
        expansion_search: EXPANSION_SEARCH,
        multi: false,
    };
    let index = Index::new(&options).map_err(|e| index_error("create", e))?;
    index
        .reserve(capacity.max(64))
        .map_err(|e| index_error("reserve", e))?;
    Ok(index)
}

/// Adds a vector, growing the index when full.
fn add(index: &Index, pk: i64, v: &[f32]) -> Result<()> {
    let Some(u) = unit(v) else { return Ok(()) };
    if index.size() >= index.capacity() {
        index
            .reserve((index.capacity() * 2).max(64))
            .map_err(|e| index_error("reserve", e))?;
    }
    index.add(pk as u64, &u).map_err(|e| index_error("add", e))
}

/// The newest log entry of the agent, and the entry its log was pruned up to.
fn log_position(conn: &Connection, agent: &str) -> Result<(i64, i64)> {
    let head: i64 = conn
        .prepare_cached("SELECT coalesce(max(seq), 0) FROM passage_vector_log WHERE agent_id = ?1")
        .db()?
        .query_row([agent], |r| r.get(0))
        .db()?;
    let pruned: i64 = conn
        .prepare_cached("SELECT seq FROM passage_vector_pruned WHERE agent_id = ?1")
        .db()?
        .query_row([agent], |r| r.get(0))
        .optional()
        .db()?
        .unwrap_or(0);
    // The sequence never goes back (AUTOINCREMENT), so a pruned log's head is the watermark.
    Ok((head.max(pruned), pruned))
}

/// How many of the agent's passages have a vector of `dim` dimensions.
fn count_vectors(conn: &Connection, agent: &str, dim: usize) -> Result<usize> {
    conn.prepare_cached("SELECT count(*) FROM passages WHERE agent_id = ?1 AND embedding_dim = ?2")
        .db()?
        .query_row(params![agent, dim as i64], |r| r.get::<_, i64>(0))
        .db()
        .map(|n| n.max(0) as usize)
}

/// The stored vector of passage `pk` if it belongs to `agent` and has `dim` dimensions.
fn stored_vector(conn: &Connection, agent: &str, pk: i64, dim: usize) -> Result<Option<Vec<f32>>> {
    let blob: Option<Vec<u8>> = conn
        .prepare_cached(
            "SELECT embedding FROM passages
             WHERE pk = ?1 AND agent_id = ?2 AND embedding_dim = ?3",
        )
        .db()?
        .query_row(params![pk, agent, dim as i64], |r| r.get(0))
        .optional()
        .db()?;
    Ok(blob
        .filter(|b| b.len() == dim * 4)
        .map(|b| search::decode_vector(&b)))
}

/// Deletes what the log holds for an agent that no longer exists (called while the store
/// routes the agent's deletion, in the same transaction).
pub(crate) fn forget_agent_log(conn: &Connection, agent: &str) -> Result<()> {
    conn.prepare_cached("DELETE FROM passage_vector_log WHERE agent_id = ?1")
        .db()?
        .execute([agent])
        .db()?;
    conn.prepare_cached("DELETE FROM passage_vector_pruned WHERE agent_id = ?1")
        .db()?
        .execute([agent])
        .db()?;
    Ok(())
}

/// Cuts the agent's log up to `seq` (inclusive), remembering the cut.
fn prune_log(conn: &Connection, agent: &str, seq: i64) -> Result<()> {
    let tx = conn.unchecked_transaction().db()?;
    tx.prepare_cached("DELETE FROM passage_vector_log WHERE agent_id = ?1 AND seq <= ?2")
        .db()?
        .execute(params![agent, seq])
        .db()?;
    tx.prepare_cached(
        "INSERT INTO passage_vector_pruned (agent_id, seq) VALUES (?1, ?2)
         ON CONFLICT (agent_id) DO UPDATE SET seq = max(seq, excluded.seq)",
    )
    .db()?
    .execute(params![agent, seq])
    .db()?;
    tx.commit().db()
}

/// A file name for the agent's index that any agent id maps to safely: its bytes in hex.
fn file_stem(agent: &str) -> String {
    agent.bytes().map(|b| format!("{b:02x}")).collect()
}

impl Indexes {
    /// Indexes saved under `dir` (none saved when `None`: an in-memory database).
    pub(crate) fn new(dir: Option<PathBuf>) -> Indexes {
        Indexes {
            dir,
            config: VectorIndexConfig::default(),
            loaded: HashMap::new(),
            building: HashMap::new(),
            hold: Arc::new(AtomicBool::new(false)),
            observer: None,
            folders: FolderVectors::default(),
        }
    }

    /// Sends the progress of builds started from now on to `observer`.
    pub(crate) fn set_observer(&mut self, observer: BuildObserver) {
        self.observer = Some(observer);
    }

    /// Where the agent's pending-build marker lives (see [`Pending`]).
    fn marker(&self, agent: &str) -> Option<PathBuf> {
        Some(
            self.dir
                .as_ref()?
                .join(format!("{}.building", file_stem(agent))),
        )
    }

    /// Whether the agent's pending-build marker exists.
    pub(crate) fn is_pending(&self, agent: &str) -> bool {
        self.marker(agent).is_some_and(|m| m.exists())
    }

    /// The builds that pending-build markers name: `(agent, dimension, marker)`, sorted. A marker
    /// that cannot be read is removed (it only costs a build on the next search).
    fn pending(&self) -> Vec<(String, usize, PathBuf)> {
        let Some(dir) = &self.dir else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
            if path.extension().is_none_or(|x| x != "building") {
                continue;
            }
            match std::fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice::<Pending>(&b).ok())
            {
                Some(p) => out.push((p.agent, p.dim, path)),
                None => {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        out.sort();
        out
    }

    /// Starts again the builds a quit interrupted (named by pending-build markers): each
    /// agent's index is brought in step as a search would (loading a saved graph, building a
    /// small exact one, or starting the graph's build in the background); markers that name
    /// nothing left to build are removed. Returns how many builds run in the background now.
    pub(crate) fn resume(&mut self, conn: &Connection) -> Result<usize> {
        let mut started = 0;
        for (agent, dim, marker) in self.pending() {
            if self.building.contains_key(&agent) {
                started += 1;
                continue;
            }
            if count_vectors(conn, &agent, dim)? > 0 {
                self.sync(conn, &agent, dim)?;
            }
            if self.building.contains_key(&agent) {
                started += 1;
            } else {
                let _ = std::fs::remove_file(marker);
            }
        }
        Ok(started)
    }

    pub(crate) fn set_config(&mut self, config: VectorIndexConfig) {
        self.config = config;
        self.loaded.clear();
        self.folders.clear();
        self.stop_builds();
    }

    pub(crate) fn config(&self) -> VectorIndexConfig {
        self.config
    }

    fn paths(&self, agent: &str) -> Option<(PathBuf, PathBuf)> {
        let dir = self.dir.as_ref()?;
        let stem = file_stem(agent);
        Some((
            dir.join(format!("{stem}.usearch")),
            dir.join(format!("{stem}.json")),
        ))
    }

    /// Drops indexes unused for `idle` (their memory goes back; the next search loads them).
    pub(crate) fn drop_idle(&mut self, idle: Duration) {
        self.loaded.retain(|_, ix| ix.used.elapsed() < idle);
        self.folders.drop_idle(idle);
    }

    /// Stops every background build (their graphs are no longer wanted).
    fn stop_builds(&mut self) {
        for (_, b) in self.building.drain() {
            b.stop();
        }
    }

    /// Holds new and waiting background builds before they start (`true`) or lets them go.
    pub(crate) fn hold_builds(&self, hold: bool) {
        self.hold.store(hold, Ordering::Relaxed);
    }

    /// Forgets a deleted agent's index, in memory and on disk.
    pub(crate) fn forget(&mut self, agent: &str) {
        self.loaded.remove(agent);
        if let Some(b) = self.building.remove(agent) {
            // Waited for, so its thread cannot save a file after the ones removed below.
            b.stop();
        }
        if let Some((index, meta)) = self.paths(agent) {
            let _ = std::fs::remove_file(index);
            let _ = std::fs::remove_file(meta);
        }
        if let Some(marker) = self.marker(agent) {
            let _ = std::fs::remove_file(marker);
        }
    }

    /// Bytes of memory the loaded indexes hold (usearch's own estimate) and the folders' copies.
    pub(crate) fn memory_usage(&self) -> usize {
        let loaded: usize = self.loaded.values().map(|ix| ix.index.memory_usage()).sum();
        loaded
            + self.folders.memory_usage()
            + self
                .building
                .values()
                .map(Building::memory_usage)
                .sum::<usize>()
    }

    /// Brings the agent's index for `dim`-dimensional vectors in step with SQLite (loading it,
    /// building an exact one, or starting a graph's build in the background) and returns what
    /// a search runs on now.
    fn sync(&mut self, conn: &Connection, agent: &str, dim: usize) -> Result<Ready<'_>> {
        let (head, pruned) = log_position(conn, agent)?;
        self.take_built(conn, agent, dim)?;
        let usable = |ix: &AgentIndex| ix.dim == dim && ix.seq >= pruned && ix.seq <= head;
        if !self.loaded.get(agent).is_some_and(usable) {
            self.loaded.remove(agent);
            if self.building.contains_key(agent) {
                return self.interim(conn, agent);
            }
            match self.load(conn, agent, dim, head, pruned) {
                Some(ix) => {
                    self.loaded.insert(agent.to_owned(), ix);
                }
                None => {
                    if count_vectors(conn, agent, dim)? >= self.config.exact_below {
                        return self.start_build(conn, agent, dim);
                    }
                    let ix = self.build(conn, agent, dim)?;
                    self.loaded.insert(agent.to_owned(), ix);
                }
            }
        }
        let config = self.config;
        let ix = self.loaded.get_mut(agent).expect("just inserted");
        if ix.seq < head {
            let behind: i64 = conn
                .prepare_cached(
                    "SELECT count(*) FROM passage_vector_log WHERE agent_id = ?1 AND seq > ?2",
                )
                .db()?
                .query_row(params![agent, ix.seq], |r| r.get(0))
                .db()?;
            let grows_out_of_exact =
                ix.exact && ix.index.size() + behind as usize >= 2 * config.exact_below;
            if grows_out_of_exact || behind as usize > ix.index.size().max(1_000) {
                // Cheaper (and a better graph) to build anew than to replay that much; the
                // index in hand answers no more (it is too far behind).
                self.loaded.remove(agent);
                if count_vectors(conn, agent, dim)? >= config.exact_below {
                    return self.start_build(conn, agent, dim);
                }
                let ix = self.build(conn, agent, dim)?;
                self.loaded.insert(agent.to_owned(), ix);
            } else {
                apply_log(conn, agent, ix)?;
            }
        }
        let ix = self.loaded.get_mut(agent).expect("loaded");
        ix.used = Instant::now();
        let persist = !ix.exact && ix.index.size() >= config.persist_above;
        let due = ix.unsaved >= (ix.index.size() / 10).max(1_000);
        let (seq, exact, unsaved) = (ix.seq, ix.exact, ix.unsaved);
        if persist && (due || unsaved > 0 && !self.saved_at(agent, seq)) {
            self.save(conn, agent)?;
        } else if exact && head - pruned > 1_000 {
            // Small indexes are never saved; a rebuild elsewhere costs little, so the log up to
            // what this one applied can go.
            prune_log(conn, agent, seq)?;
        }
        Ok(Ready::Index(self.loaded.get_mut(agent).expect("loaded")))
    }

    /// Makes a graph whose background build finished the agent's index (it reflects the log
    /// up to where its rows were read; `sync` catches it up). A build of another dimension is
    /// stopped; a failed one is logged and started again by the next search.
    fn take_built(&mut self, conn: &Connection, agent: &str, dim: usize) -> Result<()> {
        let Some(b) = self.building.get_mut(agent) else {
            return Ok(());
        };
        if b.dim != dim {
            b.cancel();
            self.building.remove(agent);
            return Ok(());
        }
        let Some(built) = b.finished() else {
            return Ok(());
        };
        let seq = b.seq;
        self.building.remove(agent);
        match built {
            Ok((index, saved)) => {
                self.loaded.insert(
                    agent.to_owned(),
                    AgentIndex {
                        dim,
                        exact: false,
                        index,
                        seq,
                        // Saved by the thread, or to be saved by `sync`.
                        unsaved: usize::from(!saved),
                        used: Instant::now(),
                    },
                );
                if saved {
                    prune_log(conn, agent, seq)?;
                }
            }
            Err(e) => tracing::warn!(agent, error = %e, "vector graph build failed"),
        }
        Ok(())
    }

    /// Reads the agent's vectors and starts building their graph in the background; searches
    /// scan the copy meanwhile (see `vector_build`).
    fn start_build(&mut self, conn: &Connection, agent: &str, dim: usize) -> Result<Ready<'_>> {
        let (head, _) = log_position(conn, agent)?;
        let flat = Flat::read(conn, agent, dim)?;
        let persist = flat.len() >= self.config.persist_above;
        let marker = self.marker(agent).filter(|_| persist);
        if let Some(marker) = &marker {
            // A quit before the graph is saved leaves this behind: the next start builds again.
            if let Err(e) = write_marker(marker, agent, dim) {
                tracing::warn!(agent, error = %e, "pending-build marker not written");
            }
        }
        let save = self
            .paths(agent)
            .filter(|_| persist)
            .map(|(index_path, meta_path)| {
                let agent = agent.to_owned();
                Box::new(move |index: &Index| {
                    save_files(&index_path, &meta_path, index, &agent, dim, head)?;
                    if let Some(marker) = marker {
                        let _ = std::fs::remove_file(marker);
                    }
                    Ok(())
                }) as Save
            });
        tracing::info!(
            agent,
            vectors = flat.len(),
            "building a vector graph in the background"
        );
        let building = Building::start(
            agent,
            flat,
            head,
            move |n| new_index(dim, false, n + n / 8),
            save,
            self.hold.clone(),
            self.observer.clone(),
        );
        self.building.insert(agent.to_owned(), building);
        self.interim(conn, agent)
    }

    /// The agent's build in progress, caught up with the log.
    fn interim(&mut self, conn: &Connection, agent: &str) -> Result<Ready<'_>> {
        let b = self.building.get_mut(agent).expect("a build");
        b.catch_up(conn, agent)?;
        Ok(Ready::Interim(b))
    }

    /// Progress of the graphs being built in the background.
    pub(crate) fn builds(&self) -> Vec<VectorIndexBuild> {
        let mut out: Vec<_> = self
            .building
            .iter()
            .filter_map(|(agent, b)| b.progress(agent))
            .collect();
        out.sort_by(|a, b| a.agent_id.cmp(&b.agent_id));
        out
    }

    /// Blocks until every background build is done; the next search of each agent takes its
    /// graph. For tests and benchmarks.
    pub(crate) fn wait_for_builds(&mut self) {
        for b in self.building.values_mut() {
            b.wait();
        }
    }

    fn saved_at(&self, agent: &str, seq: i64) -> bool {
        self.paths(agent)
            .and_then(|(_, meta)| std::fs::read(meta).ok())
            .and_then(|b| serde_json::from_slice::<Meta>(&b).ok())
            .is_some_and(|m| m.seq == seq)
    }

    /// Builds the agent's index from its rows.
    fn build(&self, conn: &Connection, agent: &str, dim: usize) -> Result<AgentIndex> {
        let mut ix = build(conn, agent, dim, &self.config)?;
        // A freshly built large index is worth saving at once.
        ix.unsaved = usize::from(!ix.exact && ix.index.size() >= self.config.persist_above);
        Ok(ix)
    }

    /// Saves the agent's loaded index (file first, then its sidecar, each written to a temporary
    /// name and renamed), then prunes the log up to what it holds.
    fn save(&mut self, conn: &Connection, agent: &str) -> Result<()> {
        let Some((index_path, meta_path)) = self.paths(agent) else {
            return Ok(());
        };
        let Some(ix) = self.loaded.get_mut(agent) else {
            return Ok(());
        };
        save_files(&index_path, &meta_path, &ix.index, agent, ix.dim, ix.seq)?;
        ix.unsaved = 0;
        let seq = ix.seq;
        prune_log(conn, agent, seq)
    }

    /// Loads the agent's saved index if it can be trusted, caught up with the log; `None`
    /// (rebuild) otherwise. Never an error: a bad file only costs a rebuild.
    fn load(
        &self,
        conn: &Connection,
        agent: &str,
        dim: usize,
        head: i64,
        pruned: i64,
    ) -> Option<AgentIndex> {
        let (index_path, meta_path) = self.paths(agent)?;
        let meta: Meta = serde_json::from_slice(&std::fs::read(&meta_path).ok()?).ok()?;
        let len = std::fs::metadata(&index_path).ok()?.len();
        let trusted = meta.format == META_FORMAT
            && meta.agent == agent
            && meta.dim == dim
            && meta.bytes == len
            && meta.seq >= pruned
            && meta.seq <= head;
        if !trusted {
            tracing::info!(agent, "vector index file is stale or foreign; rebuilding");
            return None;
        }
        let restored = Index::restore(index_path.to_str()?);
        let index = match restored {
            Ok(index) if index.dimensions() == dim && index.size() == meta.count => index,
            Ok(_) => return None,
            Err(e) => {
                tracing::warn!(agent, error = %e, "vector index file unreadable; rebuilding");
                return None;
            }
        };
        index.change_expansion_search(EXPANSION_SEARCH);
        let mut ix = AgentIndex {
            dim,
            exact: false,
            index,
            seq: meta.seq,
            unsaved: 0,
            used: Instant::now(),
        };
        apply_log(conn, agent, &mut ix).ok()?;
        // The rows are the truth: after catching up, the index must hold exactly them.
        let rows = count_vectors(conn, agent, dim).ok()?;
        if rows != ix.index.size() {
            tracing::warn!(
                agent,
                rows,
                held = ix.index.size(),
                "vector index disagrees; rebuilding"
            );
            return None;
        }
        Some(ix)
    }

    /// Up to `count` of the agent's passages nearest to `query` (which has `dim = query.len()`
    /// dimensions), as `(row key, cosine similarity)` best first, scored exactly from the stored
    /// vectors. `allowed`: only these row keys (a filter); the caller scores small filtered sets
    /// itself.
    pub(crate) fn search(
        &mut self,
        conn: &Connection,
        agent: &str,
        query: &[f32],
        count: usize,
        allowed: Option<&HashSet<i64>>,
    ) -> Result<Vec<(i64, f64)>> {
        self.search_beside(conn, agent, query, count, allowed, |_| Ok(()))
            .map(|(hits, ())| hits)
    }

    /// [`Indexes::search`], running `beside` (a hybrid search's lexical side) on this thread
    /// while an index of at least `parallel_from` vectors (see [`VectorIndexConfig`]) is walked
    /// on another: the walk needs no connection, so on two cores the two sides overlap instead
    /// of adding up.
    pub(crate) fn search_beside<T>(
        &mut self,
        conn: &Connection,
        agent: &str,
        query: &[f32],
        count: usize,
        allowed: Option<&HashSet<i64>>,
        beside: impl FnOnce(&Connection) -> Result<T>,
    ) -> Result<(Vec<(i64, f64)>, T)> {
        let dim = query.len();
        let Some(unit_query) = unit(query) else {
            return Ok((Vec::new(), beside(conn)?));
        };
        let parallel_from = self.config.parallel_from;
        let (keys, other) = match self.sync(conn, agent, dim)? {
            Ready::Index(ix) if ix.index.size() == 0 || count == 0 => {
                return Ok((Vec::new(), beside(conn)?));
            }
            Ready::Index(ix) => {
                let (index, exact) = (&ix.index, ix.exact);
                let walk = || graph_candidates(index, exact, &unit_query, count, allowed);
                if index.size() < parallel_from {
                    (walk(), beside(conn))
                } else {
                    std::thread::scope(|s| {
                        match std::thread::Builder::new().spawn_scoped(s, walk) {
                            Ok(handle) => {
                                let other = beside(conn);
                                let keys = handle.join().unwrap_or_else(|_| {
                                    Err(index_error("search", "the search thread panicked"))
                                });
                                (keys, other)
                            }
                            Err(_) => (walk(), beside(conn)),
                        }
                    })
                }
            }
            // While the graph builds: an exhaustive scan of the 8-bit copy, re-scored below.
            Ready::Interim(b) => (Ok(b.candidates(query, count * 2, allowed)), beside(conn)),
        };
        let (keys, other) = (keys?, other?);
        let qnorm = search::norm(query);
        let mut scored = rescore(conn, agent, dim, &keys, query, qnorm)?;
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
        scored.truncate(count);
        Ok((scored, other))
    }
}

/// Row keys of the candidates for the `count` nearest vectors to `unit_query` in `index`: the
/// exact `count` of an exact index, twice as many of a graph (its candidates are re-scored
/// from the `f32` rows, and a few more absorb the quantisation's reordering at the edge).
fn graph_candidates(
    index: &Index,
    exact: bool,
    unit_query: &[f32],
    count: usize,
    allowed: Option<&HashSet<i64>>,
) -> Result<Vec<u64>> {
    let want = if exact { count } else { count * 2 };
    let matches = match allowed {
        Some(keys) => index.filtered_search(unit_query, want, |k| keys.contains(&(k as i64))),
        None if exact => index.exact_search(unit_query, want),
        None => index.search(unit_query, want),
    }
    .map_err(|e| index_error("search", e))?;
    Ok(matches.keys)
}

/// Writes the agent's pending-build marker (see [`Pending`]).
fn write_marker(path: &Path, agent: &str, dim: usize) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    crate::private::create_dir(dir)?;
    let pending = Pending {
        agent: agent.to_owned(),
        dim,
    };
    let json = serde_json::to_vec(&pending).map_err(|e| index_error("marker", e))?;
    std::fs::write(path, json).map_err(|e| index_error("marker", e))
}

/// Saves `index` (of `agent`'s `dim`-dimensional vectors, reflecting the log up to `seq`) to
/// `index_path`, then its sidecar to `meta_path`, each written to a temporary name and renamed.
fn save_files(
    index_path: &Path,
    meta_path: &Path,
    index: &Index,
    agent: &str,
    dim: usize,
    seq: i64,
) -> Result<()> {
    let dir = index_path.parent().unwrap_or(Path::new("."));
    crate::private::create_dir(dir)?;
    let tmp = index_path.with_extension("usearch.tmp");
    let tmp_str = tmp
        .to_str()
        .ok_or_else(|| Error::Storage("vector index: the path is not UTF-8".into()))?;
    index.save(tmp_str).map_err(|e| index_error("save", e))?;
    let bytes = std::fs::metadata(&tmp)
        .map_err(|e| index_error("save", e))?
        .len();
    std::fs::rename(&tmp, index_path).map_err(|e| index_error("save", e))?;
    let meta = Meta {
        format: META_FORMAT,
        agent: agent.to_owned(),
        dim,
        seq,
        count: index.size(),
        bytes,
    };
    let meta_tmp = meta_path.with_extension("json.tmp");
    let json = serde_json::to_vec(&meta).map_err(|e| index_error("save", e))?;
    std::fs::write(&meta_tmp, json).map_err(|e| index_error("save", e))?;
    std::fs::rename(&meta_tmp, meta_path).map_err(|e| index_error("save", e))
}

/// Exact cosine similarities of `query` (norm `qnorm`) with the stored `dim`-dimensional
/// vectors of the agent's rows `keys`, as `(row key, cosine)`, in one statement (a query per
/// candidate cost about 8 µs each, most of it outside SQLite's seek). Rows that are gone, are
/// another agent's or have no vector of that dimension are left out.
fn rescore(
    conn: &Connection,
    agent: &str,
    dim: usize,
    keys: &[u64],
    query: &[f32],
    qnorm: f32,
) -> Result<Vec<(i64, f64)>> {
    let mut scored = Vec::with_capacity(keys.len());
    if keys.is_empty() {
        return Ok(scored);
    }
    let list = sql::json_keys(keys.iter().map(|&k| k as i64));
    let mut stmt = conn
        .prepare_cached(
            "SELECT p.pk, p.embedding FROM json_each(?1) k CROSS JOIN passages p ON p.pk = k.value
             WHERE p.agent_id = ?2 AND p.embedding_dim = ?3",
        )
        .db()?;
    let mut rows = stmt.query(params![list, agent, dim as i64]).db()?;
    while let Some(r) = rows.next().db()? {
        let Ok(blob) = r.get_ref(1).db()?.as_blob() else {
            continue;
        };
        if let Some(sim) = search::cosine(query, qnorm, blob) {
            scored.push((r.get(0).db()?, f64::from(sim)));
        }
    }
    Ok(scored)
}

/// Builds an index of the agent's `dim`-dimensional vectors from SQLite. The log position is
/// read first, so a change committed while the rows are read is applied again later (harmless).
fn build(
    conn: &Connection,
    agent: &str,
    dim: usize,
    config: &VectorIndexConfig,
) -> Result<AgentIndex> {
    let (head, _) = log_position(conn, agent)?;
    let n = count_vectors(conn, agent, dim)?;
    let exact = n < config.exact_below;
    let index = new_index(dim, exact, n + n / 8)?;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(4);
    index
        .reserve_capacity_and_threads((n + n / 8).max(64), threads)
        .map_err(|e| index_error("reserve", e))?;
    let mut stmt = conn
        .prepare_cached(
            "SELECT pk, embedding FROM passages WHERE agent_id = ?1 AND embedding_dim = ?2",
        )
        .db()?;
    let mut rows = stmt.query(params![agent, dim as i64]).db()?;
    let mut batch: Vec<(i64, Vec<f32>)> = Vec::with_capacity(8_192);
    let flush = |batch: &mut Vec<(i64, Vec<f32>)>| -> Result<()> {
        // usearch's graph takes concurrent inserts; a batch is split across the threads.
        let chunk = batch.len().div_ceil(threads).max(1);
        std::thread::scope(|s| {
            let handles: Vec<_> = batch
                .chunks(chunk)
                .map(|part| {
                    let index = &index;
                    s.spawn(move || -> Result<()> {
                        for (pk, v) in part {
                            if let Some(u) = unit(v) {
                                index
                                    .add(*pk as u64, &u)
                                    .map_err(|e| index_error("add", e))?;
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            handles.into_iter().try_for_each(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(index_error("add", "a thread panicked")))
            })
        })?;
        batch.clear();
        Ok(())
    };
    while let Some(r) = rows.next().db()? {
        let pk: i64 = r.get(0).db()?;
        let Ok(blob) = r.get_ref(1).db()?.as_blob() else {
            continue;
        };
        if blob.len() == dim * 4 {
            batch.push((pk, search::decode_vector(blob)));
        }
        if batch.len() == batch.capacity() {
            flush(&mut batch)?;
        }
    }
    flush(&mut batch)?;
    tracing::debug!(agent, n, exact, "vector index built");
    Ok(AgentIndex {
        dim,
        exact,
        index,
        seq: head,
        unsaved: 0,
        used: Instant::now(),
    })
}

/// Applies the log entries after `ix.seq`, making each named row agree with SQLite.
fn apply_log(conn: &Connection, agent: &str, ix: &mut AgentIndex) -> Result<()> {
    let entries: Vec<(i64, i64)> = conn
        .prepare_cached(
            "SELECT seq, pk FROM passage_vector_log WHERE agent_id = ?1 AND seq > ?2 ORDER BY seq",
        )
        .db()?
        .query_map(params![agent, ix.seq], |r| Ok((r.get(0)?, r.get(1)?)))
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?;
    let mut done: HashSet<i64> = HashSet::new();
    for (seq, pk) in entries {
        ix.seq = ix.seq.max(seq);
        ix.unsaved += 1;
        if !done.insert(pk) {
            continue;
        }
        if ix.index.contains(pk as u64) {
            ix.index
                .remove(pk as u64)
                .map_err(|e| index_error("remove", e))?;
        }
        if let Some(v) = stored_vector(conn, agent, pk, ix.dim)? {
            add(&ix.index, pk, &v)?;
        }
    }
    Ok(())
}

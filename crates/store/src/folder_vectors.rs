//! 8-bit copies of folders' passage vectors in memory, for the vector side of
//! `semantic_search_files`.
//!
//! Scanning the vectors in SQLite read every passage row, its text beside its vector: 86 ms
//! over a folder of 10,000 PDF pages (24,742 passages) on the 2-core VM. Instead, the first
//! vector search of a folder reads its vectors of the query's model once into a [`Flat`] copy
//! (quantised as archival memory's interim copies are: 384 bytes a vector at 384 dimensions,
//! 9.5 MB for that folder), and every search scans the copies of the agent's folders and
//! re-scores their best candidates exactly from the stored `f32` vectors, so scores stay true
//! cosine similarities.
//!
//! **SQLite is the truth.** Triggers count every change of a folder's vectors in
//! `folders.vector_generation` (a passage embedded, re-embedded or removed); a copy remembers
//! the generation it was read at and is read again when the folder's has moved on, so an
//! edit by this process or another is never missed. Copies unused for the store's idle time
//! are dropped with the archival indexes.

use crate::search;
use crate::sql::{self, DbResult};
use crate::vector_build::{Flat, quantise};
use engram_core::Result;
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// One folder's copy.
struct Copy {
    model: String,
    dim: usize,
    generation: i64,
    flat: Flat,
    used: Instant,
}

/// The loaded copies, by folder id.
#[derive(Default)]
pub(crate) struct FolderVectors {
    copies: HashMap<String, Copy>,
}

impl FolderVectors {
    /// Cosine ranking `(row key, similarity)`, best first, of at most `pool` passages of
    /// `folders` embedded by `model` (a handle such as `local/all-minilm-l6-v2`) against
    /// `query` (any dimension; passages of another one are left out). Copies that are missing
    /// or behind their folder's generation are read first.
    pub(crate) fn rank(
        &mut self,
        conn: &Connection,
        folders: &[String],
        model: &str,
        query: &[f32],
        pool: usize,
    ) -> Result<Vec<(i64, f64)>> {
        let mut unit = Vec::with_capacity(query.len());
        if pool == 0 || !quantise(query, &mut unit) {
            return Ok(Vec::new());
        }
        // Twice the pool from each folder: quantisation reorders neighbours at the edge, and
        // the re-scoring below puts them back in their true order.
        let want = pool * 2;
        let mut keys = Vec::new();
        for folder in folders {
            let copy = self.fresh(conn, folder, model, query.len())?;
            keys.extend(copy.flat.nearest(&unit, want, |_| false));
        }
        let mut scored = rescore(conn, model, &keys, query)?;
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
        scored.truncate(pool);
        Ok(scored)
    }

    /// The folder's copy for `model` and `dim`, read again if its generation moved on.
    fn fresh(&mut self, conn: &Connection, folder: &str, model: &str, dim: usize) -> Result<&Copy> {
        // The generation is read before the rows: a change committed in between makes the
        // copy look older than it is, and the next search reads it again (harmless).
        let generation: i64 = conn
            .prepare_cached("SELECT vector_generation FROM folders WHERE id = ?1")
            .db()?
            .query_row([folder], |r| r.get(0))
            .optional()
            .db()?
            .unwrap_or(0);
        let current = self
            .copies
            .get(folder)
            .is_some_and(|c| c.generation == generation && c.dim == dim && c.model == model);
        if !current {
            let flat = Flat::read_rows(
                conn,
                "SELECT pk, embedding FROM file_chunks
                 WHERE folder_id = ?1 AND model = ?2 AND embedding IS NOT NULL",
                params![folder, model],
                dim,
            )?;
            self.copies.insert(
                folder.to_owned(),
                Copy {
                    model: model.to_owned(),
                    dim,
                    generation,
                    flat,
                    used: Instant::now(),
                },
            );
        }
        let copy = self.copies.get_mut(folder).expect("inserted above");
        copy.used = Instant::now();
        Ok(copy)
    }

    /// Drops copies unused for `idle` (the next search reads them again).
    pub(crate) fn drop_idle(&mut self, idle: Duration) {
        self.copies.retain(|_, c| c.used.elapsed() < idle);
    }

    /// Drops every copy.
    pub(crate) fn clear(&mut self) {
        self.copies.clear();
    }

    /// Bytes the copies hold.
    pub(crate) fn memory_usage(&self) -> usize {
        self.copies.values().map(|c| c.flat.memory_usage()).sum()
    }
}

/// Exact cosine similarities of `query` with the stored vectors of the passages `keys`
/// embedded by `model`, in one statement. Passages gone or re-embedded since are left out.
fn rescore(conn: &Connection, model: &str, keys: &[i64], query: &[f32]) -> Result<Vec<(i64, f64)>> {
    let mut scored = Vec::with_capacity(keys.len());
    if keys.is_empty() {
        return Ok(scored);
    }
    let norm = search::norm(query);
    let list = sql::json_keys(keys.iter().copied());
    let mut stmt = conn
        .prepare_cached(
            "SELECT c.pk, c.embedding FROM json_each(?1) k
             CROSS JOIN file_chunks c ON c.pk = k.value WHERE c.model = ?2",
        )
        .db()?;
    let mut rows = stmt.query(params![list, model]).db()?;
    while let Some(r) = rows.next().db()? {
        let Ok(blob) = r.get_ref(1).db()?.as_blob() else {
            continue;
        };
        if blob.len() != query.len() * 4 {
            continue;
        }
        if let Some(sim) = search::cosine(query, norm, blob) {
            scored.push((r.get(0).db()?, f64::from(sim)));
        }
    }
    Ok(scored)
}

//! Passages of files: their vectors, listing, and the candidates of the hybrid search over an
//! agent's attached folders — BM25 over `file_chunks_fts` and cosine similarity, fused by
//! `engram_retrieval` as archival search is. The vector side scans in-memory 8-bit copies of the
//! attached folders' vectors of the query's model and re-scores the best exactly
//! (`folder_vectors`; see docs/documents.md).

use crate::candidates::{Bm25, CandidateDepth, Candidates, Ranking};
use crate::passages::check_vector;
use crate::rooms::FolderRows;
use crate::search::{self, FtsQuery};
use crate::sql::{self, DbResult};
use engram_core::{AgentId, ChunkHit, FileChunk, FileId, FolderId, Provenance, Result};
use rusqlite::{Connection, OptionalExtension, params};

/// A passage of a file waiting for its vector.
#[derive(Clone, Debug, PartialEq)]
pub struct UnembeddedChunk {
    /// Its row key.
    pub pk: i64,
    /// Its text.
    pub text: String,
}

impl FolderRows<'_> {
    /// Up to `limit` passages of the folder without a vector, in file order.
    pub fn chunks_without_vectors(
        self,
        folder: &FolderId,
        limit: usize,
    ) -> Result<Vec<UnembeddedChunk>> {
        self.store.read(|c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT pk, text FROM file_chunks WHERE folder_id = ?1 AND embedding IS NULL
                     ORDER BY pk LIMIT ?2",
                )
                .db()?;
            let rows = stmt
                .query_map(params![folder.as_str(), sql::sat(limit)], |r| {
                    Ok(UnembeddedChunk {
                        pk: r.get(0)?,
                        text: r.get(1)?,
                    })
                })
                .db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// Stores vectors of model `model` (a handle such as `local/all-minilm-l6-v2`) for
    /// `(row key, text it was computed from, vector)`, in one transaction, only where the row
    /// still has that text and no vector (a re-index meanwhile wins). Returns how many were
    /// stored. Errors: `Invalid` for an empty or non-finite vector (then nothing is stored).
    pub fn fill_chunk_vectors(
        self,
        model: &str,
        filled: &[(i64, String, Vec<f32>)],
    ) -> Result<usize> {
        for (_, _, v) in filled {
            check_vector(v)?;
        }
        self.store.write(|tx| {
            let mut stmt = tx
                .prepare_cached(
                    "UPDATE file_chunks SET model = ?2, embedding = ?3
                     WHERE pk = ?1 AND embedding IS NULL AND text = ?4",
                )
                .db()?;
            let mut n = 0;
            for (pk, text, v) in filled {
                n += stmt
                    .execute(params![pk, model, search::encode_vector(v), text])
                    .db()?;
            }
            Ok(n)
        })
    }

    /// A folder's passages in file and then passage order, `limit` from `offset`, with their
    /// file names. Errors: `NotFound("folder")`.
    pub fn list_chunks(
        self,
        folder: &FolderId,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<(String, FileChunk)>> {
        self.store.read(|c| {
            crate::folders::load(c, folder)?;
            let mut stmt = c
                .prepare_cached(
                    "SELECT f.name, c.file_id, c.seq, c.text, c.page, c.heading, c.line_start,
                            c.line_end
                     FROM file_chunks c JOIN folder_files f ON f.id = c.file_id
                     WHERE c.folder_id = ?1 ORDER BY f.name, c.seq LIMIT ?2 OFFSET ?3",
                )
                .db()?;
            let rows = stmt
                .query_map(
                    params![folder.as_str(), sql::sat(limit), sql::sat(offset)],
                    |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            FileChunk {
                                file_id: FileId::from(r.get::<_, String>(1)?),
                                seq: r.get(2)?,
                                text: r.get(3)?,
                                provenance: Provenance {
                                    page: r.get(4)?,
                                    heading: r.get(5)?,
                                    line_start: r.get(6)?,
                                    line_end: r.get(7)?,
                                },
                            },
                        ))
                    },
                )
                .db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// The primitive of the search over the passages of the folders attached to `agent`:
    /// reads BM25 candidates for `query`'s words and cosine candidates for `embedding` (the
    /// query's vector and the handle of the model that made it; only passages embedded by that
    /// model take part), `depth` deep on each side, hands them to `rank` and
    /// loads the passages of the ranking it returns, in its order, in one read. A blank query
    /// or one without words has no lexical side. The ranking itself is `engram_retrieval`'s.
    /// Errors: `NotFound("agent")`.
    pub fn rank_agent_files(
        self,
        agent: &AgentId,
        query: &str,
        embedding: Option<(&str, &[f32])>,
        depth: CandidateDepth,
        rank: impl FnOnce(Candidates) -> Ranking,
    ) -> Result<Vec<ChunkHit>> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let lexical = match search::fts_query(query) {
                FtsQuery::Match(m) => Some(Bm25 {
                    ranking: lexical(c, agent, &m, depth.lexical)?,
                    neighbours: Default::default(),
                }),
                FtsQuery::Blank | FtsQuery::NoTerms => None,
            };
            let vector = match embedding {
                Some((model, v)) if !v.is_empty() => {
                    let folders = attached_folders(c, agent)?;
                    Some(self.store.vector_indexes().folders.rank(
                        c,
                        &folders,
                        model,
                        v,
                        depth.vector,
                    )?)
                }
                _ => None,
            };
            let mut hits = Vec::new();
            for (pk, score) in rank(Candidates { lexical, vector }) {
                hits.extend(hit(c, pk, score)?);
            }
            Ok(hits)
        })
    }
}

/// BM25 ranking (row key, score > 0; best first) over the agent's folders.
///
/// Filtering every match by its folder looked each one up in `file_chunks`: two thirds of
/// the query's time over 24,742 passages (24 ms of 32). So the best matches of all folders
/// are ranked first, [`WIDEN`] times the pool, and only those are looked up; when that leaves
/// fewer than the pool while there were more matches (the agent's folders are a small share
/// of all), the filtered ranking is read as before.
fn lexical(c: &Connection, agent: &AgentId, fts: &str, pool: usize) -> Result<Vec<(i64, f64)>> {
    let wide = pool.saturating_mul(WIDEN);
    let mut stmt = c
        .prepare_cached(
            "WITH best AS (
                 SELECT rowid AS pk, -bm25(file_chunks_fts) AS s FROM file_chunks_fts
                 WHERE file_chunks_fts MATCH ?1 ORDER BY s DESC LIMIT ?3
             )
             SELECT best.pk, best.s, c.folder_id IN
                        (SELECT folder_id FROM agent_folders WHERE agent_id = ?2)
             FROM best JOIN file_chunks c ON c.pk = best.pk ORDER BY best.s DESC",
        )
        .db()?;
    let rows = stmt
        .query_map(params![fts, agent.as_str(), sql::sat(wide)], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, f64>(1)?,
                r.get::<_, bool>(2)?,
            ))
        })
        .db()?;
    let best: Vec<(i64, f64, bool)> = rows.collect::<rusqlite::Result<_>>().db()?;
    let exhausted = best.len() < wide;
    let mut ranking: Vec<(i64, f64)> = best
        .into_iter()
        .filter(|&(_, _, attached)| attached)
        .map(|(pk, s, _)| (pk, s))
        .collect();
    if ranking.len() >= pool || exhausted {
        ranking.truncate(pool);
        return Ok(ranking);
    }
    let mut stmt = c
        .prepare_cached(
            "SELECT c.pk, -bm25(file_chunks_fts) AS s
             FROM file_chunks_fts JOIN file_chunks c ON c.pk = file_chunks_fts.rowid
             WHERE file_chunks_fts MATCH ?1
               AND c.folder_id IN (SELECT folder_id FROM agent_folders WHERE agent_id = ?2)
             ORDER BY s DESC LIMIT ?3",
        )
        .db()?;
    let rows = stmt
        .query_map(params![fts, agent.as_str(), sql::sat(pool)], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?))
        })
        .db()?;
    rows.collect::<rusqlite::Result<_>>().db()
}

/// How many times the pool the unfiltered ranking reads before filtering by folder.
const WIDEN: usize = 4;

/// The agent's attached folders, by id.
fn attached_folders(c: &Connection, agent: &AgentId) -> Result<Vec<String>> {
    let mut stmt = c
        .prepare_cached(
            "SELECT folder_id FROM agent_folders WHERE agent_id = ?1 ORDER BY folder_id",
        )
        .db()?;
    let rows = stmt.query_map([agent.as_str()], |r| r.get(0)).db()?;
    rows.collect::<rusqlite::Result<_>>().db()
}

/// The passage `pk` as a hit; `None` while its file is still being read (a file read as a
/// stream stores its passages piece by piece, and is found once it is whole).
fn hit(c: &Connection, pk: i64, score: f64) -> Result<Option<ChunkHit>> {
    c.prepare_cached(
        "SELECT c.file_id, f.folder_id, f.name, c.text, c.page, c.heading, c.line_start,
                c.line_end
         FROM file_chunks c JOIN folder_files f ON f.id = c.file_id
         WHERE c.pk = ?1 AND f.status NOT IN ('pending', 'parsing')",
    )
    .db()?
    .query_row([pk], |r| {
        Ok(ChunkHit {
            file_id: FileId::from(r.get::<_, String>(0)?),
            folder_id: FolderId::from(r.get::<_, String>(1)?),
            file_name: r.get(2)?,
            text: r.get(3)?,
            provenance: Provenance {
                page: r.get(4)?,
                heading: r.get(5)?,
                line_start: r.get(6)?,
                line_end: r.get(7)?,
            },
            score,
        })
    })
    .optional()
    .db()
}

//! Passages of files: their vectors, listing, and the candidates of the hybrid search over an
//! agent's attached folders — BM25 over `file_chunks_fts` and cosine similarity, fused by
//! `engram_retrieval` as archival search is. The vector side scans the attached folders' vectors of
//! the query's model exactly (folders are small next to archival memory; see docs/documents.md).

use crate::candidates::{Bm25, CandidateDepth, Candidates, Ranking};
use crate::passages::check_vector;
use crate::rooms::FolderRows;
use crate::search::{self, FtsQuery};
use crate::sql::{self, DbResult};
use engram_core::{AgentId, ChunkHit, FileChunk, FileId, FolderId, Provenance, Result};
use rusqlite::{Connection, params};

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
    /// model take part; an exact scan), `depth` deep on each side, hands them to `rank` and
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
                    Some(vectors(c, agent, model, v, depth.vector)?)
                }
                _ => None,
            };
            let mut hits = Vec::new();
            for (pk, score) in rank(Candidates { lexical, vector }) {
                hits.push(hit(c, pk, score)?);
            }
            Ok(hits)
        })
    }
}

/// BM25 ranking (row key, score > 0; best first) over the agent's folders.
fn lexical(c: &Connection, agent: &AgentId, fts: &str, pool: usize) -> Result<Vec<(i64, f64)>> {
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

/// Cosine ranking (row key, similarity; best first) of the agent's folders' passages embedded
/// by `model`: an exact scan.
fn vectors(
    c: &Connection,
    agent: &AgentId,
    model: &str,
    query: &[f32],
    pool: usize,
) -> Result<Vec<(i64, f64)>> {
    let norm = search::norm(query);
    let mut stmt = c
        .prepare_cached(
            "SELECT pk, embedding FROM file_chunks
             WHERE folder_id IN (SELECT folder_id FROM agent_folders WHERE agent_id = ?1)
               AND model = ?2 AND embedding IS NOT NULL",
        )
        .db()?;
    let mut rows = stmt.query(params![agent.as_str(), model]).db()?;
    let mut scored: Vec<(i64, f64)> = Vec::new();
    while let Some(r) = rows.next().db()? {
        let pk: i64 = r.get(0).db()?;
        let blob = r.get_ref(1).db()?.as_blob().db_blob()?;
        if blob.len() != query.len() * 4 {
            continue;
        }
        if let Some(s) = search::cosine(query, norm, blob) {
            scored.push((pk, f64::from(s)));
        }
    }
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored.truncate(pool);
    Ok(scored)
}

trait BlobResult<'a> {
    fn db_blob(self) -> Result<&'a [u8]>;
}

impl<'a> BlobResult<'a> for rusqlite::types::FromSqlResult<&'a [u8]> {
    fn db_blob(self) -> Result<&'a [u8]> {
        self.map_err(|e| engram_core::Error::Storage(format!("bad vector: {e}")))
    }
}

fn hit(c: &Connection, pk: i64, score: f64) -> Result<ChunkHit> {
    c.prepare_cached(
        "SELECT c.file_id, f.folder_id, f.name, c.text, c.page, c.heading, c.line_start,
                c.line_end
         FROM file_chunks c JOIN folder_files f ON f.id = c.file_id WHERE c.pk = ?1",
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
    .db()
}

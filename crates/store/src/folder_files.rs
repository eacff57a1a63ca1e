//! Files of folders: their metadata, extracted text and passages, written in the order a file
//! is processed (stored → parsed → embedded, or failed), each state change one transaction.

use crate::rooms::FolderRows;
use crate::sql::{self, DbResult, ts};
use engram_core::{Error, FileId, FileStatus, FolderFile, FolderId, Provenance, Result};
use rusqlite::{Connection, OptionalExtension, Row, params};

const FILE_COLS: &str = "id, folder_id, name, mime, size, sha256, status, error, page_starts, \
                         lines, chunks, created_at, updated_at";

fn file_from_row(r: &Row<'_>) -> rusqlite::Result<FolderFile> {
    let status: String = r.get(6)?;
    let page_starts: Option<String> = r.get(8)?;
    let pages = page_starts
        .as_deref()
        .and_then(|p| serde_json::from_str::<Vec<u32>>(p).ok())
        .map(|p| p.len() as u32);
    Ok(FolderFile {
        id: FileId::from(r.get::<_, String>(0)?),
        folder_id: FolderId::from(r.get::<_, String>(1)?),
        name: r.get(2)?,
        mime: r.get(3)?,
        size: sql::uint(r, 4)?,
        sha256: r.get(5)?,
        // Unknown values can only come from a newer Engram: show them as failed.
        status: FileStatus::parse(&status).unwrap_or(FileStatus::Error),
        error: r.get(7)?,
        pages,
        lines: r.get(9)?,
        chunks: r.get(10)?,
        created_at: ts(r, 11)?,
        updated_at: ts(r, 12)?,
    })
}

pub(crate) fn load(c: &Connection, id: &FileId) -> Result<FolderFile> {
    c.prepare_cached(&format!(
        "SELECT {FILE_COLS} FROM folder_files WHERE id = ?1"
    ))
    .db()?
    .query_row([id.as_str()], file_from_row)
    .optional()
    .db()?
    .ok_or_else(|| Error::not_found("file", id.as_str()))
}

/// A file's metadata as it arrives, before it is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileUpload {
    /// Its name in the folder (a relative `/`-separated path).
    pub name: String,
    /// Its media type.
    pub mime: String,
    /// Its size in **bytes**.
    pub size: u64,
    /// SHA-256 of its bytes, lower-case hex.
    pub sha256: String,
}

/// What [`FolderRows::upsert_file`] found.
#[derive(Clone, Debug, PartialEq)]
pub enum Upserted {
    /// A new file, or a changed one whose old text and passages are gone: parse it.
    Changed(FolderFile),
    /// The same name with the same bytes, already read: nothing to do.
    Unchanged(FolderFile),
}

/// A passage cut from a file, to store.
#[derive(Clone, Debug, PartialEq)]
pub struct NewChunk {
    /// Its text.
    pub text: String,
    /// Where in the file it is.
    pub provenance: Provenance,
}

/// The result of reading a file, to store in one transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedFile {
    /// The whole extracted text (lines separated by `\n`).
    pub text: String,
    /// The first line (1-based) of each page, for paged documents; empty for the others.
    pub page_starts: Vec<u32>,
    /// Lines of `text`.
    pub lines: u32,
    /// Its passages, in order.
    pub chunks: Vec<NewChunk>,
}

impl FolderRows<'_> {
    /// Records a file arriving in a folder. A file of that name with the same SHA-256 that
    /// was read (or is being embedded) is left as it is ([`Upserted::Unchanged`]); otherwise
    /// the row is created, or reset (old text and passages removed, agents' windows kept) with
    /// status `pending`. One transaction. Errors: `NotFound("folder")`; `Invalid` for an empty name.
    pub fn upsert_file(self, folder: &FolderId, upload: &FileUpload) -> Result<Upserted> {
        if upload.name.trim().is_empty() {
            return Err(Error::invalid("a file needs a name"));
        }
        let now = sql::micros(sql::now());
        self.store.write(|tx| {
            crate::folders::load(tx, folder)?;
            let existing: Option<FolderFile> = tx
                .prepare_cached(&format!(
                    "SELECT {FILE_COLS} FROM folder_files WHERE folder_id = ?1 AND name = ?2"
                ))
                .db()?
                .query_row(params![folder.as_str(), upload.name], file_from_row)
                .optional()
                .db()?;
            let id = match existing {
                Some(f)
                    if f.sha256 == upload.sha256
                        && matches!(f.status, FileStatus::Completed | FileStatus::Embedding) =>
                {
                    return Ok(Upserted::Unchanged(f));
                }
                Some(f) => {
                    clear_text(tx, &f.id)?;
                    tx.prepare_cached(
                        "UPDATE folder_files SET mime = ?2, size = ?3, sha256 = ?4,
                                status = 'pending', error = NULL, text = NULL,
                                page_starts = NULL, lines = 0, chunks = 0, text_pieces = 0,
                                updated_at = ?5
                         WHERE id = ?1",
                    )
                    .db()?
                    .execute(params![
                        f.id.as_str(),
                        upload.mime,
                        sql::int(upload.size, "size")?,
                        upload.sha256,
                        now
                    ])
                    .db()?;
                    f.id
                }
                None => {
                    let id = FileId::new();
                    tx.prepare_cached(
                        "INSERT INTO folder_files (id, folder_id, name, mime, size, sha256,
                                status, created_at, updated_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', ?7, ?7)",
                    )
                    .db()?
                    .execute(params![
                        id.as_str(),
                        folder.as_str(),
                        upload.name,
                        upload.mime,
                        sql::int(upload.size, "size")?,
                        upload.sha256,
                        now
                    ])
                    .db()?;
                    id
                }
            };
            Ok(Upserted::Changed(load(tx, &id)?))
        })
    }

    /// Sets a file's status (`parsing`, `embedding`, `completed`), clearing any error.
    /// Errors: `NotFound("file")`.
    pub fn set_file_status(self, file: &FileId, status: FileStatus) -> Result<FolderFile> {
        self.store.write(|tx| {
            let n = tx
                .prepare_cached(
                    "UPDATE folder_files SET status = ?2, error = NULL, updated_at = ?3
                     WHERE id = ?1",
                )
                .db()?
                .execute(params![
                    file.as_str(),
                    status.as_str(),
                    sql::micros(sql::now())
                ])
                .db()?;
            if n == 0 {
                return Err(Error::not_found("file", file.as_str()));
            }
            load(tx, file)
        })
    }

    /// Stores a file's extracted text and passages and sets its status to `next` (`embedding`
    /// when its folder has a model, else `completed`), replacing anything stored before, in one
    /// transaction. Errors: `NotFound("file")`.
    pub fn store_parsed_file(
        self,
        file: &FileId,
        parsed: &ParsedFile,
        next: FileStatus,
    ) -> Result<FolderFile> {
        self.store.write(|tx| {
            let f = load(tx, file)?;
            clear_text(tx, file)?;
            insert_chunks(tx, file, &f.folder_id, 0, &parsed.chunks)?;
            let page_starts = if parsed.page_starts.is_empty() {
                None
            } else {
                Some(sql::to_json(&parsed.page_starts)?)
            };
            tx.prepare_cached(
                "UPDATE folder_files SET text = ?2, page_starts = ?3, lines = ?4, chunks = ?5,
                        text_pieces = 0, status = ?6, error = NULL, updated_at = ?7
                 WHERE id = ?1",
            )
            .db()?
            .execute(params![
                file.as_str(),
                parsed.text,
                page_starts,
                parsed.lines,
                sql::sat(parsed.chunks.len()),
                next.as_str(),
                sql::micros(sql::now())
            ])
            .db()?;
            load(tx, file)
        })
    }

    /// Marks a file failed with `reason` (what a person reads), removing any text (its pieces
    /// too) and passages it had, in one transaction. Errors: `NotFound("file")`.
    pub fn fail_file(self, file: &FileId, reason: &str) -> Result<FolderFile> {
        self.store.write(|tx| {
            load(tx, file)?;
            clear_text(tx, file)?;
            tx.prepare_cached(
                "UPDATE folder_files SET status = 'error', error = ?2, text = NULL,
                        page_starts = NULL, lines = 0, chunks = 0, text_pieces = 0,
                        updated_at = ?3
                 WHERE id = ?1",
            )
            .db()?
            .execute(params![file.as_str(), reason, sql::micros(sql::now())])
            .db()?;
            load(tx, file)
        })
    }

    /// The file `id`. Errors: `NotFound("file")`.
    pub fn get_file(self, id: &FileId) -> Result<FolderFile> {
        self.store.read(|c| load(c, id))
    }

    /// A folder's files by name. Errors: `NotFound("folder")`.
    pub fn list_files(self, folder: &FolderId) -> Result<Vec<FolderFile>> {
        self.store.read(|c| {
            crate::folders::load(c, folder)?;
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {FILE_COLS} FROM folder_files WHERE folder_id = ?1 ORDER BY name"
                ))
                .db()?;
            let rows = stmt.query_map([folder.as_str()], file_from_row).db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })
    }

    /// Deletes a file with its text pieces, passages and every agent's state of it. Errors:
    /// `NotFound("file")`.
    pub fn delete_file(self, id: &FileId) -> Result<()> {
        self.store.write(|tx| {
            let n = tx
                .prepare_cached("DELETE FROM folder_files WHERE id = ?1")
                .db()?
                .execute([id.as_str()])
                .db()?;
            if n == 0 {
                return Err(Error::not_found("file", id.as_str()));
            }
            Ok(())
        })
    }
}

/// Stores `chunks` as passages of `file` in `folder`, numbered from `first_seq`, inside the
/// caller's transaction.
pub(crate) fn insert_chunks(
    tx: &Connection,
    file: &FileId,
    folder: &FolderId,
    first_seq: usize,
    chunks: &[NewChunk],
) -> Result<()> {
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO file_chunks (file_id, folder_id, seq, text, page, heading,
                    line_start, line_end)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )
        .db()?;
    for (i, c) in chunks.iter().enumerate() {
        insert
            .execute(params![
                file.as_str(),
                folder.as_str(),
                sql::sat(first_seq + i),
                c.text,
                c.provenance.page,
                c.provenance.heading,
                c.provenance.line_start,
                c.provenance.line_end
            ])
            .db()?;
    }
    Ok(())
}

/// Removes a file's passages and text pieces (its row stays).
pub(crate) fn clear_text(tx: &Connection, file: &FileId) -> Result<()> {
    tx.prepare_cached("DELETE FROM file_chunks WHERE file_id = ?1")
        .db()?
        .execute([file.as_str()])
        .db()?;
    tx.prepare_cached("DELETE FROM file_text_pieces WHERE file_id = ?1")
        .db()?
        .execute([file.as_str()])
        .db()?;
    Ok(())
}

//! Files read as a stream (text files over 64 MiB): their text is stored in pieces of about
//! 1 MiB cut at line ends (`file_text_pieces`), and their passages with each piece, one short
//! transaction a piece, so other writers (the chat) wait for one piece at most, not for the
//! whole file. The file stays `parsing` until [`FolderRows::finish_streamed_file`] sets its
//! status; until then its passages are not found by search. A failed or cancelled read
//! leaves no pieces nor passages behind ([`FolderRows::fail_file`],
//! [`FolderRows::delete_file`]).
//!
//! Readers take what they need: a window of lines loads the pieces holding them, grep walks
//! the text a part at a time ([`FolderRows::text_part`]).

use crate::folder_files::{NewChunk, clear_text, insert_chunks, load};
use crate::rooms::FolderRows;
use crate::sql::{self, DbResult};
use engram_core::{Error, FileId, FileStatus, FolderFile, Result, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};

/// One piece of a streamed file, to store with the passages it closed.
#[derive(Clone, Debug, PartialEq)]
pub struct NewPiece {
    /// Its place among the file's pieces, from 0.
    pub idx: u32,
    /// Its first line (1-based) in the file's text.
    pub first_line: u32,
    /// Lines in `text`.
    pub lines: u32,
    /// Its text, lines joined by `\n`.
    pub text: String,
    /// The passages closed by its end, in order.
    pub chunks: Vec<NewChunk>,
    /// The position (`seq`, 0-based) of the first of `chunks` in the file.
    pub first_seq: usize,
}

pub use engram_store_api::TextPart;

impl FolderRows<'_> {
    /// A file's whole extracted text and the first line of each of its pages (empty when it
    /// is not paged); `None` while it has not been read. A file read as a stream has its
    /// pieces joined here, so this can be up to a GiB: readers that need part of a file use
    /// [`FolderRows::file_lines`], [`FolderRows::text_piece`] or
    /// [`FolderRows::file_text_head`]. Errors: `NotFound("file")`.
    pub fn file_text(self, id: &FileId) -> Result<Option<(String, Vec<u32>)>> {
        self.store.read(|c| {
            let row: Option<(Option<String>, Option<String>, u32)> = c
                .prepare_cached(
                    "SELECT text, page_starts, text_pieces FROM folder_files WHERE id = ?1",
                )
                .db()?
                .query_row([id.as_str()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()
                .db()?;
            let Some((text, pages, pieces)) = row else {
                return Err(Error::not_found("file", id.as_str()));
            };
            let text = match text {
                None if pieces > 0 => Some(joined(c, id)?),
                t => t,
            };
            let pages = pages
                .as_deref()
                .map(serde_json::from_str::<Vec<u32>>)
                .transpose()
                .map_err(|e| Error::Storage(format!("bad page list: {e}")))?
                .unwrap_or_default();
            Ok(text.map(|t| (t, pages)))
        })
    }

    /// Starts storing a file read as a stream: removes any text, pieces and passages it had
    /// and sets it `parsing`. One transaction. Errors: `NotFound("file")`.
    pub fn begin_streamed_file(self, file: &FileId) -> Result<FolderFile> {
        self.store.write(|tx| {
            load(tx, file)?;
            clear_text(tx, file)?;
            tx.prepare_cached(
                "UPDATE folder_files SET status = 'parsing', error = NULL, text = NULL,
                        page_starts = NULL, lines = 0, chunks = 0, text_pieces = 0,
                        updated_at = ?2
                 WHERE id = ?1",
            )
            .db()?
            .execute(params![file.as_str(), sql::micros(sql::now())])
            .db()?;
            load(tx, file)
        })
    }

    /// Stores one piece of a streamed file and its passages, in one transaction. A piece of
    /// no lines (the end of the file closing the last passage) stores its passages only.
    ///
    /// Errors: `NotFound("file")` when the file went meanwhile (deleted, cancelled);
    /// `Invalid` when it is no longer being read (`parsing`), or the piece is there already.
    pub fn append_text_piece(self, file: &FileId, piece: &NewPiece) -> Result<()> {
        self.store.write(|tx| {
            let f = load(tx, file)?;
            if f.status != FileStatus::Parsing {
                return Err(Error::invalid(format!(
                    "'{}' is {}, not being read: no more text is stored for it",
                    f.name,
                    f.status.as_str()
                )));
            }
            if piece.lines > 0 {
                tx.prepare_cached(
                    "INSERT INTO file_text_pieces (file_id, idx, first_line, lines, text)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .db()?
                .execute(params![
                    file.as_str(),
                    piece.idx,
                    piece.first_line,
                    piece.lines,
                    piece.text
                ])
                .map_err(|e| match e {
                    rusqlite::Error::SqliteFailure(f, _)
                        if f.code == rusqlite::ErrorCode::ConstraintViolation =>
                    {
                        Error::invalid(format!("piece {} of the file is stored already", piece.idx))
                    }
                    e => Error::Storage(e.to_string()),
                })?;
            }
            // Each piece shows the reading is alive (see `fail_interrupted_reads`).
            tx.prepare_cached("UPDATE folder_files SET updated_at = ?2 WHERE id = ?1")
                .db()?
                .execute(params![file.as_str(), sql::micros(sql::now())])
                .db()?;
            insert_chunks(tx, file, &f.folder_id, piece.first_seq, &piece.chunks)
        })
    }

    /// Fails the files a reading left `parsing` and has not touched since `before` (a process
    /// that stopped or crashed mid-file), removing their text, pieces and passages, so the
    /// folder shows why and a file added again is read again. A reading alive touches its
    /// file at least every piece (about 1 MiB) and when it starts, so a `before` minutes in the
    /// past never takes a file another process is reading now. Returns the files failed.
    ///
    /// Errors: `Storage`.
    pub fn fail_interrupted_reads(self, before: Timestamp) -> Result<Vec<FolderFile>> {
        let stale: Vec<FileId> = self.store.read(|c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT id FROM folder_files WHERE status = 'parsing' AND updated_at < ?1",
                )
                .db()?;
            let rows = stmt
                .query_map([sql::micros(before)], |r| {
                    Ok(FileId::from(r.get::<_, String>(0)?))
                })
                .db()?;
            rows.collect::<rusqlite::Result<_>>().db()
        })?;
        stale
            .iter()
            .map(|id| {
                self.fail_file(
                    id,
                    "Engram stopped while it was being read: add it again to read it",
                )
            })
            .collect()
    }

    /// Ends a streamed file: records its `lines` and sets its status to `next` (`embedding`
    /// or `completed`), which makes it readable and its passages searchable. One transaction.
    ///
    /// Errors: `NotFound("file")`; `Invalid` when it is not `parsing`.
    pub fn finish_streamed_file(
        self,
        file: &FileId,
        lines: u32,
        next: FileStatus,
    ) -> Result<FolderFile> {
        self.store.write(|tx| {
            let f = load(tx, file)?;
            if f.status != FileStatus::Parsing {
                return Err(Error::invalid(format!(
                    "'{}' is {}, not being read",
                    f.name,
                    f.status.as_str()
                )));
            }
            tx.prepare_cached(
                "UPDATE folder_files SET lines = ?2, status = ?3, error = NULL, updated_at = ?4,
                        chunks = (SELECT count(*) FROM file_chunks WHERE file_id = ?1),
                        text_pieces = (SELECT count(*) FROM file_text_pieces WHERE file_id = ?1)
                 WHERE id = ?1",
            )
            .db()?
            .execute(params![
                file.as_str(),
                lines,
                next.as_str(),
                sql::micros(sql::now())
            ])
            .db()?;
            load(tx, file)
        })
    }

    /// Part `idx` (from 0) of a file's text: for a file read whole its whole text is part 0;
    /// for one read as a stream, its pieces. `None` past the last part, or while the file has
    /// not been read. Errors: `NotFound("file")`.
    pub fn text_part(self, id: &FileId, idx: u32) -> Result<Option<TextPart>> {
        self.store.read(|c| {
            let (text, pieces) = text_row(c, id)?;
            if let Some(text) = text {
                return Ok((idx == 0).then_some(TextPart {
                    first_line: 1,
                    text,
                }));
            }
            if idx >= pieces {
                return Ok(None);
            }
            c.prepare_cached(
                "SELECT first_line, text FROM file_text_pieces WHERE file_id = ?1 AND idx = ?2",
            )
            .db()?
            .query_row(params![id.as_str(), idx], |r| {
                Ok(TextPart {
                    first_line: r.get(0)?,
                    text: r.get(1)?,
                })
            })
            .optional()
            .db()
        })
    }

    /// The first line (1-based) of each page of a file (empty when it is not paged). Errors:
    /// `NotFound("file")`.
    pub fn page_starts(self, id: &FileId) -> Result<Vec<u32>> {
        self.store.read(|c| {
            let pages: Option<Option<String>> = c
                .prepare_cached("SELECT page_starts FROM folder_files WHERE id = ?1")
                .db()?
                .query_row([id.as_str()], |r| r.get(0))
                .optional()
                .db()?;
            let Some(pages) = pages else {
                return Err(Error::not_found("file", id.as_str()));
            };
            Ok(pages
                .as_deref()
                .map(serde_json::from_str::<Vec<u32>>)
                .transpose()
                .map_err(|e| Error::Storage(format!("bad page list: {e}")))?
                .unwrap_or_default())
        })
    }

    /// The start of a file's text, at most `max_bytes` of it cut at a line end (a first line
    /// longer than that is cut inside, at a character boundary), and whether there is more.
    /// `None` while it has not been read. Loads only the pieces it shows. Errors:
    /// `NotFound("file")`.
    pub fn file_text_head(self, id: &FileId, max_bytes: usize) -> Result<Option<(String, bool)>> {
        let mut head = String::new();
        let mut idx = 0;
        while let Some(part) = self.text_part(id, idx)? {
            if !head.is_empty() {
                head.push('\n');
            }
            head.push_str(&part.text);
            if head.len() > max_bytes {
                let mut cut = max_bytes;
                while !head.is_char_boundary(cut) {
                    cut -= 1;
                }
                let at_line = if head.as_bytes()[cut] == b'\n' {
                    cut
                } else {
                    head[..cut].rfind('\n').unwrap_or(cut)
                };
                head.truncate(at_line);
                return Ok(Some((head, true)));
            }
            idx += 1;
        }
        Ok((idx > 0).then_some((head, false)))
    }
}

/// A file's inline text and its count of pieces. Errors: `NotFound("file")`.
fn text_row(c: &Connection, id: &FileId) -> Result<(Option<String>, u32)> {
    c.prepare_cached("SELECT text, text_pieces FROM folder_files WHERE id = ?1")
        .db()?
        .query_row([id.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .db()?
        .ok_or_else(|| Error::not_found("file", id.as_str()))
}

/// The pieces (first line, text) of a streamed file that hold lines `from ..= to`, in order.
pub(crate) fn pieces_covering(
    c: &Connection,
    id: &FileId,
    from: u32,
    to: u32,
) -> Result<Vec<(u32, String)>> {
    let mut stmt = c
        .prepare_cached(
            "SELECT first_line, text FROM file_text_pieces
             WHERE file_id = ?1 AND first_line <= ?3 AND first_line >= coalesce(
                 (SELECT max(first_line) FROM file_text_pieces
                  WHERE file_id = ?1 AND first_line <= ?2), 1)
             ORDER BY first_line",
        )
        .db()?;
    let rows = stmt
        .query_map(params![id.as_str(), from, to], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .db()?;
    rows.collect::<rusqlite::Result<_>>().db()
}

/// A streamed file's pieces joined into its whole text.
pub(crate) fn joined(c: &Connection, id: &FileId) -> Result<String> {
    let mut stmt = c
        .prepare_cached("SELECT text FROM file_text_pieces WHERE file_id = ?1 ORDER BY idx")
        .db()?;
    let mut rows = stmt.query([id.as_str()]).db()?;
    let mut text = String::new();
    let mut first = true;
    while let Some(r) = rows.next().db()? {
        if !first {
            text.push('\n');
        }
        first = false;
        text.push_str(&r.get::<_, String>(0).db()?);
    }
    Ok(text)
}

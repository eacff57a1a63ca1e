//! Text files too big to read whole (over 64 MiB), added from disk as a stream: hashed a MiB
//! at a time, then cut into pieces of about 1 MiB by a blocking thread and stored a piece a
//! transaction (`engram_store`'s `file_pieces`), so memory stays a few MiB whatever the
//! file's size and other writers wait for one piece at most. See docs/documents.md.

use crate::Engram;
use crate::folder_ingest::{FileAdded, check_file_name, failed_added, stored_chunk};
use engram_core::{Error, FileStatus, FolderFile, FolderId, Result};
use engram_documents::{Piece, ReadError, TextStream};
use engram_store::{FileUpload, NewChunk, NewPiece, Upserted};
use sha2::{Digest, Sha256};

impl Engram {
    /// Adds a text file too big to read whole (over 64 MiB), read as a stream: hashed a
    /// piece at a time, then read ([`Engram::read_stream`]). Memory stays a few MiB whatever
    /// the file's size. Errors: as [`Folders::add_file`].
    pub(crate) async fn add_streamed_file(
        &self,
        folder: &FolderId,
        name: &str,
        file: std::fs::File,
        kind: engram_documents::Kind,
        size: u64,
    ) -> Result<FileAdded> {
        let name = check_file_name(name)?;
        let folder = self.store.folders().get(folder)?;
        let hashed = tokio::task::spawn_blocking(move || sha256_of(file))
            .await
            .map_err(|e| Error::Internal(format!("the reader stopped: {e}")))?;
        let (file, sha256) = match hashed {
            Ok(h) => h,
            Err(e) => {
                let upload = FileUpload {
                    name: name.clone(),
                    mime: kind.mime().to_owned(),
                    size,
                    sha256: String::new(),
                };
                let row = match self.store.folders().upsert_file(&folder.id, &upload)? {
                    Upserted::Changed(f) | Upserted::Unchanged(f) => f,
                };
                let failed = self
                    .store
                    .folders()
                    .fail_file(&row.id, &format!("cannot open it: {e}"))?;
                return Ok(failed_added(name, failed));
            }
        };
        let upload = FileUpload {
            name: name.clone(),
            mime: kind.mime().to_owned(),
            size,
            sha256,
        };
        let row = match self.store.folders().upsert_file(&folder.id, &upload)? {
            Upserted::Unchanged(row) => {
                return Ok(FileAdded {
                    name,
                    file: Some(row),
                    unchanged: true,
                    skipped: None,
                    notes: Vec::new(),
                });
            }
            Upserted::Changed(row) => row,
        };
        let read = self.read_stream(&folder, row.clone(), name.clone(), file, kind);
        self.cancellable(&folder, &row, name, read).await
    }

    /// Reads a file as a stream: a blocking thread cuts it into pieces (about 1 MiB of text
    /// and its passages each) and hands them over a channel of two; each is stored in a
    /// transaction of its own, the file staying `parsing` (not readable, its passages not
    /// found) until the last is in. A file that cannot be read is failed, its pieces removed.
    /// Vectors are then computed in batches, as for any file.
    async fn read_stream(
        &self,
        folder: &engram_core::Folder,
        file: FolderFile,
        name: String,
        reader: std::fs::File,
        kind: engram_documents::Kind,
    ) -> Result<FileAdded> {
        self.store.folders().begin_streamed_file(&file.id)?;
        let (send, mut pieces) =
            tokio::sync::mpsc::channel::<std::result::Result<Piece, ReadError>>(2);
        let cutter = tokio::task::spawn_blocking(move || {
            let mut stream = match TextStream::new(reader, kind, engram_documents::MAX_STREAM_BYTES)
            {
                Ok(s) => s,
                Err(e) => {
                    let _ = send.blocking_send(Err(e));
                    return (0, Vec::new());
                }
            };
            loop {
                match stream.next_piece() {
                    Ok(Some(p)) => {
                        // The receiver gone (a cancel): stop reading.
                        if send.blocking_send(Ok(p)).is_err() {
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        let _ = send.blocking_send(Err(e));
                        break;
                    }
                }
            }
            (stream.lines(), stream.notes().to_vec())
        });
        let (mut idx, mut seq) = (0u32, 0usize);
        while let Some(piece) = pieces.recv().await {
            let piece = match piece {
                Ok(p) => {
                    let chunks: Vec<NewChunk> = p.chunks.into_iter().map(stored_chunk).collect();
                    NewPiece {
                        idx,
                        first_line: p.first_line,
                        lines: p.lines,
                        text: p.text,
                        first_seq: seq,
                        chunks,
                    }
                }
                Err(e) => {
                    drop(pieces);
                    let failed = self.store.folders().fail_file(&file.id, &e.to_string())?;
                    return Ok(failed_added(name, failed));
                }
            };
            seq += piece.chunks.len();
            if piece.lines > 0 {
                idx += 1;
            }
            // A piece's transaction (a MiB of text, its passages and their words) runs off
            // the async threads. Cancelled while it runs, it still commits or finds the file
            // gone: the delete that follows a cancel removes what it stored either way.
            let (store, id) = (self.store.clone(), file.id.clone());
            let stored =
                tokio::task::spawn_blocking(move || store.folders().append_text_piece(&id, &piece))
                    .await
                    .map_err(|e| Error::Internal(format!("storing a piece stopped: {e}")))?
                    .map_err(|e| e.to_string());
            if let Err(why) = stored {
                drop(pieces);
                let failed = self.store.folders().fail_file(&file.id, &why)?;
                return Ok(failed_added(name, failed));
            }
        }
        let (lines, notes) = cutter
            .await
            .map_err(|e| Error::Internal(format!("the reader stopped: {e}")))?;
        let next = if folder.embedding.is_some() {
            FileStatus::Embedding
        } else {
            FileStatus::Completed
        };
        self.store
            .folders()
            .finish_streamed_file(&file.id, lines, next)?;
        self.embed_and_complete(folder, file, name, notes).await
    }
}

/// SHA-256 of a file read from where it is open to its end, a MiB at a time, in lower-case
/// hex; the file is handed back rewound to its start.
fn sha256_of(mut file: std::fs::File) -> std::io::Result<(std::fs::File, String)> {
    use std::io::{Read, Seek};
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    file.rewind()?;
    let digest = hasher.finalize();
    Ok((file, digest.iter().map(|b| format!("{b:02x}")).collect()))
}

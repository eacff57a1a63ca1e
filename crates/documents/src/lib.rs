//! Reads the documents of Engram's folders: the text of a file with where each part came from
//! (page, heading, line), cut into passages an agent can search and cite.
//!
//! Formats, each read by a well-kept crate: PDF's text layer (`pdf-extract` on `lopdf`), DOCX
//! (`zip` and `quick-xml`), Markdown (`pulldown-cmark` finds the headings; the text is the
//! source, so line numbers match the file), HTML (`html2text`), and plain text, source code,
//! CSV and JSON as text. Text that is not UTF-8 is read as UTF-16 (with a byte-order mark) or
//! Windows-1252, and says so; bytes that are not text at all fail.
//!
//! Bounds: a PDF, DOCX or HTML file over [`MAX_FILE_BYTES`] is refused before it is read (they
//! are read whole); a text file over it is read as a stream ([`stream`]) in bounded memory, up
//! to [`stream::MAX_STREAM_BYTES`] (see [`read_or_stream`]). A DOCX whose parts
//! unpack to more than [`docx::MAX_UNPACKED_BYTES`] is refused as a zip bomb, and a reader that
//! panics on a malformed file fails that file only. Units: sizes in **bytes**, passages in
//! **characters** ([`chunk::CHUNK_CHARS`]), lines and pages 1-based.

pub mod chunk;
pub mod docx;
mod errors;
mod html;
pub mod kind;
mod markdown;
mod pdf;
pub mod stream;
mod text;

pub use chunk::{Chunk, Document};
pub use errors::ReadError;
pub use kind::Kind;
pub use stream::{MAX_STREAM_BYTES, Piece, TextStream};

use std::io::Read;
use std::path::Path;

/// The largest file read whole, in **bytes** (64 MiB). A file's text, passages and (for PDF)
/// its parsed objects are held in memory while it is read, a few times its size at most.
/// Bigger text files are read as a stream ([`read_or_stream`]).
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Reads the file at `path` (at most [`MAX_FILE_BYTES`]; the limit is checked on what is
/// read, not only on what the file system says).
///
/// Errors: [`ReadError::TooLarge`]; [`ReadError::Io`] when it cannot be read.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, ReadError> {
    read_open(std::fs::File::open(path)?)
}

/// Like [`read_bytes`], for a path a directory walk listed as a regular file: refused with
/// [`ReadError::Replaced`] when what is opened is not that file any more (a symbolic link put
/// in its place between the listing and the read would otherwise be followed). On Unix the
/// opened file must be the listed one (same device and inode); elsewhere the path must still
/// not be a link.
pub fn read_listed_bytes(path: &Path) -> Result<Vec<u8>, ReadError> {
    read_open(open_listed(path)?)
}

/// A file on disk as it is to be read: whole, or as a stream.
#[derive(Debug)]
pub enum Source {
    /// Its bytes (at most [`MAX_FILE_BYTES`]), for [`parse`].
    Bytes(Vec<u8>),
    /// A text file over [`MAX_FILE_BYTES`] (at most [`MAX_STREAM_BYTES`]), open at its start,
    /// to hash and then read with [`TextStream`].
    Stream {
        /// The open file.
        file: std::fs::File,
        /// Its kind (a text kind).
        kind: Kind,
        /// Its size in **bytes** when it was opened.
        size: u64,
    },
}

/// Opens the file at `path`, named `name` in its folder: read whole when it is at most
/// [`MAX_FILE_BYTES`], left open to stream when it is a bigger text file ([`Kind::streams`]).
/// `listed` says a directory walk listed it as a regular file: then it is checked as
/// [`read_listed_bytes`] does.
///
/// Errors: [`ReadError::TooLargeWhole`] for a PDF, DOCX or HTML file over
/// [`MAX_FILE_BYTES`]; [`ReadError::TooLarge`] for a text file over [`MAX_STREAM_BYTES`];
/// [`ReadError::Replaced`]; [`ReadError::Io`].
pub fn read_or_stream(name: &str, path: &Path, listed: bool) -> Result<Source, ReadError> {
    use std::io::Seek;
    let mut file = if listed {
        open_listed(path)?
    } else {
        std::fs::File::open(path)?
    };
    let size = file.metadata()?.len();
    if size <= MAX_FILE_BYTES {
        return read_open(file).map(Source::Bytes);
    }
    let mut head = Vec::with_capacity(8);
    (&mut file).take(8).read_to_end(&mut head)?;
    file.rewind()?;
    let kind = Kind::detect(name, &head);
    if !kind.streams() {
        return Err(ReadError::TooLargeWhole {
            kind: kind.label(),
            size,
            limit: MAX_FILE_BYTES,
        });
    }
    if size > MAX_STREAM_BYTES {
        return Err(ReadError::TooLarge {
            size,
            limit: MAX_STREAM_BYTES,
        });
    }
    Ok(Source::Stream { file, kind, size })
}

/// Opens a file a directory walk listed as a regular file (see [`read_listed_bytes`]).
fn open_listed(path: &Path) -> Result<std::fs::File, ReadError> {
    let listed = std::fs::symlink_metadata(path)?;
    if !listed.file_type().is_file() {
        return Err(ReadError::Replaced);
    }
    let file = std::fs::File::open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let opened = file.metadata()?;
        if (opened.dev(), opened.ino()) != (listed.dev(), listed.ino()) {
            return Err(ReadError::Replaced);
        }
    }
    Ok(file)
}

/// Reads an open file, bounded by [`MAX_FILE_BYTES`].
fn read_open(file: std::fs::File) -> Result<Vec<u8>, ReadError> {
    let size = file.metadata()?.len();
    if size > MAX_FILE_BYTES {
        return Err(ReadError::TooLarge {
            size,
            limit: MAX_FILE_BYTES,
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ReadError::TooLarge {
            size: bytes.len() as u64,
            limit: MAX_FILE_BYTES,
        });
    }
    Ok(bytes)
}

/// Reads a document named `name` (its extension decides the format, with the bytes' own
/// signature for PDF and zip) into text and passages.
///
/// Errors: see [`ReadError`]; every error names what a person can do about it.
pub fn parse(name: &str, bytes: &[u8]) -> Result<Document, ReadError> {
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ReadError::TooLarge {
            size: bytes.len() as u64,
            limit: MAX_FILE_BYTES,
        });
    }
    let kind = Kind::detect(name, bytes);
    // A malformed file must cost that file only, not the process or the other files.
    let read = std::panic::catch_unwind(|| match kind {
        Kind::Pdf => pdf::read(bytes),
        Kind::Docx => docx::read(bytes),
        Kind::Markdown => markdown::read(&text::decode(bytes)?),
        Kind::Html => html::read(bytes),
        Kind::Text | Kind::Code | Kind::Csv | Kind::Json => text::read(bytes),
    });
    let mut doc = match read {
        Ok(result) => result?,
        Err(_) => {
            return Err(ReadError::Broken(format!(
                "the {} reader failed on this file",
                kind.label()
            )));
        }
    };
    doc.kind = kind;
    Ok(doc)
}

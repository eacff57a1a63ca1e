//! Why a document could not be read, in words a person can act on.

/// A document that could not be read. The message says what is wrong and, where there is
/// something to do, what.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Bigger than the reader takes (**bytes**).
    #[error("too large: {size} bytes, the limit is {limit} bytes")]
    TooLarge {
        /// The file's size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A file of a kind read whole (PDF, DOCX, HTML) bigger than that is done for
    /// (**bytes**); text files that big are read as a stream.
    #[error(
        "too large: {size} bytes; {kind} files are read whole, and only up to {limit} bytes (64 MiB)"
    )]
    TooLargeWhole {
        /// Its kind's name (`PDF`, …).
        kind: &'static str,
        /// The file's size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A PDF locked with a password.
    #[error("encrypted PDF: it needs a password; save an unlocked copy and add that")]
    Encrypted,
    /// A PDF whose pages hold no text (scanned images).
    #[error("no text layer: scanned PDF, nothing to read")]
    NoTextLayer,
    /// Bytes that are not text (a binary file with a text extension).
    #[error("not text: the file holds binary data ({0})")]
    Binary(String),
    /// A zip (DOCX) that unpacks to far more than it weighs.
    #[error("refused: the DOCX unpacks to more than {limit} bytes (a zip bomb?)")]
    ZipBomb {
        /// The limit on unpacked bytes.
        limit: u64,
    },
    /// The file is damaged or not what its name says.
    #[error("cannot read it: {0}")]
    Broken(String),
    /// A file a directory listing showed as a regular file was something else when it was
    /// opened (a symbolic link or another file put in its place meanwhile): not read, so a
    /// walk that does not follow links never reads through one.
    #[error(
        "refused: it was replaced (by a symbolic link or another file) while it was being read"
    )]
    Replaced,
    /// The file could not be read from disk.
    #[error("cannot open it: {0}")]
    Io(#[from] std::io::Error),
}

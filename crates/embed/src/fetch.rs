//! First-use download of a built-in model's files, each checked against its pinned SHA-256.
//!
//! A file is written to `<name>.part` and renamed to `<name>` only once its digest matches, so
//! a file under its final name is always a verified one. An interrupted transfer leaves the
//! `.part` file; the next attempt asks for the rest with an HTTP `Range` request and starts
//! over when the server does not honour it. A digest mismatch deletes the `.part` file and is
//! refused: nothing unverified is ever loaded.

use crate::catalog::{LocalModelSpec, ModelFile};
use engram_download::{DownloadError, Expected, Target};
use std::path::Path;
use tokio_util::sync::CancellationToken;

/// How far a download has come, in bytes over all files of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// The file being fetched.
    pub file: &'static str,
    /// Bytes present so far (verified files, resumed parts and new bytes).
    pub done: u64,
    /// Bytes of all files together.
    pub total: u64,
}

/// Why the files could not be fetched. Nothing unverified is left under a final file name.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The server could not be reached or broke off (the `.part` file is kept for a resume).
    #[error("could not download {file} from {url}: {message}")]
    Transfer {
        /// The file.
        file: &'static str,
        /// Its URL.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The downloaded bytes are not the pinned file (deleted; nothing was kept).
    #[error(
        "{file} from {url} does not match its pinned SHA-256 (got {got}, expected {expected}); refused"
    )]
    Checksum {
        /// The file.
        file: &'static str,
        /// Its URL.
        url: String,
        /// The digest of what arrived.
        got: String,
        /// The pinned digest.
        expected: &'static str,
    },
    /// The cache folder could not be written.
    #[error("cannot write {path}: {message}")]
    Io {
        /// The file or folder.
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// Whether every file of `spec` is present under its final name in `dir`.
pub fn is_complete(spec: &LocalModelSpec, dir: &Path) -> bool {
    spec.files.iter().all(|f| dir.join(f.name).is_file())
}

/// Fetches the missing files of `spec` from `base_url` (`{base_url}/{file}`) into `dir`,
/// reporting progress. Files already present are kept. The transfer itself is
/// [`engram_download::download`] against each file's pinned digest.
pub async fn fetch(
    spec: &LocalModelSpec,
    base_url: &str,
    dir: &Path,
    on_progress: &(dyn Fn(Progress) + Send + Sync),
) -> Result<(), FetchError> {
    engram_download::private_dir(dir)
        .await
        .map_err(|e| from_download(&spec.files[0], base_url, e))?;
    let total: u64 = spec.files.iter().map(|f| f.bytes).sum();
    let client = engram_download::client().map_err(|e| FetchError::Io {
        path: base_url.to_owned(),
        message: e.to_string(),
    })?;
    // The embedding model's download is never cancelled by hand: it is stopped by dropping it.
    let never = CancellationToken::new();
    let mut before = 0u64;
    for file in &spec.files {
        let done_file = dir.join(file.name);
        if !done_file.is_file() {
            let url = format!("{}/{}", base_url.trim_end_matches('/'), file.name);
            let target = Target {
                url: url.clone(),
                dest: done_file,
                bytes: Some(file.bytes),
                sha256: Expected::Pinned(file.sha256.to_owned()),
            };
            engram_download::download(
                &client,
                &target,
                &|n, _| {
                    on_progress(Progress {
                        file: file.name,
                        done: before + n,
                        total,
                    })
                },
                &never,
            )
            .await
            .map_err(|e| from_download(file, &url, e))?;
        }
        before += file.bytes;
        on_progress(Progress {
            file: file.name,
            done: before,
            total,
        });
    }
    Ok(())
}

fn from_download(file: &ModelFile, url: &str, e: DownloadError) -> FetchError {
    match e {
        DownloadError::Checksum { got, .. } => FetchError::Checksum {
            file: file.name,
            url: url.to_owned(),
            got,
            expected: file.sha256,
        },
        DownloadError::Io { path, message } => FetchError::Io { path, message },
        other => FetchError::Transfer {
            file: file.name,
            url: url.to_owned(),
            message: match other {
                DownloadError::Transfer { message, .. } => message,
                other => other.to_string(),
            },
        },
    }
}

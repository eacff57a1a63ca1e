//! First-use download of a built-in model's files, each checked against its pinned SHA-256.
//!
//! A file is written to `<name>.part` and renamed to `<name>` only once its digest matches, so
//! a file under its final name is always a verified one. An interrupted transfer leaves the
//! `.part` file; the next attempt asks for the rest with an HTTP `Range` request and starts
//! over when the server does not honour it. A digest mismatch deletes the `.part` file and is
//! refused: nothing unverified is ever loaded.

use crate::catalog::{LocalModelSpec, ModelFile};
use futures::StreamExt;
use sha2::{Digest, Sha256};
use std::path::Path;
use tokio::io::AsyncWriteExt;

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

fn io(path: &Path) -> impl Fn(std::io::Error) -> FetchError + '_ {
    move |e| FetchError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// Whether every file of `spec` is present under its final name in `dir`.
pub fn is_complete(spec: &LocalModelSpec, dir: &Path) -> bool {
    spec.files.iter().all(|f| dir.join(f.name).is_file())
}

/// Fetches the missing files of `spec` from `base_url` (`{base_url}/{file}`) into `dir`,
/// reporting progress. Files already present are kept. See the module docs for resume and
/// checksum behaviour.
pub async fn fetch(
    spec: &LocalModelSpec,
    base_url: &str,
    dir: &Path,
    on_progress: &(dyn Fn(Progress) + Send + Sync),
) -> Result<(), FetchError> {
    tokio::fs::create_dir_all(dir).await.map_err(io(dir))?;
    let total: u64 = spec.files.iter().map(|f| f.bytes).sum();
    let client = reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(20))
        .read_timeout(std::time::Duration::from_secs(60))
        .build()
        .map_err(|e| FetchError::Io {
            path: base_url.to_owned(),
            message: e.to_string(),
        })?;
    let mut before = 0u64;
    for file in &spec.files {
        let done_file = dir.join(file.name);
        if !done_file.is_file() {
            let url = format!("{}/{}", base_url.trim_end_matches('/'), file.name);
            fetch_one(&client, file, &url, dir, &|n| {
                on_progress(Progress {
                    file: file.name,
                    done: before + n,
                    total,
                })
            })
            .await?;
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

async fn fetch_one(
    client: &reqwest::Client,
    file: &ModelFile,
    url: &str,
    dir: &Path,
    on_bytes: &(dyn Fn(u64) + Send + Sync),
) -> Result<(), FetchError> {
    let part = dir.join(format!("{}.part", file.name));
    let transfer = |message: String| FetchError::Transfer {
        file: file.name,
        url: url.to_owned(),
        message,
    };
    // What is already there is hashed again: the digest covers the whole file.
    let mut hasher = Sha256::new();
    let mut have = match tokio::fs::read(&part).await {
        Ok(bytes) if (bytes.len() as u64) < file.bytes => {
            hasher.update(&bytes);
            bytes.len() as u64
        }
        // Too long to be a prefix of the pinned file: start over.
        Ok(_) => 0,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(io(&part)(e)),
    };
    let mut request = client.get(url);
    if have > 0 {
        request = request.header(reqwest::header::RANGE, format!("bytes={have}-"));
    }
    let response = request.send().await.map_err(|e| transfer(e.to_string()))?;
    let status = response.status();
    if !status.is_success() {
        return Err(transfer(format!("the server answered {status}")));
    }
    let resumed = have > 0 && status == reqwest::StatusCode::PARTIAL_CONTENT;
    if !resumed {
        // The server sent the whole file (it ignores ranges) or there was nothing to resume.
        hasher = Sha256::new();
        have = 0;
    }
    let mut out = tokio::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(resumed)
        .truncate(!resumed)
        .open(&part)
        .await
        .map_err(io(&part))?;
    on_bytes(have);
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| transfer(e.to_string()))?;
        if have + chunk.len() as u64 > file.bytes {
            // Longer than the pinned file: not it, and it must not fill the disk.
            drop(out);
            let _ = tokio::fs::remove_file(&part).await;
            return Err(transfer(format!(
                "the server sent more than the file's {} bytes",
                file.bytes
            )));
        }
        hasher.update(&chunk);
        out.write_all(&chunk).await.map_err(io(&part))?;
        have += chunk.len() as u64;
        on_bytes(have);
    }
    out.flush().await.map_err(io(&part))?;
    drop(out);
    let got = hex(&hasher.finalize());
    if got != file.sha256 {
        let _ = tokio::fs::remove_file(&part).await;
        return Err(FetchError::Checksum {
            file: file.name,
            url: url.to_owned(),
            got,
            expected: file.sha256,
        });
    }
    let done = dir.join(file.name);
    tokio::fs::rename(&part, &done).await.map_err(io(&done))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

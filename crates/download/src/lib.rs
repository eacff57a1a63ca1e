//! Verified downloads of model files, shared by the built-in embedding model and the built-in
//! chat models.
//!
//! A file is written to `<name>.part` beside its final path and renamed only once its SHA-256
//! matches, so a file under its final name is always a verified one. An interrupted or
//! cancelled transfer leaves the `.part` file; the next attempt hashes what is there and asks
//! for the rest with an HTTP `Range` request (starting over when the server ignores it). A
//! digest mismatch deletes the `.part` file and is refused.
//!
//! The digest is either pinned by the caller or taken from the server: Hugging Face answers a
//! `resolve` URL of a Git LFS file with a redirect whose `X-Linked-Etag` header is the file's
//! SHA-256 (and `X-Linked-Size` its length), which is what `huggingface_hub` checks too. A
//! download with neither is refused before a byte is written. Redirects are followed by hand
//! (at most [`MAX_REDIRECTS`]) so that header is seen; no credentials are ever sent.

mod hash;

use futures::StreamExt;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_LENGTH, CONTENT_RANGE, HeaderMap, LOCATION, RANGE};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

pub use hash::{hex, sha256_file};

/// How many redirects a download follows.
pub const MAX_REDIRECTS: usize = 5;

/// The header Hugging Face puts the SHA-256 of a Git LFS file in.
pub const LINKED_ETAG: &str = "x-linked-etag";

/// The header Hugging Face puts the byte length of a Git LFS file in.
pub const LINKED_SIZE: &str = "x-linked-size";

/// What the downloaded bytes must hash to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expected {
    /// A digest the caller knows (lower-case hex SHA-256).
    Pinned(String),
    /// The digest the server states in `X-Linked-Etag`; refused when it states none.
    Served,
}

/// One file to fetch.
#[derive(Clone, Debug)]
pub struct Target {
    /// Where it is downloaded from.
    pub url: String,
    /// Its final path; the download goes to the same path with `.part` appended.
    pub dest: PathBuf,
    /// Its size in bytes when known beforehand (for progress before the server answers, and
    /// to refuse a longer body); otherwise the server's stated length is used.
    pub bytes: Option<u64>,
    /// The digest it must have.
    pub sha256: Expected,
}

/// A verified file in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetched {
    /// Its final path.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its SHA-256 (lower-case hex), checked.
    pub sha256: String,
}

/// Why a file could not be fetched. Nothing unverified is ever left under a final name.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    /// The server could not be reached, answered with an error or broke off (the `.part` file
    /// is kept for a resume).
    #[error("could not download {url}: {message}")]
    Transfer {
        /// The URL asked for.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The bytes are not the expected file (the `.part` file is deleted).
    #[error(
        "the file from {url} does not match its SHA-256 (got {got}, expected {expected}); it was deleted"
    )]
    Checksum {
        /// The URL asked for.
        url: String,
        /// The digest of what arrived.
        got: String,
        /// The digest it should have had.
        expected: String,
    },
    /// The server states no SHA-256 for the file and none is pinned, so it cannot be checked.
    #[error(
        "{url} states no SHA-256 for the file (no X-Linked-Etag header) and none is known for it, so it cannot be checked; refused"
    )]
    NoDigest {
        /// The URL asked for.
        url: String,
    },
    /// The download was cancelled; the `.part` file keeps the bytes so far for a resume.
    #[error("the download of {url} was cancelled after {have} bytes; it resumes from there")]
    Cancelled {
        /// The URL asked for.
        url: String,
        /// Bytes kept in the `.part` file.
        have: u64,
    },
    /// A file or folder could not be read or written.
    #[error("cannot write {path}: {message}")]
    Io {
        /// The file or folder.
        path: String,
        /// What went wrong.
        message: String,
    },
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> DownloadError + '_ {
    move |e| DownloadError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// The `.part` path of `dest`.
pub fn part_path(dest: &Path) -> PathBuf {
    let mut name = dest.file_name().unwrap_or_default().to_os_string();
    name.push(".part");
    dest.with_file_name(name)
}

/// An HTTP client for [`download`]: connect and read timeouts, no redirects followed on its
/// own (see the module docs), no default headers (no credentials).
///
/// # Errors
/// [`DownloadError::Io`] when the TLS stack cannot be set up.
pub fn client() -> Result<reqwest::Client, DownloadError> {
    reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(20))
        .read_timeout(std::time::Duration::from_secs(60))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| DownloadError::Io {
            path: "the HTTP client".into(),
            message: e.to_string(),
        })
}

/// Creates `dir` (and its parents) readable by the user only, on Unix.
///
/// # Errors
/// [`DownloadError::Io`].
pub async fn private_dir(dir: &Path) -> Result<(), DownloadError> {
    tokio::fs::create_dir_all(dir).await.map_err(io(dir))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tokio::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .await
            .map_err(io(dir))?;
    }
    Ok(())
}

/// The SHA-256 an `X-Linked-Etag` value states: 64 hex digits, quoted or weak (`W/"…"`).
/// Anything else (a Git blob SHA-1 of a file outside LFS) states none.
pub fn served_sha256(headers: &HeaderMap) -> Option<String> {
    let raw = headers.get(LINKED_ETAG)?.to_str().ok()?.trim();
    let raw = raw.strip_prefix("W/").unwrap_or(raw).trim_matches('"');
    (raw.len() == 64 && raw.bytes().all(|b| b.is_ascii_hexdigit())).then(|| raw.to_lowercase())
}

fn header_u64(headers: &HeaderMap, name: impl reqwest::header::AsHeaderName) -> Option<u64> {
    headers.get(name)?.to_str().ok()?.trim().parse().ok()
}

/// Fetches `target` into place, reporting `(bytes present, total bytes if known)` as it goes,
/// until done or `cancel` fires. The final path is overwritten (callers skip files already
/// there: those were verified when they got there). See the module docs for resume and
/// checksum behaviour.
///
/// # Errors
/// [`DownloadError`]: transfer failures and cancels keep the `.part` file; a checksum
/// mismatch or a body longer than the file deletes it; no digest is refused up front.
pub async fn download(
    client: &reqwest::Client,
    target: &Target,
    on_bytes: &(dyn Fn(u64, Option<u64>) + Send + Sync),
    cancel: &CancellationToken,
) -> Result<Fetched, DownloadError> {
    let url = target.url.as_str();
    let transfer = |message: String| DownloadError::Transfer {
        url: url.to_owned(),
        message,
    };
    let dest = &target.dest;
    if let Some(dir) = dest.parent() {
        tokio::fs::create_dir_all(dir).await.map_err(io(dir))?;
    }
    let part = part_path(dest);
    // What is already there is hashed again: the digest covers the whole file.
    let (mut hasher, mut have) = hash::prefix(&part, target.bytes).await.map_err(io(&part))?;

    // The request, redirects followed by hand to see the digest and size the hub states.
    let mut at = url::Url::parse(url).map_err(|e| transfer(e.to_string()))?;
    let mut stated_sha: Option<String> = None;
    let mut stated_size: Option<u64> = None;
    let mut hops = 0;
    let response = loop {
        let mut request = client.get(at.clone());
        if have > 0 {
            request = request.header(RANGE, format!("bytes={have}-"));
        }
        let response = tokio::select! {
            r = request.send() => r.map_err(|e| transfer(e.to_string()))?,
            () = cancel.cancelled() => return Err(DownloadError::Cancelled { url: url.to_owned(), have }),
        };
        let headers = response.headers();
        stated_sha = stated_sha.or_else(|| served_sha256(headers));
        stated_size = stated_size.or_else(|| header_u64(headers, LINKED_SIZE));
        if !response.status().is_redirection() {
            break response;
        }
        hops += 1;
        let next = headers
            .get(LOCATION)
            .and_then(|l| l.to_str().ok())
            .and_then(|l| at.join(l).ok())
            .ok_or_else(|| transfer("a redirect without a usable Location".into()))?;
        if hops > MAX_REDIRECTS {
            return Err(transfer(format!("more than {MAX_REDIRECTS} redirects")));
        }
        at = next;
    };
    let expected = match &target.sha256 {
        Expected::Pinned(d) => d.to_lowercase(),
        Expected::Served => stated_sha.ok_or_else(|| DownloadError::NoDigest {
            url: url.to_owned(),
        })?,
    };
    let status = response.status();
    let whole_present = status == StatusCode::RANGE_NOT_SATISFIABLE && have > 0;
    if !status.is_success() && !whole_present {
        return Err(transfer(format!("the server answered {status}")));
    }
    let resumed = have > 0 && status == StatusCode::PARTIAL_CONTENT;
    let headers = response.headers();
    let total = target.bytes.or(stated_size).or_else(|| {
        // `Content-Range: bytes 10-99/100`, or the whole body's length.
        let from_range = headers
            .get(CONTENT_RANGE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit('/').next())
            .and_then(|t| t.trim().parse::<u64>().ok());
        if resumed {
            from_range
        } else {
            header_u64(headers, CONTENT_LENGTH)
        }
    });

    if !whole_present {
        if !resumed {
            // The server sent the whole file (it ignores ranges) or there was nothing to resume.
            hasher = Sha256::new();
            have = 0;
        }
        let mut options = tokio::fs::OpenOptions::new();
        options
            .create(true)
            .write(true)
            .append(resumed)
            .truncate(!resumed);
        #[cfg(unix)]
        options.mode(0o600);
        let mut out = options.open(&part).await.map_err(io(&part))?;
        on_bytes(have, total);
        let mut body = response.bytes_stream();
        loop {
            let chunk = tokio::select! {
                c = body.next() => c,
                () = cancel.cancelled() => {
                    out.flush().await.map_err(io(&part))?;
                    return Err(DownloadError::Cancelled { url: url.to_owned(), have });
                }
            };
            let Some(chunk) = chunk else { break };
            let chunk = match chunk {
                Ok(c) => c,
                Err(e) => {
                    // Keep what arrived for the next attempt.
                    let _ = out.flush().await;
                    return Err(transfer(e.to_string()));
                }
            };
            if let Some(t) = total
                && have + chunk.len() as u64 > t
            {
                // Longer than the file: not it, and it must not fill the disk.
                drop(out);
                let _ = tokio::fs::remove_file(&part).await;
                return Err(transfer(format!(
                    "the server sent more than the file's {t} bytes"
                )));
            }
            hasher.update(&chunk);
            out.write_all(&chunk).await.map_err(io(&part))?;
            have += chunk.len() as u64;
            on_bytes(have, total);
        }
        out.flush().await.map_err(io(&part))?;
        out.sync_all().await.map_err(io(&part))?;
    }
    let got = hex(&hasher.finalize());
    if got != expected {
        let _ = tokio::fs::remove_file(&part).await;
        tracing::warn!(%url, %got, %expected, "download refused: SHA-256 mismatch");
        return Err(DownloadError::Checksum {
            url: url.to_owned(),
            got,
            expected,
        });
    }
    tokio::fs::rename(&part, dest).await.map_err(io(dest))?;
    on_bytes(have, Some(have));
    Ok(Fetched {
        path: dest.clone(),
        bytes: have,
        sha256: got,
    })
}

#[cfg(test)]
mod tests;

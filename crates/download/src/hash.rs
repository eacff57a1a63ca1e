//! SHA-256 of files on disk, read in blocks (a model file can be gigabytes).

use sha2::{Digest, Sha256};
use std::path::Path;
use tokio::io::AsyncReadExt;

const BLOCK: usize = 1 << 20;

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The SHA-256 (lower-case hex) and length of the file at `path`.
///
/// # Errors
/// The file cannot be read.
pub async fn sha256_file(path: &Path) -> std::io::Result<(String, u64)> {
    let (hasher, len) = hash_all(path).await?;
    Ok((hex(&hasher.finalize()), len))
}

async fn hash_all(path: &Path) -> std::io::Result<(Sha256, u64)> {
    let mut file = tokio::fs::File::open(path).await?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; BLOCK];
    let mut len = 0u64;
    loop {
        let n = file.read(&mut buf).await?;
        if n == 0 {
            return Ok((hasher, len));
        }
        hasher.update(&buf[..n]);
        len += n as u64;
    }
}

/// The hash state and length of a `.part` file to resume from: empty when there is none, or
/// when it is longer than `max` bytes (then it cannot be a prefix of the file: start over).
pub(crate) async fn prefix(part: &Path, max: Option<u64>) -> std::io::Result<(Sha256, u64)> {
    match tokio::fs::metadata(part).await {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((Sha256::new(), 0)),
        Err(e) => Err(e),
        Ok(meta) if max.is_some_and(|m| meta.len() > m) => Ok((Sha256::new(), 0)),
        Ok(_) => hash_all(part).await,
    }
}

//! Files private to the user (DESIGN.md §8b): directories Engram creates are 0700 and the
//! database 0600 on Unix, so other local users cannot read an agent's memory. Existing
//! directories and files keep the modes they have (the user may have chosen them).

use engram_core::{Error, Result};
use std::path::Path;

/// Creates `dir` and its missing parents, each new one with mode 0700 on Unix.
/// Errors: `Storage` naming the directory.
pub fn create_dir(dir: &Path) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|e| Error::Storage(format!("cannot create directory {}: {e}", dir.display())))
}

/// Creates the empty file `path` with mode 0600 on Unix when it does not exist yet (an
/// existing file is left as it is). Errors: `Storage` naming the file.
pub fn create_file(path: &Path) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::Storage(format!(
            "cannot create {}: {e}",
            path.display()
        ))),
    }
}

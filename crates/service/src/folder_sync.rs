//! Bringing a folder in step with a directory on disk, wholly or under one path: files there
//! are added (an unchanged one is a no-op, by its SHA-256), files gone are deleted, and
//! symbolic links are never followed (each is listed as a failed file saying why). Hidden
//! entries and editors' temporary files are left out. The watcher (`folder_watch`) calls this
//! for the whole directory when it starts and for each changed path after that.

use crate::{Engram, Notice};
use engram_core::{FileStatus, FolderId, Result};
use engram_store::{FileUpload, Upserted};
use serde::Serialize;
use std::collections::HashSet;
use std::path::{Component, Path};

/// What one sync did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct SyncReport {
    /// Files read (new or changed), including those that failed to read.
    pub added: u32,
    /// Files whose bytes were already there.
    pub unchanged: u32,
    /// Files deleted from the folder because they left the directory.
    pub removed: u32,
    /// Files read that could not be read (their reason is on the file).
    pub failed: u32,
    /// Symbolic links not followed (each listed in the folder with the reason).
    pub links: u32,
}

/// Whether a directory entry is left out of a watched folder: hidden entries (`.git`,
/// `.DS_Store`), and the temporary and lock files editors, office suites and browsers write
/// beside a document while it is being saved or downloaded.
pub fn ignored_name(name: &str) -> bool {
    const SUFFIXES: [&str; 9] = [
        "~",
        ".swp",
        ".swo",
        ".swx",
        ".tmp",
        ".temp",
        ".part",
        ".crdownload",
        ".partial",
    ];
    let lower = name.to_ascii_lowercase();
    name.starts_with('.')
        || name.starts_with("~$")
        || (name.starts_with('#') && name.ends_with('#'))
        // Vim checks a directory is writable by creating and deleting a file of this name.
        || name == "4913"
        || lower == "thumbs.db"
        || lower == "desktop.ini"
        || SUFFIXES.iter().any(|s| lower.ends_with(s))
}

/// `path`'s name inside `root` (`/`-separated), or `None` when it is not under `root` or
/// any part of it is left out ([`ignored_name`]). The root itself is `Some("")`.
pub(crate) fn name_in(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(p) => {
                let p = p.to_string_lossy();
                if ignored_name(&p) {
                    return None;
                }
                parts.push(p.into_owned());
            }
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(parts.join("/"))
}

/// Whether the stored name `file` is `prefix` or lies under it (`""` covers everything).
fn under(prefix: &str, file: &str) -> bool {
    prefix.is_empty()
        || file == prefix
        || (file.starts_with(prefix) && file.as_bytes().get(prefix.len()) == Some(&b'/'))
}

impl Engram {
    /// Brings the folder in step with the directory `root` under the name `prefix` (a
    /// `/`-separated path inside it; `""` for all of it): what is on disk is added or re-read
    /// when changed, what the folder has there that the disk no longer has is deleted.
    /// `root` must be the resolved directory (no symbolic links in it). A root that is gone
    /// leaves the folder as it is.
    ///
    /// Errors: `not_found` for the folder; storage errors (a file that cannot be read is
    /// stored as failed, not an error).
    pub(crate) async fn sync_dir_path(
        &self,
        folder: &FolderId,
        root: &Path,
        prefix: &str,
    ) -> Result<SyncReport> {
        let mut report = SyncReport::default();
        let mut seen = HashSet::new();
        let start = if prefix.is_empty() {
            root.to_path_buf()
        } else {
            root.join(prefix)
        };
        match std::fs::symlink_metadata(&start) {
            Err(_) if prefix.is_empty() => return Ok(report),
            Err(_) => {}
            Ok(meta) if meta.file_type().is_symlink() => {
                self.record_link(folder, root, prefix, &start, &mut report)?;
                seen.insert(prefix.to_owned());
            }
            Ok(meta) if meta.is_file() => {
                self.sync_one(folder, prefix, &start, &mut report).await?;
                seen.insert(prefix.to_owned());
            }
            Ok(meta) if meta.is_dir() => {
                let walk = walkdir::WalkDir::new(&start)
                    .follow_links(false)
                    .sort_by_file_name()
                    .into_iter()
                    .filter_entry(|e| {
                        e.depth() == 0 || !ignored_name(&e.file_name().to_string_lossy())
                    });
                for entry in walk {
                    // An entry that vanished mid-walk or cannot be listed: its files are left
                    // as they are until an event names them again.
                    let Ok(entry) = entry else { continue };
                    let Some(name) = name_in(root, entry.path()) else {
                        continue;
                    };
                    if entry.file_type().is_symlink() {
                        self.record_link(folder, root, &name, entry.path(), &mut report)?;
                        seen.insert(name);
                    } else if entry.file_type().is_file() {
                        self.sync_one(folder, &name, entry.path(), &mut report)
                            .await?;
                        seen.insert(name);
                    }
                }
            }
            // A socket, a device, a FIFO: nothing to read.
            Ok(_) => {}
        }
        for file in self.store.folders().list_files(folder)? {
            if under(prefix, &file.name) && !seen.contains(&file.name) {
                self.store.folders().delete_file(&file.id)?;
                report.removed += 1;
            }
        }
        if report != SyncReport::default() {
            self.notify(Notice::FolderChanged {
                folder_id: folder.clone(),
            });
            for agent_id in self.store.folders().agents_of(folder).unwrap_or_default() {
                self.notify(Notice::AgentChanged { agent_id });
            }
        }
        Ok(report)
    }

    async fn sync_one(
        &self,
        folder: &FolderId,
        name: &str,
        path: &Path,
        report: &mut SyncReport,
    ) -> Result<()> {
        let added = self
            .add_disk_file(folder, name, path, crate::folder_ingest::Listed::ByWalk)
            .await?;
        if added.unchanged {
            report.unchanged += 1;
        } else {
            report.added += 1;
            if added.file.is_some_and(|f| f.status == FileStatus::Error) {
                report.failed += 1;
            }
        }
        Ok(())
    }

    /// Lists the symbolic link `path` (named `name`) as a failed file saying why it is not
    /// followed; left alone when it already says so.
    fn record_link(
        &self,
        folder: &FolderId,
        root: &Path,
        name: &str,
        path: &Path,
        report: &mut SyncReport,
    ) -> Result<()> {
        report.links += 1;
        let why = match std::fs::canonicalize(path) {
            Ok(target) if target.starts_with(root) => {
                "a symbolic link inside the watched directory: not followed (its target is read under its own name)".to_owned()
            }
            Ok(_) => "a symbolic link pointing outside the watched directory: not followed".to_owned(),
            Err(e) => format!("a symbolic link that leads nowhere or loops: not followed ({e})"),
        };
        let name = crate::check_file_name(name)?;
        let existing = self
            .store
            .folders()
            .list_files(folder)?
            .into_iter()
            .find(|f| f.name == name);
        if existing
            .is_some_and(|f| f.status == FileStatus::Error && f.error.as_deref() == Some(&why))
        {
            return Ok(());
        }
        let upload = FileUpload {
            mime: engram_documents::Kind::detect(&name, &[]).mime().to_owned(),
            name,
            size: 0,
            sha256: String::new(),
        };
        let file = match self.store.folders().upsert_file(folder, &upload)? {
            Upserted::Changed(f) | Upserted::Unchanged(f) => f,
        };
        self.store.folders().fail_file(&file.id, &why)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_and_temporary_files_are_left_out() {
        for name in [
            ".git",
            ".DS_Store",
            "notes.md~",
            ".notes.md.swp",
            "~$report.docx",
            "#draft.org#",
            "4913",
            "paper.pdf.part",
            "film.crdownload",
            "Thumbs.db",
            "x.TMP",
        ] {
            assert!(ignored_name(name), "{name}");
        }
        for name in ["notes.md", "report.docx", "2024", "a~b.txt", "temp.md"] {
            assert!(!ignored_name(name), "{name}");
        }
    }

    #[test]
    fn names_are_paths_inside_the_root() {
        let root = Path::new("/data/docs");
        assert_eq!(
            name_in(root, Path::new("/data/docs/a/b.md")).as_deref(),
            Some("a/b.md")
        );
        assert_eq!(name_in(root, Path::new("/data/docs")).as_deref(), Some(""));
        assert_eq!(name_in(root, Path::new("/data/other/b.md")), None);
        assert_eq!(name_in(root, Path::new("/data/docs/.git/HEAD")), None);
        assert!(under("a", "a/b.md") && under("a", "a") && under("", "x"));
        assert!(!under("a", "ab.md") && !under("a/b", "a"));
    }
}

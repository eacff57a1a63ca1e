//! What a client's files are and which changed: the memory server lists each block as an MCP
//! resource and tells subscribed clients when one changes, whoever changed it (an agent's run in
//! this process or another, a person, another client). A snapshot is cheap (one read of each
//! agent's blocks), so the server takes one on every memory notice and on a short tick, which
//! also sees writes made by other processes on the same database.

use super::paths::{self, Target};
use super::{MemoryClient, MemoryError};
use crate::rooms::MemoryServer;
use engram_core::{BlockId, Result};
use std::collections::BTreeMap;

/// One file a client sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryFile {
    /// `/memories/…/<label>.md`.
    pub path: String,
    /// The block's description.
    pub description: String,
    /// Its size in characters.
    pub chars: usize,
}

/// The version of every file a client sees, by path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemorySnapshot {
    files: BTreeMap<String, (BlockId, u64)>,
}

/// A difference between two snapshots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemoryChange {
    /// A file's content changed.
    Updated(String),
    /// Files were added, removed or renamed.
    ListChanged,
}

impl MemorySnapshot {
    /// What changed from `self` to `newer`: every file whose version moved, then one
    /// [`MemoryChange::ListChanged`] when the set of files differs.
    pub fn changes(&self, newer: &Self) -> Vec<MemoryChange> {
        let mut out: Vec<MemoryChange> = newer
            .files
            .iter()
            .filter(|(path, now)| self.files.get(*path).is_some_and(|before| before != *now))
            .map(|(path, _)| MemoryChange::Updated(path.clone()))
            .collect();
        if self.files.keys().ne(newer.files.keys()) {
            out.push(MemoryChange::ListChanged);
        }
        out
    }
}

impl MemoryServer<'_> {
    /// Every file `client` sees, agent by agent in the order of their blocks.
    /// Errors: `not_found` for an agent deleted since; `storage`.
    pub fn files(self, client: &MemoryClient) -> Result<Vec<MemoryFile>> {
        let mut out = Vec::new();
        for grant in &client.grants {
            for b in self.engram.store.blocks().of_agent(&grant.agent_id)? {
                out.push(MemoryFile {
                    path: paths::file_path(client, grant, &b.label),
                    chars: b.chars(),
                    description: b.description,
                });
            }
        }
        Ok(out)
    }

    /// The text of one file (a resource read: the block's value as stored).
    /// Errors: [`MemoryError::BadPath`]/[`MemoryError::NoSuchFile`].
    pub fn read(self, client: &MemoryClient, path: &str) -> Result<String, MemoryError> {
        let Target::File { grant, label, .. } = paths::parse(client, path)? else {
            return Err(MemoryError::NoSuchFile(path.to_owned()));
        };
        match self.engram.store.blocks().by_label(&grant.agent_id, &label) {
            Ok(b) => Ok(b.value),
            Err(engram_core::Error::NotFound { .. }) => {
                Err(MemoryError::NoSuchFile(path.to_owned()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The version of every file `client` sees now. Errors: `storage`.
    pub fn snapshot(self, client: &MemoryClient) -> Result<MemorySnapshot> {
        let mut files = BTreeMap::new();
        for grant in &client.grants {
            for b in self.engram.store.blocks().of_agent(&grant.agent_id)? {
                files.insert(paths::file_path(client, grant, &b.label), (b.id, b.version));
            }
        }
        Ok(MemorySnapshot { files })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(files: &[(&str, u64)]) -> MemorySnapshot {
        MemorySnapshot {
            files: files
                .iter()
                .map(|(p, v)| ((*p).to_owned(), (BlockId::from(format!("block-{p}")), *v)))
                .collect(),
        }
    }

    #[test]
    fn changes_name_moved_files_and_a_new_list() {
        let a = snap(&[("/memories/human.md", 1), ("/memories/persona.md", 4)]);
        assert!(a.changes(&a).is_empty());
        let b = snap(&[("/memories/human.md", 2), ("/memories/persona.md", 4)]);
        assert_eq!(
            a.changes(&b),
            [MemoryChange::Updated("/memories/human.md".into())]
        );
        let c = snap(&[("/memories/human.md", 1)]);
        assert_eq!(a.changes(&c), [MemoryChange::ListChanged]);
    }
}

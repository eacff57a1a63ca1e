//! Folders linked to a directory on disk: the link (which survives a restart, so the watching
//! resumes) and what the watching process last found, for the window and the CLI to show.

use crate::rooms::FolderRows;
use crate::sql::{self, DbResult, ts};
use engram_core::{FolderId, FolderWatch, Result, Timestamp, WatchState};
use rusqlite::{Connection, OptionalExtension, Row, params};

const WATCH_COLS: &str = "folder_id, path, state, error, synced_at";

fn watch_from_row(r: &Row<'_>) -> rusqlite::Result<FolderWatch> {
    let state: String = r.get(2)?;
    let synced: Option<i64> = r.get(4)?;
    Ok(FolderWatch {
        folder_id: FolderId::from(r.get::<_, String>(0)?),
        path: r.get(1)?,
        // Unknown values can only come from a newer Engram: this one has not looked yet.
        state: WatchState::parse(&state).unwrap_or(WatchState::Linked),
        error: r.get(3)?,
        synced_at: match synced {
            Some(_) => Some(ts(r, 4)?),
            None => None,
        },
    })
}

fn load(c: &Connection, folder: &FolderId) -> Result<Option<FolderWatch>> {
    c.prepare_cached(&format!(
        "SELECT {WATCH_COLS} FROM folder_watches WHERE folder_id = ?1"
    ))
    .db()?
    .query_row([folder.as_str()], watch_from_row)
    .optional()
    .db()
}

impl FolderRows<'_> {
    /// Links a folder to the directory `path` (absolute), replacing any earlier link; the link
    /// starts as [`WatchState::Linked`]. Errors: `NotFound("folder")`.
    pub fn link_dir(self, folder: &FolderId, path: &str) -> Result<FolderWatch> {
        let now = sql::micros(sql::now());
        self.store.write(|tx| {
            crate::folders::load(tx, folder)?;
            tx.prepare_cached(
                "INSERT INTO folder_watches (folder_id, path, state, created_at)
                 VALUES (?1, ?2, 'linked', ?3)
                 ON CONFLICT (folder_id) DO UPDATE SET path = excluded.path,
                        state = 'linked', error = NULL, synced_at = NULL",
            )
            .db()?
            .execute(params![folder.as_str(), path, now])
            .db()?;
            load(tx, folder)?
                .ok_or_else(|| engram_core::Error::not_found("folder", folder.as_str()))
        })
    }

    /// Removes a folder's link to its directory (its files stay); `false` when it had none.
    pub fn unlink_dir(self, folder: &FolderId) -> Result<bool> {
        self.store.write(|tx| {
            Ok(tx
                .prepare_cached("DELETE FROM folder_watches WHERE folder_id = ?1")
                .db()?
                .execute([folder.as_str()])
                .db()?
                > 0)
        })
    }

    /// The folder's link to a directory, if it has one.
    pub fn watch(self, folder: &FolderId) -> Result<Option<FolderWatch>> {
        self.store.read(|c| load(c, folder))
    }

    /// Every folder's link to a directory, by folder id.
    pub fn watches(self) -> Result<Vec<FolderWatch>> {
        self.store.read(|c| {
            c.prepare_cached(&format!(
                "SELECT {WATCH_COLS} FROM folder_watches ORDER BY folder_id"
            ))
            .db()?
            .query_map([], watch_from_row)
            .db()?
            .collect::<rusqlite::Result<Vec<_>>>()
            .db()
        })
    }

    /// Records what the watching process found: its `state`, the reason it cannot watch
    /// (`error`), and, when the folder was just brought in step, `synced_at`. A link removed
    /// meanwhile is left removed (`false`).
    pub fn set_watch_state(
        self,
        folder: &FolderId,
        state: WatchState,
        error: Option<&str>,
        synced_at: Option<Timestamp>,
    ) -> Result<bool> {
        self.store.write(|tx| {
            Ok(tx
                .prepare_cached(
                    "UPDATE folder_watches SET state = ?2, error = ?3,
                            synced_at = COALESCE(?4, synced_at)
                     WHERE folder_id = ?1",
                )
                .db()?
                .execute(params![
                    folder.as_str(),
                    state.as_str(),
                    error,
                    synced_at.map(sql::micros)
                ])
                .db()?
                > 0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;
    use engram_core::NewFolder;

    #[test]
    fn a_link_is_kept_updated_and_goes_with_its_folder() {
        let store = Store::open_in_memory().unwrap();
        let folder = store
            .folders()
            .create(&NewFolder {
                name: "docs".into(),
                ..NewFolder::default()
            })
            .unwrap();
        let w = store.folders().link_dir(&folder.id, "/data/docs").unwrap();
        assert_eq!((w.state, w.synced_at), (WatchState::Linked, None));
        let now = sql::now();
        assert!(
            store
                .folders()
                .set_watch_state(&folder.id, WatchState::Watching, None, Some(now))
                .unwrap()
        );
        assert!(
            store
                .folders()
                .set_watch_state(&folder.id, WatchState::Missing, Some("gone"), None)
                .unwrap()
        );
        let w = store.folders().watch(&folder.id).unwrap().unwrap();
        assert_eq!(w.state, WatchState::Missing);
        assert_eq!(w.error.as_deref(), Some("gone"));
        assert_eq!(w.synced_at, Some(now));
        assert_eq!(store.folders().watches().unwrap().len(), 1);
        store.folders().delete(&folder.id).unwrap();
        assert!(store.folders().watches().unwrap().is_empty());
        assert!(!store.folders().unlink_dir(&folder.id).unwrap());
    }
}

//! A file stored in pieces (as one read as a stream is): hidden while it is `parsing`, then
//! read a window at a time and found by words; failing or deleting it leaves no piece behind.

use crate::support::{create, temp_store};
use engram_core::{FileStatus, NewFolder, Provenance};
use engram_retrieval::HybridSearch;
use engram_store::{FileUpload, NewChunk, NewPiece, Store, Upserted};

/// Rows of `table` of the file `id`, counted in the database file itself.
fn rows(dir: &tempfile::TempDir, table: &str, id: &str) -> i64 {
    let conn = rusqlite::Connection::open(dir.path().join("data").join("engram.db")).unwrap();
    conn.query_row(
        &format!("SELECT count(*) FROM {table} WHERE file_id = ?1"),
        [id],
        |r| r.get(0),
    )
    .unwrap()
}

/// A new folder named `logs`.
fn logs(store: &Store) -> engram_core::Folder {
    store
        .folders()
        .create(&NewFolder {
            name: "logs".into(),
            ..NewFolder::default()
        })
        .unwrap()
}

/// A new text file `name` in `folder` (not read yet).
fn new_file(store: &Store, folder: &engram_core::Folder, name: &str) -> engram_core::FolderFile {
    let upload = FileUpload {
        name: name.into(),
        mime: "text/plain".into(),
        size: 1,
        sha256: name.into(),
    };
    match store.folders().upsert_file(&folder.id, &upload).unwrap() {
        Upserted::Changed(f) => f,
        Upserted::Unchanged(_) => panic!("a new file"),
    }
}

/// Stores pieces of 1,000 lines `line n` each (piece `i` starting at line `1000 i + 1`), one
/// passage a piece, and `rare zebra` on line 2,500.
fn store_pieces(store: &Store, file: &engram_core::FileId, pieces: u32) {
    for idx in 0..pieces {
        let first = idx * 1000 + 1;
        let text = (first..first + 1000)
            .map(|n| {
                if n == 2500 {
                    "line 2500 rare zebra".to_owned()
                } else {
                    format!("line {n}")
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        let chunk = NewChunk {
            text: if idx == 2 {
                "rare zebra".into()
            } else {
                format!("common words {idx}")
            },
            provenance: Provenance {
                page: None,
                heading: None,
                line_start: first,
                line_end: first + 999,
            },
        };
        let piece = NewPiece {
            idx,
            first_line: first,
            lines: 1000,
            text,
            chunks: vec![chunk],
            first_seq: idx as usize,
        };
        store.folders().append_text_piece(file, &piece).unwrap();
    }
}

#[test]
fn a_file_in_pieces_is_hidden_until_whole_then_read_by_windows_and_deleted_whole() {
    let (dir, store) = temp_store();
    let (agent, _) = create(&store, "Sam");
    let folder = logs(&store);
    store.folders().attach(&agent.id, &folder.id).unwrap();
    let file = new_file(&store, &folder, "big.log");
    store.folders().begin_streamed_file(&file.id).unwrap();
    store_pieces(&store, &file.id, 3);
    let id = file.id.as_str();
    assert_eq!(rows(&dir, "file_text_pieces", id), 3);

    // Still `parsing`: no text to read, no passage found.
    assert_eq!(store.folders().text_part(&file.id, 0).unwrap(), None);
    assert!(
        store
            .folders()
            .read_window(&file.id, "logs/big.log".into(), 1, 10)
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .search_agent_files(&agent.id, "zebra", None, 5)
            .unwrap()
            .is_empty()
    );
    // A piece stored twice is refused, not doubled.
    let again = NewPiece {
        idx: 0,
        first_line: 1,
        lines: 1,
        text: "x".into(),
        chunks: Vec::new(),
        first_seq: 9,
    };
    assert!(store.folders().append_text_piece(&file.id, &again).is_err());

    let done = store
        .folders()
        .finish_streamed_file(&file.id, 3000, FileStatus::Completed)
        .unwrap();
    assert_eq!((done.lines, done.chunks), (3000, 3));
    // A window across the cut between pieces 1 and 2, numbered by the file's lines.
    let w = store
        .folders()
        .read_window(&file.id, "logs/big.log".into(), 1999, 3)
        .unwrap()
        .unwrap();
    assert_eq!(w.text, "1999: line 1999\n2000: line 2000\n2001: line 2001");
    assert_eq!((w.offset, w.last, w.lines), (1999, 2001, 3000));
    let w = store
        .folders()
        .read_window(&file.id, "logs/big.log".into(), 2500, 1)
        .unwrap()
        .unwrap();
    assert_eq!(w.text, "2500: line 2500 rare zebra");
    let part = store.folders().text_part(&file.id, 2).unwrap().unwrap();
    assert_eq!(part.first_line, 2001);
    assert!(store.folders().text_part(&file.id, 3).unwrap().is_none());
    let (head, more) = store
        .folders()
        .file_text_head(&file.id, 20)
        .unwrap()
        .unwrap();
    assert_eq!((head.as_str(), more), ("line 1\nline 2\nline 3", true));
    let (whole, _) = store.folders().file_text(&file.id).unwrap().unwrap();
    assert_eq!(whole.lines().count(), 3000);
    let hits = store
        .search_agent_files(&agent.id, "zebra", None, 5)
        .unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].citation(), "big.log:L2001-3000");

    store.folders().delete_file(&file.id).unwrap();
    assert_eq!(rows(&dir, "file_text_pieces", id), 0);
    assert_eq!(rows(&dir, "file_chunks", id), 0);
}

#[test]
fn a_file_failed_half_read_keeps_no_piece_nor_passage() {
    let (dir, store) = temp_store();
    let folder = logs(&store);
    let file = new_file(&store, &folder, "big.log");
    store.folders().begin_streamed_file(&file.id).unwrap();
    store_pieces(&store, &file.id, 2);
    let failed = store
        .folders()
        .fail_file(&file.id, "cannot open it: gone")
        .unwrap();
    assert_eq!(failed.status, FileStatus::Error);
    assert_eq!(rows(&dir, "file_text_pieces", file.id.as_str()), 0);
    assert_eq!(rows(&dir, "file_chunks", file.id.as_str()), 0);
    // No more pieces are taken once it failed.
    let late = NewPiece {
        idx: 2,
        first_line: 2001,
        lines: 1,
        text: "late".into(),
        chunks: Vec::new(),
        first_seq: 2,
    };
    assert!(store.folders().append_text_piece(&file.id, &late).is_err());

    // Read again with other bytes, the old pieces do not come back.
    let upload = FileUpload {
        name: "big.log".into(),
        mime: "text/plain".into(),
        size: 1,
        sha256: "b".into(),
    };
    let Upserted::Changed(file) = store.folders().upsert_file(&folder.id, &upload).unwrap() else {
        panic!("changed");
    };
    store.folders().begin_streamed_file(&file.id).unwrap();
    store_pieces(&store, &file.id, 1);
    let done = store
        .folders()
        .finish_streamed_file(&file.id, 1000, FileStatus::Completed)
        .unwrap();
    assert_eq!(done.lines, 1000);
    assert_eq!(rows(&dir, "file_text_pieces", file.id.as_str()), 1);
}

#[test]
fn a_reading_cut_short_by_a_stop_is_failed_and_one_alive_is_left_alone() {
    let (dir, store) = temp_store();
    let folder = logs(&store);
    let cut = new_file(&store, &folder, "cut.log");
    store.folders().begin_streamed_file(&cut.id).unwrap();
    store_pieces(&store, &cut.id, 2);
    let done = new_file(&store, &folder, "done.log");
    store.folders().begin_streamed_file(&done.id).unwrap();
    store_pieces(&store, &done.id, 1);
    store
        .folders()
        .finish_streamed_file(&done.id, 1000, FileStatus::Completed)
        .unwrap();

    // Touched just now (its last piece): a reading alive, left alone.
    let ten_minutes_ago = chrono::Utc::now() - chrono::TimeDelta::minutes(10);
    assert!(
        store
            .folders()
            .fail_interrupted_reads(ten_minutes_ago)
            .unwrap()
            .is_empty()
    );
    assert_eq!(rows(&dir, "file_text_pieces", cut.id.as_str()), 2);

    // Seen from later on, it was cut short: failed, nothing of it left; the finished file stays.
    let later = chrono::Utc::now() + chrono::TimeDelta::seconds(1);
    let failed = store.folders().fail_interrupted_reads(later).unwrap();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].id, cut.id);
    assert_eq!(failed[0].status, FileStatus::Error);
    assert!(failed[0].error.as_deref().unwrap().contains("add it again"));
    assert_eq!(rows(&dir, "file_text_pieces", cut.id.as_str()), 0);
    assert_eq!(rows(&dir, "file_chunks", cut.id.as_str()), 0);
    assert_eq!(
        store.folders().get_file(&done.id).unwrap().status,
        FileStatus::Completed
    );
    assert_eq!(rows(&dir, "file_text_pieces", done.id.as_str()), 1);
}

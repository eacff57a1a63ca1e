//! Text files too big to read whole, read as a stream through the service from real files
//! on disk: stored in pieces, read back by windows, found by words with the right lines,
//! deleted whole; a read cancelled half-way leaves nothing behind.

use crate::Engram;
use engram_core::{AgentId, EmbeddingConfig, FileStatus, FolderId, NewAgent, NewFolder};
use engram_documents::Kind;
use engram_retrieval::HybridSearch;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Line `n` of the generated files (1-based); line `needle` holds two rare words.
fn line(n: u32, needle: u32) -> String {
    if n == needle {
        format!("row {n}: the zebra quartz is here")
    } else if n.is_multiple_of(101) {
        format!(
            "row {n}: crème brûlée, naïve café — {}",
            "ünïcödé ".repeat(n as usize % 7)
        )
    } else {
        format!(
            "row {n}: the quick brown fox jumps over the lazy dog {}",
            n * 7
        )
    }
}

/// Writes `lines` lines (see [`line`]) to `path`; returns its bytes.
fn write_lines(path: &Path, lines: u32, needle: u32) -> u64 {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for n in 1..=lines {
        writeln!(out, "{}", line(n, needle)).unwrap();
    }
    out.flush().unwrap();
    std::fs::metadata(path).unwrap().len()
}

async fn folder_and_agent(engram: &Engram) -> (FolderId, AgentId) {
    let folder = engram
        .folders()
        .create(NewFolder {
            name: "logs".into(),
            embedding: Some(EmbeddingConfig {
                model: "none".into(),
                base_url: None,
            }),
            ..NewFolder::default()
        })
        .unwrap();
    let agent = engram
        .agents()
        .create(NewAgent {
            name: "Sam".into(),
            ..NewAgent::default()
        })
        .await
        .unwrap()
        .agent
        .id;
    engram.folders().attach(&agent, &folder.id).unwrap();
    (folder.id, agent)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_file_read_as_a_stream_is_stored_in_pieces_read_and_searched() {
    let home = tempfile::tempdir().unwrap();
    let engram = Engram::open_for_test(home.path());
    let (folder, agent) = folder_and_agent(&engram).await;
    let lines = 80_000;
    let needle = lines - 5;
    let path = home.path().join("big.txt");
    let size = write_lines(&path, lines, needle);
    assert!(
        size > 4 * engram_documents::stream::PIECE_BYTES as u64,
        "{size}"
    );

    let file = std::fs::File::open(&path).unwrap();
    let added = engram
        .add_streamed_file(&folder, "big.txt", file, Kind::Text, size)
        .await
        .unwrap();
    let file = added.file.unwrap();
    assert_eq!(file.status, FileStatus::Completed, "{:?}", file.error);
    assert_eq!((file.lines, file.size), (lines, size));
    let store = engram.store.folders();
    assert!(store.text_part(&file.id, 3).unwrap().is_some(), "in pieces");

    // The same passages as the file read whole.
    let bytes = std::fs::read(&path).unwrap();
    let whole = engram_documents::parse("big.txt", &bytes).unwrap();
    let stored = engram.folders().passages(&folder, usize::MAX, 0).unwrap();
    assert_eq!(stored.len(), whole.chunks.len());
    assert!(
        stored
            .iter()
            .zip(&whole.chunks)
            .all(|((_, s), w)| s.text == w.text
                && (s.provenance.line_start, s.provenance.line_end) == (w.line_start, w.line_end))
    );
    // Same text, through the service's reader (under its bound: all of it, no note).
    let text = engram.folders().file_text(&file.id).unwrap().unwrap();
    assert!(text == whole.text, "the text read back differs");

    // A window in the middle.
    let w = store
        .read_window(&file.id, "logs/big.txt".into(), 40_000, 3)
        .unwrap()
        .unwrap();
    let want: Vec<String> = (40_000..40_003)
        .map(|n| format!("{n}: {}", line(n, needle)))
        .collect();
    assert_eq!(w.text, want.join("\n"));
    assert_eq!(w.lines, lines);

    // Walked a piece at a time (as grep_files does), the needle is on its line.
    let mut found = Vec::new();
    let mut idx = 0;
    while let Some(part) = store.text_part(&file.id, idx).unwrap() {
        idx += 1;
        for (i, l) in part.text.split('\n').enumerate() {
            if l.contains("zebra quartz") {
                found.push(part.first_line + i as u32);
            }
        }
    }
    assert_eq!(found, vec![needle]);
    assert!(idx >= 4, "{idx} pieces");

    // Found by words, cited at its line near the end.
    let hits = engram
        .store
        .search_agent_files(&agent, "zebra quartz", None, 3)
        .unwrap();
    let hit = hits.first().expect("a hit");
    assert!(
        hit.provenance.line_start <= needle && needle <= hit.provenance.line_end,
        "{}",
        hit.citation()
    );
    assert!(hit.text.contains("zebra quartz"));

    // The same bytes again: nothing to do.
    let again = engram
        .add_streamed_file(
            &folder,
            "big.txt",
            std::fs::File::open(&path).unwrap(),
            Kind::Text,
            size,
        )
        .await
        .unwrap();
    assert!(again.unchanged);

    engram.folders().delete_file(&file.id).unwrap();
    assert!(
        engram
            .folders()
            .passages(&folder, 10, 0)
            .unwrap()
            .is_empty()
    );
    assert!(store.text_part(&file.id, 0).is_err(), "the file is gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cancelled_half_way_leaves_nothing() {
    let home = tempfile::tempdir().unwrap();
    let engram = Engram::open_for_test(home.path());
    let (folder, _) = folder_and_agent(&engram).await;
    let path = home.path().join("huge.csv");
    let size = write_lines(&path, 600_000, 0);
    let adding = {
        let (engram, folder, path) = (Arc::clone(&engram), folder.clone(), path.clone());
        tokio::spawn(async move {
            let file = std::fs::File::open(&path).unwrap();
            engram
                .add_streamed_file(&folder, "huge.csv", file, Kind::Csv, size)
                .await
        })
    };
    // Wait for the first pieces to be stored, then cancel.
    let start = Instant::now();
    loop {
        if !engram.folders().passages(&folder, 1, 0).unwrap().is_empty() {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let files = engram.folders().files(&folder).unwrap();
    assert_eq!(files[0].status, FileStatus::Parsing);
    assert!(engram.folders().cancel_read(&folder, "huge.csv"));
    let added = tokio::time::timeout(Duration::from_secs(30), adding)
        .await
        .expect("the add answers once cancelled")
        .unwrap()
        .unwrap();
    assert!(
        added
            .skipped
            .as_deref()
            .unwrap_or("")
            .starts_with("cancelled"),
        "{added:?}"
    );
    assert!(engram.folders().files(&folder).unwrap().is_empty());
    assert!(engram.folders().passages(&folder, 1, 0).unwrap().is_empty());
    assert!(engram.store.folders().text_part(&files[0].id, 0).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_big_pdf_is_refused_saying_pdfs_are_read_whole() {
    let home = tempfile::tempdir().unwrap();
    let engram = Engram::open_for_test(home.path());
    let (folder, _) = folder_and_agent(&engram).await;
    let path = home.path().join("scan.pdf");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(engram_documents::MAX_FILE_BYTES + 1).unwrap();
    let added = engram
        .folders()
        .add_paths(&folder, std::slice::from_ref(&path))
        .await
        .unwrap();
    let file = added[0].file.as_ref().unwrap();
    assert_eq!(file.status, FileStatus::Error);
    let error = file.error.as_deref().unwrap();
    assert!(error.contains("PDF files are read whole"), "{error}");
}

/// The way `engram folder add` takes it: a text file just over the 64 MiB a file is read
/// whole goes through the stream, is hashed without being held (the same bytes again are
/// left as they are), and its last lines are read and found where they are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_file_over_64_mib_added_from_disk_is_streamed() {
    let home = tempfile::tempdir().unwrap();
    let engram = Engram::open_for_test(home.path());
    let (folder, agent) = folder_and_agent(&engram).await;
    let path = home.path().join("big.log");
    let mut lines = 1_000_000;
    let mut size = write_lines(&path, lines, lines - 2);
    while size <= engram_documents::MAX_FILE_BYTES {
        lines += 100_000;
        size = write_lines(&path, lines, lines - 2);
    }
    let needle = lines - 2;
    let added = engram
        .folders()
        .add_paths(&folder, std::slice::from_ref(&path))
        .await
        .unwrap();
    let file = added[0].file.clone().unwrap();
    assert_eq!(file.status, FileStatus::Completed, "{:?}", file.error);
    assert_eq!((file.lines, file.size), (lines, size));
    let store = engram.store.folders();
    assert!(
        store.text_part(&file.id, 60).unwrap().is_some(),
        "about 1 MiB a piece"
    );
    let w = store
        .read_window(&file.id, "logs/big.log".into(), needle, 2)
        .unwrap()
        .unwrap();
    assert_eq!(
        w.text,
        format!(
            "{needle}: {}\n{}: {}",
            line(needle, needle),
            needle + 1,
            line(needle + 1, needle)
        )
    );
    let hits = engram
        .store
        .search_agent_files(&agent, "zebra quartz", None, 3)
        .unwrap();
    assert!(
        hits.first()
            .is_some_and(|h| h.provenance.line_start <= needle && needle <= h.provenance.line_end),
        "{hits:?}"
    );
    // The window's "show text": the first 8 MiB and a note.
    let shown = engram.folders().file_text(&file.id).unwrap().unwrap();
    assert!(shown.len() < (8 << 20) + 4096, "{}", shown.len());
    assert!(shown.starts_with(&line(1, needle)));
    assert!(shown.ends_with(&format!("of {lines} lines shown (8 MiB of text at most); an agent reads the rest with open_files and grep_files]")), "{}", &shown[shown.len() - 200..]);

    let again = engram
        .folders()
        .add_paths(&folder, std::slice::from_ref(&path))
        .await
        .unwrap();
    assert!(again[0].unchanged, "{again:?}");
}

//! Memory and time of adding a 200 MB text file to a folder, read as a stream (words only,
//! no embedding model), as a report: `cargo bench -p engram-service --bench big_file`.
//!
//! Writes a file of log-like lines into a temporary directory (`BIG_FILE_MB`, default 200),
//! times reading and cutting it alone, adds it with
//! [`Folders::add_paths`](engram_service::Folders::add_paths) as `engram folder add` does,
//! then reads its first 8 MiB as the window's "show text" does, a window near its end as
//! `open_files` does, and every line against a regex as `grep_files` walks it. Prints the
//! time of each, the process's peak resident set (`VmHWM`), the lines and passages stored,
//! the data directory's size, and the machine's load average (the machine is shared; the
//! times only mean something next to it).

use engram_core::{EmbeddingConfig, FileStatus, NewFolder};
use engram_service::{Engram, Options};
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

/// A field of `/proc/self/status` in MB (`VmHWM`: peak resident set; `VmRSS`: now).
fn status_mb(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn main() {
    let mb: u64 = std::env::var("BIG_FILE_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.log");
    let started = Instant::now();
    let mut lines = 0u64;
    {
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let mut written = 0u64;
        while written < mb << 20 {
            lines += 1;
            let line = format!(
                "2026-11-28T20:{:02}:{:02} host-{} GET /api/v1/items/{} 200 {} ms user=u{} agent=\"lab client\"\n",
                lines / 60 % 60,
                lines % 60,
                lines % 17,
                lines * 7919 % 100_000,
                lines % 900,
                lines % 4000
            );
            out.write_all(line.as_bytes()).unwrap();
            written += line.len() as u64;
        }
        out.flush().unwrap();
    }
    let size = std::fs::metadata(&path).unwrap().len();
    println!(
        "file: {:.1} MB, {lines} lines, written in {:.1} s",
        size as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    // Reading and cutting alone, without storing: what the database adds is the rest.
    let started = Instant::now();
    let mut stream = engram_documents::TextStream::new(
        std::fs::File::open(&path).unwrap(),
        engram_documents::Kind::Text,
        engram_documents::MAX_STREAM_BYTES,
    )
    .unwrap();
    let (mut pieces, mut passages) = (0, 0);
    while let Some(p) = stream.next_piece().unwrap() {
        pieces += 1;
        passages += p.chunks.len();
    }
    println!(
        "read and cut alone: {:.1} s, {pieces} pieces, {passages} passages, peak resident set {:.0} MB",
        started.elapsed().as_secs_f64(),
        status_mb("VmHWM")
    );
    let home = dir.path().join("home");
    let engram = Engram::open(Options {
        home: Some(home.clone()),
        secrets: Arc::new(engram_secrets::MemoryStore::default()),
        env: Arc::new(|_| None),
    })
    .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
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
    let before = (status_mb("VmHWM"), status_mb("VmRSS"));
    let started = Instant::now();
    let added = rt
        .block_on(
            engram
                .folders()
                .add_paths(&folder.id, std::slice::from_ref(&path)),
        )
        .unwrap();
    let took = started.elapsed().as_secs_f64();
    let file = added[0].file.clone().unwrap();
    assert_eq!(file.status, FileStatus::Completed, "{:?}", file.error);
    assert_eq!(u64::from(file.lines), lines);
    let peak = status_mb("VmHWM");
    println!(
        "added: {took:.1} s ({:.1} MB/s), {} lines, {} passages",
        size as f64 / 1e6 / took,
        file.lines,
        file.chunks
    );
    println!(
        "resident set: {:.0} MB before adding (peak {:.0} MB), peak {peak:.0} MB while adding, {:.0} MB after",
        before.1,
        before.0,
        status_mb("VmRSS")
    );
    let started = Instant::now();
    let text = engram.folders().file_text(&file.id).unwrap().unwrap();
    println!(
        "first 8 MiB of the text (the window's \"show text\"): {:.0} ms, {} bytes",
        started.elapsed().as_secs_f64() * 1e3,
        text.len()
    );
    drop(text);
    // What open_files and grep_files read, through a second handle on the same database.
    let store = engram_store::Store::open(&home.join(engram_service::DB_FILE)).unwrap();
    let started = Instant::now();
    let near_end = file.lines - 10;
    let w = store
        .folders()
        .read_window(&file.id, "logs/big.log".into(), near_end, 100)
        .unwrap()
        .unwrap();
    println!(
        "a window of 100 lines near the end: {:.1} ms ({} lines shown)",
        started.elapsed().as_secs_f64() * 1e3,
        w.last + 1 - w.offset
    );
    let started = Instant::now();
    let re = regex::Regex::new("u3999 agent").unwrap();
    let (mut idx, mut matches) = (0, 0);
    while let Some(part) = store.folders().text_part(&file.id, idx).unwrap() {
        idx += 1;
        matches += part.text.split('\n').filter(|l| re.is_match(l)).count();
    }
    println!(
        "every line against a regex, a piece at a time (grep_files' walk): {:.1} s, {matches} matches; peak resident set {:.0} MB",
        started.elapsed().as_secs_f64(),
        status_mb("VmHWM")
    );
    let db: u64 = walkdir::WalkDir::new(&home)
        .into_iter()
        .filter_map(|e| e.ok()?.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum();
    println!(
        "data directory: {:.1} MB; peak resident set at the end {:.0} MB",
        db as f64 / 1e6,
        status_mb("VmHWM")
    );
    println!(
        "load average: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
}

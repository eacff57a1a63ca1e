//! Rough performance checks (ignored by default; run with
//! `cargo test -p engram-store --release -- --ignored --nocapture perf`).

use crate::support::{create, temp_store};
use engram_core::{NewMessage, NewPassage};
use engram_store::{MessageQuery, PassageQuery};
use std::time::{Duration, Instant};

/// A tiny deterministic generator (xorshift64*), so no extra dependency is needed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A word index with a roughly Zipfian distribution over `n` words.
    fn zipf(&mut self, n: usize) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((n as f64).powf(u) as usize).saturating_sub(1).min(n - 1)
    }

    fn text(&mut self, words: usize) -> String {
        (0..words)
            .map(|_| format!("w{}", self.zipf(20_000)))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn p50(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[test]
#[ignore = "slow; a rough benchmark"]
fn perf_archival_insert_and_search() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "perf");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let n: usize = std::env::var("PERF_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let texts: Vec<String> = (0..n).map(|_| rng.text(30)).collect();
    let start = Instant::now();
    for (i, text) in texts.into_iter().enumerate() {
        let tags = if i % 100 == 0 {
            vec!["rare".to_owned()]
        } else {
            vec![format!("t{}", i % 5)]
        };
        store
            .insert_passages(
                &a.id,
                &[NewPassage {
                    text,
                    tags,
                    ..Default::default()
                }],
            )
            .unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    println!("insert: {:.0} passages/s (one per call)", n as f64 / secs);

    let mut times = Vec::new();
    let mut tagged = Vec::new();
    for _ in 0..200 {
        let query = rng.text(3);
        let t = Instant::now();
        let hits = store
            .search_passages(
                &a.id,
                &PassageQuery {
                    query: query.clone(),
                    top_k: 5,
                    ..Default::default()
                },
            )
            .unwrap();
        times.push(t.elapsed());
        assert!(!hits.is_empty());
        let t = Instant::now();
        store
            .search_passages(
                &a.id,
                &PassageQuery {
                    query,
                    tags: vec!["rare".into()],
                    top_k: 5,
                    ..Default::default()
                },
            )
            .unwrap();
        tagged.push(t.elapsed());
    }
    println!(
        "search p50: {:?}, with tag filter p50: {:?}",
        p50(times),
        p50(tagged)
    );
    let t = Instant::now();
    store.memory_counts(&a.id).unwrap();
    println!("memory_counts: {:?}", t.elapsed());
}

#[test]
#[ignore = "slow; a rough benchmark"]
fn perf_context_load_and_conversation_search() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "perf");
    let mut rng = Rng(42);
    let msgs: Vec<_> = (0..10_000)
        .map(|_| NewMessage::user(rng.text(40)))
        .collect();
    for chunk in msgs.chunks(10) {
        store.append_messages(&a.id, chunk).unwrap();
    }
    let ids: Vec<_> = store
        .list_messages(&a.id, None, 9_900)
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    store
        .evict_messages(&a.id, &ids[..9_800], "summary")
        .unwrap();
    let t = Instant::now();
    let context = store.in_context_messages(&a.id).unwrap();
    println!(
        "in-context load ({} of 10k): {:?}",
        context.len(),
        t.elapsed()
    );
    let mut times = Vec::new();
    for _ in 0..100 {
        let t = Instant::now();
        store
            .search_messages(
                &a.id,
                &MessageQuery {
                    query: rng.text(3),
                    limit: 10,
                    ..Default::default()
                },
            )
            .unwrap();
        times.push(t.elapsed());
    }
    println!("conversation search p50: {:?}", p50(times));
    let t = Instant::now();
    store
        .repair_orphaned_tool_calls(&a.id, chrono::Utc::now())
        .unwrap();
    println!("repair check: {:?}", t.elapsed());
}

#[test]
#[ignore = "diagnostics"]
fn perf_plan() {
    const WORDS: &[&str] = &[
        "garden", "tulip", "river", "coffee", "meeting", "project", "deadline", "sister",
        "birthday", "guitar", "recipe", "cherry", "pie", "travel", "lisbon", "train", "budget",
        "invoice", "doctor", "running", "marathon", "novel", "chapter", "keyboard", "rust",
        "sqlite", "memory", "agent", "summary", "window", "mountain", "bicycle", "holiday",
        "concert", "piano", "lesson", "school", "teacher", "market", "bread",
    ];
    fn sentence(seed: u64) -> String {
        let mut x = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..12)
            .map(|_| {
                x ^= x >> 33;
                x = x.wrapping_mul(0xff51afd7ed558ccd);
                WORDS[(x % WORDS.len() as u64) as usize]
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.db");
    let store = engram_store::Store::open(&path).unwrap();
    let (a, _) = create(&store, "perf");
    let n: u64 = std::env::var("PERF_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let t = Instant::now();
    for i in 0..20_000u64.min(n) {
        store
            .insert_passages(
                &a.id,
                &[NewPassage {
                    text: sentence(i),
                    ..Default::default()
                }],
            )
            .unwrap();
    }
    println!(
        "insert rate: {:.0}/s",
        20_000f64.min(n as f64) / t.elapsed().as_secs_f64()
    );
    for chunk in (20_000..n).collect::<Vec<_>>().chunks(1000) {
        let ps: Vec<_> = chunk
            .iter()
            .map(|i| NewPassage {
                text: sentence(*i),
                ..Default::default()
            })
            .collect();
        store.insert_passages(&a.id, &ps).unwrap();
    }
    let mut all = Vec::new();
    for i in 0..300u64 {
        let text = sentence(i + 1_000_000);
        let words: Vec<&str> = text.split(' ').take(1 + (i % 3) as usize).collect();
        let t = Instant::now();
        let hits = store
            .search_passages(
                &a.id,
                &PassageQuery {
                    query: words.join(" "),
                    top_k: 5,
                    ..Default::default()
                },
            )
            .unwrap();
        all.push(t.elapsed());
        assert!(!hits.is_empty());
    }
    println!("store search p50 {:?}", p50(all));
    let conn = rusqlite::Connection::open(&path).unwrap();
    let sqls = [
        "SELECT p.pk, -bm25(passages_fts) FROM passages_fts JOIN passages p ON p.pk = passages_fts.rowid
         WHERE passages_fts MATCH ?1 AND p.agent_id = ?2 ORDER BY bm25(passages_fts) LIMIT 5",
        "SELECT rowid, rank FROM passages_fts WHERE passages_fts MATCH ?1 AND ?2 IS NOT NULL ORDER BY rank LIMIT 5",
        "SELECT rowid, bm25(passages_fts) FROM passages_fts WHERE passages_fts MATCH ?1 AND ?2 IS NOT NULL",
        "SELECT count(*) FROM passages_fts WHERE passages_fts MATCH ?1 AND ?2 IS NOT NULL",
    ];
    for sql in sqls {
        println!("{sql}");
        for q in [
            "\"garden\"",
            "\"garden\" OR \"tulip\"",
            "\"garden\" AND \"tulip\"",
            "\"garden\" OR \"tulip\" OR \"river\"",
        ] {
            let mut stmt = conn.prepare(sql).unwrap();
            let mut times = Vec::new();
            let mut n = 0;
            for _ in 0..5 {
                let t = Instant::now();
                n = stmt
                    .query_map(rusqlite::params![q, a.id.as_str()], |_| Ok(()))
                    .unwrap()
                    .count();
                times.push(t.elapsed());
            }
            println!("  {q}: {n} rows, p50 {:?}", p50(times));
        }
    }
}

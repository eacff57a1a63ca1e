//! Search at scale, as a report: `cargo bench --bench search_scale`.
//!
//! For each size in `ENGRAM_SCALE_SIZES` (passages, comma-separated; default `100000`;
//! `100000,1000000` adds a million, which takes several minutes and about 3 GB of disk
//! in the temp dir) one agent gets that many passages written straight through the store's
//! batch insert: 12-word sentences over a 20,000-word Zipf-skewed vocabulary (as
//! `benches/engine.rs`) with 384-dimensional *hashed* vectors (each word a fixed pseudo-random
//! unit vector, a passage the normalised sum of its words', so passages that share words are
//! near each other, as with a real model). Prints p50/p95 of lexical, vector and hybrid
//! search, the vector index's build and load times, its memory and file size, the database's
//! size, the process's resident memory, and the vector search's recall@10 against brute force.
//!
//! `ENGRAM_SCALE_LEXICAL_ONLY=1` stores no vectors and measures lexical search alone (the
//! vector index's build at 1M takes long on a shared 2-core machine).
//!
//! Then the whole pipeline a user's search runs at the first size, with the built-in model
//! (weights from `ENGRAM_LOCAL_MODEL_DIR`; `ENGRAM_SCALE_SKIP_FULL=1` leaves it out), and
//! per-agent BM25 at 100,000 passages spread over 100 agents (lexical p50/p95).

use chrono::{DateTime, Utc};
use engram_core::{AgentId, NewAgent, NewPassage};
use engram_retrieval::HybridSearch;
use engram_store::{PassageQuery, Store, VectorIndexConfig};
use engram_suite::Home;
use engram_suite::corpus::{next, sentence_ranks, word};
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

const DIM: usize = 384;

/// Fixed pseudo-random unit vectors per word rank.
struct Hashed {
    words: HashMap<u64, Vec<f32>>,
}

impl Hashed {
    fn word(&mut self, rank: u64) -> &Vec<f32> {
        self.words.entry(rank).or_insert_with(|| {
            let mut x = rank.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            let v: Vec<f32> = (0..DIM)
                .map(|_| (next(&mut x) % 2001) as f32 / 1000.0 - 1.0)
                .collect();
            let n = v.iter().map(|a| a * a).sum::<f32>().sqrt();
            v.into_iter().map(|a| a / n).collect()
        })
    }

    fn text(&mut self, ranks: &[u64]) -> Vec<f32> {
        let mut v = vec![0.0f32; DIM];
        for r in ranks {
            for (a, b) in v.iter_mut().zip(self.word(*r)) {
                *a += b;
            }
        }
        let n = v.iter().map(|a| a * a).sum::<f32>().sqrt().max(1e-9);
        v.into_iter().map(|a| a / n).collect()
    }
}

/// Passage `i` was written `i` minutes after a fixed start (as in `benches/archive.rs`); with
/// `ENGRAM_SCALE_BULK=N`, passages come in bulk inserts of `N` stored in one instant each (as an
/// import or a REST batch without times stores them), the case where neighbour smoothing used
/// to walk every passage of the instant.
fn written(i: u64) -> Option<DateTime<Utc>> {
    let bulk: u64 = std::env::var("ENGRAM_SCALE_BULK")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(1);
    DateTime::from_timestamp(1_700_000_000 + (i / bulk * bulk) as i64 * 60, 0)
}

fn percentiles(mut times: Vec<Duration>) -> (f64, f64) {
    times.sort();
    let at = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1e3;
    (at(0.5), at(0.95))
}

/// The process's resident memory in MB (Linux; 0 elsewhere).
fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn dir_size(p: &Path) -> u64 {
    std::fs::read_dir(p).map_or(0, |d| {
        d.filter_map(|e| e.ok())
            .map(|e| {
                let m = e.metadata().ok();
                if m.as_ref().is_some_and(|m| m.is_dir()) {
                    dir_size(&e.path())
                } else {
                    m.map_or(0, |m| m.len())
                }
            })
            .sum()
    })
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1_048_576.0
}

fn new_agent(home: &Home, name: &str) -> AgentId {
    let create = home.engram.agents().create(NewAgent {
        name: name.into(),
        ..NewAgent::default()
    });
    futures::executor::block_on(create).expect("agent").agent.id
}

/// 1–3 content words (vocabulary ranks 50–5,000), as `benches/engine.rs` asks.
fn query_ranks(i: u64) -> Vec<u64> {
    let mut x = i.wrapping_mul(0x9e3779b97f4a7c15) | 1;
    (0..1 + i % 3).map(|_| 50 + next(&mut x) % 4_950).collect()
}

fn query_text(ranks: &[u64]) -> String {
    ranks.iter().map(|r| word(*r)).collect::<Vec<_>>().join(" ")
}

fn timed(store: &Store, agent: &AgentId, qs: &[PassageQuery]) -> (f64, f64) {
    let times = qs
        .iter()
        .map(|q| {
            let started = Instant::now();
            std::hint::black_box(store.search_passages(agent, q).expect("search"));
            started.elapsed()
        })
        .collect();
    percentiles(times)
}

fn lexical_only(n: u64) {
    let home = Home::new();
    let agent = new_agent(&home, "Scale");
    let store = home.engram.store();
    let started = Instant::now();
    for chunk in (0..n).collect::<Vec<_>>().chunks(5_000) {
        let batch: Vec<NewPassage> = chunk
            .iter()
            .map(|&i| NewPassage {
                text: query_text(&sentence_ranks(i)),
                created_at: written(i),
                ..NewPassage::default()
            })
            .collect();
        store.passages().insert(&agent, &batch).expect("insert");
    }
    let insert_s = started.elapsed().as_secs_f64();
    let qs: Vec<PassageQuery> = (1..=300u64)
        .map(|i| PassageQuery {
            query: query_text(&query_ranks(i)),
            top_k: 5,
            ..PassageQuery::default()
        })
        .collect();
    let lexical = timed(store, &agent, &qs);
    store.checkpoint().expect("checkpoint");
    let db = home.path().join(engram_service::DB_FILE);
    let db_mb = mb(std::fs::metadata(&db).map_or(0, |m| m.len()));
    println!("\n### {n} passages, one agent, no vectors\n");
    println!("| measure | result |\n|---|---|");
    println!(
        "| insert (batches of 5,000) | {insert_s:.1} s ({:.0} /s) |",
        n as f64 / insert_s
    );
    println!(
        "| lexical search p50 / p95 | {:.2} / {:.2} ms |",
        lexical.0, lexical.1
    );
    println!("| database file | {db_mb:.1} MB |");
}

/// Writes `n` passages to `agent` in batches of 5,000 (12-word sentences, written a minute
/// apart, with hashed vectors); `each` sees each stored batch with its sentence numbers.
fn fill(
    store: &Store,
    agent: &AgentId,
    n: u64,
    hashed: &mut Hashed,
    mut each: impl FnMut(Vec<engram_core::Passage>, &[u64], &mut Hashed),
) {
    for chunk in (0..n).collect::<Vec<_>>().chunks(5_000) {
        let batch: Vec<NewPassage> = chunk
            .iter()
            .map(|&i| {
                let ranks = sentence_ranks(i);
                NewPassage {
                    text: query_text(&ranks),
                    created_at: written(i),
                    embedding: Some(hashed.text(&ranks)),
                    ..NewPassage::default()
                }
            })
            .collect();
        let stored = store.passages().insert(agent, &batch).expect("insert");
        each(stored, chunk, hashed);
    }
}

fn one_agent(n: u64) {
    let home = Home::new();
    let agent = new_agent(&home, "Scale");
    let store = home.engram.store();
    let mut hashed = Hashed {
        words: HashMap::new(),
    };
    let started = Instant::now();
    fill(store, &agent, n, &mut hashed, |_, _, _| {});
    let insert_s = started.elapsed().as_secs_f64();
    let rss_before = rss_mb();

    // The first vector search reads the vectors and starts building the graph in the
    // background; searches meanwhile scan the vectors exhaustively. The graph is saved when
    // done (large indexes are kept on disk) and the next search takes it.
    let probe = |i: u64, hashed: &mut Hashed| {
        let ranks = query_ranks(i);
        (query_text(&ranks), hashed.text(&ranks))
    };
    let probes: Vec<(String, Vec<f32>)> = (1..=300).map(|i| probe(i, &mut hashed)).collect();
    let hybrid_query = |(t, v): &(String, Vec<f32>)| PassageQuery {
        query: t.clone(),
        embedding: Some(v.clone()),
        top_k: 5,
        ..PassageQuery::default()
    };
    let started = Instant::now();
    store
        .search_passages(&agent, &hybrid_query(&probe(0, &mut hashed)))
        .expect("first search");
    let first_s = started.elapsed().as_secs_f64();
    let during: Vec<PassageQuery> = probes.iter().take(30).map(hybrid_query).collect();
    let during_build = timed(store, &agent, &during);
    store.wait_for_vector_index_builds();
    let build_s = started.elapsed().as_secs_f64();
    store
        .search_passages(&agent, &during[0])
        .expect("take the graph");
    let index_mb = store.vector_index_memory() as f64 / 1_048_576.0;
    let rss_after = rss_mb();

    let make = |text: bool, vector: bool| -> Vec<PassageQuery> {
        probes
            .iter()
            .map(|(t, v)| PassageQuery {
                query: if text { t.clone() } else { String::new() },
                embedding: vector.then(|| v.clone()),
                top_k: 5,
                ..PassageQuery::default()
            })
            .collect()
    };
    let lexical = timed(store, &agent, &make(true, false));
    let vector = timed(store, &agent, &make(false, true));
    let hybrid = timed(store, &agent, &make(true, true));
    // The same with the graph walked after the lexical side instead of beside it (reloads the
    // saved index).
    store.set_vector_index_config(VectorIndexConfig {
        parallel_from: usize::MAX,
        ..VectorIndexConfig::default()
    });
    store
        .search_passages(&agent, &make(false, true)[0])
        .expect("reload");
    let sequential = timed(store, &agent, &make(true, true));
    store.set_vector_index_config(VectorIndexConfig::default());

    // Recall@10 of the vector side against brute force over every passage's vector.
    let sample: Vec<&(String, Vec<f32>)> = probes.iter().take(20).collect();
    let mut exact: Vec<Vec<(f32, u64)>> = vec![Vec::new(); sample.len()];
    for i in 0..n {
        let v = hashed.text(&sentence_ranks(i));
        for (s, (_, q)) in sample.iter().enumerate() {
            let sim: f32 = q.iter().zip(&v).map(|(a, b)| a * b).sum();
            let top = &mut exact[s];
            if top.len() < 10 || sim > top[top.len() - 1].0 {
                top.push((sim, i));
                top.sort_by(|a, b| b.0.total_cmp(&a.0));
                top.truncate(10);
            }
        }
    }
    let mut found = 0usize;
    for (s, (_, q)) in sample.iter().enumerate() {
        let hits = store
            .search_passages(
                &agent,
                &PassageQuery {
                    embedding: Some(q.clone()),
                    top_k: 10,
                    ..PassageQuery::default()
                },
            )
            .expect("search");
        // Compare by the exact similarity (texts repeat at this vocabulary size).
        let threshold = exact[s][exact[s].len() - 1].0 - 1e-5;
        found += hits
            .iter()
            .filter(|h| h.score as f32 >= threshold)
            .count()
            .min(10);
    }
    let recall = found as f64 / (10 * sample.len()) as f64;

    // Finding a passage from a noisy copy of its vector (cosine ≈ 0.95 to the original).
    let mut top1 = 0usize;
    for k in 0..50u64 {
        let i = k.wrapping_mul(0x9e37_79b9) % n;
        let v = hashed.text(&sentence_ranks(i));
        let mut x = k | 1;
        let noisy: Vec<f32> = v
            .iter()
            .map(|a| a + 0.016 * ((next(&mut x) % 2001) as f32 / 1000.0 - 1.0))
            .collect();
        let own: f32 = {
            let dot: f32 = noisy.iter().zip(&v).map(|(a, b)| a * b).sum();
            dot / noisy.iter().map(|a| a * a).sum::<f32>().sqrt()
        };
        let hits = store
            .search_passages(
                &agent,
                &PassageQuery {
                    embedding: Some(noisy),
                    top_k: 1,
                    ..PassageQuery::default()
                },
            )
            .expect("search");
        top1 += usize::from(hits.first().is_some_and(|h| h.score as f32 >= own - 1e-4));
    }

    // Load: a second store on the same file finds the saved index.
    let db = home.path().join(engram_service::DB_FILE);
    let vectors_dir = home
        .path()
        .join(format!("{}.vectors", engram_service::DB_FILE));
    let reopened = Store::open(&db).expect("reopen");
    let started = Instant::now();
    reopened
        .search_passages(
            &agent,
            &PassageQuery {
                embedding: Some(probes[0].1.clone()),
                top_k: 5,
                ..PassageQuery::default()
            },
        )
        .expect("load");
    let load_s = started.elapsed().as_secs_f64();
    drop(reopened);
    store.checkpoint().expect("checkpoint");
    let db_mb = mb(std::fs::metadata(&db).map_or(0, |m| m.len()));
    let index_file_mb = mb(dir_size(&vectors_dir));

    println!("\n### {n} passages, one agent, 384-dim vectors\n");
    println!("| measure | result |\n|---|---|");
    println!(
        "| insert (batches of 5,000, with vectors) | {insert_s:.1} s ({:.0} /s) |",
        n as f64 / insert_s
    );
    println!(
        "| lexical search p50 / p95 | {:.2} / {:.2} ms |",
        lexical.0, lexical.1
    );
    println!(
        "| vector search p50 / p95 | {:.2} / {:.2} ms |",
        vector.0, vector.1
    );
    println!(
        "| hybrid search p50 / p95 | {:.2} / {:.2} ms |",
        hybrid.0, hybrid.1
    );
    println!(
        "| hybrid search p50 / p95, graph walked after the words, not beside them | {:.2} / {:.2} ms |",
        sequential.0, sequential.1
    );
    println!("| vector recall@10 against brute force, word-sum queries (20) | {recall:.3} |");
    println!("| a passage found first from a noisy copy of its vector (50) | {top1}/50 |");
    println!(
        "| first vector search (reads the vectors, starts the graph's build) | {first_s:.2} s |"
    );
    println!(
        "| hybrid search p50 / p95 while the graph builds (30, exhaustive scan) | {:.2} / {:.2} ms |",
        during_build.0, during_build.1
    );
    println!("| graph build in the background, from the first search | {build_s:.1} s |");
    println!("| index load from its file (first search after a restart) | {load_s:.2} s |");
    println!("| index memory (usearch estimate) | {index_mb:.1} MB |");
    println!("| process RSS before / after the index | {rss_before:.0} / {rss_after:.0} MB |");
    println!("| index file on disk | {index_file_mb:.1} MB |");
    println!("| database file | {db_mb:.1} MB |");
}

/// The whole pipeline a user's search runs, at `n` passages of an agent on the built-in model:
/// the query embedded by the real model, the store's hybrid search, and late interaction over
/// the first hits with their neighbours, read from stored int8 token vectors. Passages carry
/// hashed vectors, and as token vectors their words' hashed vectors, so the similarities are
/// not a model's (the cost is: the same reads, the same sizes per token, the same arithmetic).
fn full_pipeline(n: u64) {
    let home = engram_suite::Home::with_model(&[]);
    let agent = new_agent(&home, "Full");
    let store = home.engram.store();
    let handle = engram_embed::DEFAULT_MODEL;
    let mut hashed = Hashed {
        words: HashMap::new(),
    };
    fill(store, &agent, n, &mut hashed, |stored, numbers, hashed| {
        let tokens: Vec<_> = stored
            .into_iter()
            .zip(numbers)
            .map(|(p, &i)| {
                let words: Vec<Vec<f32>> = sentence_ranks(i)
                    .iter()
                    .map(|r| hashed.word(*r).clone())
                    .collect();
                let blob = engram_retrieval::late::token_codes::encode(
                    engram_retrieval::late::token_codes::SHIPPED,
                    &words,
                );
                (p.id, p.text, blob)
            })
            .collect();
        store
            .passages()
            .fill_tokens(&agent, handle, &tokens)
            .expect("tokens");
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let search = |i: u64| {
        let q = query_text(&query_ranks(i));
        let started = Instant::now();
        let hits = rt
            .block_on(home.engram.archival().search(
                &agent,
                &q,
                vec![],
                engram_core::TagMatch::Any,
                (None, None),
                5,
            ))
            .expect("search");
        std::hint::black_box(hits);
        started.elapsed()
    };
    // Loads the model, starts and finishes the vector graph's build.
    search(0);
    store.wait_for_vector_index_builds();
    search(0);
    let (p50, p95) = percentiles((1..=100).map(search).collect());
    let db_mb = mb(dir_size(home.path()));
    println!("\n### The full local pipeline at {n} passages, through the service\n");
    println!("| measure | result |\n|---|---|");
    println!(
        "| search p50 / p95 (query embedded, hybrid, late interaction over stored token vectors) | {p50:.1} / {p95:.1} ms |"
    );
    println!("| data directory (passages, vectors, 12 token vectors each) | {db_mb:.0} MB |");
    println!("| process RSS after the searches | {:.0} MB |", rss_mb());
}

/// Lexical search over 100,000 passages spread across 100 agents: each agent's BM25 runs over
/// its own table.
fn many_agents() {
    let home = Home::new();
    let store = home.engram.store();
    let agents: Vec<AgentId> = (0..100)
        .map(|i| new_agent(&home, &format!("A{i}")))
        .collect();
    for (a, agent) in agents.iter().enumerate() {
        let batch: Vec<NewPassage> = (0..1_000u64)
            .map(|i| NewPassage {
                text: query_text(&sentence_ranks(a as u64 * 1_000 + i)),
                created_at: written(i),
                ..NewPassage::default()
            })
            .collect();
        store.passages().insert(agent, &batch).expect("insert");
    }
    let times: Vec<Duration> = (0..300u64)
        .map(|i| {
            let q = PassageQuery {
                query: query_text(&query_ranks(i)),
                top_k: 5,
                ..PassageQuery::default()
            };
            let agent = &agents[(i % 100) as usize];
            let started = Instant::now();
            std::hint::black_box(store.search_passages(agent, &q).expect("search"));
            started.elapsed()
        })
        .collect();
    let (p50, p95) = percentiles(times);
    println!("\n### 100,000 passages across 100 agents (1,000 each)\n");
    println!("| measure | result |\n|---|---|");
    println!("| lexical search p50 / p95 | {p50:.2} / {p95:.2} ms |");
}

fn main() {
    let sizes: Vec<u64> = std::env::var("ENGRAM_SCALE_SIZES")
        .unwrap_or_else(|_| "100000".into())
        .split(',')
        .filter_map(|s| s.trim().replace('_', "").parse().ok())
        .collect();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at start: {}", load.trim());
    let lexical = std::env::var_os("ENGRAM_SCALE_LEXICAL_ONLY").is_some();
    for &n in &sizes {
        if lexical {
            lexical_only(n);
        } else {
            one_agent(n);
        }
    }
    if std::env::var_os("ENGRAM_SCALE_SKIP_FULL").is_none()
        && let Some(&n) = sizes.first()
    {
        full_pipeline(n);
    }
    many_agents();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("\nload average at end: {}", load.trim());
}

//! Retrieval quality and speed, as a report: `cargo bench --bench retrieval`.
//!
//! Every dialog turn of `../shared/eval/locomo-dev/` becomes one archival passage of a fresh
//! agent (through the real store, in a temp data directory); every question with evidence is
//! searched; a hit is an evidence turn among the top k. Prints evidence recall@5 and @10 for
//! lexical, vector and hybrid retrieval with the built-in model (all-MiniLM-L6-v2 from
//! `ENGRAM_LOCAL_MODEL_DIR`, see `.ci/fetch-model.sh`), overall and per question category,
//! the sweep of the fusion weight, the embedding throughput, and the hybrid search latency at
//! 100k passages (and 1M with `ENGRAM_BENCH_1M=1`: about 1.6 GB of vectors on disk). Then
//! the stages above the store, with a tune (conversations 1–3) / check (4–5) split: late
//! interaction over the hybrid's first hits (`retrieval/late.rs`; `ENGRAM_BENCH_SKIP_LATE=1`
//! leaves it out), every question asked through the service as shipped
//! (`ENGRAM_BENCH_SKIP_SHIPPED=1` leaves it out) and pseudo-relevance feedback through the
//! real pipeline (`retrieval/expand.rs`). `ENGRAM_BENCH_SKIP_SCALE=1` stops after the
//! development set.

use engram_core::{NewAgent, NewPassage, TagMatch};
use engram_retrieval::HybridSearch;
use engram_retrieval::fuse::{fuse, relative};
use engram_store::PassageQuery;
use engram_suite::Home;
use engram_suite::locomo::{self, Ranked, Recall};

#[path = "retrieval/expand.rs"]
mod expand;
#[path = "retrieval/late.rs"]
mod late;
use expand::expand_rows;
use late::late_rows;
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

pub(crate) const CATEGORIES: [(u64, &str); 5] = [
    (1, "multi-hop"),
    (2, "temporal"),
    (3, "open-domain"),
    (4, "single-hop"),
    (5, "adversarial"),
];

/// The pipeline's fusion (`engram_retrieval::fuse`), replayed offline to sweep its weight.
fn fused(r: &Ranked, lexical_weight: f64) -> Vec<(String, f64)> {
    let mut keys: Vec<String> = Vec::new();
    let mut key_of: HashMap<String, i64> = HashMap::new();
    let mut keyed = |ranking: &[(String, f64)]| -> Vec<(i64, f64)> {
        ranking
            .iter()
            .map(|(d, s)| {
                let k = *key_of.entry(d.clone()).or_insert_with(|| {
                    keys.push(d.clone());
                    keys.len() as i64 - 1
                });
                (k, *s)
            })
            .collect()
    };
    let lexical = relative(&keyed(&r.lexical));
    let vector = keyed(&r.vector);
    fuse(&lexical, &vector, lexical_weight)
        .into_iter()
        .map(|(k, s)| (keys[k as usize].clone(), s))
        .collect()
}

/// Equal-weight reciprocal-rank fusion (k = 60), for comparison.
fn rrf(r: &Ranked) -> Vec<(String, f64)> {
    let mut order: Vec<String> = Vec::new();
    let mut m: HashMap<String, f64> = HashMap::new();
    for ranking in [&r.lexical, &r.vector] {
        for (i, (d, _)) in ranking.iter().enumerate() {
            let e = m.entry(d.clone()).or_insert_with(|| {
                order.push(d.clone());
                0.0
            });
            *e += 1.0 / (61.0 + i as f64);
        }
    }
    let mut v: Vec<(String, f64)> = order.into_iter().map(|d| (d.clone(), m[&d])).collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v
}

/// A row of the main table: recall, then the time per search (`ms`, see [`latency`]).
pub(crate) fn row(name: &str, r: &Recall, ms: &str) {
    let cats: Vec<String> = CATEGORIES
        .iter()
        .map(|(c, _)| format!("{:.3}", r.category_at(*c, 5)))
        .collect();
    println!(
        "| {name} | **{:.3}** | {:.3} | {} | {ms} |",
        r.at(5),
        r.at(10),
        cats.join(" | ")
    );
}

/// The time per search of a variant, p50 / p95 in ms: what `took` picks of each question's
/// store timings (a variant that needs two searches adds both).
fn latency(ranked: &[Ranked], took: &dyn Fn(&locomo::Took) -> Duration) -> String {
    let mut times: Vec<Duration> = ranked.iter().map(|r| took(&r.took)).collect();
    times.sort();
    format!(
        "{:.2} / {:.2}",
        percentile(&times, 0.50),
        percentile(&times, 0.95)
    )
}

/// A row with the tune / check split (see `retrieval/late.rs`).
pub(crate) fn ks_row(name: &str, all: &Recall, tune: &Recall, check: &Recall) {
    let cats: Vec<String> = CATEGORIES
        .iter()
        .map(|(c, _)| format!("{:.3}", all.category_at(*c, 5)))
        .collect();
    println!(
        "| {name} | **{:.3}** | {:.3} | {:.3} | {:.3} | {} |",
        all.at(5),
        all.at(10),
        tune.at(5),
        check.at(5),
        cats.join(" | ")
    );
}

fn dev_set() {
    let conversations = locomo::load(&locomo::dev_set_dir());
    if conversations.is_empty() {
        println!("no development set at {}", locomo::dev_set_dir().display());
        return;
    }
    let dir = engram_suite::model::model_dir();
    let encoder = engram_embed::Encoder::load(&dir).expect("load the model");
    let turns: Vec<String> = conversations
        .iter()
        .flat_map(|c| c.turns.iter().map(|(_, t)| t.clone()))
        .collect();
    let started = Instant::now();
    let vectors = encoder.embed(&turns).expect("embed");
    let took = started.elapsed().as_secs_f64();
    println!(
        "embedding the {} dev-set turns: {took:.1} s ({:.0} passages/s, {} threads available)\n",
        vectors.len(),
        vectors.len() as f64 / took,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    // Every text embedded once (turns now, questions on first use), for all the rankings.
    let cache: RefCell<HashMap<String, Vec<f32>>> =
        RefCell::new(turns.iter().cloned().zip(vectors).collect());
    let embed = |texts: &[String]| -> Vec<Vec<f32>> {
        let missing: Vec<String> = texts
            .iter()
            .filter(|t| !cache.borrow().contains_key(t.as_str()))
            .cloned()
            .collect();
        let fresh = encoder.embed(&missing).expect("embed");
        cache.borrow_mut().extend(missing.into_iter().zip(fresh));
        let cache = cache.borrow();
        texts.iter().map(|t| cache[t.as_str()].clone()).collect()
    };
    let home = Home::new();
    let ranked = locomo::rank_both(&home.engram, &conversations, 50, &embed);
    println!(
        "LoCoMo development set: {} conversations, {} turns, {} questions\n",
        conversations.len(),
        turns.len(),
        ranked.len()
    );
    let ks = [5, 10];
    // The store's time per search; the query's vector is computed beforehand (one model pass,
    // the same for every variant that uses it: see the shipped row for the whole search).
    println!(
        "| retrieval | recall@5 | recall@10 | multi-hop@5 | temporal@5 | open-domain@5 | single-hop@5 | adversarial@5 | store ms p50 / p95 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let both = |t: &locomo::Took| t.lexical + t.vector;
    let lexical = locomo::recall_of(&ranked, &ks, &|r| r.lexical.clone());
    row(
        "lexical (BM25, stop words out, neighbour smoothing)",
        &lexical,
        &latency(&ranked, &|t| t.lexical),
    );
    row(
        "vector (all-MiniLM-L6-v2, cosine)",
        &locomo::recall_of(&ranked, &ks, &|r| r.vector.clone()),
        &latency(&ranked, &|t| t.vector),
    );
    row(
        "equal-weight RRF (k = 60), for comparison",
        &locomo::recall_of(&ranked, &ks, &rrf),
        &latency(&ranked, &both),
    );
    let hybrid = locomo::recall_of(&ranked, &ks, &|r| r.hybrid.clone());
    row(
        "**hybrid, as the store searches**",
        &hybrid,
        &latency(&ranked, &|t| t.hybrid),
    );
    rerank_rows(&conversations, &ranked, &ks);
    if std::env::var_os("ENGRAM_BENCH_SKIP_LATE").is_none() {
        let agents: Vec<_> = conversations
            .iter()
            .map(|c| locomo::agent_of(&home.engram, c))
            .collect();
        late_rows(
            &encoder,
            home.engram.store(),
            &agents,
            &conversations,
            &ranked,
            &ks,
        );
    }
    if std::env::var_os("ENGRAM_BENCH_SKIP_SHIPPED").is_none() {
        shipped_row(&conversations, &embed, &ks);
    }
    expand_rows(&conversations, &embed, &ks);
    println!("\nfusion weight sweep (score = w · lexical share of best + (1 − w) · cosine):\n");
    println!(
        "| lexical weight w | recall@5 | recall@10 | multi-hop@5 | temporal@5 | open-domain@5 | single-hop@5 | adversarial@5 | store ms p50 / p95 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let sweep_ms = latency(&ranked, &both);
    for w in [0.3, 0.4, 0.5, 0.6, 0.7, 0.8] {
        row(
            &format!("{w}"),
            &locomo::recall_of(&ranked, &ks, &|r| fused(r, w)),
            &sweep_ms,
        );
    }
    println!();
}

/// What a user's search answers: every question asked through the service's archival search
/// (`Archival::search`, with the built-in model loaded as in the app, so the shipped
/// late-interaction reranking runs), with the time per search.
fn shipped_row(
    conversations: &[locomo::Conversation],
    embed: &dyn Fn(&[String]) -> Vec<Vec<f32>>,
    ks: &[usize],
) {
    let home = Home::with_model(&[]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let depth = ks.iter().copied().max().unwrap_or(5);
    let (ranked, times) = rt.block_on(locomo::rank_by_service(
        &home.engram,
        conversations,
        embed,
        depth,
    ));
    let mut searches = times.searches.clone();
    searches.sort();
    // Tune and check halves as in the late-interaction rows: conversations 1–3 and 4–5.
    let tune: Vec<bool> = conversations
        .iter()
        .enumerate()
        .flat_map(|(i, c)| c.questions.iter().map(move |_| i < 3))
        .collect();
    let (all, t, c) = late::split_recall(&ranked, &tune, ks);
    println!(
        "\nshipped pipeline through the service (`Archival::search`): per search p50 \
         {:.1} ms, p95 {:.1} ms, max {:.1} ms over {} searches; the turns' token vectors \
         computed beforehand in the background pass: {} rows in {:.1} s ({:.0} rows/s)\n",
        percentile(&searches, 0.50),
        percentile(&searches, 0.95),
        percentile(&searches, 1.0),
        searches.len(),
        times.backfilled,
        times.backfill.as_secs_f64(),
        times.backfilled as f64 / times.backfill.as_secs_f64().max(1e-9),
    );
    println!(
        "| retrieval | recall@5 | recall@10 | tune@5 | check@5 | multi-hop@5 | temporal@5 | open-domain@5 | single-hop@5 | adversarial@5 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    ks_row("**shipped: hybrid → late interaction**", &all, &t, &c);
}

/// The hybrid ranking's first `depth` candidates reordered by the cross-encoder in
/// `ENGRAM_RERANK_MODEL_DIR` (see `engram_embed::rerank`), at 20, 30 and 50 candidates, with
/// the time the reranker takes per query. Without that folder, says so: no cross-encoder is
/// published in a package registry the bench can fetch from.
fn rerank_rows(conversations: &[locomo::Conversation], ranked: &[Ranked], ks: &[usize]) {
    let Some(dir) = std::env::var_os(engram_embed::rerank_local::RERANK_MODEL_DIR_ENV) else {
        println!(
            "| reranked | (no cross-encoder: set {} to a weights folder) | | | | | | | |",
            engram_embed::rerank_local::RERANK_MODEL_DIR_ENV
        );
        return;
    };
    let model = engram_embed::rerank::CrossEncoder::load(std::path::Path::new(&dir))
        .expect("load the reranker");
    // `dia_id`s repeat across conversations (every one has a `D1:1`): look a turn up in the
    // question's own conversation.
    let text_of: Vec<HashMap<&str, &str>> = conversations
        .iter()
        .map(|c| {
            c.turns
                .iter()
                .map(|(d, t)| (d.as_str(), t.as_str()))
                .collect()
        })
        .collect();
    let questions: Vec<(usize, &str)> = conversations
        .iter()
        .enumerate()
        .flat_map(|(i, c)| c.questions.iter().map(move |q| (i, q.text.as_str())))
        .collect();
    for depth in [20, 30, 50] {
        let started = Instant::now();
        let reordered: Vec<Vec<(String, f64)>> = ranked
            .iter()
            .zip(&questions)
            .map(|(r, (c, q))| {
                let head: Vec<&(String, f64)> = r.hybrid.iter().take(depth).collect();
                let texts: Vec<String> = head
                    .iter()
                    .map(|(d, _)| text_of[*c][d.as_str()].to_owned())
                    .collect();
                let scores = model.score(q, &texts).expect("rerank");
                let mut v: Vec<(String, f64)> = head
                    .iter()
                    .zip(scores)
                    .map(|((d, _), s)| (d.clone(), f64::from(s)))
                    .collect();
                v.sort_by(|a, b| b.1.total_cmp(&a.1));
                v
            })
            .collect();
        let per_query = started.elapsed() / ranked.len().max(1) as u32;
        let reranked: Vec<Ranked> = ranked
            .iter()
            .zip(reordered)
            .map(|(r, hybrid)| Ranked {
                category: r.category,
                evidence: r.evidence.clone(),
                lexical: Vec::new(),
                vector: Vec::new(),
                hybrid,
                took: Default::default(),
            })
            .collect();
        // Only the mean is measured for the cross-encoder (it scores all queries in one go).
        row(
            &format!("hybrid → cross-encoder over the first {depth}"),
            &locomo::recall_of(&reranked, ks, &|r| r.hybrid.clone()),
            &latency(ranked, &|t| t.hybrid + per_query),
        );
    }
}

/// A deterministic unit vector of `dims` components.
fn unit_vector(seed: u64, dims: usize) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let v: Vec<f32> = (0..dims)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 2001) as f32 / 1000.0 - 1.0
        })
        .collect();
    let n = v.iter().map(|a| a * a).sum::<f32>().sqrt();
    v.into_iter().map(|a| a / n).collect()
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1e3
}

/// Hybrid search latency with `n` passages of 384-dimensional vectors (through the per-agent
/// vector index; `benches/search_scale.rs` measures more).
fn scale(n: u64) {
    let home = Home::new();
    let agent = futures::executor::block_on(home.engram.agents().create(NewAgent {
        name: "Scale".into(),
        ..NewAgent::default()
    }))
    .expect("agent")
    .agent
    .id;
    let store = home.engram.store();
    let words = [
        "garden", "tulips", "harbour", "terrier", "report", "lisbon", "coffee", "music", "river",
        "bicycle", "painting", "museum", "recipe", "holiday", "school", "camping",
    ];
    for chunk in (0..n).collect::<Vec<_>>().chunks(5_000) {
        let batch: Vec<NewPassage> = chunk
            .iter()
            .map(|&i| NewPassage {
                text: format!(
                    "note {i} about the {} and the {} near the {}",
                    words[(i % 16) as usize],
                    words[(i / 16 % 16) as usize],
                    words[(i / 256 % 16) as usize]
                ),
                embedding: Some(unit_vector(i, 384)),
                ..NewPassage::default()
            })
            .collect();
        store.passages().insert(&agent, &batch).expect("insert");
    }
    // The first vector search starts the graph's build in the background; time the graph.
    let warm = PassageQuery {
        embedding: Some(unit_vector(7, 384)),
        top_k: 5,
        ..PassageQuery::default()
    };
    store.search_passages(&agent, &warm).expect("search");
    store.wait_for_vector_index_builds();
    let mut times = Vec::new();
    for i in 0..40u64 {
        let q = PassageQuery {
            query: format!(
                "{} {}",
                words[(i % 16) as usize],
                words[(i * 7 % 16) as usize]
            ),
            tag_match: TagMatch::Any,
            top_k: 5,
            embedding: Some(unit_vector(1_000_000_000 + i, 384)),
            ..PassageQuery::default()
        };
        let started = Instant::now();
        std::hint::black_box(store.search_passages(&agent, &q).expect("search"));
        times.push(started.elapsed());
    }
    times.sort();
    println!(
        "| hybrid search, {n} passages, 384-dim vectors, vector index | {:.1} ms | {:.1} ms |",
        percentile(&times, 0.5),
        percentile(&times, 0.95)
    );
}

fn main() {
    dev_set();
    if std::env::var_os("ENGRAM_BENCH_SKIP_SCALE").is_some() {
        return;
    }
    println!("| measure | p50 | p95 |\n|---|---|---|");
    scale(100_000);
    if std::env::var_os("ENGRAM_BENCH_1M").is_some() {
        scale(1_000_000);
    }
}

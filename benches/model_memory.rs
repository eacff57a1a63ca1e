//! Memory of `engram serve` with the built-in embedding model, as a user meets it (the
//! target: ≤ 40 MB unloaded, ≤ 150 MB loaded): `cargo bench --bench model_memory` (release;
//! build `cargo build --release -p engram-cli` first; the weights come from
//! `ENGRAM_LOCAL_MODEL_DIR`, see `.ci/fetch-model.sh`).
//!
//! Starts a real `engram serve` on an agent with the built-in model, adds the LoCoMo dev-set
//! turns (`MODEL_MEMORY_PASSAGES`, default 2,000) as archival passages over REST (each one
//! embedded on insert), searches, then sits idle past the model's unload
//! (`MODEL_MEMORY_IDLE_SECS`, default 20, passed as `ENGRAM_LOCAL_MODEL_IDLE_SECS`). At each
//! point it prints the server's `VmRSS` and, honestly split, `RssAnon` (heap: what the process
//! really holds) and `RssFile` (file-backed pages the kernel can drop), from
//! `/proc/<pid>/status`.
//!
//! Then bulk embedding, as an import or a change of model meets it (`MODEL_MEMORY_BULK`
//! passages, default as many; 0 leaves it out): a second agent on words alone gets the turns
//! without vectors, is switched to the built-in model over REST, and re-embeds them in the
//! background in the encoder's batches; memory is sampled every 200 ms until the
//! database (read beside the server) holds no passage without a vector.

use engram_mock_llm::{MockLlm, Script};
use engram_store::Store;
use engram_suite::serve::{Served, env_or};
use engram_suite::{cli, cli_agent, locomo, model, stdout_ok};
use std::time::{Duration, Instant};

/// Adds `text` to `agent`'s archival memory over REST (its vectors follow in the background
/// when the agent has a model).
async fn add_passage(http: &reqwest::Client, base: &str, agent: &str, text: &str) {
    let r = http
        .post(format!("{base}/v1/agents/{agent}/archival-memory"))
        .json(&serde_json::json!({"text": text}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
}

fn main() {
    let passages = env_or("MODEL_MEMORY_PASSAGES", 2000);
    let bulk = env_or("MODEL_MEMORY_BULK", passages);
    let idle = env_or("MODEL_MEMORY_IDLE_SECS", 20);
    let weights = model::model_dir();
    let turns: Vec<String> = locomo::load(&locomo::dev_set_dir())
        .into_iter()
        .flat_map(|c| c.turns.into_iter().map(|(_, text)| text))
        .take(passages)
        .collect();
    assert!(
        !turns.is_empty(),
        "no development set at {}",
        locomo::dev_set_dir().display()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let mock = MockLlm::start(Script::Brain).await;
        let home = tempfile::tempdir().unwrap();
        let agent = cli_agent(home.path(), &mock);
        let words = stdout_ok(&cli(
            home.path(),
            &["agent", "create", "--name", "Bulk", "--embedding", "none"],
        ))
        .trim()
        .to_owned();
        let idle_secs = idle.to_string();
        let served = Served::start(
            home.path(),
            &[
                ("ENGRAM_LOCAL_MODEL_DIR", weights.as_os_str()),
                ("ENGRAM_LOCAL_MODEL_IDLE_SECS", idle_secs.as_ref()),
            ],
        );
        let (pid, base) = (served.pid, &served.base);
        let http = reqwest::Client::new();
        let shown: serde_json::Value = http
            .get(format!("{base}/v1/agents/{agent}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let embedding = shown["embedding_config"]["embedding_model"]
            .as_str()
            .or(shown["embedding"]["model"].as_str())
            .unwrap_or("?")
            .to_owned();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let mut rows = vec![("at start (model not loaded)".to_owned(), served.memory())];

        let started = Instant::now();
        let mut peak = 0.0f64;
        let mut inserts = Vec::with_capacity(turns.len());
        for (i, text) in turns.iter().enumerate() {
            let one = Instant::now();
            add_passage(&http, base, agent.as_str(), text).await;
            inserts.push(one.elapsed());
            if i == 0 {
                rows.push((
                    "after the first passage (loaded)".to_owned(),
                    served.memory(),
                ));
            }
            if i % 50 == 0 {
                peak = peak.max(served.memory().rss);
            }
        }
        let added = started.elapsed();
        // The writes came back at once; their vectors follow in the background, batched.
        let store = Store::open(&home.path().join("engram.db")).expect("open the database");
        loop {
            let left = store
                .passages().count_without_vectors(&agent)
                .expect("read");
            if left == 0 {
                break;
            }
            peak = peak.max(served.memory().rss);
            assert!(
                started.elapsed() < Duration::from_secs(900),
                "the vectors did not follow"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let embedded = started.elapsed();
        rows.push((format!("after {} passages", turns.len()), served.memory()));
        let queries = [
            "what did she paint last summer",
            "adoption agency interview",
            "camping trip with the kids",
            "where did he move from",
            "charity race for mental health",
        ];
        let mut hits = 0;
        let mut took = Vec::with_capacity(50);
        for q in queries.iter().cycle().take(50) {
            let asked = Instant::now();
            let found: serde_json::Value = http
                .get(format!(
                    "{base}/v1/agents/{agent}/archival-memory/search?top_k=5&query={}",
                    q.replace(' ', "%20")
                ))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            took.push(asked.elapsed());
            hits += found["results"]
                .as_array()
                .or(found.as_array())
                .map_or(0, Vec::len);
        }
        peak = peak.max(served.memory().rss);
        rows.push(("after 50 searches".to_owned(), served.memory()));
        // The model goes after `idle` (checked every `idle / 4`), then jemalloc's background
        // thread returns the freed pages after its 10 s decay.
        let unloaded_from = idle + idle / 4 + 1;
        let mut after_unload = Vec::new();
        for s in 1..=unloaded_from + 20 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if s == 5 || s == 12 {
                rows.push((format!("idle {s} s (model loaded)"), served.memory()));
            } else if s >= unloaded_from && (s - unloaded_from).is_multiple_of(5) {
                after_unload.push((
                    format!("idle {s} s (model unloaded after {idle}–{unloaded_from} s)"),
                    served.memory(),
                ));
            }
        }
        let unloaded_rows = after_unload.len();
        rows.extend(after_unload);

        // Bulk embedding: the turns stored without vectors, then the model switched on.
        let mut bulk_rows = Vec::new();
        let mut bulk_peak = 0.0f64;
        if bulk > 0 {
            for text in turns.iter().cycle().take(bulk) {
                add_passage(&http, base, &words, text).await;
            }
            bulk_rows.push((
                format!("{bulk} passages stored without vectors"),
                served.memory(),
            ));
            let words_id = engram_core::AgentId::from(words.as_str());
            let r = http
                .patch(format!("{base}/v1/agents/{words}"))
                .json(&serde_json::json!({"embedding": engram_embed::DEFAULT_MODEL}))
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success(), "{}", r.status());
            let started = Instant::now();
            loop {
                tokio::time::sleep(Duration::from_millis(200)).await;
                bulk_peak = bulk_peak.max(served.memory().rss);
                let left = store.passages().without_vectors(&words_id, 1).expect("read");
                if left.is_empty() {
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(900),
                    "re-embedding did not finish"
                );
            }
            let took = started.elapsed();
            bulk_rows.push((
                format!(
                    "re-embedded in the background ({took:.0?}, {:.0}/s)",
                    bulk as f64 / took.as_secs_f64()
                ),
                served.memory(),
            ));
            tokio::time::sleep(Duration::from_secs(12)).await;
            bulk_rows.push(("12 s later".to_owned(), served.memory()));
        }

        took.sort();
        inserts.sort();
        println!(
            "engram serve memory (MB), pid {pid}, embedding model {embedding}; {} passages added \
             one per request in {added:.1?} ({:.1}/s; {:.1} ms p50, {:.1} ms p95 each), all \
             their vectors in after {embedded:.1?} ({:.1}/s); 50 searches gave {hits} hits, \
             {:.0} ms p50, {:.0} ms max",
            turns.len(),
            turns.len() as f64 / added.as_secs_f64(),
            inserts[inserts.len() / 2].as_secs_f64() * 1e3,
            inserts[inserts.len() * 95 / 100].as_secs_f64() * 1e3,
            turns.len() as f64 / embedded.as_secs_f64(),
            took[took.len() / 2].as_secs_f64() * 1e3,
            took.last().map_or(0.0, |d| d.as_secs_f64() * 1e3),
        );
        println!(
            "  {:<44} {:>7} {:>8} {:>8}",
            "", "VmRSS", "RssAnon", "RssFile"
        );
        for (what, m) in &rows {
            println!(
                "  {what:<44} {:>7.1} {:>8.1} {:>8.1}",
                m.rss, m.anon, m.file
            );
        }
        println!("  {:<44} {peak:>7.1}", "peak VmRSS seen");
        // Every reading between the first passage and the unload is taken with the model in.
        let loaded = rows[1..rows.len() - unloaded_rows]
            .iter()
            .map(|(_, m)| m.rss)
            .fold(0.0f64, f64::max);
        let unloaded = rows.last().unwrap().1.rss;
        println!(
            "loaded (highest reading while loaded, peak aside): {loaded:.1} MB (target ≤ 150): {}; \
             unloaded: {unloaded:.1} MB (target ≤ 40): {}",
            if loaded <= 150.0 { "met" } else { "NOT met" },
            if unloaded <= 40.0 { "met" } else { "NOT met" },
        );
        if bulk > 0 {
            println!("bulk embedding (a second agent switched to the built-in model):");
            for (what, m) in &bulk_rows {
                println!(
                    "  {what:<44} {:>7.1} {:>8.1} {:>8.1}",
                    m.rss, m.anon, m.file
                );
            }
            println!(
                "  {:<44} {bulk_peak:>7.1}\nbulk: peak {bulk_peak:.1} MB while re-embedding (target ≤ 150): {}",
                "peak VmRSS while re-embedding",
                if bulk_peak <= 150.0 { "met" } else { "NOT met" },
            );
        }
    });
}

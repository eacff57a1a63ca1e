//! A quit during a vector index build (the app closed at minute 30 of 42): the real `engram`
//! binary and REST API show the build as pending, and `engram embedding index` finishes it —
//! the same state the desktop window shows, from what is stored, not from having been open.
//!
//! The build is started by a search through the store with builds held (so it is certainly
//! under way when the store is dropped) over 20,000 passage vectors: the default size from
//! which an agent's vectors get a graph built in the background.

use engram_core::{AgentId, LlmConfig, NewAgent, NewPassage};
use engram_retrieval::HybridSearch;
use engram_store::{PassageQuery, Store};
use engram_suite::{Home, cli, serve, stdout_ok};
use serde_json::{Value, json};

const DIM: usize = 16;
const PASSAGES: u64 = 20_000;

fn vector(i: u64) -> Vec<f32> {
    (0..DIM as u64)
        .map(|d| (((i + 1) * 2_654_435_761 + d * 40_503) % 1_000) as f32 / 500.0 - 1.0)
        .collect()
}

/// Starts the agent's graph build in a store of its own and quits (drops it) mid-build.
fn quit_during_a_build(db: &std::path::Path, agent: &AgentId) {
    let store = Store::open(db).unwrap();
    let ps: Vec<NewPassage> = (0..PASSAGES)
        .map(|i| NewPassage {
            text: format!("note {i}"),
            embedding: Some(vector(i)),
            ..Default::default()
        })
        .collect();
    store.passages().insert(agent, &ps).unwrap();
    store.hold_vector_index_builds(true);
    let q = PassageQuery {
        query: "note".into(),
        embedding: Some(vector(7)),
        top_k: 1,
        ..Default::default()
    };
    // (The hashed vectors repeat, so which note is nearest is not the point here.)
    assert_eq!(store.search_passages(agent, &q).unwrap().len(), 1);
    let builds = store.vector_index_builds();
    assert_eq!(builds.len(), 1, "a build runs: {builds:?}");
    assert_eq!(builds[0].total, PASSAGES as usize);
}

fn shown(home: &std::path::Path, agent: &AgentId) -> Value {
    let out = stdout_ok(&cli(home, &["agent", "show", agent.as_str()]));
    serde_json::from_str::<Value>(&out).unwrap()["vector_index"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_cut_short_by_a_quit_is_shown_pending_and_engram_embedding_index_finishes_it() {
    let home = Home::new();
    let agent = home
        .engram
        .agents()
        .create(NewAgent {
            name: "Ada".into(),
            llm: Some(LlmConfig::new("openai/mock-small")),
            ..NewAgent::default()
        })
        .await
        .unwrap()
        .agent
        .id;
    let db = home.path().join(engram_service::DB_FILE);
    quit_during_a_build(&db, &agent);
    let vectors = home.path().join("engram.db.vectors");
    let saved = || {
        std::fs::read_dir(&vectors)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter(|e| e.path().extension().is_some_and(|x| x == "usearch"))
                    .count()
            })
            .unwrap_or(0)
    };
    assert_eq!(saved(), 0, "the quit saved no graph: the work is lost");

    // The CLI and REST show it as pending (nothing runs in their processes yet).
    assert_eq!(
        shown(home.path(), &agent),
        json!({"building": null, "pending": true})
    );
    let base = serve(
        engram_suite::open(
            home.path(),
            std::sync::Arc::new(engram_secrets::MemoryStore::default()),
        ),
        engram_server::ServerConfig::new(engram_server::Auth::Disabled),
    )
    .await;
    let rest = |agent: String| {
        let base = base.clone();
        async move {
            reqwest::get(format!("{base}/v1/agents/{agent}/archival-memory/index"))
                .await
                .unwrap()
        }
    };
    let r = rest(agent.to_string()).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"building": null, "pending": true})
    );
    assert_eq!(rest("agent-none".into()).await.status(), 404);

    // `engram embedding index` finishes it, with progress, and saves the graph.
    let out = cli(home.path(), &["embedding", "index"]);
    let stdout = stdout_ok(&out);
    assert!(
        stdout.contains(&format!("built the vector index of {agent}")),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("indexing passages"), "{stderr}");
    assert!(
        stderr.contains(&format!("{PASSAGES}.0/{PASSAGES}.0")),
        "{stderr}"
    );
    assert_eq!(saved(), 1);
    assert_eq!(
        shown(home.path(), &agent),
        json!({"building": null, "pending": false})
    );
    let r = rest(agent.to_string()).await;
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"building": null, "pending": false})
    );
    let again = stdout_ok(&cli(home.path(), &["embedding", "index"]));
    assert_eq!(again.trim(), "no vector index build is pending");
}

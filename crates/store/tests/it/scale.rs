//! Search at scale: per-agent BM25 and the vector index, against real SQLite files.

use crate::support::{create, temp_store};
use engram_core::{AgentId, AgentPatch, EmbeddingConfig, NewMessage, NewPassage, PassageId};
use engram_retrieval::HybridSearch;
use engram_store::{MessageQuery, PassageQuery, Store, VectorIndexConfig};
use std::path::{Path, PathBuf};

/// Small thresholds so a few hundred vectors exercise the graph, saving and filtered search.
pub(crate) const SMALL: VectorIndexConfig = VectorIndexConfig {
    exact_below: 50,
    persist_above: 100,
    exact_filtered: 20,
    // Every unfiltered vector search walks the index beside its lexical side.
    parallel_from: 0,
};

fn lexical(store: &Store, agent: &AgentId, text: &str) -> Vec<(String, f64)> {
    let q = PassageQuery {
        query: text.into(),
        top_k: 10,
        ..Default::default()
    };
    store
        .search_passages(agent, &q)
        .unwrap()
        .into_iter()
        .map(|h| (h.passage.text, h.score))
        .collect()
}

fn recall(store: &Store, agent: &AgentId, text: &str) -> Vec<(String, f64)> {
    let q = MessageQuery {
        query: text.into(),
        limit: 10,
        ..Default::default()
    };
    store
        .search_messages(agent, &q)
        .unwrap()
        .into_iter()
        .map(|h| (h.message.content, h.score))
        .collect()
}

pub(crate) fn passages(texts: &[&str]) -> Vec<NewPassage> {
    texts
        .iter()
        .map(|t| NewPassage {
            text: (*t).into(),
            ..Default::default()
        })
        .collect()
}

#[test]
fn one_agents_bm25_ranking_does_not_depend_on_another_agents_passages() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "A");
    let texts = [
        "an apple pie recipe from grandma",
        "banana bread recipe for sunday",
        "a banana split with cream",
        "banana shake after the run",
    ];
    store.passages().insert(&a.id, &passages(&texts)).unwrap();
    for t in texts {
        store
            .messages()
            .append(&a.id, &[NewMessage::user(t)])
            .unwrap();
    }
    let before = lexical(&store, &a.id, "apple banana");
    let recall_before = recall(&store, &a.id, "apple banana");
    // In A, "apple" is the rarer word, so the apple passage leads.
    assert_eq!(before[0].0, texts[0], "{before:?}");
    assert_eq!(recall_before[0].0, texts[0], "{recall_before:?}");

    // B holds 10,000 passages and messages about apples: shared statistics would make "apple"
    // common and push A's apple passage down.
    let (b, _) = create(&store, "B");
    let apples: Vec<String> = (0..10_000)
        .map(|i| format!("apple orchard note {i}"))
        .collect();
    let refs: Vec<&str> = apples.iter().map(String::as_str).collect();
    store.passages().insert(&b.id, &passages(&refs)).unwrap();
    let msgs: Vec<NewMessage> = refs
        .iter()
        .take(2_000)
        .map(|t| NewMessage::user(*t))
        .collect();
    store.messages().append(&b.id, &msgs).unwrap();

    assert_eq!(lexical(&store, &a.id, "apple banana"), before);
    assert_eq!(recall(&store, &a.id, "apple banana"), recall_before);
    // And B's own ranking sees only B's rows.
    assert!(
        lexical(&store, &b.id, "banana").is_empty(),
        "B has no bananas"
    );

    // Deleting B takes its index along; A is unchanged.
    store.agents().delete(&b.id).unwrap();
    assert_eq!(lexical(&store, &a.id, "apple banana"), before);
}

#[test]
fn edits_and_deletes_reach_the_agents_full_text_index() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "A");
    let stored = store
        .passages()
        .insert(&a.id, &passages(&["the zeppelin landed", "a quiet lake"]))
        .unwrap();
    assert_eq!(
        lexical(&store, &a.id, "zeppelin")[0].0,
        "the zeppelin landed"
    );
    store.passages().delete(&a.id, &stored[0].id).unwrap();
    // (A hit lends score to its neighbour, so with no hit the neighbour goes too.)
    assert!(lexical(&store, &a.id, "zeppelin").is_empty());
    // An agent that never had text matches nothing (and does not fail).
    let (empty, _) = create(&store, "Empty");
    assert!(lexical(&store, &empty.id, "lake").is_empty());
    assert!(recall(&store, &empty.id, "lake").is_empty());
}

/// Deterministic pseudo-random unit-ish vectors.
pub(crate) fn vector(seed: u64, dim: usize) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..dim)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 2_000) as f32 / 1_000.0 - 1.0
        })
        .collect()
}

pub(crate) fn with_vectors(
    range: std::ops::Range<u64>,
    dim: usize,
    tag: impl Fn(u64) -> Vec<String>,
) -> Vec<NewPassage> {
    range
        .map(|i| NewPassage {
            text: format!("passage {i}"),
            tags: tag(i),
            embedding: Some(vector(i, dim)),
            ..Default::default()
        })
        .collect()
}

pub(crate) fn nearest(
    store: &Store,
    agent: &AgentId,
    v: &[f32],
    top_k: usize,
    tags: &[&str],
) -> Vec<(String, f64)> {
    let q = PassageQuery {
        embedding: Some(v.to_vec()),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        top_k,
        ..Default::default()
    };
    store
        .search_passages(agent, &q)
        .unwrap()
        .into_iter()
        .map(|h| (h.passage.text, h.score))
        .collect()
}

/// The exact top `k` by cosine over `(text, vector)` pairs.
pub(crate) fn brute_force(rows: &[(String, Vec<f32>)], q: &[f32], k: usize) -> Vec<String> {
    let cos = |a: &[f32], b: &[f32]| {
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let n = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        dot / (n(a) * n(b))
    };
    let mut scored: Vec<(f32, &String)> = rows.iter().map(|(t, v)| (cos(q, v), t)).collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(k).map(|(_, t)| t.clone()).collect()
}

pub(crate) fn texts(hits: &[(String, f64)]) -> Vec<String> {
    hits.iter().map(|(t, _)| t.clone()).collect()
}

#[test]
fn index_and_sqlite_agree_after_insert_delete_fill_and_model_change() {
    let (_dir, store) = temp_store();
    store.set_vector_index_config(SMALL);
    let (a, _) = create(&store, "A");
    let dim = 24;
    let stored = store
        .passages()
        .insert(&a.id, &with_vectors(0..400, dim, |_| vec![]))
        .unwrap();
    let mut rows: Vec<(String, Vec<f32>)> = (0..400)
        .map(|i| (format!("passage {i}"), vector(i, dim)))
        .collect();

    // The graph's answer, re-scored exactly, matches brute force on these sizes.
    for probe in [3u64, 77, 250] {
        let q = vector(probe + 10_000, dim);
        assert_eq!(
            texts(&nearest(&store, &a.id, &q, 5, &[])),
            brute_force(&rows, &q, 5)
        );
    }
    let own = nearest(&store, &a.id, &vector(42, dim), 1, &[]);
    assert_eq!(own[0].0, "passage 42");
    assert!(
        (own[0].1 - 1.0).abs() < 1e-5,
        "exact cosine, not the quantised one: {own:?}"
    );

    // A deleted passage is never returned.
    store.passages().delete(&a.id, &stored[42].id).unwrap();
    rows.retain(|(t, _)| t != "passage 42");
    let after = nearest(&store, &a.id, &vector(42, dim), 5, &[]);
    assert!(after.iter().all(|(t, _)| t != "passage 42"), "{after:?}");
    assert_eq!(texts(&after), brute_force(&rows, &vector(42, dim), 5));

    // An insert is found at once.
    store
        .passages()
        .insert(&a.id, &with_vectors(900..901, dim, |_| vec![]))
        .unwrap();
    assert_eq!(
        nearest(&store, &a.id, &vector(900, dim), 1, &[])[0].0,
        "passage 900"
    );

    // A passage stored without a vector is found once the backfill fills it in.
    let bare = store
        .passages()
        .insert(&a.id, &passages(&["filled later"]))
        .unwrap();
    assert_ne!(
        nearest(&store, &a.id, &vector(901, dim), 1, &[])[0].0,
        "filled later"
    );
    let filled: Vec<(PassageId, String, Vec<f32>)> =
        vec![(bare[0].id.clone(), "filled later".into(), vector(901, dim))];
    // A backfill stores only vectors of the agent's current embedding model.
    store
        .agents()
        .update(
            &a.id,
            &AgentPatch {
                embedding: Some(Some(EmbeddingConfig {
                    model: "test/hashed".into(),
                    base_url: None,
                })),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(
        store
            .passages()
            .fill_vectors(&a.id, "test/hashed", &filled)
            .unwrap(),
        1
    );
    assert_eq!(
        nearest(&store, &a.id, &vector(901, dim), 1, &[])[0].0,
        "filled later"
    );

    // A model change forgets every vector; the new model's vectors (another dimension) are
    // searched alone, never mixed with the old ones.
    store.passages().clear_vectors(&a.id).unwrap();
    assert!(nearest(&store, &a.id, &vector(7, dim), 5, &[]).is_empty());
    store
        .passages()
        .insert(&a.id, &with_vectors(2_000..2_100, 12, |_| vec![]))
        .unwrap();
    assert!(nearest(&store, &a.id, &vector(7, dim), 5, &[]).is_empty());
    assert_eq!(
        nearest(&store, &a.id, &vector(2_050, 12), 1, &[])[0].0,
        "passage 2050"
    );
}

#[test]
fn filters_apply_before_the_limit_with_the_index() {
    let (_dir, store) = temp_store();
    store.set_vector_index_config(SMALL);
    let (a, _) = create(&store, "A");
    let dim = 16;
    // Every 40th passage is "rare" (10 of 400: scored exactly), every other one "half" (200:
    // the graph, restricted to them).
    let tag = |i: u64| {
        let mut t = Vec::new();
        if i.is_multiple_of(40) {
            t.push("rare".to_owned());
        }
        if i.is_multiple_of(2) {
            t.push("half".to_owned());
        }
        t
    };
    store
        .passages()
        .insert(&a.id, &with_vectors(0..400, dim, tag))
        .unwrap();
    let rows: Vec<(String, Vec<f32>)> = (0..400)
        .map(|i| (format!("passage {i}"), vector(i, dim)))
        .collect();
    // A query right at an odd (untagged) passage: filters must still fill the limit.
    let q = vector(41, dim);
    let rare = nearest(&store, &a.id, &q, 20, &["rare"]);
    assert_eq!(rare.len(), 10, "{rare:?}");
    let rare_rows: Vec<_> = rows
        .iter()
        .filter(|(t, _)| t.trim_start_matches("passage ").parse::<u64>().unwrap() % 40 == 0)
        .cloned()
        .collect();
    assert_eq!(texts(&rare), brute_force(&rare_rows, &q, 10));
    let half = nearest(&store, &a.id, &q, 8, &["half"]);
    assert_eq!(half.len(), 8);
    let half_rows: Vec<_> = rows
        .iter()
        .filter(|(t, _)| t.trim_start_matches("passage ").parse::<u64>().unwrap() % 2 == 0)
        .cloned()
        .collect();
    assert_eq!(texts(&half), brute_force(&half_rows, &q, 8));
    assert!(half.iter().all(|(t, _)| t != "passage 41"));
}

pub(crate) fn index_files(db_dir: &Path) -> Vec<PathBuf> {
    let dir = db_dir.join("data").join("engram.db.vectors");
    // Saved indexes only: a pending-build marker (`.building`) is not one.
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|f| f.extension().is_none_or(|x| x != "building"));
    files.sort();
    files
}

#[test]
fn a_saved_index_is_loaded_caught_up_or_rebuilt_never_trusted_blindly() {
    let (dir, store) = temp_store();
    store.set_vector_index_config(SMALL);
    let (a, _) = create(&store, "A");
    let dim = 20;
    let stored = store
        .passages()
        .insert(&a.id, &with_vectors(0..300, dim, |_| vec![]))
        .unwrap();
    assert_eq!(
        nearest(&store, &a.id, &vector(5, dim), 1, &[])[0].0,
        "passage 5"
    );
    // The graph builds in the background and is saved when done.
    store.wait_for_vector_index_builds();
    assert_eq!(
        nearest(&store, &a.id, &vector(6, dim), 1, &[])[0].0,
        "passage 6"
    );
    let files = index_files(dir.path());
    assert_eq!(files.len(), 2, "an index and its sidecar: {files:?}");
    let index_file = files
        .iter()
        .find(|f| f.extension().is_some_and(|e| e == "usearch"))
        .unwrap()
        .clone();

    // Writes after the save, then a "crash": the next process catches up from the log.
    store.passages().delete(&a.id, &stored[5].id).unwrap();
    store
        .passages()
        .insert(&a.id, &with_vectors(500..501, dim, |_| vec![]))
        .unwrap();
    let db = dir.path().join("data").join("engram.db");
    let reopened = Store::open(&db).unwrap();
    reopened.set_vector_index_config(SMALL);
    let hits = nearest(&reopened, &a.id, &vector(5, dim), 3, &[]);
    assert!(hits.iter().all(|(t, _)| t != "passage 5"), "{hits:?}");
    assert_eq!(
        nearest(&reopened, &a.id, &vector(500, dim), 1, &[])[0].0,
        "passage 500"
    );
    drop(reopened);

    // A corrupt file of the right length, a truncated one and a missing one are rebuilt.
    let len = std::fs::metadata(&index_file).unwrap().len() as usize;
    for damage in ["garbage", "truncated", "missing"] {
        match damage {
            "garbage" => std::fs::write(&index_file, vec![0x5a; len]).unwrap(),
            "truncated" => std::fs::write(&index_file, b"USearch").unwrap(),
            _ => {
                let _ = std::fs::remove_file(&index_file);
            }
        }
        let fresh = Store::open(&db).unwrap();
        fresh.set_vector_index_config(SMALL);
        assert_eq!(
            nearest(&fresh, &a.id, &vector(7, dim), 1, &[])[0].0,
            "passage 7",
            "{damage}"
        );
        assert!(
            nearest(&fresh, &a.id, &vector(5, dim), 3, &[])
                .iter()
                .all(|(t, _)| t != "passage 5"),
            "{damage}"
        );
    }

    // Deleting the agent deletes its saved index.
    store.agents().delete(&a.id).unwrap();
    assert!(index_files(dir.path()).is_empty());
}

#[test]
fn exact_search_below_the_threshold_matches_brute_force() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "A");
    let dim = 32;
    store
        .passages()
        .insert(&a.id, &with_vectors(0..1_000, dim, |_| vec![]))
        .unwrap();
    let rows: Vec<(String, Vec<f32>)> = (0..1_000)
        .map(|i| (format!("passage {i}"), vector(i, dim)))
        .collect();
    for probe in 0..5u64 {
        let q = vector(probe + 50_000, dim);
        assert_eq!(
            texts(&nearest(&store, &a.id, &q, 10, &[])),
            brute_force(&rows, &q, 10)
        );
    }
}

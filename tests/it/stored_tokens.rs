//! Late interaction reads each passage's word-piece vectors from the store, computed once in
//! the background after the passage is written, with the built-in model's real weights:
//! a passage whose vectors are still being computed is found by its words at once (and
//! scored by vectors computed on the spot), and by the stored vectors once the backfill has
//! run; a search then encodes nothing but its query; a quit mid-backfill resumes on the next
//! start; an edit drops the stale vectors and a new model forgets them.

use engram_core::{AgentId, NewAgent, NewPassage};
use engram_retrieval::late::token_codes;
use engram_service::Engram;
use engram_suite::archival::{search, texts};
use engram_suite::{Home, open_with_env};
use std::time::{Duration, Instant};

const HANDLE: &str = "local/all-minilm-l6-v2";

const NOTES: [&str; 6] = [
    "Bob walks his terrier by the harbour every morning",
    "The quarterly tax report is due on Friday",
    "Alice moved to a flat near the harbour in Lisbon",
    "Remember to water the tomatoes twice a week",
    "Alice adopted a grey cat from the shelter last spring",
    "The harbour festival has fireworks in August",
];

async fn new_agent(engram: &Engram) -> AgentId {
    engram
        .agents()
        .create(NewAgent {
            name: "Sam".into(),
            ..NewAgent::default()
        })
        .await
        .unwrap()
        .agent
        .id
}

/// Writes `texts` straight to the store without vectors, as an import or a chat step does
/// before the background pass has run.
fn write_unembedded(engram: &Engram, agent: &AgentId, texts: &[String]) {
    let ps: Vec<NewPassage> = texts
        .iter()
        .map(|t| NewPassage {
            text: t.clone(),
            ..Default::default()
        })
        .collect();
    engram.store().passages().insert(agent, &ps).unwrap();
}

fn without_tokens(engram: &Engram, agent: &AgentId) -> u64 {
    engram
        .store()
        .passages()
        .count_without_tokens(agent, HANDLE)
        .unwrap()
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "waited for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passage_is_found_by_words_at_once_and_by_its_stored_vectors_once_computed() {
    let home = Home::with_model(&[]);
    let engram = &home.engram;
    let sam = new_agent(engram).await;
    let notes: Vec<String> = NOTES.iter().map(|s| s.to_string()).collect();
    write_unembedded(engram, &sam, &notes);
    assert_eq!(without_tokens(engram, &sam), 6);

    // Nothing computed yet: the words find it (and the model scores the candidates now).
    let hits = search(engram, &sam, "Where does Alice live?", 2).await;
    assert_eq!(texts(&hits)[0], NOTES[2], "{:?}", texts(&hits));

    // The background pass (started at once for an import, at the next start for rows a quit
    // left behind) gives each passage its vector and its token vectors.
    assert_eq!(engram.archival().resume_backfills().unwrap(), 1);
    until("the backfill", || {
        without_tokens(engram, &sam) == 0 && !engram.archival().backfill_running(&sam)
    })
    .await;
    assert_eq!(
        engram
            .store()
            .passages()
            .count_without_vectors(&sam)
            .unwrap(),
        0
    );
    let ids: Vec<_> = engram
        .archival()
        .list(&sam, &all_passages())
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    let stored = engram
        .store()
        .passages()
        .tokens(&sam, HANDLE, &ids)
        .unwrap();
    assert_eq!(stored.len(), 6);
    for blob in stored.values() {
        let tokens = token_codes::decode(blob).unwrap();
        assert!(tokens.len() >= 6, "{} word pieces", tokens.len());
        assert!(tokens.iter().all(|t| t.len() == 384));
    }
    let before = search(engram, &sam, "Where does Alice live?", 2).await;
    assert_eq!(texts(&before)[0], NOTES[2]);

    // The search reads what is stored, not the text: give the Lisbon note the vectors of the
    // tax note and it falls behind, though its text did not change.
    let lisbon = &before[0].passage;
    let all = engram.archival().list(&sam, &all_passages()).await.unwrap();
    let tax = all.iter().find(|p| p.text == NOTES[1]).unwrap();
    let swapped = stored[&tax.id].clone();
    assert_eq!(
        engram
            .store()
            .passages()
            .fill_tokens(
                &sam,
                HANDLE,
                &[(lisbon.id.clone(), lisbon.text.clone(), swapped)]
            )
            .unwrap(),
        1
    );
    let after = search(engram, &sam, "Where does Alice live?", 6).await;
    let at = |hits: &[engram_core::PassageHit]| {
        hits.iter()
            .find(|h| h.passage.id == lisbon.id)
            .unwrap()
            .score
    };
    assert!(at(&after) < at(&before), "{} → {}", at(&before), at(&after));

    // An edit of the text drops its stored vectors (in the store, with the text) and the
    // background pass computes them anew.
    let porto = "Alice moved to Porto last year";
    engram
        .store()
        .passages()
        .update(&sam, &lisbon.id, Some(porto), None, None)
        .unwrap();
    assert_eq!(without_tokens(engram, &sam), 1);
    engram
        .archival()
        .edit(&sam, &lisbon.id, Some(porto), None)
        .await
        .unwrap();
    until("the edited passage's vectors", || {
        without_tokens(engram, &sam) == 0
    })
    .await;
    let fresh = engram
        .store()
        .passages()
        .tokens(&sam, HANDLE, std::slice::from_ref(&lisbon.id))
        .unwrap();
    assert_ne!(
        fresh[&lisbon.id], stored[&tax.id],
        "recomputed from the new text"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quit_in_the_middle_of_the_backfill_resumes_on_the_next_start() {
    let home = Home::with_model(&[]);
    let sam = new_agent(&home.engram).await;
    let notes: Vec<String> = (0..400)
        .map(|i| {
            format!(
                "Note {i}: the {} shipment left the harbour on day {i}",
                ["red", "blue", "green"][i % 3]
            )
        })
        .collect();
    write_unembedded(&home.engram, &sam, &notes);
    let path = home.path().to_owned();
    let model: &'static str = Box::leak(
        engram_suite::model::model_dir()
            .display()
            .to_string()
            .into_boxed_str(),
    );
    let vars = [("ENGRAM_LOCAL_MODEL_DIR", model)];

    // An engine of its own that starts the backfill and quits after its first batches.
    let dir = path.clone();
    let first = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let engram = open_with_env(&dir, &vars);
            let mut notices = engram.notices();
            assert_eq!(engram.archival().resume_backfills().unwrap(), 1);
            loop {
                if let engram_service::Notice::EmbeddingBackfill { done, .. } =
                    notices.recv().await.unwrap()
                    && done >= 64
                {
                    break;
                }
            }
        });
        // Quit: the runtime and its background work stop where they are.
        rt.shutdown_background();
    });
    first.join().unwrap();
    let left = without_tokens(&home.engram, &sam);
    assert!((1..400).contains(&left), "{left} left after the quit");

    // The next start picks it up from where it stopped.
    drop(home.engram);
    let engram = open_with_env(&path, &vars);
    assert_eq!(engram.archival().resume_backfills().unwrap(), 1);
    until("the resumed backfill", || {
        without_tokens(&engram, &sam) == 0 && !engram.archival().backfill_running(&sam)
    })
    .await;
    assert_eq!(
        engram
            .store()
            .passages()
            .count_without_vectors(&sam)
            .unwrap(),
        0
    );
    let hits = search(&engram, &sam, "Which shipment left on day 123?", 3).await;
    assert!(
        texts(&hits).contains(&notes[123].as_str()),
        "{:?}",
        texts(&hits)
    );
}

fn all_passages() -> engram_store::PassageList {
    engram_store::PassageList {
        limit: 1_000,
        ..Default::default()
    }
}

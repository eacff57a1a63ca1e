//! Late interaction as archival search's reranker (no cross-encoder configured), through the
//! real service with the built-in model's real weights: an agent on the built-in model gets
//! the hybrid search's first hits re-scored by MaxSim over the model's token vectors, blended
//! half and half with the hybrid score; an agent on words alone is left as the store ranks it
//! and no model is loaded for it; switching reranking off gives the store's answer back.

use engram_core::{AgentPatch, TagMatch};
use engram_embed::Encoder;
use engram_embed::late::max_sim;
use engram_store::PassageQuery;
use engram_suite::Home;
use engram_suite::archival::{agent_with_passages, search, texts};

const PASSAGES: [&str; 8] = [
    "Bob loves boston terriers",
    "Bob walks his terrier by the harbour every morning",
    "The quarterly tax report is due on Friday",
    "Alice moved to a flat near the harbour in Lisbon",
    "Remember to water the tomatoes twice a week",
    "Bob's dog is called Rex and he barks at the mailman",
    "Alice adopted a grey cat from the shelter last spring",
    "The harbour festival has fireworks in August",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hybrid_hits_of_an_agent_on_the_built_in_model_are_rescored_by_maxsim() {
    let home = Home::with_model(&[]);
    let status = home.engram.reranker_status();
    assert!(
        status.late_interaction && status.enabled && !status.active,
        "{status:?}"
    );
    let sam = agent_with_passages(&home.engram, "Sam", &PASSAGES).await;
    let query = "Which pet does Bob have?";
    let hits = search(&home.engram, &sam, query, 3).await;

    // The same computation by hand: the store's hybrid ranking 20 deep, each hit's score
    // blended half and half with MaxSim of the query's and its token vectors.
    let encoder = Encoder::load(&engram_suite::model::model_dir()).unwrap();
    let qv = encoder.embed(&[query.to_owned()]).unwrap().remove(0);
    let pool = home
        .engram
        .store()
        .search_passages(
            &sam,
            &PassageQuery {
                query: query.into(),
                tag_match: TagMatch::Any,
                top_k: 20,
                embedding: Some(qv.clone()),
                ..PassageQuery::default()
            },
        )
        .unwrap();
    let mut all = vec![query.to_owned()];
    all.extend(pool.iter().map(|h| h.passage.text.clone()));
    let tokens = encoder.token_vectors(&all).unwrap();
    assert!(tokens.iter().all(|t| !t.vectors.is_empty()));
    let q: Vec<&[f32]> = tokens[0].vectors.iter().map(Vec::as_slice).collect();
    let mut expected: Vec<(String, f64)> = pool
        .iter()
        .zip(&tokens[1..])
        .map(|(h, t)| {
            let sim = f64::from(max_sim(&q, &t.vectors)).clamp(0.0, 1.0);
            (h.passage.text.clone(), 0.5 * h.score + 0.5 * sim)
        })
        .collect();
    expected.sort_by(|a, b| b.1.total_cmp(&a.1));
    expected.truncate(3);
    assert_eq!(
        texts(&hits),
        expected.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>()
    );
    for (h, (_, s)) in hits.iter().zip(&expected) {
        assert!((h.score - s).abs() < 1e-4, "{} vs {s}", h.score);
    }
    assert!(hits.iter().all(|h| (0.0..=1.0).contains(&h.score)));
    // A dog owner's turns lead: the question shares only "Bob" with them.
    assert!(
        texts(&hits).iter().all(|t| t.starts_with("Bob")),
        "{:?}",
        texts(&hits)
    );

    // Switched off: the store's own hybrid answer.
    home.engram.set_rerank_enabled(false).unwrap();
    assert!(!home.engram.reranker_status().late_interaction);
    let off = search(&home.engram, &sam, query, 3).await;
    let store = home
        .engram
        .store()
        .search_passages(
            &sam,
            &PassageQuery {
                query: query.into(),
                tag_match: TagMatch::Any,
                top_k: 3,
                embedding: Some(qv),
                ..PassageQuery::default()
            },
        )
        .unwrap();
    assert_eq!(texts(&off), texts(&store));
    assert_eq!(
        off.iter().map(|h| h.score).collect::<Vec<_>>(),
        store.iter().map(|h| h.score).collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_on_words_alone_is_not_reranked_and_loads_no_model() {
    let home = Home::with_model(&[]);
    let ann = home
        .engram
        .create_agent(engram_core::NewAgent {
            name: "Ann".into(),
            ..engram_core::NewAgent::default()
        })
        .unwrap()
        .agent
        .id;
    home.engram
        .update_agent(
            &ann,
            &AgentPatch {
                embedding: Some(None),
                ..Default::default()
            },
        )
        .unwrap();
    for p in PASSAGES {
        home.engram.add_passage(&ann, p, vec![]).await.unwrap();
    }
    let hits = search(&home.engram, &ann, "harbour morning walks", 4).await;
    let store = home
        .engram
        .store()
        .search_passages(
            &ann,
            &PassageQuery {
                query: "harbour morning walks".into(),
                tag_match: TagMatch::Any,
                top_k: 4,
                ..PassageQuery::default()
            },
        )
        .unwrap();
    assert_eq!(texts(&hits), texts(&store));
    assert_eq!(
        hits.iter().map(|h| h.score).collect::<Vec<_>>(),
        store.iter().map(|h| h.score).collect::<Vec<_>>()
    );
    let status = home
        .engram
        .local_model_status("local/all-minilm-l6-v2")
        .unwrap();
    assert!(!status.loaded, "{status:?}");
}

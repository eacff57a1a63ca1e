//! Late interaction as archival search's reranker (no cross-encoder configured), through the
//! real service with the built-in model's real weights: an agent on the built-in model gets
//! the hybrid search's first hits re-scored by MaxSim over the model's token vectors, each
//! query word weighted by its IDF among the agent's passages, each hit read partly alone and
//! mostly with the passages written just before and after it, and blended with the hybrid
//! score; a question that names the wrong speaker still finds the turn that holds the answer;
//! an agent on words alone is left as the store ranks it and no model is loaded for it;
//! switching reranking off gives the store's answer back.

use engram_core::{AgentId, AgentPatch, PassageHit, TagMatch};
use engram_embed::Encoder;
use engram_retrieval::HybridSearch;
use engram_retrieval::late::maxsim::{content_words, weighted_max_sim_in_context};
use engram_retrieval::tuning::RERANK_POOL;
use engram_service::{
    Engram, LATE_INTERACTION_CONTEXT_SHARE, LATE_INTERACTION_DEPTH,
    LATE_INTERACTION_NEIGHBOUR_REACH, LATE_INTERACTION_WEIGHT,
};
use engram_store::PassageQuery;
use engram_suite::Home;
use engram_suite::archival::{agent_with_passages, search, texts};

/// What the pipeline should answer, computed by hand: the first [`LATE_INTERACTION_DEPTH`]
/// of the store's hybrid ranking [`RERANK_POOL`] deep, each hit's score blended with MaxSim of the query's and
/// its token vectors (the passages' as stored), read alone and with the passages written within
/// [`LATE_INTERACTION_NEIGHBOUR_REACH`] of it on each side, by [`LATE_INTERACTION_CONTEXT_SHARE`]
/// — IDF-weighted by the agent's own word statistics when `idf`, plain over every
/// query token otherwise — best first. Also returns the query's vector.
fn by_hand(
    engram: &Engram,
    agent: &AgentId,
    query: &str,
    idf: bool,
) -> (Vec<(String, f64)>, Vec<f32>) {
    let encoder = Encoder::load(&engram_suite::model::model_dir()).unwrap();
    let qv = encoder.embed(&[query.to_owned()]).unwrap().remove(0);
    let q = PassageQuery {
        query: query.into(),
        tag_match: TagMatch::Any,
        top_k: RERANK_POOL,
        embedding: Some(qv.clone()),
        ..PassageQuery::default()
    };
    let mut pool: Vec<PassageHit> = engram.store().search_passages(agent, &q).unwrap();
    pool.truncate(LATE_INTERACTION_DEPTH);
    let ids: Vec<_> = pool.iter().map(|h| h.passage.id.clone()).collect();
    let around = engram
        .store()
        .passages()
        .neighbours(agent, &q, &ids, LATE_INTERACTION_NEIGHBOUR_REACH)
        .unwrap();
    let vectors = |text: &str| encoder.token_vectors(&[text.to_owned()]).unwrap().remove(0);
    // A passage's word-piece vectors as the background pass stored them.
    let stored = |id: &engram_core::PassageId| {
        let blobs = engram
            .store()
            .passages()
            .tokens(agent, "local/all-minilm-l6-v2", std::slice::from_ref(id))
            .unwrap();
        engram_retrieval::late::token_codes::decode(&blobs[id]).unwrap()
    };
    let query_tokens = vectors(query);
    let words = content_words(&query_tokens);
    let names: Vec<String> = words.iter().map(|(w, _)| w.clone()).collect();
    let stats = engram.store().passages().term_stats(agent, &names).unwrap();
    let weighted: Vec<(&[f32], f64)> = if idf {
        words
            .iter()
            .enumerate()
            .flat_map(|(i, (_, pieces))| {
                let idf = engram_retrieval::late::idf(&stats, i);
                pieces.iter().map(move |v| (*v, idf))
            })
            .collect()
    } else {
        query_tokens
            .vectors
            .iter()
            .map(|v| (v.as_slice(), 1.0))
            .collect()
    };
    let w = LATE_INTERACTION_WEIGHT;
    let mut expected: Vec<(String, f64)> = pool
        .iter()
        .zip(&around)
        .map(|(h, near)| {
            let own = stored(&h.passage.id);
            assert!(!own.is_empty());
            let near: Vec<_> = near.iter().map(|p| stored(&p.id)).collect();
            let near: Vec<&[Vec<f32>]> = near.iter().map(Vec::as_slice).collect();
            let sim =
                weighted_max_sim_in_context(&weighted, &own, &near, LATE_INTERACTION_CONTEXT_SHARE);
            let sim = f64::from(sim).clamp(0.0, 1.0);
            (h.passage.text.clone(), (1.0 - w) * h.score + w * sim)
        })
        .collect();
    expected.sort_by(|a, b| b.1.total_cmp(&a.1));
    (expected, qv)
}

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
    let status = home.engram.models().reranker_status();
    assert!(
        status.late_interaction && status.enabled && !status.active,
        "{status:?}"
    );
    let sam = agent_with_passages(&home.engram, "Sam", &PASSAGES).await;
    let query = "Which pet does Bob have?";
    let hits = search(&home.engram, &sam, query, 3).await;

    let (mut expected, qv) = by_hand(&home.engram, &sam, query, true);
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
    home.engram.models().set_rerank_enabled(false).unwrap();
    assert!(!home.engram.models().reranker_status().late_interaction);
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

/// A long conversation between two people, stored `"{speaker}: {text}"` as LoCoMo's turns
/// are: Melanie speaks most, so her name is in most passages.
const CONVERSATION: [&str; 10] = [
    "Melanie: I took the kids to the beach last weekend",
    "Caroline: I signed up for a pottery class and made my first bowl",
    "Melanie: I love making things with clay and paint with the kids",
    "Melanie: work has been so busy lately",
    "Melanie: we had pizza for dinner with friends on Friday",
    "Caroline: the support group meeting was really moving",
    "Melanie: my garden tomatoes are finally turning red",
    "Melanie: I finished reading a novel about the sea",
    "Melanie: the kids made a sandcastle taller than them",
    "Melanie: I am going camping with my family in June",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_naming_the_wrong_speaker_still_finds_the_turn_with_the_answer() {
    let home = Home::with_model(&[]);
    let pair = agent_with_passages(&home.engram, "Pair", &CONVERSATION).await;
    // Caroline made the bowl; the question names Melanie (LoCoMo's adversarial questions).
    let query = "What did Melanie make in her pottery class?";
    let hits = search(&home.engram, &pair, query, 3).await;
    let pottery = CONVERSATION[1];
    assert_eq!(texts(&hits)[0], pottery, "{:?}", texts(&hits));
    let (expected, _) = by_hand(&home.engram, &pair, query, true);
    assert_eq!(
        texts(&hits),
        expected
            .iter()
            .take(3)
            .map(|(t, _)| t.as_str())
            .collect::<Vec<_>>()
    );
    // "melanie" is in 8 of the 10 passages, "pottery" in one: the name weighs far less.
    let stats = home
        .engram
        .store()
        .passages()
        .term_stats(&pair, &["melanie".into(), "pottery".into()])
        .unwrap();
    assert_eq!(stats.frequencies, [8, 1]);
    assert!(
        engram_retrieval::late::idf(&stats, 1) > 3.0 * engram_retrieval::late::idf(&stats, 0),
        "{stats:?}"
    );
    // Plain MaxSim lets "Melanie" pull her clay turn close; weighting by IDF widens the lead
    // of the turn that holds the answer (0.22 against 0.05 when measured).
    let (plain, _) = by_hand(&home.engram, &pair, query, false);
    let lead = |order: &[(String, f64)]| {
        let score = |t: &str| order.iter().find(|(x, _)| x == t).unwrap().1;
        score(pottery) - score(CONVERSATION[2])
    };
    assert!(
        lead(&expected) > 2.0 * lead(&plain) && lead(&plain) > 0.0,
        "IDF-weighted {expected:?}\nplain {plain:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_on_words_alone_is_not_reranked_and_loads_no_model() {
    let home = Home::with_model(&[]);
    let ann = home
        .engram
        .agents()
        .create(engram_core::NewAgent {
            name: "Ann".into(),
            ..engram_core::NewAgent::default()
        })
        .await
        .unwrap()
        .agent
        .id;
    home.engram
        .agents()
        .update(
            &ann,
            &AgentPatch {
                embedding: Some(None),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    for p in PASSAGES {
        home.engram
            .archival()
            .insert(&ann, p, vec![])
            .await
            .unwrap();
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
        .models()
        .embedding_model_status("local/all-minilm-l6-v2")
        .unwrap();
    assert!(!status.loaded, "{status:?}");
}

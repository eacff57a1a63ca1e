//! Ranked search's primitives: the candidates a store reads (words with their neighbours,
//! vectors), the filters applied before the depth, and the rows of the ranking handed back, in
//! its order. Scores of the word side are each engine's own; what is compared is which rows
//! are candidates and where.

use super::{agent_with, code};
use crate::harness::{Harness, on_both_backends};
use chrono::{DateTime, Duration, Utc};
use engram_core::{
    AgentId, MessageKind, NewMessage, NewPassage, PassId, PassStatus, PassTrigger, PassageId, Role,
    SleeptimePass, SupersedeKind, TagMatch,
};
use engram_store_api::{
    CandidateDepth, Candidates, MessageQuery, MessageStore, PassCommit, PassageOp, PassageQuery,
    PassageStore, Ranking, SleeptimeStore,
};
use std::sync::Mutex;

on_both_backends!(
    passages_are_found_by_words_with_their_neighbours_and_filters,
    passages_are_found_by_vector_among_those_of_the_query_dimension,
    the_neighbours_of_passages_are_read_ring_by_ring,
    messages_are_found_by_words_without_hidden_ones,
);

const DEPTH: CandidateDepth = CandidateDepth {
    lexical: 50,
    vector: 50,
};

/// A ranker that keeps the candidates it was given and ranks by the words side, or else the
/// vector side, in the order it was read.
struct Seen(Mutex<Option<Candidates>>);

impl Seen {
    fn new() -> Self {
        Seen(Mutex::new(None))
    }

    fn rank(&self, c: Candidates) -> Ranking {
        let ranking = match (&c.lexical, &c.vector) {
            (Some(l), _) if !l.ranking.is_empty() => l.ranking.clone(),
            (_, Some(v)) => v.clone(),
            _ => Vec::new(),
        };
        *self.0.lock().unwrap() = Some(c);
        ranking
    }

    fn take(&self) -> Option<Candidates> {
        self.0.lock().unwrap().take()
    }
}

fn at(minutes: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_750_000_000, 0).unwrap() + Duration::minutes(minutes)
}

fn passage(text: &str, minutes: i64, tags: &[&str], embedding: Option<Vec<f32>>) -> NewPassage {
    NewPassage {
        text: text.into(),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        embedding,
        created_at: Some(at(minutes)),
    }
}

fn query(text: &str) -> PassageQuery {
    PassageQuery {
        query: text.into(),
        top_k: 10,
        ..PassageQuery::default()
    }
}

fn texts(hits: &[engram_core::PassageHit]) -> Vec<&str> {
    hits.iter().map(|h| h.passage.text.as_str()).collect()
}

async fn passages_are_found_by_words_with_their_neighbours_and_filters<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "ana", &[]).await;
    let stored = b
        .insert_passages(
            &a.id,
            &[
                passage("Ana adopted a cat named Miso", 0, &["pets"], None),
                passage("Miso likes the balcony", 10, &["pets"], None),
                passage("The launch moved to May", 20, &["work"], None),
                passage("Miso visited the vet", 200, &["pets", "health"], None),
            ],
        )
        .await
        .unwrap();
    let seen = Seen::new();
    let rank = |c: Candidates| seen.rank(c);

    let hits = b
        .rank_passages(&a.id, &query("Miso"), DEPTH, &rank)
        .await
        .unwrap();
    let mut found = texts(&hits);
    found.sort_unstable();
    assert_eq!(
        found,
        [
            "Ana adopted a cat named Miso",
            "Miso likes the balcony",
            "Miso visited the vet"
        ]
    );
    let c = seen.take().expect("ranked");
    assert!(c.vector.is_none(), "no query vector, no vector side");
    let words = c.lexical.expect("words");
    assert!(words.ranking.iter().all(|(_, s)| *s > 0.0));
    // The balcony passage's neighbours: the cat (10 min before) and the launch (10 min after);
    // the vet visit is hours away and has none after it.
    let key_of = |text: &str| {
        let at = hits.iter().position(|h| h.passage.text == text).unwrap();
        words.ranking[at].0
    };
    // The launch passage is no word hit, so it has no key of its own here: only that it is
    // the one after.
    let [before, after] = words.neighbours[&key_of("Miso likes the balcony")];
    assert_eq!(before, Some(key_of("Ana adopted a cat named Miso")));
    assert!(after.is_some_and(|k| !words.ranking.iter().any(|(hit, _)| *hit == k)));
    assert_eq!(
        words.neighbours[&key_of("Miso visited the vet")],
        [None, None]
    );

    // The ranking handed back is the answer's order.
    let reversed = b
        .rank_passages(&a.id, &query("Miso"), DEPTH, &|c: Candidates| {
            let mut r = c.lexical.unwrap().ranking;
            r.reverse();
            r
        })
        .await
        .unwrap();
    let mut expect = texts(&hits);
    expect.reverse();
    assert_eq!(texts(&reversed), expect);

    // Filters apply before the depth: tags, dates.
    let tagged = PassageQuery {
        tags: vec!["health".into(), "pets".into()],
        tag_match: TagMatch::All,
        ..query("Miso")
    };
    let hits = b.rank_passages(&a.id, &tagged, DEPTH, &rank).await.unwrap();
    assert_eq!(texts(&hits), ["Miso visited the vet"]);
    let early = PassageQuery {
        end: Some(at(15)),
        ..query("Miso")
    };
    let hits = b.rank_passages(&a.id, &early, DEPTH, &rank).await.unwrap();
    assert_eq!(hits.len(), 2);

    // Blank: the newest, score 0, without ranking; no words at all: nothing.
    seen.take();
    let blank = b
        .rank_passages(&a.id, &query("  "), DEPTH, &rank)
        .await
        .unwrap();
    assert_eq!(
        texts(&blank),
        [
            "Miso visited the vet",
            "The launch moved to May",
            "Miso likes the balcony",
            "Ana adopted a cat named Miso"
        ]
    );
    assert!(blank.iter().all(|h| h.score == 0.0));
    assert!(
        b.rank_passages(&a.id, &query("?! …"), DEPTH, &rank)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(seen.take().is_none(), "neither called the ranker");

    // A passage a pass replaced is found only when asked for the history.
    let newer = PassageId::new();
    b.commit_pass(&PassCommit {
        pass: SleeptimePass {
            id: PassId::new(),
            agent_id: a.id.clone(),
            trigger: PassTrigger::Manual,
            status: PassStatus::Done,
            reason: None,
            model: "openai/gpt-4o-mini".into(),
            started_at: Utc::now(),
            ended_at: Utc::now(),
            messages_read: 0,
            last_seq: 0,
            model_calls: 1,
            prompt_tokens: 1,
            completion_tokens: 1,
            cost_usd: None,
            changes: Vec::new(),
        },
        block_writes: vec![],
        passage_ops: vec![
            PassageOp::Add {
                id: newer.clone(),
                passage: passage("The launch moved to June", 30, &["work"], None),
            },
            PassageOp::Supersede {
                passage_id: stored[2].id.clone(),
                by: Some(newer),
                how: SupersedeKind::Superseded,
            },
        ],
    })
    .await
    .unwrap();
    let hits = b
        .rank_passages(&a.id, &query("launch"), DEPTH, &rank)
        .await
        .unwrap();
    assert_eq!(texts(&hits), ["The launch moved to June"]);
    let history = PassageQuery {
        include_superseded: true,
        ..query("launch")
    };
    let hits = b
        .rank_passages(&a.id, &history, DEPTH, &rank)
        .await
        .unwrap();
    assert_eq!(hits.len(), 2);

    let nobody = AgentId::new();
    assert_eq!(
        code(b.rank_passages(&nobody, &query("x"), DEPTH, &rank).await),
        "not_found"
    );
}

async fn passages_are_found_by_vector_among_those_of_the_query_dimension<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "ana", &[]).await;
    b.insert_passages(
        &a.id,
        &[
            passage("north", 0, &[], Some(vec![1.0, 0.0, 0.0])),
            passage("north-east", 1, &[], Some(vec![0.7, 0.7, 0.0])),
            passage("south", 2, &[], Some(vec![-1.0, 0.0, 0.0])),
            passage("no vector", 3, &[], None),
        ],
    )
    .await
    .unwrap();
    b.insert_passages(&a.id, &[passage("flat", 4, &[], Some(vec![1.0, 0.0]))])
        .await
        .unwrap();
    let seen = Seen::new();
    let rank = |c: Candidates| seen.rank(c);
    let q = PassageQuery {
        embedding: Some(vec![2.0, 0.1, 0.0]),
        ..query("")
    };
    let hits = b.rank_passages(&a.id, &q, DEPTH, &rank).await.unwrap();
    assert_eq!(texts(&hits), ["north", "north-east", "south"]);
    let c = seen.take().unwrap();
    assert!(c.lexical.is_none(), "a blank query has no words side");
    let v = c.vector.unwrap();
    assert!(v.iter().all(|(_, s)| (-1.0..=1.0).contains(s)));
    assert!(v[0].1 > 0.99 && v[2].1 < -0.99, "{v:?}");
    let shallow = CandidateDepth {
        lexical: 50,
        vector: 1,
    };
    assert_eq!(
        texts(&b.rank_passages(&a.id, &q, shallow, &rank).await.unwrap()),
        ["north"]
    );
    let bad = PassageQuery {
        embedding: Some(vec![f32::NAN]),
        ..query("")
    };
    assert_eq!(
        code(b.rank_passages(&a.id, &bad, DEPTH, &rank).await),
        "invalid_input"
    );
}

async fn the_neighbours_of_passages_are_read_ring_by_ring<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "ana", &[]).await;
    let stored = b
        .insert_passages(
            &a.id,
            &[
                passage("one", 0, &[], None),
                passage("two", 5, &[], None),
                passage("three", 10, &[], None),
                passage("four", 15, &[], None),
                passage("far", 300, &[], None),
            ],
        )
        .await
        .unwrap();
    let ids = [stored[2].id.clone(), stored[4].id.clone(), PassageId::new()];
    let around = b
        .passage_neighbours(&a.id, &query(""), &ids, 2)
        .await
        .unwrap();
    let names =
        |ps: &Vec<engram_core::Passage>| ps.iter().map(|p| p.text.clone()).collect::<Vec<_>>();
    assert_eq!(names(&around[0]), ["one", "two", "four"]);
    assert!(around[1].is_empty(), "hours from anything");
    assert!(around[2].is_empty(), "not one of the agent's");
    let one_ring = b
        .passage_neighbours(&a.id, &query(""), &ids[..1], 1)
        .await
        .unwrap();
    assert_eq!(names(&one_ring[0]), ["two", "four"]);
}

async fn messages_are_found_by_words_without_hidden_ones<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "ana", &[]).await;
    let mut msgs = vec![
        NewMessage::user("Where did I park the bicycle?"),
        NewMessage::assistant("By the library, next to the bicycle racks.", None, vec![]),
        NewMessage::hidden(MessageKind::Heartbeat, "bicycle heartbeat"),
        NewMessage::user("Thanks!"),
    ];
    for (i, m) in msgs.iter_mut().enumerate() {
        m.created_at = Some(at(i as i64));
    }
    let stored = b.append_messages(&a.id, &msgs).await.unwrap();
    let seen = Seen::new();
    let rank = |c: Candidates| seen.rank(c);
    let q = |text: &str| MessageQuery {
        query: text.into(),
        limit: 10,
        ..MessageQuery::default()
    };
    let hits = b
        .rank_messages(&a.id, &q("bicycle"), None, DEPTH, &rank)
        .await
        .unwrap();
    let mut ids: Vec<_> = hits.iter().map(|h| h.message.id.clone()).collect();
    ids.sort();
    let mut expect = vec![stored[0].id.clone(), stored[1].id.clone()];
    expect.sort();
    assert_eq!(ids, expect, "the heartbeat is never found");
    let words = seen.take().unwrap().lexical.unwrap();
    let key = |id: &engram_core::MessageId| {
        words.ranking[hits.iter().position(|h| &h.message.id == id).unwrap()].0
    };
    // The question's neighbours: nothing before it, the answer after it.
    assert_eq!(
        words.neighbours[&key(&stored[0].id)],
        [None, Some(key(&stored[1].id))]
    );

    let users_only = MessageQuery {
        roles: vec![Role::User],
        ..q("bicycle")
    };
    let hits = b
        .rank_messages(&a.id, &users_only, None, DEPTH, &rank)
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].message.id, stored[0].id);

    // A query vector: no message has a stored one, so the vector side is empty.
    seen.take();
    let hits = b
        .rank_messages(&a.id, &q("bicycle"), Some(&[0.5, 0.5]), DEPTH, &rank)
        .await
        .unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(seen.take().unwrap().vector, Some(Vec::new()));

    let blank = b
        .rank_messages(&a.id, &q(""), None, DEPTH, &rank)
        .await
        .unwrap();
    assert_eq!(
        blank
            .iter()
            .map(|h| h.message.id.clone())
            .collect::<Vec<_>>(),
        [
            stored[3].id.clone(),
            stored[1].id.clone(),
            stored[0].id.clone()
        ]
    );
    assert!(
        b.rank_messages(&a.id, &q("…"), None, DEPTH, &rank)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        code(
            b.rank_messages(&a.id, &q("x"), Some(&[]), DEPTH, &rank)
                .await
        ),
        "invalid_input"
    );
}

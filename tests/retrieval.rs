//! Archival search quality on the LoCoMo development set, through the real store: lexical
//! retrieval must keep finding the evidence (recall@5 ≥ 0.65, issue #13's target), and an
//! answer in the turn next to the one that shares the question's words must be found.

use engram_core::{NewAgent, NewPassage};
use engram_store::PassageQuery;
use engram_suite::{Home, locomo};

#[test]
fn lexical_recall_on_the_development_set() {
    let conversations = locomo::load(&locomo::dev_set_dir());
    if conversations.is_empty() {
        eprintln!("skipped: no ../shared/eval/locomo-dev beside the repository");
        return;
    }
    let home = Home::new();
    let recall = locomo::measure_lexical(&home.engram, &conversations, &[5]);
    assert!(recall.questions > 150, "{} questions", recall.questions);
    let at5 = recall.at(5);
    eprintln!("lexical evidence recall@5 = {at5:.3}");
    assert!(at5 >= 0.65, "lexical evidence recall@5 fell to {at5:.3}");
}

#[test]
fn the_turn_after_a_matching_question_is_found() {
    let home = Home::new();
    let agent = home
        .engram
        .create_agent(NewAgent {
            name: "Diarist".into(),
            ..NewAgent::default()
        })
        .unwrap()
        .agent
        .id;
    let store = home.engram.store();
    let texts = [
        "Mel: Did you ever go to the pottery workshop downtown?",
        "Mel: Yes! Last May, I made a wobbly blue bowl there.",
        "Sam: The weather is awful this week.",
    ];
    let mut filler: Vec<String> = (0..40)
        .map(|i| format!("Sam: note {i} about groceries and errands"))
        .collect();
    filler.extend(texts.iter().map(|t| t.to_string()));
    let passages: Vec<NewPassage> = filler
        .into_iter()
        .map(|text| NewPassage {
            text,
            ..NewPassage::default()
        })
        .collect();
    store.insert_passages(&agent, &passages).unwrap();
    let hits = store
        .search_passages(
            &agent,
            &PassageQuery {
                query: "When did Mel go to the pottery workshop?".into(),
                top_k: 3,
                ..PassageQuery::default()
            },
        )
        .unwrap();
    let found: Vec<&str> = hits.iter().map(|h| h.passage.text.as_str()).collect();
    assert_eq!(found[0], texts[0], "{found:?}");
    assert!(
        found.contains(&texts[1]),
        "the answer next to the question: {found:?}"
    );
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
}

//! Archival search quality on the LoCoMo development set, through the real store: lexical
//! retrieval must keep finding the evidence (recall@5 ≥ 0.65), and an
//! answer in the turn next to the one that shares the question's words must be found.

use engram_core::{NewAgent, NewPassage};
use engram_retrieval::HybridSearch;
use engram_store::PassageQuery;
use engram_suite::{Home, locomo};

#[tokio::test]
async fn lexical_recall_on_the_development_set() {
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

#[tokio::test]
async fn the_turn_after_a_matching_question_is_found() {
    let home = Home::new();
    let agent = home
        .engram
        .agents()
        .create(NewAgent {
            name: "Diarist".into(),
            ..NewAgent::default()
        })
        .await
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
    store.passages().insert(&agent, &passages).unwrap();
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

/// The hybrid pipeline with the built-in model, through the real store: never below words
/// alone overall, and on no question category more than one question below them.
/// Measured on the development set: 0.680 against 0.662 for words alone (README,
/// Performance); 0.67 leaves room for float differences between machines, not for a
/// regression. Embeds the 2,760 turns and 997 questions: minutes on this 2-core machine, so it
/// runs on request (`cargo test --test retrieval -- --ignored`); `cargo bench --bench
/// retrieval` prints the same figures per category.
#[tokio::test]
#[ignore = "embeds 3,757 texts: minutes on 2 cores; run with --ignored or the retrieval bench"]
async fn hybrid_recall_on_the_development_set_is_not_below_lexical() {
    let conversations = locomo::load(&locomo::dev_set_dir());
    if conversations.is_empty() {
        eprintln!("skipped: no ../shared/eval/locomo-dev beside the repository");
        return;
    }
    let encoder = engram_embed::Encoder::load(&engram_suite::model::model_dir()).unwrap();
    let home = Home::new();
    let ranked = locomo::rank_both(&home.engram, &conversations, 10, &|texts| {
        encoder.embed(texts).unwrap()
    });
    let lexical = locomo::recall_of(&ranked, &[5], &|r| r.lexical.clone());
    let hybrid = locomo::recall_of(&ranked, &[5], &|r| r.hybrid.clone());
    eprintln!(
        "evidence recall@5: lexical {:.3}, hybrid {:.3}",
        lexical.at(5),
        hybrid.at(5)
    );
    assert!(hybrid.at(5) >= lexical.at(5), "hybrid fell below lexical");
    assert!(
        hybrid.at(5) >= 0.67,
        "hybrid recall@5 fell to {:.3}",
        hybrid.at(5)
    );
    for (category, (n, _)) in &lexical.by_category {
        let (l, h) = (
            lexical.category_at(*category, 5),
            hybrid.category_at(*category, 5),
        );
        assert!(
            h + 1.0 / *n as f64 + 1e-9 >= l,
            "category {category}: hybrid {h:.3} is more than one question below lexical {l:.3}"
        );
    }
}

//! Path-like block labels (`system/human/family`, `/note_directory`), as current Letta agents
//! organise core memory: stored, found and renamed byte for byte; only unusable labels refused.

use crate::support::{agent, temp_store};
use engram_core::{BlockPatch, Editor, Error, NewBlock};
use engram_retrieval::HybridSearch;

const PATHS: [&str; 4] = [
    "system/human/family",
    "reference/faq",
    "/note_directory",
    "corrections/ezra-mistakes",
];

#[test]
fn path_labels_are_kept_byte_for_byte() {
    let (_dir, store) = temp_store();
    let a = agent("Ezra");
    let blocks: Vec<NewBlock> = PATHS.iter().map(|l| NewBlock::new(*l, *l)).collect();
    let (_, created) = store.agents().create(&a, &blocks, &[]).unwrap();
    let labels: Vec<_> = created.iter().map(|b| b.label.as_str()).collect();
    assert_eq!(labels, PATHS);
    for label in PATHS {
        assert_eq!(store.blocks().by_label(&a.id, label).unwrap().value, label);
    }
    // A rename to another path label, then back.
    let id = &created[0].id;
    let patch = |label: &str| BlockPatch {
        label: Some(label.into()),
        ..BlockPatch::default()
    };
    store
        .blocks()
        .update(id, &patch("system/human/family/kids"), &Editor::User)
        .unwrap();
    assert!(
        store
            .blocks()
            .by_label(&a.id, "system/human/family")
            .is_err()
    );
    assert_eq!(
        store
            .blocks()
            .by_label(&a.id, "system/human/family/kids")
            .unwrap()
            .id,
        *id
    );
    // Unique per agent, path or not.
    let clash = store
        .blocks()
        .update(id, &patch("reference/faq"), &Editor::User);
    assert!(matches!(clash, Err(Error::Conflict(_))), "{clash:?}");
}

#[test]
fn unusable_labels_are_refused_with_the_reason() {
    let (_dir, store) = temp_store();
    for (label, reason) in [
        ("", "empty"),
        ("a\tb", "control"),
        ("<human>", "'<' or '>'"),
        (" human", "whitespace"),
    ] {
        let err = store
            .agents()
            .create(&agent("X"), &[NewBlock::new(label, "")], &[])
            .unwrap_err();
        assert!(
            matches!(&err, Error::Invalid(m) if m.contains(reason)),
            "{label:?}: {err:?}"
        );
    }
    let long = "a/".repeat(200);
    let err = store
        .agents()
        .create(&agent("X"), &[NewBlock::new(long, "")], &[])
        .unwrap_err();
    assert!(
        matches!(&err, Error::Invalid(m) if m.contains("at most 256")),
        "{err:?}"
    );
    assert!(
        store.agents().list().unwrap().is_empty(),
        "nothing half-made"
    );
}

#[test]
fn passage_edits_follow_in_the_index_and_agent_tags_keep_order() {
    use engram_core::NewPassage;
    use engram_store::PassageQuery;
    let (_dir, store) = temp_store();
    let (a, _) = crate::support::create(&store, "Sam");
    let p = store
        .passages()
        .insert(
            &a.id,
            &[NewPassage {
                text: "tulips in April".into(),
                tags: vec!["garden".into()],
                embedding: Some(vec![1.0, 0.0]),
                created_at: None,
            }],
        )
        .unwrap()
        .remove(0);
    let q = |text: &str| PassageQuery {
        query: text.into(),
        top_k: 5,
        ..PassageQuery::default()
    };
    let edited = store
        .passages()
        .update(&a.id, &p.id, Some("tulips in May"), None, None)
        .unwrap();
    assert_eq!(edited.tags, ["garden"], "tags untouched");
    assert_eq!(store.search_passages(&a.id, &q("May")).unwrap().len(), 1);
    assert!(
        store
            .search_passages(&a.id, &q("April"))
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.passages().embeddings_missing(&a.id).unwrap().len(),
        1,
        "the old vector described the old text"
    );
    let bad = store.passages().update(&a.id, &p.id, Some(" "), None, None);
    assert!(matches!(bad, Err(Error::Invalid(_))));
    assert_eq!(store.passages().get(&p.id).unwrap().text, "tulips in May");

    store
        .agents()
        .set_tags(&a.id, &["b".into(), "a".into(), "b".into(), " ".into()])
        .unwrap();
    assert_eq!(store.agents().tags(&a.id).unwrap(), ["b", "a"]);
    store.agents().delete(&a.id).unwrap();
    assert!(store.agents().tags(&a.id).unwrap().is_empty());
}

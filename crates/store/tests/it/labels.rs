//! Path-like block labels (`system/human/family`, `/note_directory`), as current Letta agents
//! organise core memory: stored, found and renamed byte for byte; only unusable labels refused.

use crate::support::{agent, temp_store};
use engram_core::{BlockPatch, Editor, Error, NewBlock};

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
    let (_, created) = store.create_agent(&a, &blocks, &[]).unwrap();
    let labels: Vec<_> = created.iter().map(|b| b.label.as_str()).collect();
    assert_eq!(labels, PATHS);
    for label in PATHS {
        assert_eq!(store.agent_block(&a.id, label).unwrap().value, label);
    }
    // A rename to another path label, then back.
    let id = &created[0].id;
    let patch = |label: &str| BlockPatch {
        label: Some(label.into()),
        ..BlockPatch::default()
    };
    store
        .update_block(id, &patch("system/human/family/kids"), &Editor::User)
        .unwrap();
    assert!(store.agent_block(&a.id, "system/human/family").is_err());
    assert_eq!(
        store
            .agent_block(&a.id, "system/human/family/kids")
            .unwrap()
            .id,
        *id
    );
    // Unique per agent, path or not.
    let clash = store.update_block(id, &patch("reference/faq"), &Editor::User);
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
            .create_agent(&agent("X"), &[NewBlock::new(label, "")], &[])
            .unwrap_err();
        assert!(
            matches!(&err, Error::Invalid(m) if m.contains(reason)),
            "{label:?}: {err:?}"
        );
    }
    let long = "a/".repeat(200);
    let err = store
        .create_agent(&agent("X"), &[NewBlock::new(long, "")], &[])
        .unwrap_err();
    assert!(
        matches!(&err, Error::Invalid(m) if m.contains("at most 256")),
        "{err:?}"
    );
    assert!(store.list_agents().unwrap().is_empty(), "nothing half-made");
}

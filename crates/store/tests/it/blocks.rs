//! Blocks: sharing, label clashes, limits, history and undo.

use crate::support::{agent, create, temp_store};
use engram_core::{BlockPatch, Editor, Error, NewBlock};

fn set_value(v: &str) -> BlockPatch {
    BlockPatch {
        value: Some(v.into()),
        ..Default::default()
    }
}

#[test]
fn a_shared_block_is_one_row_seen_by_both_agents() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    let (b, _) = create(&store, "b");
    let shared = store
        .blocks()
        .create(&NewBlock::new("team", "We ship Fridays."))
        .unwrap();
    store.blocks().attach(&a.id, &shared.id).unwrap();
    store.blocks().attach(&b.id, &shared.id).unwrap();
    store.blocks().attach(&b.id, &shared.id).unwrap(); // idempotent
    assert_eq!(
        store.blocks().agents_of(&shared.id).unwrap(),
        [a.id.clone(), b.id.clone()]
    );
    assert_eq!(
        store.blocks().of_agent(&b.id).unwrap().last().unwrap().id,
        shared.id,
        "attached last"
    );

    let editor = Editor::Agent {
        agent_id: a.id.clone(),
        tool_call_id: Some("call_1".into()),
    };
    let edited = store
        .blocks()
        .update(&shared.id, &set_value("We ship Thursdays."), &editor)
        .unwrap();
    assert_eq!(store.blocks().by_label(&b.id, "team").unwrap(), edited);
    assert_eq!(
        store.blocks().by_label(&a.id, "team").unwrap().value,
        "We ship Thursdays."
    );
    assert!(
        matches!(store.blocks().by_label(&a.id, "nope"), Err(Error::NotFound { what: "block", id }) if id == "nope")
    );

    store.blocks().detach(&a.id, &shared.id).unwrap();
    store.blocks().detach(&a.id, &shared.id).unwrap();
    assert_eq!(
        store.blocks().agents_of(&shared.id).unwrap(),
        std::slice::from_ref(&b.id)
    );
    assert!(
        store
            .blocks()
            .of_agent(&a.id)
            .unwrap()
            .iter()
            .all(|x| x.id != shared.id)
    );
}

#[test]
fn label_clashes_are_conflicts() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "a");
    let (b, _) = store.agents().create(&agent("b"), &[], &[]).unwrap();
    let other_human = store
        .blocks()
        .create(&NewBlock::new("human", "someone else"))
        .unwrap();
    assert!(matches!(
        store.blocks().attach(&a.id, &other_human.id),
        Err(Error::Conflict(_))
    ));

    // Renaming a shared block must be free on every agent it is attached to.
    let notes = store.blocks().create(&NewBlock::new("notes", "")).unwrap();
    store.blocks().attach(&a.id, &notes.id).unwrap();
    store.blocks().attach(&b.id, &notes.id).unwrap();
    let rename = BlockPatch {
        label: Some("persona".into()),
        ..Default::default()
    };
    assert!(matches!(
        store.blocks().update(&notes.id, &rename, &Editor::User),
        Err(Error::Conflict(_))
    ));
    assert_eq!(store.blocks().get(&notes.id).unwrap().label, "notes");
    let rename = BlockPatch {
        label: Some("journal".into()),
        ..Default::default()
    };
    assert_eq!(
        store
            .blocks()
            .update(&notes.id, &rename, &Editor::User)
            .unwrap()
            .label,
        "journal"
    );
    let bad = BlockPatch {
        label: Some("".into()),
        ..Default::default()
    };
    assert!(matches!(
        store.blocks().update(&notes.id, &bad, &Editor::User),
        Err(Error::Invalid(_))
    ));
}

#[test]
fn over_limit_updates_are_refused_and_change_nothing() {
    let (_dir, store) = temp_store();
    let block = store
        .blocks()
        .create(&NewBlock {
            limit: Some(10),
            ..NewBlock::new("human", "Ann")
        })
        .unwrap();
    let err = store
        .blocks()
        .update(&block.id, &set_value("Ann likes tea"), &Editor::User)
        .unwrap_err();
    match err {
        Error::Invalid(m) => {
            assert!(
                m.starts_with("Edit failed: Exceeds 10 character limit (requested 13)"),
                "{m}"
            );
            assert!(m.contains("7 characters left"), "{m}");
        }
        e => panic!("expected Invalid, got {e:?}"),
    }
    let shrink = BlockPatch {
        limit: Some(2),
        ..Default::default()
    };
    assert!(matches!(
        store.blocks().update(&block.id, &shrink, &Editor::User),
        Err(Error::Invalid(_))
    ));
    let both = BlockPatch {
        limit: Some(20),
        value: Some("Ann likes tea".into()),
        ..Default::default()
    };
    let grown = store
        .blocks()
        .update(&block.id, &both, &Editor::User)
        .unwrap();
    assert_eq!((grown.limit, grown.value.as_str()), (20, "Ann likes tea"));
    assert_eq!(
        store.blocks().history(&block.id, 10).unwrap().len(),
        1,
        "refused edits leave no history"
    );

    // Limits are characters, not bytes.
    let snow = store
        .blocks()
        .create(&NewBlock {
            limit: Some(3),
            ..NewBlock::new("snow", "")
        })
        .unwrap();
    store
        .blocks()
        .update(&snow.id, &set_value("☃☃☃"), &Editor::User)
        .unwrap();
    assert!(
        store
            .blocks()
            .update(&snow.id, &set_value("☃☃☃☃"), &Editor::User)
            .is_err()
    );
    assert_eq!(store.blocks().get(&snow.id).unwrap().value, "☃☃☃");
}

#[test]
fn history_is_newest_first_and_undo_restores() {
    let (_dir, store) = temp_store();
    let (a, blocks) = create(&store, "a");
    let human = &blocks[1];
    let by_agent = Editor::Agent {
        agent_id: a.id.clone(),
        tool_call_id: None,
    };
    store
        .blocks()
        .update(&human.id, &set_value("Ann"), &by_agent)
        .unwrap();
    store
        .blocks()
        .update(&human.id, &set_value("Ann, likes tea"), &Editor::User)
        .unwrap();
    // Settings-only changes are not value edits.
    store
        .blocks()
        .update(
            &human.id,
            &BlockPatch {
                read_only: Some(true),
                ..Default::default()
            },
            &Editor::User,
        )
        .unwrap();
    let history = store.blocks().history(&human.id, 10).unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(
        (history[0].old_value.as_str(), history[0].new_value.as_str()),
        ("Ann", "Ann, likes tea")
    );
    assert_eq!(history[0].editor, Editor::User);
    assert_eq!(history[1].editor, by_agent);
    assert_eq!(store.blocks().history(&human.id, 1).unwrap(), history[..1]);

    let undone = store.blocks().undo_edit(&history[0].id, None).unwrap();
    assert_eq!(undone.value, "Ann");
    assert!(undone.read_only);
    assert_eq!(store.blocks().get(&human.id).unwrap(), undone);
    let latest = &store.blocks().history(&human.id, 1).unwrap()[0];
    assert_eq!(
        latest.editor,
        Editor::Undo {
            edit_id: history[0].id.clone()
        }
    );
    assert_eq!(latest.new_value, "Ann");
    assert!(matches!(
        store.blocks().undo_edit(&"edit-nope".into(), None),
        Err(Error::NotFound { what: "edit", .. })
    ));

    // Undo is limit-checked against the block as it is now.
    store
        .blocks()
        .update(&human.id, &set_value(""), &Editor::User)
        .unwrap();
    store
        .blocks()
        .update(
            &human.id,
            &BlockPatch {
                limit: Some(2),
                ..Default::default()
            },
            &Editor::User,
        )
        .unwrap();
    let older = store.blocks().history(&human.id, 10).unwrap();
    let restore_long = older
        .iter()
        .find(|e| e.old_value == "Ann, likes tea")
        .unwrap();
    // The text that edit changed is gone, so it cannot be undone on its own; the whole
    // restore (chosen after seeing what it loses) is limit-checked.
    assert!(matches!(
        store.blocks().undo_edit(&restore_long.id, None),
        Err(Error::Conflict(_))
    ));
    assert!(matches!(
        store.blocks().restore_edit(&restore_long.id, None),
        Err(Error::Invalid(_))
    ));
}

#[test]
fn delete_block_detaches_it() {
    let (_dir, store) = temp_store();
    let (a, blocks) = create(&store, "a");
    store.blocks().delete(&blocks[0].id).unwrap();
    let left: Vec<_> = store
        .blocks()
        .of_agent(&a.id)
        .unwrap()
        .into_iter()
        .map(|b| b.label)
        .collect();
    assert_eq!(left, ["human"]);
    assert!(matches!(
        store.blocks().delete(&blocks[0].id),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        store.blocks().history(&blocks[0].id, 5),
        Err(Error::NotFound { .. })
    ));
    assert_eq!(store.blocks().list(Some("human")).unwrap().len(), 1);
    assert_eq!(store.blocks().list(None).unwrap().len(), 1);
}

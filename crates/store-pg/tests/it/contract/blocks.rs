//! Blocks: standalone and shared, labels unique per agent, patches that name a version, limits
//! re-checked, history.

use super::{agent_with, code, user};
use crate::harness::{Harness, on_both_backends};
use engram_core::{BlockId, BlockPatch, Editor, Error, NewBlock};
use engram_store_api::BlockStore;

on_both_backends!(
    a_standalone_block_is_listed_and_read_back,
    bad_labels_and_values_over_the_limit_are_invalid,
    a_shared_block_is_one_block_for_every_agent,
    a_label_is_unique_per_agent,
    a_patch_changes_what_it_names_and_records_value_changes,
    a_patch_based_on_an_old_version_is_refused_with_the_current_block,
    limits_are_checked_against_the_value_stored_now,
    deleting_a_block_detaches_it,
    unknown_blocks_are_not_found,
    a_block_made_for_an_agent_comes_after_its_others_or_not_at_all,
    the_shared_blocks_list_names_each_blocks_agents,
);

async fn a_standalone_block_is_listed_and_read_back<H: Harness>(h: H) {
    let b = h.backend();
    let one = b
        .create_block(&NewBlock::new("faq", "Q: hours? A: 9-5"))
        .await
        .unwrap();
    let two = b
        .create_block(&NewBlock::new("policy", "refunds in 30 days"))
        .await
        .unwrap();
    assert_eq!(b.get_block(&one.id).await.unwrap(), one);
    assert_eq!(
        b.list_blocks(None).await.unwrap(),
        vec![one.clone(), two.clone()]
    );
    assert_eq!(b.list_blocks(Some("policy")).await.unwrap(), vec![two]);
    assert!(b.list_blocks(Some("none")).await.unwrap().is_empty());
    assert_eq!(one.version, 1);
    assert!(
        b.block_history(&one.id, 10).await.unwrap().is_empty(),
        "creation is not an edit"
    );
}

async fn bad_labels_and_values_over_the_limit_are_invalid<H: Harness>(h: H) {
    let b = h.backend();
    for label in ["", "  ", "a\nb", "<human>", " padded"] {
        assert_eq!(
            code(b.create_block(&NewBlock::new(label, "x")).await),
            "invalid_input",
            "{label:?}"
        );
    }
    let over = NewBlock {
        limit: Some(5),
        ..NewBlock::new("tiny", "☃☃☃☃☃☃")
    };
    assert_eq!(code(b.create_block(&over).await), "invalid_input");
    let fits = NewBlock {
        limit: Some(5),
        ..NewBlock::new("tiny", "☃☃☃☃☃")
    };
    assert_eq!(
        b.create_block(&fits).await.unwrap().limit,
        5,
        "limits count characters"
    );
    let long = "x".repeat(6_000);
    assert_eq!(
        b.create_block(&NewBlock::new("long", long))
            .await
            .unwrap()
            .limit,
        6_000,
        "the default limit is raised to fit"
    );
    assert_eq!(b.list_blocks(None).await.unwrap().len(), 2);
}

async fn a_shared_block_is_one_block_for_every_agent<H: Harness>(h: H) {
    let b = h.backend();
    let (one, _) = agent_with(&b, "one", &[("persona", "one")]).await;
    let (two, _) = agent_with(&b, "two", &[("persona", "two")]).await;
    let team = b
        .create_block(&NewBlock::new("team", "ship Fridays"))
        .await
        .unwrap();
    b.attach_block(&one.id, &team.id).await.unwrap();
    b.attach_block(&one.id, &team.id).await.unwrap(); // again: nothing changes
    b.attach_block(&two.id, &team.id).await.unwrap();
    assert_eq!(b.agent_blocks(&one.id).await.unwrap().len(), 2);

    let edited = b
        .update_block(
            &team.id,
            &BlockPatch {
                value: Some("ship Thursdays".into()),
                ..Default::default()
            },
            &user(),
        )
        .await
        .unwrap();
    assert_eq!(b.agent_block(&two.id, "team").await.unwrap(), edited);
    assert_eq!(b.agent_block(&one.id, "team").await.unwrap(), edited);

    b.detach_block(&one.id, &team.id).await.unwrap();
    b.detach_block(&one.id, &team.id).await.unwrap(); // again: nothing changes
    assert_eq!(code(b.agent_block(&one.id, "team").await), "not_found");
    assert_eq!(
        b.get_block(&team.id).await.unwrap(),
        edited,
        "detaching keeps the block"
    );
    // Re-attached, it goes last.
    b.attach_block(&one.id, &team.id).await.unwrap();
    let labels: Vec<String> = b
        .agent_blocks(&one.id)
        .await
        .unwrap()
        .into_iter()
        .map(|b| b.label)
        .collect();
    assert_eq!(labels, ["persona", "team"]);
}

async fn a_label_is_unique_per_agent<H: Harness>(h: H) {
    let b = h.backend();
    let (one, blocks) = agent_with(&b, "one", &[("persona", "p"), ("notes", "n")]).await;
    let (two, _) = agent_with(&b, "two", &[("persona", "p2")]).await;
    let other = b
        .create_block(&NewBlock::new("persona", "someone else"))
        .await
        .unwrap();
    assert_eq!(code(b.attach_block(&one.id, &other.id).await), "conflict");
    assert_eq!(
        b.agent_blocks(&one.id).await.unwrap().len(),
        2,
        "nothing attached"
    );

    // Renaming a block to a label its agent already has is refused too…
    let notes = &blocks[1];
    let rename = |label: &str| BlockPatch {
        label: Some(label.into()),
        ..Default::default()
    };
    assert_eq!(
        code(b.update_block(&notes.id, &rename("persona"), &user()).await),
        "conflict"
    );
    // …also on every other agent it is shared with.
    b.attach_block(&two.id, &notes.id).await.unwrap();
    let free = b.create_block(&NewBlock::new("scratch", "")).await.unwrap();
    b.attach_block(&two.id, &free.id).await.unwrap();
    assert_eq!(
        code(b.update_block(&notes.id, &rename("scratch"), &user()).await),
        "conflict"
    );
    assert_eq!(
        b.get_block(&notes.id).await.unwrap(),
        *notes,
        "nothing changed"
    );

    let renamed = b
        .update_block(&notes.id, &rename("journal"), &user())
        .await
        .unwrap();
    assert_eq!((renamed.label.as_str(), renamed.version), ("journal", 2));
    assert_eq!(b.agent_block(&two.id, "journal").await.unwrap(), renamed);
    assert_eq!(
        code(b.update_block(&notes.id, &rename("a>b"), &user()).await),
        "invalid_input"
    );
}

async fn a_patch_changes_what_it_names_and_records_value_changes<H: Harness>(h: H) {
    let b = h.backend();
    let (a, blocks) = agent_with(&b, "a", &[("human", "Name: ?")]).await;
    let human = &blocks[0];
    let patched = b
        .update_block(
            &human.id,
            &BlockPatch {
                value: Some("Name: Grace".into()),
                version: Some(1),
                ..Default::default()
            },
            &user(),
        )
        .await
        .unwrap();
    assert_eq!(
        (patched.value.as_str(), patched.version),
        ("Name: Grace", 2)
    );
    assert!(patched.updated_at >= human.updated_at);

    // Settings only: a new version, no history row.
    let settings = b
        .update_block(
            &human.id,
            &BlockPatch {
                description: Some("who they are".into()),
                read_only: Some(true),
                limit: Some(100),
                ..Default::default()
            },
            &user(),
        )
        .await
        .unwrap();
    assert_eq!(
        (settings.version, settings.limit, settings.read_only),
        (3, 100, true)
    );
    // A patch that changes nothing writes nothing.
    let same = b
        .update_block(
            &human.id,
            &BlockPatch {
                value: Some("Name: Grace".into()),
                ..Default::default()
            },
            &user(),
        )
        .await
        .unwrap();
    assert_eq!(same, settings);

    let history = b.block_history(&human.id, 10).await.unwrap();
    assert_eq!(history.len(), 1, "{history:?}");
    let edit = &history[0];
    assert_eq!(edit.block_id, human.id);
    assert_eq!(edit.editor, Editor::User);
    assert_eq!(
        (edit.old_value.as_str(), edit.new_value.as_str()),
        ("Name: ?", "Name: Grace")
    );
    assert_eq!((edit.old_version, edit.new_version), (Some(1), Some(2)));
    assert_eq!(b.agent_block(&a.id, "human").await.unwrap(), settings);
}

async fn a_patch_based_on_an_old_version_is_refused_with_the_current_block<H: Harness>(h: H) {
    let b = h.backend();
    let block = b.create_block(&NewBlock::new("plan", "v1")).await.unwrap();
    let set = |value: &str, version| BlockPatch {
        value: Some(value.into()),
        version: Some(version),
        ..Default::default()
    };
    let now = b
        .update_block(&block.id, &set("v2", 1), &user())
        .await
        .unwrap();
    match b.update_block(&block.id, &set("lost?", 1), &user()).await {
        Err(Error::StaleVersion { based_on, current }) => {
            assert_eq!(based_on, 1);
            assert_eq!(*current, now);
        }
        other => panic!("expected a stale version, got {other:?}"),
    }
    assert_eq!(
        b.get_block(&block.id).await.unwrap(),
        now,
        "nothing was written"
    );
    assert_eq!(b.block_history(&block.id, 10).await.unwrap().len(), 1);
}

async fn limits_are_checked_against_the_value_stored_now<H: Harness>(h: H) {
    let b = h.backend();
    let block = b
        .create_block(&NewBlock {
            limit: Some(10),
            ..NewBlock::new("short", "12345")
        })
        .await
        .unwrap();
    let patch = |value: Option<&str>, limit: Option<usize>| BlockPatch {
        value: value.map(Into::into),
        limit,
        ..Default::default()
    };
    let over = b
        .update_block(&block.id, &patch(Some("12345678901"), None), &user())
        .await;
    match over {
        Err(Error::Invalid(msg)) => assert!(
            msg.starts_with("Edit failed: Exceeds 10 character limit (requested 11)"),
            "{msg}"
        ),
        other => panic!("expected the limit to refuse it, got {other:?}"),
    }
    assert_eq!(
        code(
            b.update_block(&block.id, &patch(None, Some(4)), &user())
                .await
        ),
        "invalid_input",
        "a limit below the value"
    );
    let both = b
        .update_block(&block.id, &patch(Some("12345678901"), Some(11)), &user())
        .await
        .unwrap();
    assert_eq!((both.limit, both.version), (11, 2));
    assert_eq!(b.get_block(&block.id).await.unwrap(), both);
}

async fn deleting_a_block_detaches_it<H: Harness>(h: H) {
    let b = h.backend();
    let (a, blocks) = agent_with(&b, "a", &[("persona", "p"), ("notes", "n")]).await;
    b.update_block(
        &blocks[1].id,
        &BlockPatch {
            value: Some("n2".into()),
            ..Default::default()
        },
        &user(),
    )
    .await
    .unwrap();
    b.delete_block(&blocks[1].id).await.unwrap();
    assert_eq!(
        b.agent_blocks(&a.id).await.unwrap(),
        vec![blocks[0].clone()]
    );
    assert_eq!(code(b.block_history(&blocks[1].id, 10).await), "not_found");
    assert_eq!(code(b.delete_block(&blocks[1].id).await), "not_found");
}

async fn unknown_blocks_are_not_found<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "a", &[]).await;
    let ghost = BlockId::new();
    assert_eq!(code(b.get_block(&ghost).await), "not_found");
    assert_eq!(code(b.attach_block(&a.id, &ghost).await), "not_found");
    assert_eq!(code(b.detach_block(&a.id, &ghost).await), "not_found");
    assert_eq!(
        code(
            b.update_block(&ghost, &BlockPatch::default(), &user())
                .await
        ),
        "not_found"
    );
    assert_eq!(code(b.block_history(&ghost, 5).await), "not_found");
    let op = engram_core::BlockOp::Append { text: "x".into() };
    assert_eq!(
        code(b.apply_block_op(&ghost, &op, &user()).await),
        "not_found"
    );
    let block = b.create_block(&NewBlock::new("loose", "")).await.unwrap();
    let nobody = super::agent("unsaved").id;
    assert_eq!(code(b.attach_block(&nobody, &block.id).await), "not_found");
}

async fn a_block_made_for_an_agent_comes_after_its_others_or_not_at_all<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, _) = agent_with(&b, "kim", &[("persona", "I help."), ("human", "")]).await;
    let notes = b
        .create_agent_block(&agent.id, &NewBlock::new("notes", "Bring the keys."))
        .await
        .unwrap();
    assert_eq!(
        (notes.version, notes.value.as_str()),
        (1, "Bring the keys.")
    );
    let labels: Vec<String> = b
        .agent_blocks(&agent.id)
        .await
        .unwrap()
        .into_iter()
        .map(|b| b.label)
        .collect();
    assert_eq!(labels, ["persona", "human", "notes"]);
    assert_eq!(b.get_block(&notes.id).await.unwrap(), notes);

    let before = b.list_blocks(None).await.unwrap().len();
    assert_eq!(
        code(
            b.create_agent_block(&agent.id, &NewBlock::new("notes", "again"))
                .await
        ),
        "conflict"
    );
    assert_eq!(
        code(
            b.create_agent_block(&agent.id, &NewBlock::new("bad<label>", ""))
                .await
        ),
        "invalid_input"
    );
    let nobody = engram_core::AgentId::from("agent-nobody");
    assert_eq!(
        code(b.create_agent_block(&nobody, &NewBlock::new("x", "")).await),
        "not_found"
    );
    assert_eq!(
        b.list_blocks(None).await.unwrap().len(),
        before,
        "a refused block is not left behind"
    );
}

async fn the_shared_blocks_list_names_each_blocks_agents<H: Harness>(h: H) {
    let b = h.backend();
    let (ann, blocks) = agent_with(&b, "ann", &[("team", "Ships on Fridays")]).await;
    let (bob, _) = agent_with(&b, "bob", &[("human", "Name: Bob")]).await;
    b.attach_block(&bob.id, &blocks[0].id).await.unwrap();
    let loose = b
        .create_block(&NewBlock::new("policy", "Refunds in 30 days"))
        .await
        .unwrap();
    let listed: Vec<(String, Vec<String>)> = b
        .shared_blocks()
        .await
        .unwrap()
        .into_iter()
        .map(|s| {
            (
                s.block.label,
                s.agents.into_iter().map(|a| a.name).collect(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("team".to_owned(), vec!["ann".to_owned(), "bob".to_owned()]),
            ("human".to_owned(), vec!["bob".to_owned()]),
            ("policy".to_owned(), vec![]),
        ],
        "oldest block first, oldest agent first"
    );
    let shared = b.shared_blocks().await.unwrap();
    assert_eq!(shared[0].agents[0].id, ann.id);
    assert_eq!(shared[2].block, loose);
}

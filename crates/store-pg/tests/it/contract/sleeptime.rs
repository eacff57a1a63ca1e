//! Sleep-time passes: settings kept apart from the reading position; a pass's block edits,
//! passages added and superseded written together with its record; edits made meanwhile kept
//! (a rewrite rebased, or left out and said so); passes listed newest first.

use super::{agent_with, code, user};
use crate::harness::{Harness, on_both_backends};
use chrono::{Duration, Utc};
use engram_core::{
    AgentId, BlockOp, EditId, Editor, NewPassage, PassChangeKind, PassId, PassStatus, PassTrigger,
    PassageId, SleeptimePass, SleeptimeSettings, SupersedeKind,
};
use engram_store_api::{
    BlockStore, BlockWrite, PassCommit, PassageOp, PassageRange, PassageStore, SettingStore,
    SleeptimeStore,
};

on_both_backends!(
    settings_are_kept_apart_from_the_reading_position,
    a_pass_writes_its_edits_passages_and_record_together,
    edits_made_meanwhile_are_kept_and_what_no_longer_applies_is_left_out,
);

/// A pass record of `agent` that read up to `last_seq`, started `minutes_ago`.
pub(super) fn pass(
    agent: &AgentId,
    last_seq: i64,
    minutes_ago: i64,
    status: PassStatus,
) -> SleeptimePass {
    let started = Utc::now() - Duration::minutes(minutes_ago);
    SleeptimePass {
        id: PassId::new(),
        agent_id: agent.clone(),
        trigger: PassTrigger::Turns,
        status,
        reason: None,
        model: "openai/gpt-4o-mini".into(),
        started_at: started,
        ended_at: started + Duration::seconds(3),
        messages_read: 4,
        last_seq,
        model_calls: 2,
        prompt_tokens: 900,
        completion_tokens: 60,
        cost_usd: None,
        changes: Vec::new(),
    }
}

fn write(block: &engram_core::Block, op: BlockOp) -> BlockWrite {
    BlockWrite {
        block_id: block.id.clone(),
        op,
        // The store writes a pass's edits as the pass's.
        editor: Editor::User,
        restate_result: false,
    }
}

async fn settings_are_kept_apart_from_the_reading_position<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "ana", &[]).await;
    assert_eq!(
        b.sleeptime_settings(&a.id).await.unwrap(),
        SleeptimeSettings::default()
    );
    assert_eq!(b.last_read_seq(&a.id).await.unwrap(), 0);

    // A pass that ran moves the reading position; one that failed or was skipped does not.
    b.record_pass(&pass(&a.id, 3_000, 9, PassStatus::Done))
        .await
        .unwrap();
    b.record_pass(&pass(&a.id, 9_000, 8, PassStatus::Failed))
        .await
        .unwrap();
    assert_eq!(b.last_read_seq(&a.id).await.unwrap(), 3_000);
    assert_eq!(
        b.sleeptime_settings(&a.id).await.unwrap(),
        SleeptimeSettings::default(),
        "a pass's row is no setting"
    );
    let mine = SleeptimeSettings {
        enabled: true,
        frequency: 3,
        idle_secs: Some(600),
        ..SleeptimeSettings::default()
    };
    b.set_sleeptime_settings(&a.id, &mine).await.unwrap();
    assert_eq!(b.sleeptime_settings(&a.id).await.unwrap(), mine);
    assert_eq!(b.last_read_seq(&a.id).await.unwrap(), 3_000, "kept");
    // It only moves forward.
    b.record_pass(&pass(&a.id, 1_000, 7, PassStatus::Done))
        .await
        .unwrap();
    assert_eq!(b.last_read_seq(&a.id).await.unwrap(), 3_000);

    let zero = SleeptimeSettings {
        frequency: 0,
        ..mine.clone()
    };
    assert_eq!(
        code(b.set_sleeptime_settings(&a.id, &zero).await),
        "invalid_input"
    );
    // A pass's cost is read at its model's price: the built-in one, or the one people set.
    let listed = b.list_passes(&a.id, 1).await.unwrap();
    let builtin = listed[0]
        .cost_usd
        .expect("gpt-4o-mini has a built-in price");
    assert!(builtin > 0.0, "{builtin}");
    b.set_model_price(&engram_core::ModelPrice {
        model: "openai/gpt-4o-mini".into(),
        input_per_mtok: 1.0,
        output_per_mtok: 10.0,
        source: engram_core::PriceSource::User,
    })
    .await
    .unwrap();
    let priced = b.get_pass(&listed[0].id).await.unwrap().cost_usd.unwrap();
    assert!(
        (priced - (900.0 * 1.0 + 60.0 * 10.0) / 1e6).abs() < 1e-12,
        "{priced}"
    );

    let again = pass(&a.id, 1, 1, PassStatus::Skipped);
    b.record_pass(&again).await.unwrap();
    assert_eq!(code(b.record_pass(&again).await), "conflict");
    let nobody = AgentId::new();
    assert_eq!(code(b.sleeptime_settings(&nobody).await), "not_found");
    assert_eq!(code(b.last_read_seq(&nobody).await), "not_found");
    assert_eq!(
        code(b.record_pass(&pass(&nobody, 1, 1, PassStatus::Done)).await),
        "not_found"
    );
}

async fn a_pass_writes_its_edits_passages_and_record_together<H: Harness>(h: H) {
    let b = h.backend();
    let (a, blocks) = agent_with(&b, "ana", &[("human", "Name: Ana")]).await;
    let human = &blocks[0];
    let old = b
        .insert_passages(
            &a.id,
            &[NewPassage {
                text: "Ana lives in Lyon".into(),
                ..NewPassage::default()
            }],
        )
        .await
        .unwrap()
        .remove(0);
    let newer = PassageId::new();
    let p = pass(&a.id, 5_000, 1, PassStatus::Done);
    let commit = PassCommit {
        pass: p.clone(),
        block_writes: vec![write(
            human,
            BlockOp::Append {
                text: "Lives in Porto since May.".into(),
            },
        )],
        passage_ops: vec![
            PassageOp::Add {
                id: newer.clone(),
                passage: NewPassage {
                    text: "Ana moved from Lyon to Porto in May".into(),
                    ..NewPassage::default()
                },
            },
            PassageOp::Supersede {
                passage_id: old.id.clone(),
                by: Some(newer.clone()),
                how: SupersedeKind::Superseded,
            },
        ],
    };
    let stored = b.commit_pass(&commit).await.unwrap();
    assert_eq!(
        (stored.id.clone(), stored.status),
        (p.id.clone(), PassStatus::Done)
    );
    assert_eq!(stored.reason, None);
    assert_eq!(
        stored.started_at.timestamp_micros(),
        p.started_at.timestamp_micros()
    );
    let kinds: Vec<&PassChangeKind> = stored.changes.iter().map(|c| &c.kind).collect();
    assert_eq!(kinds.len(), 3);
    let PassChangeKind::BlockEdit {
        edit_id,
        label,
        diff,
        ..
    } = kinds[0]
    else {
        panic!("{kinds:?}")
    };
    assert_eq!(label, "human");
    assert!(diff.contains("+Lives in Porto since May."), "{diff}");
    assert!(
        matches!(kinds[1], PassChangeKind::PassageAdded { passage_id, .. } if *passage_id == newer)
    );
    assert!(matches!(
        kinds[2],
        PassChangeKind::PassageSuperseded { passage_id, by: Some(by), text, .. }
            if *passage_id == old.id && *by == newer && text == "Ana lives in Lyon"
    ));
    assert!(
        stored
            .changes
            .iter()
            .enumerate()
            .all(|(i, c)| c.index as usize == i && c.undone_at.is_none())
    );

    // What it wrote is there, by the pass.
    assert_eq!(
        b.get_block(&human.id).await.unwrap().value,
        "Name: Ana\nLives in Porto since May."
    );
    let history = b.block_history(&human.id, 10).await.unwrap();
    assert_eq!(&history[0].id, edit_id);
    // An edit is read by its id alone, as an undo finds it.
    assert_eq!(b.block_edit(edit_id).await.unwrap(), history[0]);
    assert_eq!(code(b.block_edit(&EditId::new()).await), "not_found");
    assert_eq!(
        history[0].editor,
        Editor::Sleeptime {
            pass_id: p.id.clone()
        }
    );
    let replaced = b.get_passage(&old.id).await.unwrap();
    let s = replaced.superseded.clone().expect("superseded");
    assert_eq!(
        (s.by.as_ref(), s.kind),
        (Some(&newer), SupersedeKind::Superseded)
    );
    assert_eq!(
        b.get_passage(&newer).await.unwrap().text,
        "Ana moved from Lyon to Porto in May"
    );
    // Lists show current passages; an export's list asks for the replaced one too.
    let listed = |include_superseded| {
        let range = PassageRange {
            limit: 10,
            ascending: true,
            include_superseded,
            ..PassageRange::default()
        };
        let (b, agent) = (b.clone(), a.id.clone());
        async move { b.list_passages(&agent, &range).await.unwrap() }
    };
    let current = listed(false).await;
    assert_eq!(current.len(), 1);
    assert_eq!(current[0].id, newer);
    let all = listed(true).await;
    assert_eq!(
        all.iter().map(|p| p.id.clone()).collect::<Vec<_>>(),
        [old.id.clone(), newer.clone()]
    );
    assert_eq!(all[0].superseded, replaced.superseded);
    assert_eq!(b.last_read_seq(&a.id).await.unwrap(), 5_000);
    assert_eq!(b.get_pass(&p.id).await.unwrap(), stored);

    // Listed newest first, with their changes.
    let earlier = pass(&a.id, 4_000, 30, PassStatus::Skipped);
    b.record_pass(&earlier).await.unwrap();
    let listed = b.list_passes(&a.id, 10).await.unwrap();
    assert_eq!(
        listed.iter().map(|p| &p.id).collect::<Vec<_>>(),
        [&p.id, &earlier.id]
    );
    assert_eq!(listed[0], stored);
    assert_eq!(b.list_passes(&a.id, 1).await.unwrap().len(), 1);

    // A passage without text: nothing of the pass is written.
    let bad = PassCommit {
        pass: pass(&a.id, 9_000, 0, PassStatus::Done),
        block_writes: vec![write(
            human,
            BlockOp::Append {
                text: "never".into(),
            },
        )],
        passage_ops: vec![PassageOp::Add {
            id: PassageId::new(),
            passage: NewPassage {
                text: "  ".into(),
                ..NewPassage::default()
            },
        }],
    };
    assert_eq!(code(b.commit_pass(&bad).await), "invalid_input");
    assert!(
        !b.get_block(&human.id)
            .await
            .unwrap()
            .value
            .contains("never")
    );
    assert_eq!(b.last_read_seq(&a.id).await.unwrap(), 5_000);
    assert_eq!(code(b.get_pass(&bad.pass.id).await), "not_found");
    assert_eq!(
        code(b.commit_pass(&commit).await),
        "conflict",
        "the same pass twice"
    );
    assert_eq!(code(b.list_passes(&AgentId::new(), 5).await), "not_found");
}

async fn edits_made_meanwhile_are_kept_and_what_no_longer_applies_is_left_out<H: Harness>(h: H) {
    let b = h.backend();
    let (a, blocks) =
        agent_with(&b, "ana", &[("human", "Name: Ana"), ("persona", "Helpful")]).await;
    let (human, persona) = (&blocks[0], &blocks[1]);
    // The pass read the block after this edit (a version the history holds) and rewrote a
    // line; meanwhile the person added another one.
    let seen = b
        .apply_block_op(
            &human.id,
            &BlockOp::Append {
                text: "Likes tea".into(),
            },
            &user(),
        )
        .await
        .unwrap();
    let engram_core::OpOutcome::Changed(seen) = seen else {
        panic!("{seen:?}")
    };
    let seen = seen.version;
    b.apply_block_op(
        &human.id,
        &BlockOp::Append {
            text: "Works nights".into(),
        },
        &user(),
    )
    .await
    .unwrap();
    // And the persona was rewritten where the pass wanted to change it.
    b.apply_block_op(
        &persona.id,
        &BlockOp::Rewrite {
            value: "Terse".into(),
            based_on_version: persona.version,
        },
        &user(),
    )
    .await
    .unwrap();
    let gone = b
        .insert_passages(
            &a.id,
            &[NewPassage {
                text: "an old fact".into(),
                ..NewPassage::default()
            }],
        )
        .await
        .unwrap()
        .remove(0);
    let first = pass(&a.id, 10, 2, PassStatus::Done);
    let superseding = |id: &PassageId| PassageOp::Supersede {
        passage_id: id.clone(),
        by: None,
        how: SupersedeKind::Merged,
    };
    b.commit_pass(&PassCommit {
        pass: first,
        block_writes: vec![],
        passage_ops: vec![superseding(&gone.id)],
    })
    .await
    .unwrap();

    let p = pass(&a.id, 20, 1, PassStatus::Done);
    let stored = b
        .commit_pass(&PassCommit {
            pass: p,
            block_writes: vec![
                write(
                    human,
                    BlockOp::Rewrite {
                        value: "Name: Ana\nLikes green tea".into(),
                        based_on_version: seen,
                    },
                ),
                write(
                    persona,
                    BlockOp::Rewrite {
                        value: "Helpful and warm".into(),
                        based_on_version: persona.version,
                    },
                ),
            ],
            // Already superseded by the earlier pass.
            passage_ops: vec![superseding(&gone.id)],
        })
        .await
        .unwrap();
    assert_eq!(
        b.get_block(&human.id).await.unwrap().value,
        "Name: Ana\nLikes green tea\nWorks nights",
        "the rewrite was rebased: the person's line is kept"
    );
    assert_eq!(b.get_block(&persona.id).await.unwrap().value, "Terse");
    assert_eq!(stored.changes.len(), 1);
    assert_eq!(
        stored.reason.as_deref(),
        Some("2 changes no longer applied (memory changed meanwhile) and were left out")
    );
}

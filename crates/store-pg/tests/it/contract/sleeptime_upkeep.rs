//! What the service keeps around sleep-time passes, on both stores: the backlog that decides
//! when a pass runs, what passes used against the budgets, the claim that lets one pass per
//! agent run at a time, and undo, all or nothing.

use super::sleeptime::pass;
use super::{agent_with, code, user};
use crate::harness::{Harness, on_both_backends};
use chrono::{Duration, Utc};
use engram_core::{
    AgentId, BlockOp, BlockPatch, Editor, ModelPrice, NewMessage, NewPassage, PassChangeKind,
    PassId, PassStatus, PassageId, PriceSource, SupersedeKind,
};
use engram_store_api::{
    BlockStore, BlockWrite, ContextStore, MessageStore, PassCommit, PassageOp, PassageStore,
    SettingStore, SleeptimeStore,
};

on_both_backends!(
    the_backlog_counts_turns_and_compactions_since_the_last_pass,
    usage_counts_the_passes_that_ran_at_their_price,
    one_pass_claims_an_agent_at_a_time,
    undo_puts_a_pass_back_one_change_or_all,
    an_undo_that_would_write_over_a_later_edit_changes_nothing,
);

fn append(block: &engram_core::Block, text: &str) -> BlockWrite {
    BlockWrite {
        block_id: block.id.clone(),
        op: BlockOp::Append { text: text.into() },
        editor: Editor::User,
        restate_result: false,
    }
}

async fn the_backlog_counts_turns_and_compactions_since_the_last_pass<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "ana", &[]).await;
    let empty = b.pass_backlog(&a.id).await.unwrap();
    assert_eq!(
        (
            empty.turns,
            empty.compactions,
            empty.last_read,
            empty.last_message_at
        ),
        (0, 0, None, None)
    );

    // Only the person's chat messages are turns.
    let stored = b
        .append_messages(
            &a.id,
            &[
                NewMessage::user("I moved to Porto"),
                NewMessage::assistant("Noted!", None, vec![]),
                NewMessage::user("and I have a cat"),
                NewMessage::hidden(engram_core::MessageKind::Heartbeat, "go on"),
                NewMessage::user("called Miso"),
            ],
        )
        .await
        .unwrap();
    let backlog = b.pass_backlog(&a.id).await.unwrap();
    assert_eq!((backlog.turns, backlog.compactions), (3, 0));
    assert_eq!(backlog.last_read, None);
    assert_eq!(
        backlog.last_message_at.map(|t| t.timestamp_micros()),
        Some(stored[4].created_at.timestamp_micros())
    );

    // A compaction before any pass counts.
    b.evict_messages(&a.id, &[stored[0].id.clone()], "Ana moved to Porto.")
        .await
        .unwrap();
    assert_eq!(b.pass_backlog(&a.id).await.unwrap().compactions, 1);

    // A pass that read up to the second turn: one turn waits, the compaction is behind it.
    b.record_pass(&pass(&a.id, stored[2].seq, 0, PassStatus::Done))
        .await
        .unwrap();
    let after = b.pass_backlog(&a.id).await.unwrap();
    assert_eq!((after.turns, after.compactions), (1, 0));
    assert_eq!(after.last_read.as_ref(), Some(&stored[2].id));
    // A failed pass moves nothing.
    b.record_pass(&pass(&a.id, stored[4].seq, 0, PassStatus::Failed))
        .await
        .unwrap();
    assert_eq!(b.pass_backlog(&a.id).await.unwrap(), after);
    assert_eq!(code(b.pass_backlog(&AgentId::new()).await), "not_found");
}

async fn usage_counts_the_passes_that_ran_at_their_price<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "ana", &[]).await;
    let (other, _) = agent_with(&b, "bo", &[]).await;
    let since = Utc::now() - Duration::hours(24);
    for p in [
        pass(&a.id, 1, 5, PassStatus::Done),
        pass(&a.id, 1, 4, PassStatus::Failed),
        pass(&a.id, 1, 3, PassStatus::Skipped),
        // Before the window.
        pass(&a.id, 1, 60 * 25, PassStatus::Done),
        pass(&other.id, 1, 2, PassStatus::Done),
    ] {
        b.record_pass(&p).await.unwrap();
    }
    // Each pass that ran used 900 + 60 tokens; a skipped one used none.
    let own = b.pass_usage(Some(&a.id), since).await.unwrap();
    assert_eq!((own.passes, own.tokens), (2, 1_920));
    let all = b.pass_usage(None, since).await.unwrap();
    assert_eq!((all.passes, all.tokens), (3, 2_880));
    // The model's built-in price, until people set their own.
    let builtin = ModelPrice::builtin_for("openai/gpt-4o-mini").expect("a built-in price");
    assert!(
        (own.usd - 2.0 * builtin.cost(900, 60)).abs() < 1e-12,
        "{}",
        own.usd
    );
    b.set_model_price(&ModelPrice {
        model: "openai/gpt-4o-mini".into(),
        input_per_mtok: 1.0,
        output_per_mtok: 2.0,
        source: PriceSource::User,
    })
    .await
    .unwrap();
    let priced = b.pass_usage(None, since).await.unwrap();
    // 3 × (900 × $1 + 60 × $2) per million tokens.
    assert!((priced.usd - 0.003_06).abs() < 1e-12, "{}", priced.usd);
    let nobody = b.pass_usage(Some(&AgentId::new()), since).await.unwrap();
    assert_eq!((nobody.passes, nobody.tokens), (0, 0));
}

async fn one_pass_claims_an_agent_at_a_time<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "ana", &[]).await;
    let (first, second) = (PassId::new(), PassId::new());
    let long = std::time::Duration::from_secs(600);
    assert!(b.claim_pass(&a.id, &first, long).await.unwrap());
    assert!(!b.claim_pass(&a.id, &second, long).await.unwrap());
    // The holder may claim again (it extends); another's release changes nothing.
    assert!(b.claim_pass(&a.id, &first, long).await.unwrap());
    b.release_pass(&a.id, &second).await.unwrap();
    assert!(!b.claim_pass(&a.id, &second, long).await.unwrap());
    b.release_pass(&a.id, &first).await.unwrap();
    assert!(b.claim_pass(&a.id, &second, long).await.unwrap());
    // Claims are apart from the settings.
    assert_eq!(
        b.sleeptime_settings(&a.id).await.unwrap(),
        engram_core::SleeptimeSettings::default()
    );

    // A claim whose holder died runs out by itself.
    let (b2, short) = (PassId::new(), std::time::Duration::from_millis(200));
    let (other, _) = agent_with(&b, "bo", &[]).await;
    assert!(b.claim_pass(&other.id, &b2, short).await.unwrap());
    assert!(!b.claim_pass(&other.id, &PassId::new(), long).await.unwrap());
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    assert!(b.claim_pass(&other.id, &PassId::new(), long).await.unwrap());
    assert_eq!(
        code(b.claim_pass(&AgentId::new(), &PassId::new(), long).await),
        "not_found"
    );
}

async fn undo_puts_a_pass_back_one_change_or_all<H: Harness>(h: H) {
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
    let stored = b
        .commit_pass(&PassCommit {
            pass: pass(&a.id, 10, 0, PassStatus::Done),
            block_writes: vec![append(human, "Lives in Porto.")],
            passage_ops: vec![
                PassageOp::Add {
                    id: newer.clone(),
                    passage: NewPassage {
                        text: "Ana lives in Porto".into(),
                        ..NewPassage::default()
                    },
                },
                PassageOp::Supersede {
                    passage_id: old.id.clone(),
                    by: Some(newer.clone()),
                    how: SupersedeKind::Superseded,
                },
            ],
        })
        .await
        .unwrap();
    // A hand edit after the pass, which undo keeps.
    b.update_block(
        &human.id,
        &BlockPatch {
            value: Some("Name: Ana\nLives in Porto.\nHas a cat.".into()),
            ..BlockPatch::default()
        },
        &user(),
    )
    .await
    .unwrap();

    // The added passage replaced the old one: it cannot go before that is undone.
    assert_eq!(
        code(b.undo_pass_changes(&stored.id, Some(1)).await),
        "conflict"
    );
    let one = b.undo_pass_changes(&stored.id, Some(2)).await.unwrap();
    assert_eq!(one.status, PassStatus::Done, "two changes still stand");
    assert!(one.changes[2].undone_at.is_some());
    assert!(one.changes[..2].iter().all(|c| c.undone_at.is_none()));
    assert!(b.get_passage(&old.id).await.unwrap().superseded.is_none());
    // Undoing it again changes nothing.
    assert_eq!(b.undo_pass_changes(&stored.id, Some(2)).await.unwrap(), one);

    let all = b.undo_pass_changes(&stored.id, None).await.unwrap();
    assert_eq!(all.status, PassStatus::Undone);
    assert!(all.changes.iter().all(|c| c.undone_at.is_some()));
    assert_eq!(b.get_pass(&stored.id).await.unwrap(), all);
    assert_eq!(
        b.get_block(&human.id).await.unwrap().value,
        "Name: Ana\nHas a cat.",
        "the pass's line is gone, the hand edit kept"
    );
    let history = b.block_history(&human.id, 1).await.unwrap();
    let PassChangeKind::BlockEdit { edit_id, .. } = &all.changes[0].kind else {
        panic!("{:?}", all.changes[0])
    };
    assert_eq!(
        history[0].editor,
        Editor::Undo {
            edit_id: edit_id.clone()
        }
    );
    assert_eq!(code(b.get_passage(&newer).await), "not_found");

    assert_eq!(
        code(b.undo_pass_changes(&stored.id, Some(9)).await),
        "not_found"
    );
    assert_eq!(
        code(b.undo_pass_changes(&PassId::new(), None).await),
        "not_found"
    );
}

async fn an_undo_that_would_write_over_a_later_edit_changes_nothing<H: Harness>(h: H) {
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
    let stored = b
        .commit_pass(&PassCommit {
            pass: pass(&a.id, 10, 0, PassStatus::Done),
            block_writes: vec![append(human, "Lives in Porto.")],
            passage_ops: vec![PassageOp::Supersede {
                passage_id: old.id.clone(),
                by: None,
                how: SupersedeKind::Merged,
            }],
        })
        .await
        .unwrap();
    // The person rewrote the line the pass wrote.
    b.update_block(
        &human.id,
        &BlockPatch {
            value: Some("Name: Ana\nMoved to Oporto in May.".into()),
            ..BlockPatch::default()
        },
        &user(),
    )
    .await
    .unwrap();
    let err = b.undo_pass_changes(&stored.id, None).await.unwrap_err();
    assert_eq!(err.code(), "conflict", "{err}");
    assert!(err.to_string().contains("'human'"), "{err}");
    // All or nothing: the passage undone first (newest change first) is superseded again.
    assert_eq!(
        b.get_block(&human.id).await.unwrap().value,
        "Name: Ana\nMoved to Oporto in May."
    );
    assert!(b.get_passage(&old.id).await.unwrap().superseded.is_some());
    assert_eq!(b.get_pass(&stored.id).await.unwrap(), stored);
}

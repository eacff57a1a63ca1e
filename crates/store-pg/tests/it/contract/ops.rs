//! Block operations: applied to the value stored when they commit, the limit re-checked then,
//! refused (with the block as stored) when they no longer apply, each change with its version
//! and history row.

use super::agent_with;
use crate::harness::{Harness, on_both_backends};
use engram_core::{AgentId, BlockOp, Editor, NewBlock, OpError, OpOutcome, ReplaceCount};
use engram_store_api::BlockStore;

on_both_backends!(
    each_operation_applies_to_the_stored_value_with_a_history_row,
    operations_that_no_longer_apply_write_nothing,
    an_append_of_a_line_already_there_changes_nothing,
    history_is_newest_first_and_limited,
);

fn by(agent: &AgentId, call: &str) -> Editor {
    Editor::Agent {
        agent_id: agent.clone(),
        tool_call_id: Some(call.into()),
    }
}

fn changed(outcome: OpOutcome) -> engram_core::Block {
    match outcome {
        OpOutcome::Changed(block) => block,
        other => panic!("expected a change, got {other:?}"),
    }
}

async fn each_operation_applies_to_the_stored_value_with_a_history_row<H: Harness>(h: H) {
    let b = h.backend();
    let (a, blocks) = agent_with(&b, "a", &[("human", "Name: Grace")]).await;
    let id = &blocks[0].id;
    let ops = [
        BlockOp::Append {
            text: "Likes: tea, tea".into(),
        },
        BlockOp::Replace {
            old: "tea".into(),
            new: "coffee".into(),
            count: ReplaceCount::All,
        },
        BlockOp::Replace {
            old: "Grace".into(),
            new: "Grace Hopper".into(),
            count: ReplaceCount::Once,
        },
        BlockOp::Insert {
            line: 0,
            text: "# Human".into(),
        },
        BlockOp::Rewrite {
            value: "# Human\nName: Grace Hopper".into(),
            based_on_version: 5,
        },
    ];
    let expected = [
        "Name: Grace\nLikes: tea, tea",
        "Name: Grace\nLikes: coffee, coffee",
        "Name: Grace Hopper\nLikes: coffee, coffee",
        "# Human\nName: Grace Hopper\nLikes: coffee, coffee",
        "# Human\nName: Grace Hopper",
    ];
    for (n, (op, want)) in ops.iter().zip(expected).enumerate() {
        let block = changed(
            b.apply_block_op(id, op, &by(&a.id, &format!("call-{n}")))
                .await
                .unwrap(),
        );
        assert_eq!(block.value, want, "{op:?}");
        assert_eq!(block.version, n as u64 + 2);
        assert_eq!(b.get_block(id).await.unwrap(), block);
    }
    let history = b.block_history(id, 100).await.unwrap();
    assert_eq!(history.len(), 5);
    for (n, edit) in history.iter().rev().enumerate() {
        let version = n as u64 + 1;
        assert_eq!(
            (edit.old_version, edit.new_version),
            (Some(version), Some(version + 1))
        );
        assert_eq!(edit.new_value, expected[n]);
        assert_eq!(edit.editor, by(&a.id, &format!("call-{n}")));
        assert_eq!(edit.step_id, None);
    }
}

async fn operations_that_no_longer_apply_write_nothing<H: Harness>(h: H) {
    let b = h.backend();
    let block = b
        .create_block(&NewBlock {
            limit: Some(30),
            ..NewBlock::new("notes", "one\nto one")
        })
        .await
        .unwrap();
    let user = Editor::User;
    let refused = |outcome: OpOutcome| match outcome {
        OpOutcome::Refused { error, current } => {
            assert_eq!(current, block, "the refusal carries the block as stored");
            error
        }
        other => panic!("expected a refusal, got {other:?}"),
    };
    type Expect = fn(&OpError) -> bool;
    let cases: Vec<(BlockOp, Expect)> = vec![
        (
            BlockOp::Replace {
                old: "three".into(),
                new: "3".into(),
                count: ReplaceCount::All,
            },
            |e| matches!(e, OpError::NotFound { .. }),
        ),
        (
            BlockOp::Replace {
                old: "one".into(),
                new: "1".into(),
                count: ReplaceCount::Once,
            },
            |e| matches!(e, OpError::Ambiguous { count: 2, .. }),
        ),
        (
            BlockOp::Insert {
                line: 5,
                text: "x".into(),
            },
            |e| matches!(e, OpError::LineOutOfRange { lines: 2, .. }),
        ),
        (
            BlockOp::Rewrite {
                value: "new".into(),
                based_on_version: 7,
            },
            |e| {
                matches!(
                    e,
                    OpError::Stale {
                        based_on: 7,
                        current: 1,
                        ..
                    }
                )
            },
        ),
        (
            BlockOp::Append {
                text: "x".repeat(30),
            },
            |e| matches!(e, OpError::Limit(l) if l.limit == 30 && l.requested == 41),
        ),
        (BlockOp::Append { text: "  ".into() }, |e| {
            matches!(e, OpError::Empty)
        }),
    ];
    for (op, expect) in cases {
        let error = refused(b.apply_block_op(&block.id, &op, &user).await.unwrap());
        assert!(expect(&error), "{op:?} → {error:?}");
    }
    // Read-only blocks refuse operations (they are what agents' tools send).
    let ro = b
        .update_block(
            &block.id,
            &engram_core::BlockPatch {
                read_only: Some(true),
                ..Default::default()
            },
            &user,
        )
        .await
        .unwrap();
    match b
        .apply_block_op(&block.id, &BlockOp::Append { text: "x".into() }, &user)
        .await
        .unwrap()
    {
        OpOutcome::Refused {
            error: OpError::ReadOnly { label },
            current,
        } => {
            assert_eq!((label.as_str(), current), ("notes", ro.clone()));
        }
        other => panic!("expected a read-only refusal, got {other:?}"),
    }
    assert_eq!(b.get_block(&block.id).await.unwrap(), ro);
    assert!(b.block_history(&block.id, 10).await.unwrap().is_empty());
}

async fn an_append_of_a_line_already_there_changes_nothing<H: Harness>(h: H) {
    let b = h.backend();
    let block = b
        .create_block(&NewBlock::new("facts", "likes tea\nlives in Oslo"))
        .await
        .unwrap();
    let again = b
        .apply_block_op(
            &block.id,
            &BlockOp::Append {
                text: "lives in Oslo".into(),
            },
            &Editor::User,
        )
        .await
        .unwrap();
    assert_eq!(again, OpOutcome::Unchanged(block.clone()));
    let same = BlockOp::Rewrite {
        value: block.value.clone(),
        based_on_version: 1,
    };
    assert_eq!(
        b.apply_block_op(&block.id, &same, &Editor::User)
            .await
            .unwrap(),
        OpOutcome::Unchanged(block.clone())
    );
    assert_eq!(b.get_block(&block.id).await.unwrap(), block);
    assert!(b.block_history(&block.id, 10).await.unwrap().is_empty());
}

async fn history_is_newest_first_and_limited<H: Harness>(h: H) {
    let b = h.backend();
    let block = b.create_block(&NewBlock::new("log", "")).await.unwrap();
    for n in 0..5 {
        let op = BlockOp::Append {
            text: format!("line {n}"),
        };
        changed(
            b.apply_block_op(&block.id, &op, &Editor::User)
                .await
                .unwrap(),
        );
    }
    let last3 = b.block_history(&block.id, 3).await.unwrap();
    let versions: Vec<Option<u64>> = last3.iter().map(|e| e.new_version).collect();
    assert_eq!(versions, [Some(6), Some(5), Some(4)]);
    assert_eq!(last3[0].new_value, "line 0\nline 1\nline 2\nline 3\nline 4");
    assert_eq!(last3[2].old_value, "line 0\nline 1");
}

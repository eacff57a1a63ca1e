//! Block versions: edits are operations on the current value, whole-value writes
//! name the version they read, and no edit is ever lost — also with several connections (as
//! separate processes have) writing one shared block at once.

use crate::steps::step;
use crate::support::{create, temp_store};
use engram_core::{
    AgentId, BlockId, BlockOp, BlockPatch, Editor, Error, NewBlock, NewMessage, ReplaceCount,
    ToolCall, ToolReturn, ToolStatus,
};
use engram_store::{BlockWrite, CommittedStep, StepCommit, Store};

fn by(agent: &AgentId, call: &str) -> Editor {
    Editor::Agent {
        agent_id: agent.clone(),
        tool_call_id: Some(call.into()),
    }
}

/// A step of `agent` with one memory-tool call `call` doing `op` on `block`, answered `OK`
/// (as the loop stores it before the commit decides).
fn one_call_step(agent: &AgentId, call: &str, block: &BlockId, op: BlockOp) -> StepCommit {
    let now = chrono::Utc::now();
    StepCommit {
        step: step(agent),
        messages: vec![
            NewMessage::assistant(
                "",
                None,
                vec![ToolCall {
                    id: call.into(),
                    name: "core_memory_append".into(),
                    arguments: "{}".into(),
                }],
            ),
            NewMessage::tool(
                call,
                "core_memory_append",
                ToolReturn::ok("preview", now).to_json(),
            ),
        ],
        block_writes: vec![BlockWrite {
            block_id: block.clone(),
            op,
            editor: by(agent, call),
            restate_result: true,
        }],
        passages: vec![],
        approval: Default::default(),
    }
}

fn tool_result(c: &CommittedStep) -> ToolReturn {
    ToolReturn::parse(&c.messages[1].content).expect("envelope")
}

fn set(value: &str, version: Option<u64>) -> BlockPatch {
    BlockPatch {
        value: Some(value.into()),
        version,
        ..BlockPatch::default()
    }
}

#[test]
fn a_hand_edit_made_during_a_step_survives_the_steps_append() {
    let (_dir, store) = temp_store();
    let (a, blocks) = create(&store, "a");
    let human = &blocks[1];
    store
        .blocks()
        .update(&human.id, &set("Name: Alice", None), &Editor::User)
        .unwrap();
    // The step read "Name: Alice"; meanwhile the window saved a new line.
    let read = store.blocks().get(&human.id).unwrap();
    let hand = store
        .blocks()
        .update(
            &human.id,
            &set("Name: Alice\nAllergic to peanuts", Some(read.version)),
            &Editor::User,
        )
        .unwrap();
    assert_eq!(hand.version, read.version + 1);

    let c = one_call_step(
        &a.id,
        "c1",
        &human.id,
        BlockOp::Append {
            text: "Likes: kiwi".into(),
        },
    );
    let committed = store.runs().commit_step(&c).unwrap();
    let after = store.blocks().get(&human.id).unwrap();
    assert_eq!(after.value, "Name: Alice\nAllergic to peanuts\nLikes: kiwi");
    assert_eq!(after.version, hand.version + 1);
    // The stored tool result tells the model the value its edit really produced.
    let result = tool_result(&committed);
    assert_eq!(result.status, ToolStatus::Ok);
    assert!(result.message.ends_with(&after.value), "{}", result.message);
    assert_eq!(committed.blocks[0].block, after);
    assert_eq!(committed.blocks[0].tool_call_id.as_deref(), Some("c1"));

    // History: three edits, each with its author, step and both versions.
    let history = store.blocks().history(&human.id, 10).unwrap();
    assert_eq!(history.len(), 3);
    assert_eq!(history[0].editor, by(&a.id, "c1"));
    assert_eq!(history[0].step_id.as_ref(), Some(&c.step.id));
    assert_eq!(
        (history[0].old_version, history[0].new_version),
        (Some(hand.version), Some(after.version))
    );
    assert_eq!(history[0].old_value, hand.value);
    assert_eq!(history[1].editor, Editor::User);
    assert_eq!(history[1].step_id, None);
    assert_eq!(history[1].new_version, Some(hand.version));
}

#[test]
fn a_replace_whose_text_changed_meanwhile_fails_with_the_current_value() {
    let (_dir, store) = temp_store();
    let (a, blocks) = create(&store, "a");
    let human = &blocks[1];
    store
        .blocks()
        .update(&human.id, &set("Likes: figs", None), &Editor::User)
        .unwrap();
    let before = store.blocks().get(&human.id).unwrap();
    let mut c = one_call_step(
        &a.id,
        "c1",
        &human.id,
        BlockOp::Replace {
            old: "kiwi".into(),
            new: "mango".into(),
            count: ReplaceCount::Once,
        },
    );
    // A second call of the same step that still applies is kept.
    c.block_writes.push(BlockWrite {
        block_id: blocks[0].id.clone(),
        op: BlockOp::Append {
            text: "I like fruit.".into(),
        },
        editor: by(&a.id, "c2"),
        restate_result: true,
    });
    let committed = store.runs().commit_step(&c).unwrap();
    assert_eq!(committed.refused, ["c1"]);
    let result = tool_result(&committed);
    assert_eq!(result.status, ToolStatus::Failed);
    assert!(
        result.message.contains("'kiwi' was not found")
            && result
                .message
                .contains(&format!("version {}", before.version))
            && result.message.ends_with("Likes: figs"),
        "{}",
        result.message
    );
    assert_eq!(
        store.blocks().get(&human.id).unwrap(),
        before,
        "nothing written"
    );
    assert_eq!(store.blocks().history(&human.id, 10).unwrap().len(), 1);
    assert!(
        store
            .blocks()
            .get(&blocks[0].id)
            .unwrap()
            .value
            .ends_with("I like fruit.")
    );
    assert_eq!(committed.blocks.len(), 1);
}

#[test]
fn a_stale_rewrite_is_refused_but_one_after_the_steps_own_edits_is_not() {
    let (_dir, store) = temp_store();
    let (a, blocks) = create(&store, "a");
    let human = &blocks[1];
    let read = human.version;
    store
        .blocks()
        .update(&human.id, &set("changed by hand", None), &Editor::User)
        .unwrap();
    let stale = one_call_step(
        &a.id,
        "c1",
        &human.id,
        BlockOp::Rewrite {
            value: "rethought".into(),
            based_on_version: read,
        },
    );
    let committed = store.runs().commit_step(&stale).unwrap();
    let result = tool_result(&committed);
    assert_eq!(result.status, ToolStatus::Failed);
    assert!(
        result.message.contains("changed since you read it")
            && result.message.ends_with("changed by hand"),
        "{}",
        result.message
    );
    assert_eq!(
        store.blocks().get(&human.id).unwrap().value,
        "changed by hand"
    );

    // An append then a rewrite in one step, both read at the same version: the step's own
    // append does not make its rewrite stale.
    let now = store.blocks().get(&human.id).unwrap();
    let mut c = one_call_step(
        &a.id,
        "c2",
        &human.id,
        BlockOp::Append {
            text: "more".into(),
        },
    );
    c.block_writes.push(BlockWrite {
        block_id: human.id.clone(),
        op: BlockOp::Rewrite {
            value: "condensed".into(),
            based_on_version: now.version,
        },
        editor: by(&a.id, "c3"),
        restate_result: false,
    });
    let committed = store.runs().commit_step(&c).unwrap();
    assert!(committed.refused.is_empty());
    let after = store.blocks().get(&human.id).unwrap();
    assert_eq!(
        (after.value.as_str(), after.version),
        ("condensed", now.version + 2)
    );
}

#[test]
fn hand_edits_and_undo_name_the_version_they_read() {
    let (_dir, store) = temp_store();
    let (_a, blocks) = create(&store, "a");
    let human = &blocks[1];
    assert_eq!(human.version, 1, "new blocks start at version 1");
    let v2 = store
        .blocks()
        .update(&human.id, &set("Ann", Some(1)), &Editor::User)
        .unwrap();
    assert_eq!(v2.version, 2);
    // A second window still at version 1 is refused with the current block.
    match store
        .blocks()
        .update(&human.id, &set("Bob", Some(1)), &Editor::User)
    {
        Err(Error::StaleVersion { based_on, current }) => {
            assert_eq!(based_on, 1);
            assert_eq!(*current, v2);
        }
        other => panic!("expected StaleVersion, got {other:?}"),
    }
    // Settings changes count as changes too; a patch that changes nothing writes nothing.
    let v3 = store
        .blocks()
        .update(
            &human.id,
            &BlockPatch {
                limit: Some(900),
                version: Some(2),
                ..BlockPatch::default()
            },
            &Editor::User,
        )
        .unwrap();
    assert_eq!(v3.version, 3);
    let same = store
        .blocks()
        .update(&human.id, &set("Ann", Some(3)), &Editor::User)
        .unwrap();
    assert_eq!(same, v3);
    // Without a version (Letta's SDK), the last writer wins.
    let v4 = store
        .blocks()
        .update(&human.id, &set("Ann Lee", None), &Editor::User)
        .unwrap();
    assert_eq!(v4.version, 4);

    let last = store.blocks().history(&human.id, 1).unwrap().remove(0);
    assert!(matches!(
        store.blocks().undo_edit(&last.id, Some(3)),
        Err(Error::StaleVersion { .. })
    ));
    assert_eq!(store.blocks().get(&human.id).unwrap(), v4);
    let undone = store.blocks().undo_edit(&last.id, Some(4)).unwrap();
    assert_eq!((undone.value.as_str(), undone.version), ("Ann", 5));
}

/// N agents share one block; each makes M appends, every one in its own step, from its own
/// thread and its own connection to the file (as separate processes would), all at once.
#[test]
fn many_agents_appending_to_one_shared_block_lose_nothing() {
    const N: usize = 6;
    const M: usize = 15;
    let (dir, store) = temp_store();
    let path = dir.path().join("data").join("engram.db");
    let shared = store
        .blocks()
        .create(&NewBlock {
            limit: Some(N * M * 12),
            ..NewBlock::new("team", "")
        })
        .unwrap();
    let agents: Vec<AgentId> = (0..N)
        .map(|i| {
            let (a, _) = create(&store, &format!("agent{i}"));
            store.blocks().attach(&a.id, &shared.id).unwrap();
            a.id
        })
        .collect();
    let start = std::sync::Arc::new(std::sync::Barrier::new(N));
    let threads: Vec<_> = agents
        .iter()
        .enumerate()
        .map(|(i, agent)| {
            let (agent, block, start) = (agent.clone(), shared.id.clone(), start.clone());
            // Half the agents share the first connection (one process), half open their own.
            let store = if i % 2 == 0 {
                store.clone()
            } else {
                Store::open(&path).unwrap()
            };
            std::thread::spawn(move || {
                start.wait();
                for j in 0..M {
                    let op = BlockOp::Append {
                        text: format!("fact {i}-{j}"),
                    };
                    let c = one_call_step(&agent, &format!("call-{i}-{j}"), &block, op);
                    let committed = store.runs().commit_step(&c).unwrap();
                    assert!(committed.refused.is_empty());
                    let result = tool_result(&committed);
                    assert!(result.message.contains(&format!("fact {i}-{j}")));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }

    let block = store.blocks().get(&shared.id).unwrap();
    let lines: Vec<&str> = block.value.lines().collect();
    assert_eq!(lines.len(), N * M, "every append is there");
    for i in 0..N {
        let mine: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| l.starts_with(&format!("fact {i}-")))
            .collect();
        let expected: Vec<String> = (0..M).map(|j| format!("fact {i}-{j}")).collect();
        assert_eq!(mine, expected, "agent {i}'s appends, in its order");
    }
    assert!(block.chars() <= block.limit);
    assert_eq!(block.version, 1 + (N * M) as u64);

    // History is complete: one row per edit, versions contiguous, each row's old value the
    // previous row's new value.
    let mut history = store.blocks().history(&shared.id, usize::MAX).unwrap();
    history.reverse();
    assert_eq!(history.len(), N * M);
    for (k, e) in history.iter().enumerate() {
        assert_eq!(e.old_version, Some(1 + k as u64));
        assert_eq!(e.new_version, Some(2 + k as u64));
        if k > 0 {
            assert_eq!(e.old_value, history[k - 1].new_value);
        }
        assert!(matches!(e.editor, Editor::Agent { .. }) && e.step_id.is_some());
    }
    assert_eq!(history.last().unwrap().new_value, block.value);
}

/// Same race with a limit that fits only some of the appends: the ones that fit are all kept,
/// the others are refused to their tool call with the limit message, and the limit holds.
#[test]
fn racing_appends_never_exceed_the_limit_and_refusals_are_answered() {
    const N: usize = 4;
    const M: usize = 10;
    const LIMIT: usize = 100; // "fact i-j" is 8 characters: about 11 lines fit
    let (dir, store) = temp_store();
    let path = dir.path().join("data").join("engram.db");
    let shared = store
        .blocks()
        .create(&NewBlock {
            limit: Some(LIMIT),
            ..NewBlock::new("team", "")
        })
        .unwrap();
    let agents: Vec<AgentId> = (0..N)
        .map(|i| {
            let (a, _) = create(&store, &format!("agent{i}"));
            store.blocks().attach(&a.id, &shared.id).unwrap();
            a.id
        })
        .collect();
    let threads: Vec<_> = agents
        .into_iter()
        .enumerate()
        .map(|(i, agent)| {
            let (block, path) = (shared.id.clone(), path.clone());
            std::thread::spawn(move || {
                let store = Store::open(&path).unwrap();
                let mut accepted = Vec::new();
                for j in 0..M {
                    let text = format!("fact {i}-{j}");
                    let op = BlockOp::Append { text: text.clone() };
                    let c = one_call_step(&agent, &format!("call-{i}-{j}"), &block, op);
                    let committed = store.runs().commit_step(&c).unwrap();
                    let result = tool_result(&committed);
                    match result.status {
                        ToolStatus::Ok => accepted.push(text),
                        ToolStatus::Failed => {
                            assert!(result.message.starts_with("Edit failed: Exceeds 100"));
                            assert_eq!(committed.refused, [format!("call-{i}-{j}")]);
                        }
                    }
                }
                accepted
            })
        })
        .collect();
    let mut accepted: Vec<String> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let block = store.blocks().get(&shared.id).unwrap();
    assert!(block.chars() <= LIMIT, "{} > {LIMIT}", block.chars());
    let mut lines: Vec<String> = block.value.lines().map(str::to_owned).collect();
    accepted.sort();
    lines.sort();
    assert_eq!(lines, accepted, "exactly the accepted appends are there");
    assert!(lines.len() >= 10, "the block filled up: {}", lines.len());
    let history = store.blocks().history(&shared.id, usize::MAX).unwrap();
    assert_eq!(history.len(), lines.len());
}

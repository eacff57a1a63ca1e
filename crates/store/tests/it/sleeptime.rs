//! Facts that change and sleep-time passes on SQLite: a pass's changes land in one
//! transaction, a superseded passage leaves searches and lists but stays in the history, edits
//! made meanwhile are kept, and undo puts everything back. The rest of the passes' contract
//! (undo refused over a later edit, usage, claims) runs on both stores in `engram-store-pg`'s
//! contract suite.

use crate::support::{create, temp_store};
use engram_core::{
    AgentId, BlockOp, BlockPatch, Editor, NewPassage, PassChangeKind, PassId, PassStatus,
    PassTrigger, PassageId, ReplaceCount, SleeptimePass, SupersedeKind,
};
use engram_retrieval::HybridSearch;
use engram_store::{BlockWrite, PassCommit, PassageList, PassageOp, PassageQuery, Store};

fn record(agent: &AgentId) -> SleeptimePass {
    let now = chrono::Utc::now();
    SleeptimePass {
        id: PassId::new(),
        agent_id: agent.clone(),
        trigger: PassTrigger::Manual,
        status: PassStatus::Done,
        reason: None,
        model: "openai/mock".into(),
        started_at: now,
        ended_at: now,
        messages_read: 4,
        last_seq: 4096,
        model_calls: 2,
        prompt_tokens: 100,
        completion_tokens: 20,
        cost_usd: None,
        changes: Vec::new(),
    }
}

fn write(block: &engram_core::Block, op: BlockOp) -> BlockWrite {
    BlockWrite {
        block_id: block.id.clone(),
        op,
        editor: Editor::User,
        restate_result: false,
    }
}

fn texts(store: &Store, agent: &AgentId, q: &str, include_superseded: bool) -> Vec<String> {
    store
        .search_passages(
            agent,
            &PassageQuery {
                query: q.into(),
                top_k: 10,
                include_superseded,
                ..PassageQuery::default()
            },
        )
        .unwrap()
        .into_iter()
        .map(|h| h.passage.text)
        .collect()
}

#[test]
fn a_pass_replaces_a_fact_keeps_a_hand_edit_and_undoes_whole() {
    let (_dir, store) = temp_store();
    let (agent, blocks) = create(&store, "a");
    let human = blocks.iter().find(|b| b.label == "human").unwrap().clone();
    let human = store
        .blocks()
        .update(
            &human.id,
            &BlockPatch {
                value: Some("Name: Ana\nLives in Lisbon\nLikes tea\nLikes tea".into()),
                ..BlockPatch::default()
            },
            &Editor::User,
        )
        .unwrap();
    let old = store
        .passages()
        .insert(
            &agent.id,
            &[NewPassage {
                text: "Ana lives in Lisbon".into(),
                ..NewPassage::default()
            }],
        )
        .unwrap()
        .remove(0);
    // The pass read the block at this version and decided a rewrite; meanwhile a hand edit
    // added a line at the end.
    let rewrite = BlockOp::Rewrite {
        value: "Name: Ana\nLives in Porto\nLikes tea".into(),
        based_on_version: human.version,
    };
    store
        .blocks()
        .update(
            &human.id,
            &BlockPatch {
                value: Some(format!("{}\nHas a cat", human.value)),
                ..BlockPatch::default()
            },
            &Editor::User,
        )
        .unwrap();
    let new = PassageId::new();
    let pass = store
        .sleeptime()
        .commit_pass(&PassCommit {
            pass: record(&agent.id),
            block_writes: vec![write(&human, rewrite)],
            passage_ops: vec![
                PassageOp::Add {
                    id: new.clone(),
                    passage: NewPassage {
                        text: "Ana lives in Porto".into(),
                        ..NewPassage::default()
                    },
                },
                PassageOp::Supersede {
                    passage_id: old.id.clone(),
                    by: Some(new.clone()),
                    how: SupersedeKind::Superseded,
                },
            ],
        })
        .unwrap();
    assert_eq!(pass.status, PassStatus::Done);
    assert_eq!(pass.changes.len(), 3, "{:#?}", pass.changes);
    assert_eq!(
        store.blocks().get(&human.id).unwrap().value,
        "Name: Ana\nLives in Porto\nLikes tea\nHas a cat",
        "the rewrite was rebased onto the hand edit"
    );
    assert!(
        matches!(&pass.changes[0].kind, PassChangeKind::BlockEdit { diff, .. } if diff.contains("-Lives in Lisbon") && diff.contains("+Lives in Porto"))
    );
    assert_eq!(
        texts(&store, &agent.id, "lives", false),
        ["Ana lives in Porto"]
    );
    let mut history = texts(&store, &agent.id, "lives", true);
    history.sort();
    assert_eq!(history, ["Ana lives in Lisbon", "Ana lives in Porto"]);
    let replaced = store.passages().get(&old.id).unwrap().superseded.unwrap();
    assert_eq!(replaced.by.as_ref(), Some(&new));
    assert_eq!(replaced.pass_id.as_ref(), Some(&pass.id));
    let listed = store
        .passages()
        .list(
            &agent.id,
            &PassageList {
                limit: 10,
                ..PassageList::default()
            },
        )
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        store
            .passages()
            .count(
                &agent.id,
                &PassageList {
                    include_superseded: true,
                    ..PassageList::default()
                }
            )
            .unwrap(),
        2
    );
    assert_eq!(store.sleeptime().last_seq(&agent.id).unwrap(), 4096);

    // Undo of the whole pass: the block as before the pass, with the hand edit kept.
    let undone = store.sleeptime().undo_changes(&pass.id, None).unwrap();
    assert_eq!(undone.status, PassStatus::Undone);
    assert_eq!(
        store.blocks().get(&human.id).unwrap().value,
        "Name: Ana\nLives in Lisbon\nLikes tea\nLikes tea\nHas a cat"
    );
    assert_eq!(
        texts(&store, &agent.id, "lives", true),
        ["Ana lives in Lisbon"]
    );
    assert!(store.passages().get(&old.id).unwrap().superseded.is_none());
}

#[test]
fn an_operation_that_no_longer_applies_is_left_out_and_said() {
    let (_dir, store) = temp_store();
    let (agent, blocks) = create(&store, "a");
    let human = blocks.iter().find(|b| b.label == "human").unwrap().clone();
    let pass = store
        .sleeptime()
        .commit_pass(&PassCommit {
            pass: record(&agent.id),
            block_writes: vec![write(
                &human,
                BlockOp::Replace {
                    old: "Lisbon".into(),
                    new: "Porto".into(),
                    count: ReplaceCount::Once,
                },
            )],
            passage_ops: vec![PassageOp::Supersede {
                passage_id: PassageId::from("passage-none"),
                by: None,
                how: SupersedeKind::Merged,
            }],
        })
        .unwrap();
    assert!(pass.changes.is_empty());
    assert!(
        pass.reason
            .unwrap()
            .starts_with("2 changes no longer applied")
    );
}

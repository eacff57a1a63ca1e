//! Writers on separate connections (separate PostgreSQL pools, as replicas have; separate
//! SQLite connections, as the app and the CLI have) editing one block at the same time: every
//! edit is kept, with a complete history; whole-value writes at one version have one winner;
//! a label cannot be taken twice on one agent; messages appended to one agent from every
//! replica get strictly increasing numbers, each batch a contiguous run; passages inserted
//! from every replica are all kept and found.

use super::agent_with;
use crate::harness::{Harness, on_both_backends};
use engram_core::{BlockOp, Editor, NewBlock, NewMessage, NewPassage, OpError, OpOutcome};
use engram_store_api::{
    BlockStore, MessageStore, PassageRange, PassageSearch, PassageStore, SEQ_GAP, SeqOrder,
};
use std::collections::{BTreeSet, HashMap};

on_both_backends!(
    appends_from_every_replica_are_all_kept,
    rewrites_at_one_version_have_one_winner,
    one_label_attached_at_once_from_two_replicas_is_taken_once,
    appends_from_every_replica_get_increasing_seqs,
    passages_from_every_replica_are_all_kept,
);

/// Writers, and appends per writer.
const WRITERS: usize = 6;
const APPENDS: usize = 10;

async fn appends_from_every_replica_are_all_kept<H: Harness>(h: H) {
    let block = h
        .backend()
        .create_block(&NewBlock {
            limit: Some(100_000),
            ..NewBlock::new("shared", "")
        })
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let replica = h.replica().await;
        let id = block.id.clone();
        tasks.push(tokio::spawn(async move {
            for n in 0..APPENDS {
                let op = BlockOp::Append {
                    text: format!("writer {w} line {n}"),
                };
                let editor = Editor::Client {
                    name: format!("writer-{w}"),
                };
                match replica.apply_block_op(&id, &op, &editor).await.unwrap() {
                    OpOutcome::Changed(_) => {}
                    other => panic!("an append of a new line changes the block: {other:?}"),
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let b = h.backend();
    let stored = b.get_block(&block.id).await.unwrap();
    let lines: BTreeSet<&str> = stored.value.lines().collect();
    let expected: BTreeSet<String> = (0..WRITERS)
        .flat_map(|w| (0..APPENDS).map(move |n| format!("writer {w} line {n}")))
        .collect();
    assert_eq!(lines.len(), WRITERS * APPENDS, "no edit lost, none doubled");
    assert!(expected.iter().all(|l| lines.contains(l.as_str())));
    assert_eq!(stored.version, 1 + (WRITERS * APPENDS) as u64);

    // The history is a chain: each edit starts from the one before it.
    let mut history = b.block_history(&block.id, 1_000).await.unwrap();
    history.reverse();
    assert_eq!(history.len(), WRITERS * APPENDS);
    let mut value = String::new();
    for (n, edit) in history.iter().enumerate() {
        assert_eq!(edit.old_version, Some(n as u64 + 1));
        assert_eq!(edit.new_version, Some(n as u64 + 2));
        assert_eq!(
            edit.old_value, value,
            "edit {n} starts from the value the one before left"
        );
        value.clone_from(&edit.new_value);
    }
    assert_eq!(value, stored.value);
    // Each writer's lines arrive in its own order.
    for w in 0..WRITERS {
        let mine: Vec<&str> = stored
            .value
            .lines()
            .filter(|l| l.starts_with(&format!("writer {w} ")))
            .collect();
        let want: Vec<String> = (0..APPENDS)
            .map(|n| format!("writer {w} line {n}"))
            .collect();
        assert_eq!(mine, want);
    }
}

async fn rewrites_at_one_version_have_one_winner<H: Harness>(h: H) {
    let block = h
        .backend()
        .create_block(&NewBlock::new("plan", "draft"))
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let replica = h.replica().await;
        let id = block.id.clone();
        tasks.push(tokio::spawn(async move {
            let op = BlockOp::Rewrite {
                value: format!("plan by {w}"),
                based_on_version: 1,
            };
            replica
                .apply_block_op(&id, &op, &Editor::User)
                .await
                .unwrap()
        }));
    }
    let mut winners = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            OpOutcome::Changed(b) => winners.push(b),
            OpOutcome::Refused {
                error:
                    OpError::Stale {
                        based_on: 1,
                        current: 2,
                        ..
                    },
                current,
            } => {
                assert_eq!(current.version, 2);
            }
            other => panic!("a rewrite either wins or is refused as stale: {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one rewrite wins");
    let stored = h.backend().get_block(&block.id).await.unwrap();
    assert_eq!(stored, winners[0]);
    assert_eq!(
        h.backend()
            .block_history(&block.id, 10)
            .await
            .unwrap()
            .len(),
        1
    );
}

async fn one_label_attached_at_once_from_two_replicas_is_taken_once<H: Harness>(h: H) {
    let b = h.backend();
    for _ in 0..5 {
        let (a, _) = agent_with(&b, "a", &[]).await;
        let mut tasks = Vec::new();
        for _ in 0..2 {
            let replica = h.replica().await;
            let block = b.create_block(&NewBlock::new("notes", "")).await.unwrap();
            let agent = a.id.clone();
            tasks.push(tokio::spawn(async move {
                replica.attach_block(&agent, &block.id).await
            }));
        }
        let mut codes = Vec::new();
        for t in tasks {
            codes.push(t.await.unwrap().map_or_else(|e| e.code(), |()| "ok"));
        }
        codes.sort_unstable();
        assert_eq!(codes, ["conflict", "ok"]);
        assert_eq!(b.agent_blocks(&a.id).await.unwrap().len(), 1);
    }
}

/// Batches per writer, and messages per batch.
const BATCHES: usize = 8;
const BATCH: usize = 3;

async fn appends_from_every_replica_get_increasing_seqs<H: Harness>(h: H) {
    let (a, _) = agent_with(&h.backend(), "busy", &[]).await;
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let replica = h.replica().await;
        let agent = a.id.clone();
        tasks.push(tokio::spawn(async move {
            let mut returned = Vec::new();
            for n in 0..BATCHES {
                let batch: Vec<NewMessage> = (0..BATCH)
                    .map(|i| NewMessage::user(format!("writer {w} batch {n} message {i}")))
                    .collect();
                let stored = replica.append_messages(&agent, &batch).await.unwrap();
                returned.extend(stored);
            }
            returned
        }));
    }
    let mut returned = HashMap::new();
    for t in tasks {
        for m in t.await.unwrap() {
            returned.insert(m.id.clone(), m);
        }
    }
    let b = h.backend();
    let total = WRITERS * BATCHES * BATCH;
    let all = b
        .page_messages(&a.id, None, None, total + 10, SeqOrder::Asc)
        .await
        .unwrap();
    assert_eq!(all.len(), total, "every message stored once");
    assert_eq!(b.count_messages(&a.id).await.unwrap(), total as u64);
    assert_eq!(returned.len(), total, "ids unique");
    for m in &all {
        assert_eq!(
            returned.get(&m.id),
            Some(m),
            "stored as the append returned it"
        );
    }
    let texts: BTreeSet<&str> = all.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts.len(), total, "none doubled");
    // Strictly increasing with no duplicates, SEQ_GAP apart: appends queued on the agent.
    for (n, m) in all.iter().enumerate() {
        assert_eq!(m.seq, (n as i64 + 1) * SEQ_GAP, "{}", m.content);
    }
    // Each batch is a contiguous run, in its own order, and each writer's batches come in the
    // order it sent them.
    for run in all.chunks(BATCH) {
        let head = run[0].content.rsplit_once(" message ").unwrap().0;
        for (i, m) in run.iter().enumerate() {
            assert_eq!(m.content, format!("{head} message {i}"));
        }
    }
    for w in 0..WRITERS {
        let mine: Vec<&str> = all
            .iter()
            .map(|m| m.content.as_str())
            .filter(|c| c.starts_with(&format!("writer {w} ")))
            .collect();
        let want: Vec<String> = (0..BATCHES)
            .flat_map(|n| (0..BATCH).map(move |i| format!("writer {w} batch {n} message {i}")))
            .collect();
        assert_eq!(mine, want);
    }
}

async fn passages_from_every_replica_are_all_kept<H: Harness>(h: H) {
    let (a, _) = agent_with(&h.backend(), "archive", &[]).await;
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let replica = h.replica().await;
        let agent = a.id.clone();
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for n in 0..BATCHES {
                let batch: Vec<NewPassage> = (0..BATCH)
                    .map(|i| NewPassage {
                        text: format!("writer{w} batch{n} item{i} shared"),
                        tags: vec![format!("writer-{w}")],
                        ..NewPassage::default()
                    })
                    .collect();
                let stored = replica.insert_passages(&agent, &batch).await.unwrap();
                ids.extend(stored.into_iter().map(|p| p.id));
            }
            ids
        }));
    }
    let mut ids = BTreeSet::new();
    for t in tasks {
        ids.extend(t.await.unwrap());
    }
    let total = WRITERS * BATCHES * BATCH;
    assert_eq!(ids.len(), total, "ids unique");
    let b = h.backend();
    assert_eq!(b.count_passages(&a.id).await.unwrap(), total as u64);
    let listed = b
        .list_passages(
            &a.id,
            &PassageRange {
                limit: total + 10,
                ascending: true,
                ..PassageRange::default()
            },
        )
        .await
        .unwrap();
    let listed_ids: BTreeSet<_> = listed.iter().map(|p| p.id.clone()).collect();
    assert_eq!(listed_ids, ids, "every passage listed once");
    assert!(
        listed
            .windows(2)
            .all(|w| w[0].created_at <= w[1].created_at),
        "oldest first"
    );
    let hits = b
        .search_passages(&a.id, &PassageSearch::new("shared", total + 10))
        .await
        .unwrap();
    assert_eq!(hits.len(), total, "every passage found by its words");
    let tagged = b
        .search_passages(
            &a.id,
            &PassageSearch {
                tags: vec!["writer-0".into()],
                ..PassageSearch::new("shared", total)
            },
        )
        .await
        .unwrap();
    assert_eq!(tagged.len(), BATCHES * BATCH);
}

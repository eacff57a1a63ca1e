//! Steps commit all or nothing.

use crate::support::{create, temp_store};
use chrono::Utc;
use engram_core::{
    AgentId, BlockOp, Editor, Error, NewBlock, NewMessage, NewPassage, ReplaceCount, RunId, Step,
    StepId, ToolCall,
};
use engram_store::{BlockWrite, StepCommit};

/// A step record of `agent` in a fresh run.
pub fn step(agent: &AgentId) -> Step {
    Step {
        id: StepId::new(),
        agent_id: agent.clone(),
        run_id: RunId::new(),
        index: 1,
        model: "openai/gpt-4o-mini".into(),
        prompt_tokens: 1200,
        completion_tokens: 80,
        finish_reason: Some("tool_calls".into()),
        started_at: Utc::now(),
        llm_ms: 900,
        step_ms: 950,
    }
}

fn editor(agent: &AgentId, call: &str) -> Editor {
    Editor::Agent {
        agent_id: agent.clone(),
        tool_call_id: Some(call.into()),
    }
}

#[test]
fn a_step_commits_everything_together() {
    let (_dir, store) = temp_store();
    let (a, blocks) = create(&store, "a");
    let human = &blocks[1];
    let s = step(&a.id);
    let committed = store
        .runs()
        .commit_step(&StepCommit {
            step: s.clone(),
            messages: vec![
                NewMessage::assistant(
                    "",
                    None,
                    vec![ToolCall {
                        id: "c1".into(),
                        name: "memory_rethink".into(),
                        arguments: "{}".into(),
                    }],
                ),
                NewMessage::tool("c1", "memory_rethink", r#"{"status":"OK"}"#),
            ],
            block_writes: vec![
                BlockWrite {
                    block_id: human.id.clone(),
                    op: BlockOp::Rewrite {
                        value: "Ann".into(),
                        based_on_version: human.version,
                    },
                    editor: editor(&a.id, "c1"),
                    restate_result: false,
                },
                BlockWrite {
                    block_id: human.id.clone(),
                    op: BlockOp::Replace {
                        old: "Ann".into(),
                        new: "Ann (likes tea)".into(),
                        count: ReplaceCount::Once,
                    },
                    editor: editor(&a.id, "c1"),
                    restate_result: false,
                },
            ],
            passages: vec![NewPassage {
                text: "Ann likes tea".into(),
                tags: vec!["ann".into()],
                ..Default::default()
            }],
            approval: Default::default(),
        })
        .unwrap();
    assert_eq!(committed.messages.len(), 2);
    assert!(
        committed
            .messages
            .iter()
            .all(|m| m.run_id.as_ref() == Some(&s.run_id) && m.step_id.as_ref() == Some(&s.id))
    );
    assert_eq!(
        store.messages().in_context(&a.id).unwrap(),
        committed.messages
    );
    assert_eq!(committed.blocks.len(), 2);
    assert_eq!(
        committed.blocks[1].block,
        store.blocks().get(&human.id).unwrap()
    );
    assert_eq!(committed.blocks[1].block.version, human.version + 2);
    assert_eq!(committed.blocks[1].tool_call_id.as_deref(), Some("c1"));
    assert!(committed.refused.is_empty());
    assert_eq!(store.blocks().history(&human.id, 10).unwrap().len(), 2);
    assert_eq!(
        store.passages().get(&committed.passages[0].id).unwrap(),
        committed.passages[0]
    );

    let steps = store.runs().list_steps(&a.id, None).unwrap();
    assert_eq!(steps.len(), 1);
    let micros = chrono::DateTime::from_timestamp_micros(s.started_at.timestamp_micros()).unwrap();
    assert_eq!(steps[0].started_at, micros, "stored to the microsecond");
    assert_eq!(
        (steps[0].prompt_tokens, steps[0].llm_ms, steps[0].index),
        (1200, 900, 1)
    );
    let mut next = step(&a.id);
    next.run_id = s.run_id.clone();
    next.index = 2;
    store
        .runs()
        .commit_step(&StepCommit {
            step: next,
            messages: vec![],
            block_writes: vec![],
            passages: vec![],
            approval: Default::default(),
        })
        .unwrap();
    store
        .runs()
        .commit_step(&StepCommit {
            step: step(&a.id),
            messages: vec![],
            block_writes: vec![],
            passages: vec![],
            approval: Default::default(),
        })
        .unwrap();
    let run: Vec<_> = store
        .runs()
        .list_steps(&a.id, Some(&s.run_id))
        .unwrap()
        .into_iter()
        .map(|s| s.index)
        .collect();
    assert_eq!(run, [1, 2]);
    assert_eq!(store.runs().list_steps(&a.id, None).unwrap().len(), 3);
}

#[test]
fn a_failing_block_write_leaves_no_trace_of_the_step() {
    let (_dir, store) = temp_store();
    let (a, blocks) = create(&store, "a");
    let persona = &blocks[0];
    let small = store
        .blocks()
        .create(&NewBlock {
            limit: Some(5),
            ..NewBlock::new("tiny", "abc")
        })
        .unwrap();
    store.blocks().attach(&a.id, &small.id).unwrap();
    let before_messages = store.messages().list(&a.id, None, 100).unwrap();
    let s = step(&a.id);
    let result = store.runs().commit_step(&StepCommit {
        step: s.clone(),
        messages: vec![NewMessage::assistant("ok", None, vec![])],
        block_writes: vec![
            BlockWrite {
                block_id: persona.id.clone(),
                op: BlockOp::Append {
                    text: "changed".into(),
                },
                editor: editor(&a.id, "c1"),
                restate_result: false,
            },
            BlockWrite {
                block_id: small.id.clone(),
                op: BlockOp::Append {
                    text: "far too long".into(),
                },
                editor: editor(&a.id, "c2"),
                restate_result: false,
            },
        ],
        passages: vec![NewPassage {
            text: "should not land".into(),
            ..Default::default()
        }],
        approval: Default::default(),
    });
    match result {
        Err(Error::Invalid(m)) => assert!(
            m.starts_with("Edit failed: Exceeds 5 character limit (requested 16)"),
            "{m}"
        ),
        other => panic!("expected Invalid, got {other:?}"),
    }
    assert!(store.runs().list_steps(&a.id, None).unwrap().is_empty());
    assert_eq!(
        store.messages().list(&a.id, None, 100).unwrap(),
        before_messages
    );
    assert_eq!(store.blocks().get(&persona.id).unwrap(), *persona);
    assert!(store.blocks().history(&persona.id, 10).unwrap().is_empty());
    assert_eq!(store.agents().memory_counts(&a.id).unwrap(), (0, 0));

    // Unknown blocks and reused step ids fail the same way.
    let ghost = BlockWrite {
        block_id: "block-ghost".into(),
        op: BlockOp::Append { text: "x".into() },
        editor: Editor::User,
        restate_result: false,
    };
    let r = store.runs().commit_step(&StepCommit {
        step: s.clone(),
        messages: vec![],
        block_writes: vec![ghost],
        passages: vec![],
        approval: Default::default(),
    });
    assert!(matches!(r, Err(Error::NotFound { what: "block", .. })));
    store
        .runs()
        .commit_step(&StepCommit {
            step: s.clone(),
            messages: vec![],
            block_writes: vec![],
            passages: vec![],
            approval: Default::default(),
        })
        .unwrap();
    let again = store.runs().commit_step(&StepCommit {
        step: s,
        messages: vec![NewMessage::user("x")],
        block_writes: vec![],
        passages: vec![],
        approval: Default::default(),
    });
    assert!(matches!(again, Err(Error::Conflict(_))), "{again:?}");
    assert_eq!(store.agents().memory_counts(&a.id).unwrap(), (0, 0));
}

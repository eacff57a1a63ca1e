//! Agents: create, list, update, delete, the system-prompt cache and memory counters.

use crate::support::{agent, create, temp_store};
use engram_core::memory::default_description;
use engram_core::{
    AgentPatch, DEFAULT_BLOCK_LIMIT, EmbeddingConfig, Error, LlmConfig, LoopStyle, NewBlock,
    NewMessage, NewPassage,
};
use engram_retrieval::HybridSearch;
use engram_store::{PassageList, StepCommit};

#[test]
fn create_returns_what_later_reads_return() {
    let (_dir, store) = temp_store();
    let mut a = agent("Sam");
    a.embedding = Some(EmbeddingConfig {
        model: "openai/text-embedding-3-small".into(),
        base_url: None,
    });
    a.loop_style = LoopStyle::Classic;
    a.summary = Some("earlier".into());
    let long = "x".repeat(DEFAULT_BLOCK_LIMIT + 10);
    let (created, blocks) = store
        .create_agent(
            &a,
            &[
                NewBlock::new("persona", "I am Sam."),
                NewBlock::new("notes", long.clone()),
                NewBlock {
                    limit: Some(100),
                    description: Some("tasks".into()),
                    ..NewBlock::new("tasks", "")
                },
            ],
            &[],
        )
        .unwrap();
    assert_eq!(store.get_agent(&a.id).unwrap(), created);
    assert_eq!(created.summary.as_deref(), Some("earlier"));
    assert_eq!(store.agent_blocks(&a.id).unwrap(), blocks);
    assert_eq!(blocks[0].description, default_description("persona"));
    assert_eq!(blocks[0].limit, DEFAULT_BLOCK_LIMIT);
    assert_eq!(
        blocks[1].limit,
        DEFAULT_BLOCK_LIMIT + 10,
        "default limit is raised to fit"
    );
    assert_eq!(blocks[1].description, "");
    assert_eq!(
        (blocks[2].limit, blocks[2].description.as_str()),
        (100, "tasks")
    );
}

#[test]
fn create_rejects_bad_blocks_and_stores_nothing() {
    let (_dir, store) = temp_store();
    let a = agent("clash");
    let dup = store.create_agent(
        &a,
        &[NewBlock::new("human", "a"), NewBlock::new("human", "b")],
        &[],
    );
    assert!(matches!(dup, Err(Error::Conflict(_))), "{dup:?}");
    assert!(matches!(
        store.get_agent(&a.id),
        Err(Error::NotFound { what: "agent", .. })
    ));
    assert!(store.list_blocks(None).unwrap().is_empty());

    let bad_label = store.create_agent(&a, &[NewBlock::new("line\nbreak", "")], &[]);
    assert!(matches!(bad_label, Err(Error::Invalid(_))));
    let over = NewBlock {
        limit: Some(3),
        ..NewBlock::new("human", "four")
    };
    let over = store.create_agent(&a, &[over], &[]);
    assert!(
        matches!(over, Err(Error::Invalid(m)) if m.starts_with("Edit failed: Exceeds 3 character limit (requested 4)"))
    );
    let missing = store.create_agent(&a, &[], &["block-nope".into()]);
    assert!(matches!(
        missing,
        Err(Error::NotFound { what: "block", .. })
    ));
    assert!(store.list_agents().unwrap().is_empty());

    store.create_agent(&a, &[], &[]).unwrap();
    assert!(matches!(
        store.create_agent(&a, &[], &[]),
        Err(Error::Conflict(_))
    ));
}

#[test]
fn existing_blocks_are_attached_after_new_ones_and_clashes_are_conflicts() {
    let (_dir, store) = temp_store();
    let shared = store
        .create_block(&NewBlock::new("project", "Engram"))
        .unwrap();
    let human = store.create_block(&NewBlock::new("human", "Ann")).unwrap();
    let (_, blocks) = store
        .create_agent(
            &agent("a"),
            &[NewBlock::new("persona", "p")],
            &[shared.id.clone(), shared.id.clone()],
        )
        .unwrap();
    let labels: Vec<_> = blocks.iter().map(|b| b.label.as_str()).collect();
    assert_eq!(labels, ["persona", "project"]);
    let clash = store.create_agent(
        &agent("b"),
        &[NewBlock::new("human", "")],
        std::slice::from_ref(&human.id),
    );
    assert!(matches!(clash, Err(Error::Conflict(_))));
}

#[test]
fn list_is_oldest_first_and_update_bumps_updated_at() {
    let (_dir, store) = temp_store();
    let mut first = agent("first");
    first.created_at -= chrono::Duration::seconds(10);
    first.updated_at = first.created_at;
    let (first, _) = store.create_agent(&first, &[], &[]).unwrap();
    let (second, _) = create(&store, "second");
    let names: Vec<_> = store
        .list_agents()
        .unwrap()
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert_eq!(names, ["first", "second"]);

    store
        .set_system_cache(&first.id, "<memory/>", "prompt")
        .unwrap();
    let patch = AgentPatch {
        name: Some("renamed".into()),
        llm: Some(LlmConfig::new("anthropic/claude-3-5-sonnet")),
        max_steps: Some(7),
        tools: Some(vec![]),
        ..Default::default()
    };
    let updated = store.update_agent(&first.id, &patch).unwrap();
    assert!(updated.updated_at > first.updated_at);
    assert_eq!(updated.created_at, first.created_at);
    assert_eq!((updated.name.as_str(), updated.max_steps), ("renamed", 7));
    assert_eq!(updated.llm.context_window, 200_000);
    assert_eq!(store.get_agent(&first.id).unwrap(), updated);
    assert!(
        store.system_cache(&first.id).unwrap().is_some(),
        "cache survives non-prompt changes"
    );

    let updated = store
        .update_agent(
            &first.id,
            &AgentPatch {
                system: Some("new rules".into()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(updated.system, "new rules");
    assert_eq!(
        store.system_cache(&first.id).unwrap(),
        None,
        "new instructions drop the cache"
    );

    let with = AgentPatch {
        embedding: Some(Some(EmbeddingConfig {
            model: "e".into(),
            base_url: None,
        })),
        ..Default::default()
    };
    assert!(
        store
            .update_agent(&second.id, &with)
            .unwrap()
            .embedding
            .is_some()
    );
    let without = AgentPatch {
        embedding: Some(None),
        ..Default::default()
    };
    assert!(
        store
            .update_agent(&second.id, &without)
            .unwrap()
            .embedding
            .is_none()
    );
    assert!(matches!(
        store.update_agent(&"agent-x".into(), &without),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn system_cache_round_trips() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "cache");
    assert_eq!(store.system_cache(&a.id).unwrap(), None);
    store.set_system_cache(&a.id, "mem", "full prompt").unwrap();
    assert_eq!(
        store.system_cache(&a.id).unwrap(),
        Some(("mem".into(), "full prompt".into()))
    );
    assert_eq!(
        store.get_agent(&a.id).unwrap().updated_at,
        a.updated_at,
        "a cache is not a setting"
    );
    assert!(matches!(
        store.set_system_cache(&"agent-x".into(), "", ""),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        store.system_cache(&"agent-x".into()),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn memory_counts_follow_inserts_and_deletes() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "counts");
    assert_eq!(store.memory_counts(&a.id).unwrap(), (0, 0));
    store
        .append_messages(&a.id, &[NewMessage::user("hi"), NewMessage::user("there")])
        .unwrap();
    let ps = store
        .insert_passages(
            &a.id,
            &[NewPassage {
                text: "fact".into(),
                ..Default::default()
            }],
        )
        .unwrap();
    assert_eq!(store.memory_counts(&a.id).unwrap(), (2, 1));
    store.delete_passage(&a.id, &ps[0].id).unwrap();
    assert_eq!(store.memory_counts(&a.id).unwrap(), (2, 0));
    assert!(matches!(
        store.memory_counts(&"agent-x".into()),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn delete_removes_everything_but_shared_blocks() {
    let (_dir, store) = temp_store();
    let (a, a_blocks) = create(&store, "doomed");
    let (b, _) = store.create_agent(&agent("survivor"), &[], &[]).unwrap();
    let shared = store
        .create_block(&NewBlock::new("project", "shared"))
        .unwrap();
    store.attach_block(&a.id, &shared.id).unwrap();
    store.attach_block(&b.id, &shared.id).unwrap();
    let standalone = store.create_block(&NewBlock::new("spare", "")).unwrap();

    let step = crate::steps::step(&a.id);
    store
        .commit_step(&StepCommit {
            step,
            messages: vec![NewMessage::user("remember me")],
            block_writes: vec![],
            passages: vec![NewPassage {
                text: "archived".into(),
                tags: vec!["t".into()],
                ..Default::default()
            }],
            approval: Default::default(),
        })
        .unwrap();
    store
        .append_messages(&b.id, &[NewMessage::user("remember me")])
        .unwrap();

    store.delete_agent(&a.id).unwrap();
    assert!(matches!(
        store.get_agent(&a.id),
        Err(Error::NotFound { .. })
    ));
    for blk in &a_blocks {
        assert!(matches!(
            store.get_block(&blk.id),
            Err(Error::NotFound { .. })
        ));
    }
    assert_eq!(
        store.block_agents(&shared.id).unwrap(),
        std::slice::from_ref(&b.id)
    );
    store.get_block(&standalone.id).unwrap();
    assert!(matches!(
        store.list_steps(&a.id, None),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        store.list_passages(
            &a.id,
            &PassageList {
                limit: 10,
                ..Default::default()
            }
        ),
        Err(Error::NotFound { .. })
    ));
    // The other agent's copy of the same words is still found; the deleted one's is gone.
    let hits = store
        .search_messages(
            &b.id,
            &engram_store::MessageQuery {
                query: "remember".into(),
                limit: 10,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(store.integrity_check().unwrap(), "ok");
    assert!(matches!(
        store.delete_agent(&a.id),
        Err(Error::NotFound { .. })
    ));
}

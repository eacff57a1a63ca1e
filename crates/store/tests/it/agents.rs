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
        .agents()
        .create(
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
    assert_eq!(store.agents().get(&a.id).unwrap(), created);
    assert_eq!(created.summary.as_deref(), Some("earlier"));
    assert_eq!(store.blocks().of_agent(&a.id).unwrap(), blocks);
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
    let dup = store.agents().create(
        &a,
        &[NewBlock::new("human", "a"), NewBlock::new("human", "b")],
        &[],
    );
    assert!(matches!(dup, Err(Error::Conflict(_))), "{dup:?}");
    assert!(matches!(
        store.agents().get(&a.id),
        Err(Error::NotFound { what: "agent", .. })
    ));
    assert!(store.blocks().list(None).unwrap().is_empty());

    let bad_label = store
        .agents()
        .create(&a, &[NewBlock::new("line\nbreak", "")], &[]);
    assert!(matches!(bad_label, Err(Error::Invalid(_))));
    let over = NewBlock {
        limit: Some(3),
        ..NewBlock::new("human", "four")
    };
    let over = store.agents().create(&a, &[over], &[]);
    assert!(
        matches!(over, Err(Error::Invalid(m)) if m.starts_with("Edit failed: Exceeds 3 character limit (requested 4)"))
    );
    let missing = store.agents().create(&a, &[], &["block-nope".into()]);
    assert!(matches!(
        missing,
        Err(Error::NotFound { what: "block", .. })
    ));
    assert!(store.agents().list().unwrap().is_empty());

    store.agents().create(&a, &[], &[]).unwrap();
    assert!(matches!(
        store.agents().create(&a, &[], &[]),
        Err(Error::Conflict(_))
    ));
}

#[test]
fn existing_blocks_are_attached_after_new_ones_and_clashes_are_conflicts() {
    let (_dir, store) = temp_store();
    let shared = store
        .blocks()
        .create(&NewBlock::new("project", "Engram"))
        .unwrap();
    let human = store
        .blocks()
        .create(&NewBlock::new("human", "Ann"))
        .unwrap();
    let (_, blocks) = store
        .agents()
        .create(
            &agent("a"),
            &[NewBlock::new("persona", "p")],
            &[shared.id.clone(), shared.id.clone()],
        )
        .unwrap();
    let labels: Vec<_> = blocks.iter().map(|b| b.label.as_str()).collect();
    assert_eq!(labels, ["persona", "project"]);
    let clash = store.agents().create(
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
    let (first, _) = store.agents().create(&first, &[], &[]).unwrap();
    let (second, _) = create(&store, "second");
    let names: Vec<_> = store
        .agents()
        .list()
        .unwrap()
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert_eq!(names, ["first", "second"]);

    store
        .agents()
        .set_system_cache(&first.id, "<memory/>", "prompt")
        .unwrap();
    let patch = AgentPatch {
        name: Some("renamed".into()),
        llm: Some(LlmConfig::new("anthropic/claude-3-5-sonnet")),
        max_steps: Some(7),
        tools: Some(vec![]),
        ..Default::default()
    };
    let updated = store.agents().update(&first.id, &patch).unwrap();
    assert!(updated.updated_at > first.updated_at);
    assert_eq!(updated.created_at, first.created_at);
    assert_eq!((updated.name.as_str(), updated.max_steps), ("renamed", 7));
    assert_eq!(updated.llm.context_window, 200_000);
    assert_eq!(store.agents().get(&first.id).unwrap(), updated);
    assert!(
        store.agents().system_cache(&first.id).unwrap().is_some(),
        "cache survives non-prompt changes"
    );

    let updated = store
        .agents()
        .update(
            &first.id,
            &AgentPatch {
                system: Some("new rules".into()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(updated.system, "new rules");
    assert_eq!(
        store.agents().system_cache(&first.id).unwrap(),
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
            .agents()
            .update(&second.id, &with)
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
            .agents()
            .update(&second.id, &without)
            .unwrap()
            .embedding
            .is_none()
    );
    assert!(matches!(
        store.agents().update(&"agent-x".into(), &without),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn system_cache_round_trips() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "cache");
    assert_eq!(store.agents().system_cache(&a.id).unwrap(), None);
    store
        .agents()
        .set_system_cache(&a.id, "mem", "full prompt")
        .unwrap();
    assert_eq!(
        store.agents().system_cache(&a.id).unwrap(),
        Some(("mem".into(), "full prompt".into()))
    );
    assert_eq!(
        store.agents().get(&a.id).unwrap().updated_at,
        a.updated_at,
        "a cache is not a setting"
    );
    assert!(matches!(
        store.agents().set_system_cache(&"agent-x".into(), "", ""),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        store.agents().system_cache(&"agent-x".into()),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn memory_counts_follow_inserts_and_deletes() {
    let (_dir, store) = temp_store();
    let (a, _) = create(&store, "counts");
    assert_eq!(store.agents().memory_counts(&a.id).unwrap(), (0, 0));
    store
        .messages()
        .append(&a.id, &[NewMessage::user("hi"), NewMessage::user("there")])
        .unwrap();
    let ps = store
        .passages()
        .insert(
            &a.id,
            &[NewPassage {
                text: "fact".into(),
                ..Default::default()
            }],
        )
        .unwrap();
    assert_eq!(store.agents().memory_counts(&a.id).unwrap(), (2, 1));
    store.passages().delete(&a.id, &ps[0].id).unwrap();
    assert_eq!(store.agents().memory_counts(&a.id).unwrap(), (2, 0));
    assert!(matches!(
        store.agents().memory_counts(&"agent-x".into()),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn delete_removes_everything_but_shared_blocks() {
    let (_dir, store) = temp_store();
    let (a, a_blocks) = create(&store, "doomed");
    let (b, _) = store.agents().create(&agent("survivor"), &[], &[]).unwrap();
    let shared = store
        .blocks()
        .create(&NewBlock::new("project", "shared"))
        .unwrap();
    store.blocks().attach(&a.id, &shared.id).unwrap();
    store.blocks().attach(&b.id, &shared.id).unwrap();
    let standalone = store.blocks().create(&NewBlock::new("spare", "")).unwrap();

    let step = crate::steps::step(&a.id);
    store
        .runs()
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
        .messages()
        .append(&b.id, &[NewMessage::user("remember me")])
        .unwrap();

    store.agents().delete(&a.id).unwrap();
    assert!(matches!(
        store.agents().get(&a.id),
        Err(Error::NotFound { .. })
    ));
    for blk in &a_blocks {
        assert!(matches!(
            store.blocks().get(&blk.id),
            Err(Error::NotFound { .. })
        ));
    }
    assert_eq!(
        store.blocks().agents_of(&shared.id).unwrap(),
        std::slice::from_ref(&b.id)
    );
    store.blocks().get(&standalone.id).unwrap();
    assert!(matches!(
        store.runs().list_steps(&a.id, None),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        store.passages().list(
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
        store.agents().delete(&a.id),
        Err(Error::NotFound { .. })
    ));
}

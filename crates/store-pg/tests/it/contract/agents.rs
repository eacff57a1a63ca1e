//! Agents: created with their blocks in one transaction, read back as written, listed oldest
//! first, deleted with their private blocks.

use super::{agent, agent_with, code};
use crate::harness::{Harness, on_both_backends};
use engram_core::{BlockId, DEFAULT_BLOCK_LIMIT, LoopStyle, NewBlock, ToolRule};
use engram_store_api::{AgentStore, BlockStore};

on_both_backends!(
    an_agent_reads_back_as_it_was_written,
    agents_list_oldest_first,
    a_duplicate_agent_id_is_a_conflict,
    two_new_blocks_with_one_label_write_nothing,
    an_agent_can_start_with_existing_blocks,
    unknown_agents_are_not_found,
    deleting_an_agent_keeps_blocks_others_use,
    tags_keep_their_order_once_each,
    a_patch_changes_only_what_it_sets,
    a_block_knows_the_agents_it_is_attached_to,
);

async fn an_agent_reads_back_as_it_was_written<H: Harness>(h: H) {
    let b = h.backend();
    let mut a = agent("Ada");
    a.description = "helps with maths".into();
    a.system = "You are Ada. {CORE_MEMORY}".into();
    a.loop_style = LoopStyle::Classic;
    a.max_steps = 7;
    a.tools = vec!["send_message".into(), "core_memory_append".into()];
    a.tool_rules = vec![ToolRule::ExitLoop {
        tool_name: "send_message".into(),
    }];
    a.summary = Some("earlier: they met".into());
    a.llm.temperature = Some(0.25);
    let (stored, blocks) = b
        .create_agent(
            &a,
            &[
                NewBlock::new("persona", "I am Ada."),
                NewBlock {
                    limit: Some(40),
                    description: Some("the person".into()),
                    read_only: true,
                    ..NewBlock::new("human", "Grace, a friend")
                },
            ],
            &[],
        )
        .await
        .unwrap();
    assert_eq!(b.get_agent(&a.id).await.unwrap(), stored);
    assert_eq!(stored.name, "Ada");
    assert_eq!(stored.tool_rules, a.tool_rules);
    assert_eq!(
        stored.created_at.timestamp_micros(),
        a.created_at.timestamp_micros()
    );

    assert_eq!(b.agent_blocks(&a.id).await.unwrap(), blocks, "attach order");
    let persona = &blocks[0];
    assert_eq!(
        (persona.limit, persona.version, persona.read_only),
        (DEFAULT_BLOCK_LIMIT, 1, false)
    );
    assert!(
        !persona.description.is_empty(),
        "persona gets the default description"
    );
    let human = b.agent_block(&a.id, "human").await.unwrap();
    assert_eq!(human, blocks[1]);
    assert_eq!((human.limit, human.read_only), (40, true));
    assert_eq!(b.get_block(&human.id).await.unwrap(), human);
}

async fn agents_list_oldest_first<H: Harness>(h: H) {
    let b = h.backend();
    let mut older = agent("first");
    older.created_at -= chrono::Duration::seconds(10);
    let newer = agent("second");
    b.create_agent(&newer, &[], &[]).await.unwrap();
    b.create_agent(&older, &[], &[]).await.unwrap();
    let names: Vec<String> = b
        .list_agents()
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert_eq!(names, ["first", "second"]);
}

async fn a_duplicate_agent_id_is_a_conflict<H: Harness>(h: H) {
    let b = h.backend();
    let a = agent("once");
    b.create_agent(&a, &[], &[]).await.unwrap();
    let again = b
        .create_agent(&a, &[NewBlock::new("notes", "x")], &[])
        .await;
    assert_eq!(code(again), "conflict");
    assert!(
        b.agent_blocks(&a.id).await.unwrap().is_empty(),
        "nothing of the second try stays"
    );
    assert!(b.list_blocks(None).await.unwrap().is_empty());
}

async fn two_new_blocks_with_one_label_write_nothing<H: Harness>(h: H) {
    let b = h.backend();
    let a = agent("twins");
    let r = b
        .create_agent(
            &a,
            &[NewBlock::new("notes", "a"), NewBlock::new("notes", "b")],
            &[],
        )
        .await;
    assert_eq!(code(r), "conflict");
    assert_eq!(
        code(b.get_agent(&a.id).await),
        "not_found",
        "the agent was not written"
    );
    assert!(b.list_blocks(None).await.unwrap().is_empty());

    let r = b
        .create_agent(&a, &[NewBlock::new(" padded", "a")], &[])
        .await;
    assert_eq!(code(r), "invalid_input");
    let r = b
        .create_agent(
            &a,
            &[NewBlock {
                limit: Some(3),
                ..NewBlock::new("tiny", "four")
            }],
            &[],
        )
        .await;
    assert_eq!(code(r), "invalid_input");
    assert_eq!(code(b.get_agent(&a.id).await), "not_found");
}

async fn an_agent_can_start_with_existing_blocks<H: Harness>(h: H) {
    let b = h.backend();
    let shared = b
        .create_block(&NewBlock::new("team", "we ship on Fridays"))
        .await
        .unwrap();
    let a = agent("member");
    let (_, blocks) = b
        .create_agent(
            &a,
            &[NewBlock::new("persona", "p")],
            std::slice::from_ref(&shared.id),
        )
        .await
        .unwrap();
    let labels: Vec<&str> = blocks.iter().map(|b| b.label.as_str()).collect();
    assert_eq!(labels, ["persona", "team"]);

    let clash = b
        .create_block(&NewBlock::new("persona", "other"))
        .await
        .unwrap();
    let r = b
        .create_agent(
            &agent("clash"),
            &[NewBlock::new("persona", "p")],
            &[clash.id],
        )
        .await;
    assert_eq!(code(r), "conflict");
    let r = b
        .create_agent(&agent("ghost"), &[], &[BlockId::new()])
        .await;
    assert_eq!(code(r), "not_found");
}

async fn unknown_agents_are_not_found<H: Harness>(h: H) {
    let b = h.backend();
    let id = agent("nobody").id;
    assert_eq!(code(b.get_agent(&id).await), "not_found");
    assert_eq!(code(b.agent_blocks(&id).await), "not_found");
    assert_eq!(code(b.agent_block(&id, "human").await), "not_found");
    assert_eq!(code(b.delete_agent(&id).await), "not_found");
    let (a, _) = agent_with(&b, "someone", &[]).await;
    match b.agent_block(&a.id, "human").await {
        Err(engram_core::Error::NotFound { what, id }) => {
            assert_eq!((what, id.as_str()), ("block", "human"))
        }
        other => panic!("expected the block not to be found, got {other:?}"),
    }
}

async fn deleting_an_agent_keeps_blocks_others_use<H: Harness>(h: H) {
    let b = h.backend();
    let (one, blocks) = agent_with(&b, "one", &[("mine", "private"), ("ours", "shared")]).await;
    let (two, _) = agent_with(&b, "two", &[]).await;
    b.attach_block(&two.id, &blocks[1].id).await.unwrap();
    b.delete_agent(&one.id).await.unwrap();
    assert_eq!(code(b.get_agent(&one.id).await), "not_found");
    assert_eq!(
        code(b.get_block(&blocks[0].id).await),
        "not_found",
        "its own block went"
    );
    assert_eq!(
        b.agent_blocks(&two.id).await.unwrap(),
        vec![blocks[1].clone()]
    );
    assert_eq!(b.list_agents().await.unwrap().len(), 1);
}

async fn tags_keep_their_order_once_each<H: Harness>(h: H) {
    let b = h.backend();
    let (a, _) = agent_with(&b, "tagged", &[]).await;
    assert!(b.agent_tags(&a.id).await.unwrap().is_empty());
    let given: Vec<String> = ["vip", " ", "support", "vip", "eu"]
        .map(String::from)
        .to_vec();
    b.set_agent_tags(&a.id, &given).await.unwrap();
    assert_eq!(b.agent_tags(&a.id).await.unwrap(), ["vip", "support", "eu"]);
    b.set_agent_tags(&a.id, &[]).await.unwrap();
    assert!(b.agent_tags(&a.id).await.unwrap().is_empty());
    let nobody = agent("nobody").id;
    assert_eq!(code(b.agent_tags(&nobody).await), "not_found");
    assert_eq!(code(b.set_agent_tags(&nobody, &given).await), "not_found");
}

async fn a_block_knows_the_agents_it_is_attached_to<H: Harness>(h: H) {
    let b = h.backend();
    let (one, blocks) = agent_with(&b, "one", &[("ours", "shared")]).await;
    let (two, _) = agent_with(&b, "two", &[]).await;
    assert_eq!(
        b.block_agents(&blocks[0].id).await.unwrap(),
        std::slice::from_ref(&one.id)
    );
    b.attach_block(&two.id, &blocks[0].id).await.unwrap();
    let mut both = b.block_agents(&blocks[0].id).await.unwrap();
    both.sort();
    let mut expected = vec![one.id, two.id];
    expected.sort();
    assert_eq!(both, expected);
    assert_eq!(code(b.block_agents(&BlockId::new()).await), "not_found");
}

async fn a_patch_changes_only_what_it_sets<H: Harness>(h: H) {
    use engram_core::AgentPatch;
    use engram_store_api::ContextStore;
    let b = h.backend();
    let (a, _) = agent_with(&b, "before", &[]).await;
    b.set_system_cache(&a.id, "memory", "prompt").await.unwrap();
    let renamed = b
        .update_agent(
            &a.id,
            &AgentPatch {
                name: Some("after".into()),
                max_steps: Some(3),
                ..AgentPatch::default()
            },
        )
        .await
        .unwrap();
    assert_eq!((renamed.name.as_str(), renamed.max_steps), ("after", 3));
    assert_eq!(renamed.system, a.system, "what the patch leaves is kept");
    assert_eq!(b.get_agent(&a.id).await.unwrap(), renamed);
    assert!(
        b.agent_with_system_cache(&a.id).await.unwrap().1.is_some(),
        "the instructions did not change: the compiled prompt stands"
    );
    let patch = AgentPatch {
        system: Some("New instructions. {CORE_MEMORY}".into()),
        ..AgentPatch::default()
    };
    b.update_agent(&a.id, &patch).await.unwrap();
    assert!(
        b.agent_with_system_cache(&a.id).await.unwrap().1.is_none(),
        "new instructions drop it"
    );
    let nobody = agent("nobody").id;
    assert_eq!(code(b.update_agent(&nobody, &patch).await), "not_found");
}

//! A shared server's users: names unique, tokens found by their hash alone and gone when
//! revoked, access to agents set, raised, taken back, and reaching blocks only through the
//! agents they are attached to; deleting a user or an agent leaves no access behind.

use super::{agent_with, code};
use crate::harness::{Harness, on_both_backends};
use engram_core::{AgentAccess, AgentId, BlockId, NewBlock, UserId};
use engram_store_api::{AgentStore, BlockStore, UserStore};

on_both_backends!(
    users_have_unique_names_and_tokens_found_by_their_hash,
    access_to_agents_reaches_blocks_only_through_them,
    deleting_a_user_or_an_agent_leaves_no_access_behind,
    a_block_made_alone_is_its_makers,
);

fn hash(n: u8) -> [u8; 32] {
    [n; 32]
}

async fn users_have_unique_names_and_tokens_found_by_their_hash<H: Harness>(h: H) {
    let b = h.backend();
    let ana = b.create_user("ana").await.unwrap();
    let ben = b.create_user("ben").await.unwrap();
    assert_eq!(code(b.create_user("ana").await), "conflict");
    assert_eq!(b.user_by_name("ana").await.unwrap(), ana);
    assert_eq!(code(b.user_by_name("nobody").await), "not_found");
    let names: Vec<_> = b
        .list_users()
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.name)
        .collect();
    assert_eq!(names, ["ana", "ben"]);

    b.add_user_token(&ana.id, &hash(1), "laptop").await.unwrap();
    b.add_user_token(&ana.id, &hash(2), "desk").await.unwrap();
    b.add_user_token(&ben.id, &hash(3), "").await.unwrap();
    assert_eq!(
        code(b.add_user_token(&ben.id, &hash(1), "").await),
        "conflict"
    );
    assert_eq!(
        code(b.add_user_token(&UserId::new(), &hash(4), "").await),
        "not_found"
    );
    assert_eq!(b.user_by_token(&hash(2)).await.unwrap(), Some(ana.clone()));
    assert_eq!(b.user_by_token(&hash(3)).await.unwrap(), Some(ben.clone()));
    assert_eq!(b.user_by_token(&hash(9)).await.unwrap(), None);

    assert_eq!(b.revoke_user_tokens(&ana.id).await.unwrap(), 2);
    assert_eq!(b.user_by_token(&hash(1)).await.unwrap(), None);
    assert_eq!(b.user_by_token(&hash(3)).await.unwrap(), Some(ben));
}

async fn access_to_agents_reaches_blocks_only_through_them<H: Harness>(h: H) {
    let b = h.backend();
    let ana = b.create_user("ana").await.unwrap();
    let (support, blocks) =
        agent_with(&b, "support", &[("customers", "Acme: prefers email")]).await;
    let (other, _) = agent_with(&b, "other", &[("human", "private")]).await;
    let shared = blocks[0].id.clone();
    b.attach_block(&other.id, &shared).await.unwrap();

    assert_eq!(b.agent_access(&support.id, &ana.id).await.unwrap(), None);
    assert_eq!(b.block_access(&shared, &ana.id).await.unwrap(), None);
    b.set_agent_access(&support.id, &ana.id, Some(AgentAccess::Read))
        .await
        .unwrap();
    assert_eq!(
        b.block_access(&shared, &ana.id).await.unwrap(),
        Some(AgentAccess::Read)
    );
    // Through the second agent the same block is writable: the most of the two counts.
    b.set_agent_access(&other.id, &ana.id, Some(AgentAccess::Write))
        .await
        .unwrap();
    assert_eq!(
        b.block_access(&shared, &ana.id).await.unwrap(),
        Some(AgentAccess::Write)
    );
    let other_human = b.agent_block(&other.id, "human").await.unwrap().id;
    b.set_agent_access(&other.id, &ana.id, None).await.unwrap();
    assert_eq!(
        b.block_access(&shared, &ana.id).await.unwrap(),
        Some(AgentAccess::Read)
    );
    assert_eq!(b.block_access(&other_human, &ana.id).await.unwrap(), None);
    assert_eq!(
        b.block_access(&BlockId::new(), &ana.id).await.unwrap(),
        None
    );

    b.set_agent_access(&support.id, &ana.id, Some(AgentAccess::Owner))
        .await
        .unwrap();
    assert_eq!(
        b.user_agents(&ana.id).await.unwrap(),
        vec![(support.id.clone(), AgentAccess::Owner)]
    );
    assert_eq!(
        code(
            b.set_agent_access(&AgentId::new(), &ana.id, Some(AgentAccess::Read))
                .await
        ),
        "not_found"
    );
    assert_eq!(
        code(
            b.set_agent_access(&support.id, &UserId::new(), Some(AgentAccess::Read))
                .await
        ),
        "not_found"
    );
}

async fn deleting_a_user_or_an_agent_leaves_no_access_behind<H: Harness>(h: H) {
    let b = h.backend();
    let ana = b.create_user("ana").await.unwrap();
    let ben = b.create_user("ben").await.unwrap();
    let (kept, _) = agent_with(&b, "kept", &[]).await;
    let (gone, _) = agent_with(&b, "gone", &[]).await;
    for agent in [&kept.id, &gone.id] {
        b.set_agent_access(agent, &ana.id, Some(AgentAccess::Owner))
            .await
            .unwrap();
        b.set_agent_access(agent, &ben.id, Some(AgentAccess::Read))
            .await
            .unwrap();
    }
    b.add_user_token(&ben.id, &hash(7), "").await.unwrap();

    b.delete_agent(&gone.id).await.unwrap();
    assert_eq!(b.agent_access(&gone.id, &ana.id).await.unwrap(), None);
    assert_eq!(b.user_agents(&ana.id).await.unwrap().len(), 1);

    assert!(b.delete_user(&ben.id).await.unwrap());
    assert!(!b.delete_user(&ben.id).await.unwrap());
    assert_eq!(b.user_by_token(&hash(7)).await.unwrap(), None);
    assert_eq!(b.agent_access(&kept.id, &ben.id).await.unwrap(), None);
    // The agent stays, still Ana's.
    assert_eq!(b.get_agent(&kept.id).await.unwrap().name, "kept");
    assert_eq!(
        b.agent_access(&kept.id, &ana.id).await.unwrap(),
        Some(AgentAccess::Owner)
    );
}

async fn a_block_made_alone_is_its_makers<H: Harness>(h: H) {
    let b = h.backend();
    let ana = b.create_user("ana").await.unwrap();
    let ben = b.create_user("ben").await.unwrap();
    let block = b
        .create_block(&NewBlock::new("team", "shared notes"))
        .await
        .unwrap();
    assert_eq!(b.block_access(&block.id, &ana.id).await.unwrap(), None);
    b.set_block_owner(&block.id, &ana.id).await.unwrap();
    assert_eq!(
        b.block_access(&block.id, &ana.id).await.unwrap(),
        Some(AgentAccess::Owner)
    );
    assert_eq!(b.block_access(&block.id, &ben.id).await.unwrap(), None);
    // Ben reaches it once it is on an agent he may read.
    let (agent, _) = agent_with(&b, "team", &[]).await;
    b.attach_block(&agent.id, &block.id).await.unwrap();
    b.set_agent_access(&agent.id, &ben.id, Some(AgentAccess::Read))
        .await
        .unwrap();
    assert_eq!(
        b.block_access(&block.id, &ben.id).await.unwrap(),
        Some(AgentAccess::Read)
    );
    assert_eq!(
        code(b.set_block_owner(&BlockId::new(), &ana.id).await),
        "not_found"
    );
    assert_eq!(
        code(b.set_block_owner(&block.id, &UserId::new()).await),
        "not_found"
    );
    b.delete_block(&block.id).await.unwrap();
    assert!(b.delete_user(&ana.id).await.unwrap());
}

//! The context window's bookkeeping: a compaction takes messages out of the window with the
//! new summary, all or nothing, and they stay in recall memory; the system-prompt cache is no
//! setting; run records are replaced by id and listed oldest first.

use super::{agent_with, code};
use crate::harness::{Harness, on_both_backends};
use chrono::{Duration, Utc};
use engram_core::{
    Agent, AgentId, ErrorBody, MessageId, NewMessage, NewPassage, RunId, RunRecord, StopReason,
    Usage,
};
use engram_store_api::{
    AgentStore, Backend, ContextStore, MessageSearch, MessageStore, PassageStore, SeqOrder,
};

on_both_backends!(
    a_compaction_takes_messages_out_of_the_window_and_keeps_them_in_recall_and_counted,
    the_system_prompt_cache_is_kept_without_touching_the_agent,
    runs_are_recorded_replaced_by_id_and_listed_oldest_first,
);

async fn a_compaction_takes_messages_out_of_the_window_and_keeps_them_in_recall_and_counted<
    H: Harness,
>(
    h: H,
) {
    let b = h.backend();
    let (agent, _) = agent_with(&b, "ana", &[]).await;
    let texts = [
        "my cat is Miso",
        "noted",
        "I moved to Lyon",
        "noted",
        "hello",
        "hi",
    ];
    let msgs: Vec<NewMessage> = texts.iter().map(|t| NewMessage::user(*t)).collect();
    let stored = b.append_messages(&agent.id, &msgs).await.unwrap();
    assert_eq!(b.in_context_messages(&agent.id).await.unwrap(), stored);
    assert_eq!(b.memory_counts(&agent.id).await.unwrap(), (6, 0));
    let facts = [NewPassage {
        text: "Miso is a tabby".into(),
        ..NewPassage::default()
    }];
    b.insert_passages(&agent.id, &facts).await.unwrap();

    let folded: Vec<MessageId> = stored[..4].iter().map(|m| m.id.clone()).collect();
    b.evict_messages(
        &agent.id,
        &folded,
        "Ana has a cat, Miso, and lives in Lyon.",
    )
    .await
    .unwrap();
    let window = b.in_context_messages(&agent.id).await.unwrap();
    assert_eq!(
        window.iter().map(|m| &m.id).collect::<Vec<_>>(),
        stored[4..].iter().map(|m| &m.id).collect::<Vec<_>>()
    );
    assert!(window.iter().all(|m| m.in_context));
    assert_eq!(
        b.get_agent(&agent.id).await.unwrap().summary.as_deref(),
        Some("Ana has a cat, Miso, and lives in Lyon.")
    );
    // Still in recall memory: listed, counted and found.
    let all = b
        .page_messages(&agent.id, None, None, 10, SeqOrder::Asc)
        .await
        .unwrap();
    assert_eq!(all.len(), 6);
    assert_eq!(all.iter().filter(|m| !m.in_context).count(), 4);
    assert_eq!(b.count_messages(&agent.id).await.unwrap(), 6);
    assert_eq!(b.memory_counts(&agent.id).await.unwrap(), (6, 1));
    let hits = b
        .search_messages(&agent.id, &MessageSearch::new("Lyon", 5))
        .await
        .unwrap();
    assert_eq!(hits[0].item.id, stored[2].id);

    // An id that is not one of the agent's messages changes nothing, summary included.
    let (ben, _) = agent_with(&b, "ben", &[]).await;
    let bens = b
        .append_messages(&ben.id, &[NewMessage::user("ben's")])
        .await
        .unwrap();
    for stranger in [bens[0].id.clone(), MessageId::new()] {
        let ids = vec![stored[4].id.clone(), stranger];
        assert_eq!(
            code(b.evict_messages(&agent.id, &ids, "lost").await),
            "not_found"
        );
    }
    assert_eq!(b.in_context_messages(&agent.id).await.unwrap(), window);
    assert_eq!(
        b.get_agent(&agent.id).await.unwrap().summary.as_deref(),
        Some("Ana has a cat, Miso, and lives in Lyon.")
    );
    assert!(b.in_context_messages(&ben.id).await.unwrap()[0].in_context);
    let nobody = AgentId::new();
    assert_eq!(code(b.in_context_messages(&nobody).await), "not_found");
    assert_eq!(code(b.evict_messages(&nobody, &[], "x").await), "not_found");
    assert_eq!(code(b.memory_counts(&nobody).await), "not_found");
}

/// The agent's cached system prompt, checking that the agent read beside it is the agent.
async fn cache(b: &impl Backend, agent: &Agent) -> Option<(String, String)> {
    let (read, cached) = b.agent_with_system_cache(&agent.id).await.unwrap();
    assert_eq!(&read, agent);
    cached
}

async fn the_system_prompt_cache_is_kept_without_touching_the_agent<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, _) = agent_with(&b, "ana", &[("human", "Name: Ana")]).await;
    assert_eq!(cache(&b, &agent).await, None);
    b.set_system_cache(
        &agent.id,
        "<human>Name: Ana</human>",
        "You are Ana's helper.\n…",
    )
    .await
    .unwrap();
    assert_eq!(
        cache(&b, &agent).await,
        Some((
            "<human>Name: Ana</human>".to_owned(),
            "You are Ana's helper.\n…".to_owned()
        ))
    );
    b.set_system_cache(&agent.id, "m2", "p2").await.unwrap();
    assert_eq!(
        cache(&b, &agent).await,
        Some(("m2".to_owned(), "p2".to_owned()))
    );
    assert_eq!(
        b.get_agent(&agent.id).await.unwrap(),
        agent,
        "a cache is not a setting"
    );
    let nobody = AgentId::new();
    assert_eq!(code(b.agent_with_system_cache(&nobody).await), "not_found");
    assert_eq!(
        code(b.set_system_cache(&nobody, "m", "p").await),
        "not_found"
    );
}

fn run(agent: &AgentId, minutes_ago: i64, stop: StopReason) -> RunRecord {
    RunRecord {
        id: RunId::new(),
        agent_id: agent.clone(),
        stop_reason: stop,
        error: None,
        usage: Usage {
            prompt_tokens: 1200,
            completion_tokens: 80,
            total_tokens: 1280,
            step_count: 2,
        },
        ended_at: Utc::now() - Duration::minutes(minutes_ago),
    }
}

fn micros(mut r: RunRecord) -> RunRecord {
    r.ended_at = chrono::DateTime::from_timestamp_micros(r.ended_at.timestamp_micros()).unwrap();
    r
}

async fn runs_are_recorded_replaced_by_id_and_listed_oldest_first<H: Harness>(h: H) {
    let b = h.backend();
    let (agent, _) = agent_with(&b, "ana", &[]).await;
    assert!(b.list_runs(&agent.id, None).await.unwrap().is_empty());
    let mut failed = run(&agent.id, 5, StopReason::LlmApiError);
    failed.error = Some(ErrorBody {
        code: "rate_limited".into(),
        message: "the provider is busy; try again in a minute".into(),
        details: Some(serde_json::json!({"retry_after": 60})),
    });
    let newer = run(&agent.id, 1, StopReason::EndTurn);
    b.record_run(&newer).await.unwrap();
    b.record_run(&failed).await.unwrap();
    assert_eq!(
        b.list_runs(&agent.id, None).await.unwrap(),
        vec![micros(failed.clone()), micros(newer.clone())]
    );
    assert_eq!(
        b.list_runs(&agent.id, Some(&[newer.id.clone(), RunId::new()]))
            .await
            .unwrap(),
        vec![micros(newer.clone())]
    );
    assert!(b.list_runs(&agent.id, Some(&[])).await.unwrap().is_empty());

    // The run resumed after an approval ends again: its record is replaced.
    let resumed = RunRecord {
        stop_reason: StopReason::EndTurn,
        error: None,
        ended_at: Utc::now(),
        ..failed.clone()
    };
    b.record_run(&resumed).await.unwrap();
    assert_eq!(
        b.list_runs(&agent.id, None).await.unwrap(),
        vec![micros(newer), micros(resumed)]
    );
    let (ben, _) = agent_with(&b, "ben", &[]).await;
    assert!(b.list_runs(&ben.id, None).await.unwrap().is_empty());
    let nobody = AgentId::new();
    assert_eq!(code(b.list_runs(&nobody, None).await), "not_found");
    assert_eq!(
        code(b.record_run(&run(&nobody, 0, StopReason::EndTurn)).await),
        "not_found"
    );
}

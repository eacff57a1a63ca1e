//! Sleep-time passes on a shared server: a run on one replica that reaches the agent's
//! frequency starts a pass, the other replica lists it, undoes it and counts it against the
//! budget, and one pass runs per agent at a time across replicas; every replica's windows hear
//! how a pass ended.

use crate::serve_postgres::{agent_with_memory, call, created, ok, two_replicas, user_says};
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_service::Notice;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The chat answers "ok"; a pass (offered `finish`) rewrites the `human` block, then
/// finishes. While `slow` is set, a pass's first call answers after two seconds.
fn script(slow: Arc<AtomicBool>) -> Script {
    Script::rules(move |view| {
        if !view.has_tool("finish") {
            return Reply::text("ok");
        }
        if view.messages.iter().any(|m| m.role == "tool") {
            return Reply::ToolCalls(vec![Call::new("finish", json!({"summary": "moved"}))]);
        }
        let rethink = Reply::ToolCalls(vec![Call::new(
            "memory_rethink",
            json!({"label": "human", "new_memory": "Name: Ana\nLives in Porto"}),
        )]);
        if slow.load(Ordering::SeqCst) {
            Reply::Delayed(Duration::from_secs(2), Box::new(rethink))
        } else {
            rethink
        }
    })
}

async fn passes(base: &str, agent: &str) -> Vec<Value> {
    let listed = ok(
        base,
        Method::POST,
        "/app/sleeptime_passes",
        Some(json!({"agent_id": agent})),
    )
    .await;
    listed.as_array().unwrap().clone()
}

async fn human(base: &str, agent: &str) -> String {
    let block = ok(
        base,
        Method::GET,
        &format!("/v1/agents/{agent}/core-memory/blocks/human"),
        None,
    )
    .await;
    block["value"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passes_run_on_a_shared_server_once_at_a_time_and_undo_from_any_replica() {
    let slow = Arc::new(AtomicBool::new(false));
    let mock = MockLlm::start(script(slow.clone())).await;
    let url = engram_test_postgres::database().url();
    let (a, b) = two_replicas(&url, &mock).await;
    let id = created(&a.base, agent_with_memory("Ana's desk", &mock)).await;
    ok(
        &a.base,
        Method::PATCH,
        &format!("/v1/agents/{id}/core-memory/blocks/human"),
        Some(json!({"value": "Name: Ana\nLives in Lisbon"})),
    )
    .await;
    let info = ok(&b.base, Method::POST, "/app/app_info", None).await;
    assert!(
        !info["unavailable"].to_string().contains("sleeptime"),
        "{info}"
    );
    let settings = json!({"enabled": true, "frequency": 2, "timeout_secs": 30});
    ok(
        &b.base,
        Method::POST,
        "/app/set_sleeptime_settings",
        Some(json!({"agent_id": id, "settings": settings})),
    )
    .await;

    // Two turns, one on each replica: the second reaches the frequency and starts a pass.
    for (base, text) in [(&a.base, "I moved to Porto"), (&b.base, "it is sunny")] {
        ok(
            base,
            Method::POST,
            &format!("/v1/agents/{id}/messages"),
            Some(user_says(text)),
        )
        .await;
    }
    let mut seen = Vec::new();
    for _ in 0..100 {
        seen = passes(&a.base, &id).await;
        if !seen.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(seen.len(), 1, "{seen:?}");
    let pass = &seen[0];
    assert_eq!(
        (&pass["status"], &pass["trigger"]),
        (&json!("done"), &json!("turns")),
        "{pass}"
    );
    assert_eq!(human(&a.base, &id).await, "Name: Ana\nLives in Porto");
    // Letta's group: nothing waits now, and it names the last message read.
    let group = id.replacen("agent-", "group-", 1);
    let g = ok(&a.base, Method::GET, &format!("/v1/groups/{group}"), None).await;
    assert_eq!(g["turns_counter"], 0, "{g}");
    assert!(g["last_processed_message_id"].is_string(), "{g}");

    // Undone on the other replica than the one that ran it.
    let pass_id = pass["id"].as_str().unwrap();
    let undone = ok(
        &a.base,
        Method::POST,
        "/app/undo_sleeptime_pass",
        Some(json!({"pass_id": pass_id})),
    )
    .await;
    assert_eq!(undone["status"], "undone", "{undone}");
    assert_eq!(human(&b.base, &id).await, "Name: Ana\nLives in Lisbon");
    assert_eq!(passes(&b.base, &id).await[0]["status"], "undone");

    // While a pass runs on one replica, the other cannot start one, and hears how it ended.
    let mut heard = b.engram.notices();
    slow.store(true, Ordering::SeqCst);
    let running = {
        let (base, id) = (a.base.clone(), id.clone());
        tokio::spawn(async move {
            call(
                &base,
                Method::POST,
                "/app/run_sleeptime_pass",
                Some(json!({"agent_id": id})),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(700)).await;
    let (status, body) = call(
        &b.base,
        Method::POST,
        "/app/run_sleeptime_pass",
        Some(json!({"agent_id": id})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (status, body) = running.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["trigger"], "manual");
    slow.store(false, Ordering::SeqCst);
    let manual = body["id"].as_str().unwrap().to_owned();
    let notice = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Ok(Notice::SleeptimePass { pass_id, .. }) = heard.recv().await
                && pass_id.as_str() == manual
            {
                break;
            }
        }
    })
    .await;
    assert!(notice.is_ok(), "the other replica heard of the pass");

    // The budget is one setting for every replica; the passes that ran count against it.
    ok(
        &a.base,
        Method::POST,
        "/app/set_sleeptime_budget",
        Some(json!({"budget": {"passes_per_day": 2}})),
    )
    .await;
    let budget = ok(&b.base, Method::POST, "/app/sleeptime_budget", None).await;
    assert_eq!(budget["passes_per_day"], 2, "{budget}");
    let skipped = ok(
        &b.base,
        Method::POST,
        "/app/run_sleeptime_pass",
        Some(json!({"agent_id": id})),
    )
    .await;
    assert_eq!(skipped["status"], "skipped", "{skipped}");
    assert!(
        skipped["reason"]
            .as_str()
            .unwrap()
            .contains("2 of 2 passes of all agents"),
        "{skipped}"
    );
    assert_eq!(passes(&a.base, &id).await.len(), 3);
}

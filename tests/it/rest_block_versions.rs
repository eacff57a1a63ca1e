//! Block versions over real HTTP: two agents sharing a block run at once through
//! `POST /v1/agents/{id}/messages` while a Letta-style `PATCH /v1/blocks/{id}` (no version, as
//! `letta-client` sends it) lands mid-step — every edit stays. A patch naming a stale version
//! is refused with 409 and the current block, on the Letta routes and the UI's `/app` route.

use engram_mock_llm::{Call, ChatView, Reply, Script};
use engram_suite::rest::{RestApi, TOKEN};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::time::Duration;

/// An agent with only a persona block (the shared `human` block is attached later).
async fn agent(api: &RestApi, name: &str) -> String {
    let persona = json!({"label": "persona", "value": "I am an agent."});
    api.agent(name, vec![persona], json!({})).await
}

async fn send(api: &RestApi, agent: &str, text: &str) -> Value {
    let body = json!({"messages": [{"role": "user", "content": text}]});
    api.ok(
        Method::POST,
        &format!("/v1/agents/{agent}/messages"),
        Some(body),
    )
    .await
}

/// A model that appends what follows "fact: " to `human` after 800 ms, then says "ok".
fn slow_fact_taker() -> Script {
    Script::rules(|view: &ChatView| {
        let user = view.last_user_text().unwrap_or_default();
        match user.strip_prefix("fact: ") {
            Some(fact) if view.messages.last().is_some_and(|m| m.is_real_user()) => Reply::Delayed(
                Duration::from_millis(800),
                Box::new(Reply::ToolCalls(vec![Call::new(
                    "core_memory_append",
                    json!({"label": "human", "content": fact}),
                )])),
            ),
            _ => Reply::text("ok"),
        }
    })
}

/// Two agents on one shared block, plus the shared block's id.
async fn shared_setup(api: &RestApi) -> (String, String, String) {
    let a = agent(api, "A").await;
    let b = agent(api, "B").await;
    let block = api
        .ok(
            Method::POST,
            "/v1/blocks/",
            Some(json!({"label": "human", "value": "Notes about the human."})),
        )
        .await;
    assert_eq!(block["version"], 1);
    let id = block["id"].as_str().unwrap().to_owned();
    for agent in [&a, &b] {
        api.ok(
            Method::PATCH,
            &format!("/v1/agents/{agent}/core-memory/blocks/attach/{id}"),
            None,
        )
        .await;
    }
    (a, b, id)
}

#[tokio::test]
async fn two_runs_and_a_hand_edit_on_a_shared_block_keep_every_edit() {
    let api = RestApi::start(slow_fact_taker()).await;
    let (a, b, block) = shared_setup(&api).await;

    let hand_edit = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        // letta-client's blocks.modify: a whole value, no version.
        api.ok(
            Method::PATCH,
            &format!("/v1/blocks/{block}"),
            Some(json!({"value": "Notes about the human.\nName: Alice"})),
        )
        .await
    };
    let (reply_a, reply_b, edited) = tokio::join!(
        send(&api, &a, "fact: Likes kiwi"),
        send(&api, &b, "fact: Allergic to peanuts"),
        hand_edit
    );
    assert_eq!(edited["version"], 2, "the hand edit landed mid-step");
    for reply in [&reply_a, &reply_b] {
        assert_eq!(reply["stop_reason"]["stop_reason"], "end_turn", "{reply}");
    }

    let now = api
        .ok(Method::GET, &format!("/v1/blocks/{block}"), None)
        .await;
    let value = now["value"].as_str().unwrap();
    let mut lines: Vec<&str> = value.lines().collect();
    assert_eq!(lines[0], "Notes about the human.");
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "Allergic to peanuts",
            "Likes kiwi",
            "Name: Alice",
            "Notes about the human."
        ]
    );
    assert_eq!(now["version"], 4);
    // Both agents see the same block.
    for agent in [&a, &b] {
        let theirs = api
            .ok(
                Method::GET,
                &format!("/v1/agents/{agent}/core-memory/blocks/human"),
                None,
            )
            .await;
        assert_eq!(theirs["value"], now["value"]);
    }
}

#[tokio::test]
async fn a_patch_naming_a_stale_version_is_409_with_the_current_block() {
    let api = RestApi::start(Script::Queue).await;
    let (a, _b, block) = shared_setup(&api).await;
    let by_label = format!("/v1/agents/{a}/core-memory/blocks/human");
    let v2 = api
        .ok(
            Method::PATCH,
            &by_label,
            Some(json!({"value": "Name: Alice", "version": 1})),
        )
        .await;
    assert_eq!(v2["version"], 2);

    for path in [by_label.clone(), format!("/v1/blocks/{block}")] {
        let (status, body) = api
            .call(
                Method::PATCH,
                &path,
                Some(json!({"value": "Name: Bob", "version": 1})),
            )
            .await;
        assert_eq!(status, StatusCode::CONFLICT, "{path}: {body}");
        assert_eq!(body["code"], "stale_version");
        let detail = body["detail"].as_str().expect("Letta-shaped detail");
        assert!(
            detail.contains("version 1")
                && detail.contains("version 2")
                && detail.contains("Name: Alice"),
            "{detail}"
        );
        assert_eq!(body["current"]["value"], "Name: Alice");
        assert_eq!(body["current"]["version"], 2);
    }

    // The UI's transport: `{code, message, details: {based_on, current}}`, also 409.
    let resp = api
        .http
        .post(format!("{}/app/update_block", api.base))
        .bearer_auth(TOKEN)
        .json(&json!({"agent_id": a, "label": "human", "patch": {"value": "Name: Bob", "version": 1}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CONFLICT);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["code"], "stale_version");
    assert_eq!(body["details"]["based_on"], 1);
    assert_eq!(body["details"]["current"]["value"], "Name: Alice");
    assert_eq!(body["details"]["current"]["version"], 2);

    // Nothing was written by the refused patches; the current version works.
    let v3 = api
        .ok(
            Method::PATCH,
            &format!("/v1/blocks/{block}"),
            Some(json!({"value": "Name: Bob", "version": 2})),
        )
        .await;
    assert_eq!(
        (v3["value"].as_str(), v3["version"].as_u64()),
        (Some("Name: Bob"), Some(3))
    );

    // Undo is a whole-value write too: from a window still showing version 2 it is refused.
    let app = |command: &str, args: Value| {
        api.http
            .post(format!("{}/app/{command}", api.base))
            .bearer_auth(TOKEN)
            .json(&args)
            .send()
    };
    let history: Value = app("block_history", json!({"agent_id": a, "label": "human"}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(history[0]["old_version"], 2);
    assert_eq!(history[0]["new_version"], 3);
    let edit = history[0]["id"].clone();
    let resp = app("undo_block_edit", json!({"edit_id": edit, "version": 2}))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CONFLICT);
    let resp = app("undo_block_edit", json!({"edit_id": edit, "version": 3}))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let undone: Value = resp.json().await.unwrap();
    assert_eq!(
        (undone["value"].as_str(), undone["version"].as_u64()),
        (Some("Name: Alice"), Some(4))
    );
}

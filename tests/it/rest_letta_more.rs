//! The rest of the REST API Letta's SDKs call, over real HTTP against the real
//! router and the scripted model: path-like block labels in URLs (raw, as 0.1.x sends them, and
//! percent-encoded, as 1.x does), counts, tag filters, message modify / search / reset, passage
//! modify, and Letta-shaped 4xx for what does not fit.

use engram_mock_llm::Script;
use engram_suite::rest::RestApi;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// The served API with Letta's SDK shapes' helper: an agent with `tags` and blocks named by
/// `labels` (each valued `about <label>`).
async fn agent(api: &RestApi, name: &str, tags: &[&str], labels: &[&str]) -> String {
    let blocks: Vec<Value> = labels
        .iter()
        .map(|l| json!({"label": l, "value": format!("about {l}")}))
        .collect();
    api.agent(name, blocks, json!({"tags": tags})).await
}

/// The agent's first message of Letta's `message_type` (from the last 100).
async fn first_message(api: &RestApi, id: &str, message_type: &str) -> Value {
    let listed = api
        .ok(
            Method::GET,
            &format!("/v1/agents/{id}/messages?limit=100"),
            None,
        )
        .await;
    listed
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["message_type"] == message_type)
        .unwrap_or_else(|| panic!("no {message_type} in {listed}"))
        .clone()
}

fn assert_detail(status: StatusCode, body: &Value, want: StatusCode) {
    assert_eq!(status, want, "{body}");
    assert!(body["detail"].is_string(), "not Letta-shaped: {body}");
}

#[tokio::test]
async fn path_labels_work_in_urls_raw_and_percent_encoded() {
    let api = RestApi::start(Script::Brain).await;
    let labels = ["system/human/family", "/note_directory", "reference/faq"];
    let id = agent(&api, "Ezra", &[], &labels).await;
    let base = format!("/v1/agents/{id}/core-memory/blocks");
    for (path, label) in [
        (format!("{base}/system/human/family"), "system/human/family"),
        (
            format!("{base}/system%2Fhuman%2Ffamily"),
            "system/human/family",
        ),
        (format!("{base}//note_directory"), "/note_directory"),
        (format!("{base}/%2Fnote_directory"), "/note_directory"),
        // 0.1.x's HTTP client folds the `//`; the block with the leading slash is meant.
        (format!("{base}/note_directory"), "/note_directory"),
        (format!("{base}/reference/faq"), "reference/faq"),
    ] {
        let b = api.ok(Method::GET, &path, None).await;
        assert_eq!(b["label"], label, "{path}");
    }
    let b = api
        .ok(
            Method::PATCH,
            &format!("{base}/system%2Fhuman%2Ffamily"),
            Some(json!({"value": "Leo is 8."})),
        )
        .await;
    assert_eq!(
        (b["label"].as_str(), b["value"].as_str()),
        (Some("system/human/family"), Some("Leo is 8."))
    );
    let listed = api.ok(Method::GET, &base, None).await;
    let got: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["label"].as_str().unwrap())
        .collect();
    assert_eq!(got, labels);
    // Attach and detach still reach their own routes.
    let shared = api
        .ok(
            Method::POST,
            "/v1/blocks/",
            Some(json!({"label": "corrections/ezra-mistakes", "value": "none yet"})),
        )
        .await;
    let bid = shared["id"].as_str().unwrap();
    let state = api
        .ok(Method::PATCH, &format!("{base}/attach/{bid}"), None)
        .await;
    assert!(
        state["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["id"] == bid)
    );
    api.ok(
        Method::GET,
        &format!("{base}/corrections/ezra-mistakes"),
        None,
    )
    .await;
    api.ok(Method::PATCH, &format!("{base}/detach/{bid}"), None)
        .await;
    let (status, body) = api
        .call(
            Method::GET,
            &format!("{base}/corrections/ezra-mistakes"),
            None,
        )
        .await;
    assert_detail(status, &body, StatusCode::NOT_FOUND);
    // Unusable labels: a Letta-shaped 400 naming the reason.
    let (status, body) = api
        .call(
            Method::POST,
            "/v1/blocks/",
            Some(json!({"label": "<system>", "value": ""})),
        )
        .await;
    assert_detail(status, &body, StatusCode::BAD_REQUEST);
    assert!(body["detail"].as_str().unwrap().contains("'<'"), "{body}");
}

#[tokio::test]
async fn counts_and_tag_filters() {
    let api = RestApi::start(Script::Brain).await;
    let a = agent(&api, "A", &["bakery", "prod"], &["human"]).await;
    let b = agent(&api, "B", &["bakery"], &["human"]).await;
    let _c = agent(&api, "C", &[], &["human"]).await;
    assert_eq!(
        api.ok(Method::GET, "/v1/agents/count", None).await,
        json!(3)
    );
    assert_eq!(
        api.ok(Method::GET, "/v1/agents/count?tags=bakery", None)
            .await,
        json!(2)
    );
    assert_eq!(
        api.ok(
            Method::GET,
            "/v1/agents/count?tags=bakery&tags=prod&match_all_tags=true",
            None
        )
        .await,
        json!(1)
    );
    let ids = |v: Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let listed = api
        .ok(Method::GET, "/v1/agents/?tags=prod&tags=bakery", None)
        .await;
    assert_eq!(ids(listed.clone()), [a.clone(), b.clone()]);
    assert_eq!(listed[0]["tags"], json!(["bakery", "prod"]));
    assert_eq!(
        ids(api
            .ok(Method::GET, "/v1/agents/?name=B&tags=bakery", None)
            .await),
        std::slice::from_ref(&b)
    );
    // Tags change with a modify.
    let v = api
        .ok(
            Method::PATCH,
            &format!("/v1/agents/{b}"),
            Some(json!({"tags": ["prod"]})),
        )
        .await;
    assert_eq!(v["tags"], json!(["prod"]));
    assert_eq!(
        api.ok(Method::GET, "/v1/agents/count?tags=bakery", None)
            .await,
        json!(1)
    );
    assert_eq!(
        api.ok(Method::GET, "/v1/blocks/count", None).await,
        json!(3)
    );
    assert_eq!(
        api.ok(Method::GET, "/v1/blocks/count?label=human", None)
            .await,
        json!(3)
    );
    for text in ["first", "second"] {
        api.ok(
            Method::POST,
            &format!("/v1/agents/{a}/archival-memory"),
            Some(json!({"text": text})),
        )
        .await;
    }
    assert_eq!(
        api.ok(
            Method::GET,
            &format!("/v1/agents/{a}/archival-memory/count"),
            None
        )
        .await,
        json!(2)
    );
    assert_eq!(
        api.ok(Method::GET, &format!("/v1/agents/{a}/messages/count"), None)
            .await,
        json!(0)
    );
    let (status, body) = api
        .call(Method::GET, "/v1/agents/agent-missing/messages/count", None)
        .await;
    assert_detail(status, &body, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn messages_modify_search_and_reset() {
    let api = RestApi::start(Script::Brain).await;
    let id = agent(&api, "Sam", &[], &["human", "persona"]).await;
    api.ok(
        Method::POST,
        &format!("/v1/agents/{id}/messages"),
        Some(json!({"messages": [{"role": "user", "content": "my favourite bread is rye"}]})),
    )
    .await;
    let count = api
        .ok(
            Method::GET,
            &format!("/v1/agents/{id}/messages/count"),
            None,
        )
        .await
        .as_u64()
        .unwrap();
    assert!(count >= 2, "{count}");
    let user = first_message(&api, &id, "user_message").await;
    let mid = user["id"].as_str().unwrap();

    let changed = api
        .ok(
            Method::PATCH,
            &format!("/v1/agents/{id}/messages/{mid}"),
            Some(json!({"message_type": "user_message", "content": "my favourite bread is spelt"})),
        )
        .await;
    assert_eq!(changed["message_type"], "user_message");
    assert_eq!(changed["content"], "my favourite bread is spelt");
    assert_eq!(changed["id"], mid);

    // Both search routes find the new text, not the old.
    let v01 = api
        .ok(
            Method::POST,
            "/v1/agents/messages/search",
            Some(json!({"query": "spelt", "roles": ["user"], "limit": 5})),
        )
        .await;
    assert_eq!(v01.as_array().unwrap().len(), 1, "{v01}");
    assert_eq!(v01[0]["message"]["id"], mid);
    assert!(v01[0]["rrf_score"].is_number());
    let v1 = api
        .ok(
            Method::POST,
            "/v1/messages/search",
            Some(json!({"query": "spelt", "agent_id": id})),
        )
        .await;
    assert_eq!(v1[0]["message_id"], mid, "{v1}");
    assert_eq!(v1[0]["agent_id"], id.as_str());
    assert_eq!(v1[0]["message_type"], "user_message");
    let rye = api
        .ok(
            Method::POST,
            "/v1/messages/search",
            Some(json!({"query": "rye", "roles": ["user"]})),
        )
        .await;
    assert_eq!(rye, json!([]));

    // The wrong kind, a tool result, an unknown message: Letta-shaped 4xx.
    let (s, b) = api
        .call(
            Method::PATCH,
            &format!("/v1/agents/{id}/messages/{mid}"),
            Some(json!({"message_type": "assistant_message", "content": "x"})),
        )
        .await;
    assert_detail(s, &b, StatusCode::BAD_REQUEST);
    let (s, b) = api
        .call(
            Method::PATCH,
            &format!("/v1/agents/{id}/messages/{mid}"),
            Some(json!({"message_type": "tool_return_message", "content": "x"})),
        )
        .await;
    assert_detail(s, &b, StatusCode::UNPROCESSABLE_ENTITY);
    let (s, b) = api
        .call(
            Method::PATCH,
            &format!("/v1/agents/{id}/messages/message-missing"),
            Some(json!({"content": "x"})),
        )
        .await;
    assert_detail(s, &b, StatusCode::NOT_FOUND);

    // Reset: the window empties, recall keeps everything.
    let before = api.ok(Method::GET, &format!("/v1/agents/{id}"), None).await;
    assert!(!before["message_ids"].as_array().unwrap().is_empty());
    let after = api
        .ok(
            Method::PATCH,
            &format!("/v1/agents/{id}/reset-messages"),
            Some(json!({"add_default_initial_messages": false})),
        )
        .await;
    assert_eq!(after["message_ids"], json!([]), "{after}");
    assert_eq!(
        api.ok(
            Method::GET,
            &format!("/v1/agents/{id}/messages/count"),
            None
        )
        .await,
        json!(count)
    );
    // And the agent goes on chatting from an empty window.
    api.ok(
        Method::POST,
        &format!("/v1/agents/{id}/messages"),
        Some(json!({"messages": [{"role": "user", "content": "hello again"}]})),
    )
    .await;
    let last = api.mock.chat_requests();
    let sent = &last.last().unwrap().body["messages"];
    assert!(
        !sent.to_string().contains("spelt"),
        "the reset window must not reach the model: {sent}"
    );
    assert!(
        api.mock.violations().is_empty(),
        "{:#?}",
        api.mock.violations()
    );
}

#[tokio::test]
async fn passages_modify() {
    let api = RestApi::start(Script::Brain).await;
    let id = agent(&api, "Sam", &[], &["human"]).await;
    let created = api
        .ok(
            Method::POST,
            &format!("/v1/agents/{id}/archival-memory"),
            Some(json!({"text": "The tulips bloom in April.", "tags": ["garden"]})),
        )
        .await;
    let pid = created[0]["id"].as_str().unwrap();
    let path = format!("/v1/agents/{id}/archival-memory/{pid}");
    let v = api
        .ok(
            Method::PATCH,
            &path,
            Some(json!({"text": "The tulips bloom in May.", "tags": ["garden", "spring"]})),
        )
        .await;
    assert_eq!(v[0]["id"], pid);
    assert_eq!(v[0]["text"], "The tulips bloom in May.");
    assert_eq!(v[0]["tags"], json!(["garden", "spring"]));
    let hits = api
        .ok(
            Method::GET,
            &format!("/v1/agents/{id}/archival-memory/search?query=May"),
            None,
        )
        .await;
    assert_eq!(hits["count"], 1, "{hits}");
    let old = api
        .ok(
            Method::GET,
            &format!("/v1/agents/{id}/archival-memory/search?query=April"),
            None,
        )
        .await;
    assert_eq!(old["count"], 0, "the index follows the edit: {old}");
    // 0.1.x sends no body; nothing to change is a 422, blank text a 400; neither changes it.
    let (s, b) = api.call(Method::PATCH, &path, None).await;
    assert_detail(s, &b, StatusCode::UNPROCESSABLE_ENTITY);
    let (s, b) = api
        .call(Method::PATCH, &path, Some(json!({"text": "  "})))
        .await;
    assert_detail(s, &b, StatusCode::BAD_REQUEST);
    let (s, b) = api
        .call(
            Method::PATCH,
            &format!("/v1/agents/{id}/archival-memory/passage-missing"),
            Some(json!({"text": "x"})),
        )
        .await;
    assert_detail(s, &b, StatusCode::NOT_FOUND);
    let listed = api
        .ok(
            Method::GET,
            &format!("/v1/agents/{id}/archival-memory"),
            None,
        )
        .await;
    assert_eq!(listed[0]["text"], "The tulips bloom in May.");
}

#[tokio::test]
async fn core_memory_has_the_prompt_template_and_unknown_routes_are_letta_404() {
    let api = RestApi::start(Script::Brain).await;
    let id = agent(&api, "Sam", &[], &["system/persona"]).await;
    let memory = api
        .ok(Method::GET, &format!("/v1/agents/{id}/core-memory"), None)
        .await;
    assert!(memory["prompt_template"].is_string(), "{memory}");
    assert_eq!(memory["blocks"][0]["label"], "system/persona");
    let (s, b) = api
        .call(Method::GET, &format!("/v1/agents/{id}/sleeptime"), None)
        .await;
    assert_detail(s, &b, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn classic_replies_are_modified_in_their_send_message_call() {
    let api = RestApi::start(Script::Brain).await;
    let (status, v) = api
        .call(
            Method::POST,
            "/v1/agents/",
            Some(json!({
                "name": "Classic",
                "agent_type": "memgpt_agent",
                "memory_blocks": [{"label": "human", "value": ""}],
                "model": "openai/mock-small",
                "llm_config": {"model": "mock-small", "model_endpoint_type": "openai",
                               "model_endpoint": api.mock.base_url(), "context_window": 32000}
            })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let id = v["id"].as_str().unwrap().to_owned();
    api.ok(
        Method::POST,
        &format!("/v1/agents/{id}/messages"),
        Some(json!({"messages": [{"role": "user", "content": "hello there"}]})),
    )
    .await;
    let reply = first_message(&api, &id, "assistant_message").await;
    let mid = reply["id"].as_str().unwrap();
    let changed = api
        .ok(
            Method::PATCH,
            &format!("/v1/agents/{id}/messages/{mid}"),
            Some(json!({"message_type": "assistant_message", "content": "Hi, I am Classic."})),
        )
        .await;
    assert_eq!(changed["message_type"], "assistant_message");
    assert_eq!(changed["content"], "Hi, I am Classic.");
    // The next call sees the rewritten reply as the call's argument, still answered.
    api.ok(
        Method::POST,
        &format!("/v1/agents/{id}/messages"),
        Some(json!({"messages": [{"role": "user", "content": "and now?"}]})),
    )
    .await;
    let sent = api.mock.chat_requests().last().unwrap().body["messages"].to_string();
    assert!(sent.contains("Hi, I am Classic."), "{sent}");
    assert!(
        api.mock.violations().is_empty(),
        "{:#?}",
        api.mock.violations()
    );
}

//! Tool approval over the Letta REST API, streaming and not: the pause shows as an
//! `approval_request_message` chunk and stop reason `requires_approval`; the decision is an
//! `approval` message; bad approval requests get Letta-shaped errors and change nothing.

use engram_mock_llm::{Call, Reply, Script};
use engram_suite::rest::{RestApi, TOKEN};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

async fn stream(api: &RestApi, agent: &str, body: Value) -> Vec<Value> {
    let resp = api
        .http
        .post(format!("{}/v1/agents/{agent}/messages/stream", api.base))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    resp.text()
        .await
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[tokio::test]
async fn approval_streams_in_letta_shapes_and_bad_requests_change_nothing() {
    let api = RestApi::start(Script::Queue).await;
    let agent = api
        .agent(
            "Sam",
            vec![json!({"label": "human", "value": ""})],
            json!({"tool_rules": [{"type": "requires_approval", "tool_name": "core_memory_append"}]}),
        )
        .await;
    let path = format!("/v1/agents/{agent}/messages");

    // Nothing waits: an approval is refused.
    let (status, body) = api
        .call(
            Method::POST,
            &path,
            Some(json!({"messages": [{"type": "approval", "approve": true}]})),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(body["detail"].is_string(), "{body}");

    api.mock.push(Reply::ToolCalls(vec![Call::new(
        "core_memory_append",
        json!({"label": "human", "content": "Name: Bob"}),
    )]));
    let chunks = stream(
        &api,
        &agent,
        json!({"messages": [{"role": "user", "content": "my name is Bob"}]}),
    )
    .await;
    let request = chunks
        .iter()
        .find(|c| c["message_type"] == "approval_request_message")
        .unwrap_or_else(|| panic!("{chunks:?}"));
    assert_eq!(request["tool_call"]["name"], "core_memory_append");
    let call_id = request["tool_call"]["tool_call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        chunks
            .iter()
            .any(|c| c["stop_reason"] == "requires_approval"),
        "{chunks:?}"
    );

    // Listed, the waiting call shows as the approval request.
    let listed = api
        .ok(Method::GET, &format!("{path}?order=asc"), None)
        .await;
    let listed = listed.as_array().unwrap();
    assert!(
        listed
            .iter()
            .any(|m| m["message_type"] == "approval_request_message"
                && m["tool_call"]["tool_call_id"] == call_id.as_str()),
        "{listed:?}"
    );
    // A user message meanwhile is a conflict naming the call; mixing approval and text is refused.
    let (status, body) = api
        .call(
            Method::POST,
            &path,
            Some(json!({"messages": [{"role": "user", "content": "hello?"}]})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("core_memory_append"),
        "{body}"
    );
    let (status, _) = api
        .call(
            Method::POST,
            &path,
            Some(json!({"messages": [{"type": "approval", "approve": true}, {"role": "user", "content": "x"}]})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // Another call's id is refused.
    let (status, _) = api
        .call(
            Method::POST,
            &path,
            Some(json!({"messages": [{"type": "approval", "approvals": [{"type": "approval", "tool_call_id": "call_other", "approve": true}]}]})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // A list entry must name the call it decides (a retried decision cannot run a newer call).
    let (status, _) = api
        .call(
            Method::POST,
            &path,
            Some(json!({"messages": [{"type": "approval", "approvals": [{"type": "approval", "approve": true}]}]})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // A request that is not the one waiting is refused, and nothing runs.
    let (status, body) = api
        .call(
            Method::POST,
            &path,
            Some(json!({"messages": [{"type": "approval", "approve": true, "approval_request_id": "message-stale"}]})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["detail"].as_str().unwrap().contains("message-stale"),
        "{body}"
    );

    // Approved over the stream: the tool's result, then the reply, then end_turn.
    api.mock.push(Reply::Text("Hi Bob.".into()));
    let chunks = stream(
        &api,
        &agent,
        json!({"messages": [{"type": "approval", "approvals": [{"type": "approval", "tool_call_id": call_id, "approve": true}]}]}),
    )
    .await;
    let types: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["message_type"].as_str())
        .collect();
    let ret = types
        .iter()
        .position(|t| *t == "tool_return_message")
        .expect("tool return");
    let reply = types
        .iter()
        .position(|t| *t == "assistant_message")
        .expect("reply");
    assert!(ret < reply, "{types:?}");
    assert!(
        chunks.iter().any(|c| c["stop_reason"] == "end_turn"),
        "{chunks:?}"
    );
    let block = api
        .ok(
            Method::GET,
            &format!("/v1/agents/{agent}/core-memory/blocks/human"),
            None,
        )
        .await;
    assert_eq!(block["value"], "Name: Bob");
    assert!(
        api.mock.violations().is_empty(),
        "{:?}",
        api.mock.violations()
    );
}

//! `engram serve` answers every command of the service's one list at `POST /app/{name}`
//! (each UI command defined once): over real HTTP, every command `engram serve`
//! offers parses its arguments (a wrong shape is `400 invalid_input` naming the command, not
//! a 404 or a silent default), the desktop-only ones are not there, and a call's answer is
//! the service's.

use engram_secrets::MemoryStore;
use engram_server::{Auth, ServerConfig};
use engram_service::commands::list;
use reqwest::StatusCode;
use secrecy::SecretString;
use serde_json::{Value, json};
use std::sync::Arc;

const TOKEN: &str = "dispatch-test-token";

async fn serve() -> (String, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let engram = engram_suite::open(home.path(), Arc::new(MemoryStore::default()));
    let config = ServerConfig::new(Auth::Token(SecretString::from(TOKEN)));
    (engram_suite::serve(engram, config).await, home)
}

async fn post(base: &str, name: &str, body: Value) -> (StatusCode, Value) {
    let resp = reqwest::Client::new()
        .post(format!("{base}/app/{name}"))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn every_listed_command_is_routed_and_parses_its_arguments() {
    let (base, _home) = serve().await;
    for def in list() {
        // No command takes an array: each must refuse it before doing anything.
        let (status, body) = post(&base, def.name, json!([7])).await;
        if def.http {
            assert_eq!(status, StatusCode::BAD_REQUEST, "{}: {body}", def.name);
            assert_eq!(body["code"], "invalid_input", "{}: {body}", def.name);
        } else {
            assert_eq!(
                status,
                StatusCode::NOT_FOUND,
                "{} is desktop only",
                def.name
            );
        }
    }
}

#[tokio::test]
async fn a_renamed_argument_is_refused_naming_the_field() {
    let (base, _home) = serve().await;
    let (status, body) = post(
        &base,
        "create_agent",
        json!({"new": {"name": "Sam"}, "template": null}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let agent = body["id"].clone();
    // `labelName` for `label`: refused, never read as a missing optional.
    let (status, body) = post(
        &base,
        "update_block",
        json!({"agent_id": agent, "labelName": "human", "patch": {"value": "x"}}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("update_block") && message.contains("label"),
        "{message}"
    );
    // Commands without arguments may be sent none.
    let resp = reqwest::Client::new()
        .post(format!("{base}/app/list_agents"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let agents: Value = resp.json().await.unwrap();
    assert_eq!(agents[0]["name"], "Sam");
}

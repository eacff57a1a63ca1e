//! Agents never point at nothing: an agent whose chat model is not set up (no provider, no key,
//! a built-in model not on this computer) is said to be so when it is made, listed or opened —
//! through the service, the CLI and REST — and the provider the user adds next is offered to
//! every such agent at once.

use engram_core::{LlmConfig, NewAgent, NewBlock};
use engram_mock_llm::{MockLlm, Script};
use engram_secrets::MemoryStore;
use engram_server::{Auth, ServerConfig};
use engram_service::ProviderSetup;
use engram_suite::{Home, cli, open, serve, stdout_ok};
use secrecy::SecretString;
use std::sync::Arc;

fn plain_agent(name: &str, model: Option<&str>) -> NewAgent {
    NewAgent {
        name: name.into(),
        llm: model.map(|m| LlmConfig::new(m.to_owned())),
        blocks: vec![NewBlock::new("human", "")],
        ..NewAgent::default()
    }
}

fn keyless(name: &str, mock: &MockLlm) -> ProviderSetup {
    ProviderSetup {
        name: name.into(),
        kind: None,
        base_url: Some(mock.base_url()),
        api_key: None,
        default_model: Some(format!("{name}/mock-small")),
        timeout_secs: None,
        max_retries: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_without_a_model_is_named_and_fixed_in_one_call() {
    let mock = MockLlm::start(Script::Brain).await;
    let home = Home::new();
    let e = &home.engram;

    // No provider at all: the default model is a hosted one nobody set up.
    let first = e
        .agents()
        .create(plain_agent("First", None))
        .await
        .unwrap()
        .agent;
    let imported = e
        .agents()
        .create(plain_agent("Imported", Some("vendorx/big-model")))
        .await
        .unwrap()
        .agent;
    let built_in = e
        .agents()
        .create(plain_agent("Offline", Some("local/not-downloaded")))
        .await
        .unwrap()
        .agent;

    let problem = e
        .agents()
        .model_problem(&first.id)
        .await
        .unwrap()
        .expect("a problem");
    assert_eq!(problem.model, first.llm.model);
    assert!(problem.summary.contains("openai"), "{problem:?}");
    assert!(
        problem.detail.contains("engram provider set"),
        "{problem:?}"
    );
    let vendor = e
        .agents()
        .model_problem(&imported.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(vendor.summary, "No provider named 'vendorx' is set up");
    let local = e
        .agents()
        .model_problem(&built_in.id)
        .await
        .unwrap()
        .unwrap();
    assert!(
        local.summary.contains("built-in model 'not-downloaded'"),
        "{local:?}"
    );
    assert_eq!(e.agents().without_model().await.unwrap().len(), 3);
    assert!(e.models().check("vendorx/big-model").unwrap().is_some());

    // Moving agents to a model that is not set up either is refused, and nothing moves.
    let refused = e
        .agents()
        .use_model(std::slice::from_ref(&first.id), "nowhere/model")
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("cannot be used either"),
        "{refused}"
    );
    assert_eq!(
        e.agents().get(&first.id).await.unwrap().agent.llm.model,
        first.llm.model
    );

    // The user adds a keyless server on this machine; every agent without a model gets it.
    e.providers().set(keyless("home", &mock)).unwrap();
    assert_eq!(e.models().check("home/mock-small").unwrap(), None);
    let stranded: Vec<_> = e
        .agents()
        .without_model()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.agent_id)
        .collect();
    let moved = e
        .agents()
        .use_model(&stranded, "home/mock-small")
        .await
        .unwrap();
    assert_eq!(moved.len(), 3);
    assert!(moved.iter().all(|a| a.llm.model == "home/mock-small"));
    assert!(e.agents().without_model().await.unwrap().is_empty());

    // And the agent that could not talk now does.
    let (out, _) = home.chat(&first.id, "my name is Bob").await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert!(!mock.chat_requests().is_empty(), "the model was asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_too_small_for_the_agent_is_not_offered_to_it() {
    let mock = MockLlm::start(Script::Brain).await;
    let home = Home::new();
    let e = &home.engram;
    let mut big = plain_agent("Big memory", Some("vendorx/big-model"));
    big.blocks = vec![NewBlock::new("human", "The user keeps bees. ".repeat(400))];
    let big = e.agents().create(big).await.unwrap().agent;
    e.providers().set(keyless("home", &mock)).unwrap();

    // A window of 1,024 tokens cannot hold ~8,000 characters of memory: set up, yet not for it.
    e.models()
        .set_window("home/mock-tiny", 1_024)
        .await
        .unwrap();
    assert_eq!(e.models().check("home/mock-tiny").unwrap(), None);
    let why = e
        .models()
        .check_for(&big.id, "home/mock-tiny")
        .await
        .unwrap()
        .expect("too small for this agent");
    assert!(why.contains("tokens of context"), "{why}");
    // The move it predicts is the move refused, and nothing changes.
    assert!(
        e.agents()
            .use_model(std::slice::from_ref(&big.id), "home/mock-tiny")
            .await
            .is_err()
    );
    assert_eq!(
        e.agents().get(&big.id).await.unwrap().agent.llm.model,
        "vendorx/big-model"
    );

    // A model with room is offered, and the move is accepted.
    assert_eq!(
        e.models()
            .check_for(&big.id, "home/mock-small")
            .await
            .unwrap(),
        None
    );
    let why = e
        .models()
        .check_for(&big.id, "nowhere/model")
        .await
        .unwrap()
        .unwrap();
    assert!(why.contains("nowhere"), "{why}");
    e.agents()
        .use_model(std::slice::from_ref(&big.id), "home/mock-small")
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_warns_when_an_agent_is_made_and_lists_it_until_fixed() {
    let mock = MockLlm::start(Script::Brain).await;
    let home = tempfile::tempdir().unwrap();
    let h = home.path();

    let out = cli(
        h,
        &["agent", "create", "--name", "Ada", "--model", "vendorx/big"],
    );
    let id = stdout_ok(&out).trim().to_owned();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning: Ada cannot talk to its model vendorx/big yet"),
        "{err}"
    );
    assert!(
        err.contains(&format!("engram agent set-model PROVIDER/MODEL {id}")),
        "{err}"
    );
    let listed = stdout_ok(&cli(h, &["agent", "list"]));
    assert!(listed.contains("[model not set up]"), "{listed}");

    // Refused while the new model is missing too; then fixed for every stranded agent.
    let refused = cli(h, &["agent", "set-model", "nowhere/x", &id]);
    assert!(!refused.status.success());
    stdout_ok(&cli(
        h,
        &["provider", "set", "home", "--base-url", &mock.base_url()],
    ));
    let moved = stdout_ok(&cli(
        h,
        &["agent", "set-model", "home/mock-small", "--without-model"],
    ));
    assert!(
        moved.contains(&id) && moved.contains("home/mock-small"),
        "{moved}"
    );
    let listed = stdout_ok(&cli(h, &["agent", "list"]));
    assert!(!listed.contains("[model not set up]"), "{listed}");
    let created = cli(
        h,
        &[
            "agent",
            "create",
            "--name",
            "Bea",
            "--model",
            "home/mock-small",
        ],
    );
    stdout_ok(&created);
    assert!(
        created.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_answers_an_agent_without_a_model_with_a_warning() {
    let mock = MockLlm::start(Script::Brain).await;
    let dir = tempfile::tempdir().unwrap();
    let engram = open(dir.path(), Arc::new(MemoryStore::default()));
    engram.providers().set(keyless("home", &mock)).unwrap();
    let token = "model-check-token-0123";
    let base = serve(
        engram,
        ServerConfig::new(Auth::Token(SecretString::from(token))),
    )
    .await;
    let http = reqwest::Client::new();
    let create = |model: &str| {
        http.post(format!("{base}/v1/agents/"))
            .bearer_auth(token)
            .json(&serde_json::json!({"name": "R", "model": model, "memory_blocks": []}))
            .send()
    };

    let missing: serde_json::Value = create("vendorx/big").await.unwrap().json().await.unwrap();
    let warnings = missing["warnings"].as_array().expect("warnings");
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .contains("model vendorx/big is not usable yet"),
        "{warnings:?}"
    );
    let fine: serde_json::Value = create("home/mock-small")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(fine["id"].is_string(), "{fine}");
    assert!(fine.get("warnings").is_none(), "{fine}");
}

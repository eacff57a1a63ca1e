//! A server on PostgreSQL: replicas — engines with data directories and connection pools of
//! their own, on one database — serve Letta's core routes over HTTP. What one replica writes
//! (an agent, a memory edit by a run, a passage, a block changed by hand) the other reads; a
//! route that has not moved onto the storage interface answers 501 `not_available` instead of
//! reading a replica's own database. Also `engram serve --database postgres://…` itself.

use engram_mock_llm::{MockLlm, Reply, Script};
use engram_secrets::MemoryStore;
use engram_server::{Auth, ServerConfig};
use engram_service::{Engram, Notice, Options, ProviderSetup};
use engram_store_pg::PgStore;
use reqwest::{Method, StatusCode};
use secrecy::SecretString;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct Replica {
    _home: tempfile::TempDir,
    pub(crate) engram: Arc<Engram>,
    pub(crate) base: String,
}

/// A replica of the server on the database at `url`, served on a loopback port; with
/// `model`, its `openai` provider is the scripted model there (a provider is each replica's
/// own setting, as its keys are).
pub(crate) async fn replica(url: &str, model: Option<&MockLlm>) -> Replica {
    let home = tempfile::tempdir().unwrap();
    let pg = Arc::new(PgStore::connect_with_pool_size(url, 4).await.unwrap());
    let engram = Engram::open_shared(
        Options {
            home: Some(home.path().to_owned()),
            secrets: Arc::new(MemoryStore::default()),
            // A message for an agent another replica is running waits a second, not 30.
            env: Arc::new(|k| (k == "ENGRAM_LEASE_WAIT").then(|| "1".to_owned())),
        },
        pg.clone(),
        pg,
    )
    .unwrap();
    assert!(engram.is_shared());
    if let Some(mock) = model {
        engram
            .providers()
            .set(ProviderSetup {
                name: "openai".into(),
                base_url: Some(mock.base_url()),
                api_key: Some(SecretString::from("sk-test")),
                ..ProviderSetup::default()
            })
            .unwrap();
    }
    let base = engram_suite::serve(engram.clone(), ServerConfig::new(Auth::Disabled)).await;
    Replica {
        _home: home,
        engram,
        base,
    }
}

pub(crate) async fn call(
    base: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut r = reqwest::Client::new().request(method, format!("{base}{path}"));
    if let Some(b) = body {
        r = r.json(&b);
    }
    let resp = r.send().await.unwrap();
    let status = resp.status();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

pub(crate) async fn ok(base: &str, method: Method, path: &str, body: Option<Value>) -> Value {
    let (status, v) = call(base, method.clone(), path, body).await;
    assert_eq!(status, StatusCode::OK, "{method} {path}: {v}");
    v
}

/// Two replicas of the server on the database at `url`, each with the scripted model.
pub(crate) async fn two_replicas(url: &str, mock: &MockLlm) -> (Replica, Replica) {
    (
        replica(url, Some(mock)).await,
        replica(url, Some(mock)).await,
    )
}

/// Creates an agent through Letta's route on `base`; its id.
pub(crate) async fn created(base: &str, body: Value) -> String {
    ok(base, Method::POST, "/v1/agents/", Some(body)).await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The body creating an agent named `name` on the scripted model `mock`, words-only archival.
pub(crate) fn agent_body(name: &str, mock: &MockLlm) -> Value {
    json!({
        "name": name,
        "model": "openai/mock-small",
        "embedding": "none",
        "llm_config": {"model": "mock-small", "model_endpoint_type": "openai",
                       "model_endpoint": mock.base_url(), "context_window": 32000},
    })
}

/// [`agent_body`] with an empty `human` block and a `persona`.
pub(crate) fn agent_with_memory(name: &str, mock: &MockLlm) -> Value {
    let mut body = agent_body(name, mock);
    body["memory_blocks"] =
        json!([{"label": "human", "value": ""}, {"label": "persona", "value": "I help."}]);
    body
}

/// What the agent said in a messages response (assistant messages, in order).
fn said(response: &Value) -> String {
    response["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["message_type"] == "assistant_message")
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn user_says(text: &str) -> Value {
    json!({"messages": [{"role": "user", "content": text}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_serve_one_set_of_agents() {
    let mock = MockLlm::start(Script::Brain).await;
    let url = engram_test_postgres::database().url();
    let (a, b) = two_replicas(&url, &mock).await;

    let created = ok(
        &a.base,
        Method::POST,
        "/v1/agents/",
        Some(agent_with_memory("Shared desk", &mock)),
    )
    .await;
    let id = created["id"].as_str().unwrap().to_owned();

    // The other replica has it, and both list it.
    let seen = ok(&b.base, Method::GET, &format!("/v1/agents/{id}"), None).await;
    assert_eq!(seen["name"], "Shared desk");
    // Renamed and tagged on one replica, listed by tag on the other.
    ok(
        &b.base,
        Method::PATCH,
        &format!("/v1/agents/{id}"),
        Some(json!({"name": "Front desk", "tags": ["support"]})),
    )
    .await;
    let tagged = ok(&a.base, Method::GET, "/v1/agents/?tags=support", None).await;
    assert_eq!(tagged[0]["name"], "Front desk", "{tagged}");
    assert_eq!(tagged[0]["tags"], json!(["support"]), "{tagged}");
    let untagged = ok(&a.base, Method::GET, "/v1/agents/?tags=sales", None).await;
    assert_eq!(untagged, json!([]));
    for r in [&a, &b] {
        let listed = ok(&r.base, Method::GET, "/v1/agents/", None).await;
        let ids: Vec<&str> = listed
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|x| x["id"].as_str())
            .collect();
        assert_eq!(ids, [id.as_str()]);
    }

    // A run on one replica edits memory; the other hears of it, reads the edit and answers
    // from it.
    let mut heard = a.engram.notices();
    let path = format!("/v1/agents/{id}/messages");
    ok(
        &b.base,
        Method::POST,
        &path,
        Some(user_says("my name is Ana")),
    )
    .await;
    let agent_id = engram_core::AgentId::from(id.clone());
    let memory_changed = async {
        loop {
            if let Notice::MemoryChanged { agent_id: changed } = heard.recv().await.unwrap()
                && changed == agent_id
            {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), memory_changed)
        .await
        .expect("replica A hears of the memory edit made on B");
    let human = ok(
        &a.base,
        Method::GET,
        &format!("/v1/agents/{id}/core-memory/blocks/human"),
        None,
    )
    .await;
    assert!(
        human["value"].as_str().unwrap().contains("Name: Ana"),
        "{human}"
    );
    let answer = ok(
        &a.base,
        Method::POST,
        &path,
        Some(user_says("what is my name?")),
    )
    .await;
    assert!(said(&answer).contains("Ana"), "{answer}");

    // One history, in order, whichever replica reads it.
    let history = ok(
        &b.base,
        Method::GET,
        &format!("{path}?limit=100&order=asc"),
        None,
    )
    .await;
    let users: Vec<&str> = history
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["message_type"] == "user_message")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(users, ["my name is Ana", "what is my name?"]);

    // A passage added on one replica is found on the other.
    let passages = format!("/v1/agents/{id}/archival-memory");
    ok(
        &a.base,
        Method::POST,
        &passages,
        Some(json!({"text": "Ana's cat is called Miso"})),
    )
    .await;
    let hits = ok(
        &b.base,
        Method::GET,
        &format!("{passages}/search?query=cat"),
        None,
    )
    .await;
    assert!(hits.to_string().contains("Miso"), "{hits}");
    let listed = ok(&b.base, Method::GET, &passages, None).await;
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");

    // A block changed by hand on one replica is what the other shows.
    ok(
        &b.base,
        Method::PATCH,
        &format!("/v1/agents/{id}/core-memory/blocks/persona"),
        Some(json!({"value": "I am brief."})),
    )
    .await;
    let persona = ok(
        &a.base,
        Method::GET,
        &format!("/v1/agents/{id}/core-memory/blocks/persona"),
        None,
    )
    .await;
    assert_eq!(persona["value"], "I am brief.");

    // What has not moved onto the shared database says so rather than answer from a
    // replica's own files.
    let (status, body) = call(&a.base, Method::GET, "/v1/mcp-servers", None).await;
    assert_eq!(status, StatusCode::NOT_IMPLEMENTED, "{body}");
    assert_eq!(body["code"], "not_available", "{body}");

    // The window's own commands on a replica: the chat window's reads and writes answer from
    // the database; a command not moved yet says so.
    let agents = ok(&b.base, Method::POST, "/app/list_agents", Some(json!({}))).await;
    assert_eq!(agents[0]["id"], id.as_str(), "{agents}");
    let window = ok(
        &b.base,
        Method::POST,
        "/app/list_messages",
        Some(json!({"agent_id": id, "limit": 50})),
    )
    .await;
    assert!(window.to_string().contains("what is my name?"), "{window}");
    ok(
        &b.base,
        Method::POST,
        "/app/update_block",
        Some(json!({"agent_id": id, "label": "persona", "patch": {"value": "I am terse."}})),
    )
    .await;
    let blocks = ok(
        &a.base,
        Method::POST,
        "/app/list_blocks",
        Some(json!({"agent_id": id})),
    )
    .await;
    assert!(blocks.to_string().contains("I am terse."), "{blocks}");
    let (status, body) = call(
        &a.base,
        Method::POST,
        "/app/list_mcp_servers",
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_IMPLEMENTED, "{body}");

    for r in [&a, &b] {
        ok(&r.base, Method::GET, "/healthz", None).await;
    }
    ok(&a.base, Method::DELETE, &format!("/v1/agents/{id}"), None).await;
    let (status, _) = call(&b.base, Method::GET, &format!("/v1/agents/{id}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// A user tool, as the window's tool editor sends it.
const ROLL_DIE: &str = "def roll_die(sides: int) -> int:\n    \"\"\"Rolls a die.\n\n    Args:\n        sides: How many sides it has.\n    \"\"\"\n    return 4\n";

/// Drops what names a row rather than describes it: ids (each store mints its own) and the
/// time of the export (`exported_at`, an Agent File's top-level `created_at`).
fn without_ids(v: &mut Value) {
    if let Some(file) = v.as_object_mut() {
        file.remove("created_at");
    }
    strip_ids(v);
}

fn strip_ids(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|k, _| k != "id" && k != "exported_at");
            map.values_mut().for_each(strip_ids);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_ids),
        _ => {}
    }
}

/// An agent that lived on the shared database — a memory edit by a run, passages, a tag, a
/// block changed by hand — exports from any replica, as an Agent File and as the JSON report,
/// and the file imports on a desktop's SQLite engine holding the same memory and history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_exports_from_any_replica_and_imports_on_a_desktop() {
    let mock = MockLlm::start(Script::Brain).await;
    let url = engram_test_postgres::database().url();
    let (a, b) = two_replicas(&url, &mock).await;
    let mut body = agent_with_memory("Archivist", &mock);
    body["tags"] = json!(["support"]);
    let id = ok(&a.base, Method::POST, "/v1/agents/", Some(body)).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/v1/agents/{id}/messages");
    ok(
        &a.base,
        Method::POST,
        &path,
        Some(user_says("my name is Ana")),
    )
    .await;
    for text in ["Ana's locker is 4471", "Ana prefers tea"] {
        ok(
            &b.base,
            Method::POST,
            &format!("/v1/agents/{id}/archival-memory"),
            Some(json!({"text": text})),
        )
        .await;
    }
    ok(
        &b.base,
        Method::PATCH,
        &format!("/v1/agents/{id}/core-memory/blocks/persona"),
        Some(json!({"value": "I keep notes."})),
    )
    .await;
    // The window's archive pager, filtered, on the other replica.
    let page = ok(
        &a.base,
        Method::POST,
        "/app/list_passages",
        Some(json!({"agent_id": id, "list": {"search": "TEA", "limit": 10}})),
    )
    .await;
    assert_eq!(
        (page["total"].as_u64(), page["offset"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(page["passages"][0]["text"], "Ana prefers tea");

    // A tool made in the window on one replica (its maker's own code, trusted), its trust
    // withdrawn and given back on the other, set to ask before running: all kept in the
    // database (and so in the export below).
    let tool = ok(
        &a.base,
        Method::POST,
        "/app/upsert_tool",
        Some(json!({"new": {"source_code": ROLL_DIE}})),
    )
    .await;
    assert_eq!(tool["trusted"], true, "{tool}");
    let tool_id = tool["id"].as_str().unwrap().to_owned();
    let withdrawn = ok(
        &b.base,
        Method::POST,
        "/app/untrust_tool",
        Some(json!({"tool": tool_id})),
    )
    .await;
    assert_eq!(withdrawn["trusted"], false, "{withdrawn}");
    ok(
        &b.base,
        Method::POST,
        "/app/attach_tool",
        Some(json!({"agent_id": id, "tool_id": tool_id})),
    )
    .await;
    let trusted = ok(
        &b.base,
        Method::POST,
        "/app/trust_tool",
        Some(json!({"tool": "roll_die", "expected_hash": tool["source_hash"]})),
    )
    .await;
    assert_eq!(trusted["trusted"], true, "{trusted}");
    ok(
        &a.base,
        Method::POST,
        "/app/set_tool_approval",
        Some(json!({"agent_id": id, "tool": "roll_die", "on": true})),
    )
    .await;
    let listed = ok(&a.base, Method::POST, "/app/list_tools", Some(json!({}))).await;
    let mine = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "roll_die")
        .expect("the tool is listed on the other replica");
    assert_eq!(mine["trusted"], true);
    let agent = ok(&b.base, Method::GET, &format!("/v1/agents/{id}"), None).await;
    assert!(
        agent["tool_rules"].to_string().contains("roll_die"),
        "{agent}"
    );

    // Letta's route on one replica, the window's command on the other: the same file.
    let (status, file) = call(
        &b.base,
        Method::GET,
        &format!("/v1/agents/{id}/export"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{file}");
    let window = ok(
        &a.base,
        Method::POST,
        "/app/export_agent",
        Some(json!({"agent_id": id})),
    )
    .await;
    let mut from_window: Value = serde_json::from_str(window.as_str().unwrap()).unwrap();
    let mut from_route = file.clone();
    without_ids(&mut from_window);
    without_ids(&mut from_route);
    assert_eq!(from_route, from_window);
    let text = file.to_string();
    for held in [
        "Name: Ana",
        "I keep notes.",
        "Ana's locker is 4471",
        "my name is Ana",
    ] {
        assert!(text.contains(held), "the export lacks {held:?}");
    }
    let report = ok(
        &a.base,
        Method::POST,
        "/app/export_agents",
        Some(json!({"agent_ids": [id], "format": "json"})),
    )
    .await;
    assert_eq!(report["file_name"], "Archivist.report.json", "{report}");
    let mut shared: Value = serde_json::from_str(report["contents"].as_str().unwrap()).unwrap();

    // On a desktop: the file imports, and its report is the shared server's, ids aside.
    let desk = engram_suite::Home::new();
    let imported = desk
        .engram
        .agent_files()
        .import(&serde_json::to_vec(&file).unwrap())
        .await
        .unwrap();
    let mine = imported.agents[0].clone();
    assert_eq!(desk.block(&mine, "human"), "Name: Ana");
    let mut local: Value = serde_json::from_slice(
        &desk
            .engram
            .agent_files()
            .export_json(std::slice::from_ref(&mine))
            .await
            .unwrap(),
    )
    .unwrap();
    without_ids(&mut shared);
    without_ids(&mut local);
    assert_eq!(
        shared["agents"][0]["messages"],
        local["agents"][0]["messages"]
    );
    assert_eq!(
        shared["agents"][0]["passages"],
        local["agents"][0]["passages"]
    );
    assert_eq!(shared, local);

    // And back: the desktop's file imports on the shared server (the window's import), a
    // new agent every replica has, holding the same memory; the conversation goes on there.
    let desk_file = desk
        .engram
        .agent_files()
        .export(std::slice::from_ref(&mine))
        .await
        .unwrap();
    let report = ok(
        &b.base,
        Method::POST,
        "/app/import_agent_file",
        Some(
            json!({"contents": String::from_utf8(desk_file).unwrap(), "file_name": "archivist.af"}),
        ),
    )
    .await;
    let back = report["agents"][0].as_str().unwrap().to_owned();
    assert_ne!(back, id);
    let human = ok(
        &a.base,
        Method::GET,
        &format!("/v1/agents/{back}/core-memory/blocks/human"),
        None,
    )
    .await;
    assert_eq!(human["value"], "Name: Ana");
    let count = |agent: String| {
        let base = a.base.clone();
        async move {
            ok(
                &base,
                Method::GET,
                &format!("/v1/agents/{agent}/messages/count"),
                None,
            )
            .await
        }
    };
    assert_eq!(count(back.clone()).await, count(id.clone()).await);
    let found = ok(
        &a.base,
        Method::GET,
        &format!("/v1/agents/{back}/archival-memory/search?query=locker"),
        None,
    )
    .await;
    assert!(found.to_string().contains("4471"), "{found}");
    let answer = ok(
        &a.base,
        Method::POST,
        &format!("/v1/agents/{back}/messages"),
        Some(user_says("what is my name?")),
    )
    .await;
    assert!(said(&answer).contains("Ana"), "{answer}");

    // A memory edit that asks first: the run pauses on one replica, the window on the other
    // approves it, and the paused run goes on there.
    ok(
        &a.base,
        Method::POST,
        "/app/set_tool_approval",
        Some(json!({"agent_id": back, "tool": "core_memory_append", "on": true})),
    )
    .await;
    ok(
        &a.base,
        Method::POST,
        &format!("/v1/agents/{back}/messages"),
        Some(user_says("my name is Bob")),
    )
    .await;
    let pending = ok(
        &b.base,
        Method::POST,
        "/app/pending_approval",
        Some(json!({"agent_id": back})),
    )
    .await;
    assert_eq!(
        pending["tool_call"]["name"], "core_memory_append",
        "{pending}"
    );
    let waiting = ok(
        &b.base,
        Method::GET,
        &format!("/v1/agents/{back}/core-memory/blocks/human"),
        None,
    )
    .await;
    assert_eq!(
        waiting["value"], "Name: Ana",
        "nothing is written before the approval"
    );
    ok(
        &b.base,
        Method::POST,
        "/app/resolve_approval",
        Some(json!({"agent_id": back, "decision": {"approve": true}})),
    )
    .await;
    let human = ok(
        &a.base,
        Method::GET,
        &format!("/v1/agents/{back}/core-memory/blocks/human"),
        None,
    )
    .await;
    assert!(
        human["value"].as_str().unwrap().contains("Name: Bob"),
        "{human}"
    );
}

/// The memory panel's undo on a shared server: an edit the agent made on one replica is
/// planned and undone from the other, keeping a later edit; a whole restore drops the later
/// one only at the version the person saw; both are in the history as undos.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_edits_are_undone_and_restored_from_any_replica() {
    let mock = MockLlm::start(Script::Brain).await;
    let url = engram_test_postgres::database().url();
    let (a, b) = two_replicas(&url, &mock).await;
    let body = agent_with_memory("Undoer", &mock);
    let id = ok(&a.base, Method::POST, "/v1/agents/", Some(body)).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    ok(
        &a.base,
        Method::POST,
        &format!("/v1/agents/{id}/messages"),
        Some(user_says("my name is Ana")),
    )
    .await;
    let human = |base: String, id: String| async move {
        ok(
            &base,
            Method::GET,
            &format!("/v1/agents/{id}/core-memory/blocks/human"),
            None,
        )
        .await
    };
    let block = human(a.base.clone(), id.clone()).await;
    assert_eq!(block["value"], "Name: Ana");
    // A later hand edit on the other replica, elsewhere in the block.
    let edited = ok(
        &b.base,
        Method::PATCH,
        &format!("/v1/agents/{id}/core-memory/blocks/human"),
        Some(json!({"value": "Name: Ana\nLikes tea"})),
    )
    .await;
    let history = ok(
        &b.base,
        Method::POST,
        "/app/block_history",
        Some(json!({"agent_id": id, "label": "human"})),
    )
    .await;
    let agents_edit = history
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["new_value"] == "Name: Ana")
        .expect("the agent's edit is in the history")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let plan = ok(
        &a.base,
        Method::POST,
        "/app/block_undo_plan",
        Some(json!({"edit_id": agents_edit})),
    )
    .await;
    assert_eq!(plan["later_edits"], 1, "{plan}");
    assert_eq!(plan["reverted"], "\nLikes tea", "{plan}");
    assert_eq!(plan["restored"], "");
    // Undoing just it keeps the later edit.
    let undone = ok(
        &a.base,
        Method::POST,
        "/app/undo_block_edit",
        Some(json!({"edit_id": agents_edit, "version": edited["version"]})),
    )
    .await;
    assert_eq!(undone["value"], "\nLikes tea", "{undone}");
    // A restore based on a version no longer current is refused, nothing written.
    let (status, body) = call(
        &b.base,
        Method::POST,
        "/app/restore_block_edit",
        Some(json!({"edit_id": agents_edit, "version": edited["version"]})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["code"], "stale_version", "{body}");
    let restored = ok(
        &b.base,
        Method::POST,
        "/app/restore_block_edit",
        Some(json!({"edit_id": agents_edit, "version": undone["version"]})),
    )
    .await;
    assert_eq!(restored["value"], "");
    let history = ok(
        &a.base,
        Method::POST,
        "/app/block_history",
        Some(json!({"agent_id": id, "label": "human"})),
    )
    .await;
    let undos = history
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["editor"]["kind"] == "undo" && e["editor"]["edit_id"] == agents_edit)
        .count();
    assert_eq!(undos, 2, "{history}");
}

/// One agent, two replicas: while a run holds the agent on one, a message on the other waits
/// for its lease, then answers `409 agent_busy` having written nothing; a cancel sent to the
/// other replica stops the run where it runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_agent_answers_409_elsewhere_and_is_cancelled_from_any_replica() {
    let mock = MockLlm::start(Script::Brain).await;
    let url = engram_test_postgres::database().url();
    let (a, b) = two_replicas(&url, &mock).await;
    let id = agent_on(&a.base, &mock).await;
    let agent = engram_core::AgentId::from(id.clone());
    let path = format!("/v1/agents/{id}/messages");

    // The scripted model takes 5 s over a "slow:" message.
    let started = std::time::Instant::now();
    let slow = tokio::spawn({
        let (base, path) = (a.base.clone(), path.clone());
        async move { call(&base, Method::POST, &path, Some(user_says("slow: hello"))).await }
    });
    while !a.engram.runs().is_running(&agent) {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the run never started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Past the run's start: it holds the agent's lease.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let (status, body) = call(&b.base, Method::POST, &path, Some(user_says("hi"))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["code"], "agent_busy", "{body}");
    // A hand edit does not wait for the run: it is an operation on the block as stored.
    let human = format!("/v1/agents/{id}/core-memory/blocks/human");
    ok(
        &b.base,
        Method::PATCH,
        &human,
        Some(json!({"value": "Name: Bo"})),
    )
    .await;

    ok(&b.base, Method::POST, &format!("{path}/cancel"), None).await;
    let (status, answer) = slow.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        answer["stop_reason"]["stop_reason"], "cancelled",
        "{answer}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(4_500),
        "the run ran its course ({:?}) instead of stopping",
        started.elapsed()
    );

    let kept = ok(&a.base, Method::GET, &human, None).await;
    assert_eq!(
        kept["value"], "Name: Bo",
        "the hand edit made mid-run stands"
    );
    // The refused message left nothing; the agent takes the next one on either replica.
    let history = ok(
        &a.base,
        Method::GET,
        &format!("{path}?limit=100&order=asc"),
        None,
    )
    .await;
    assert!(!history.to_string().contains("\"hi\""), "{history}");
    ok(
        &b.base,
        Method::POST,
        &path,
        Some(user_says("my name is Ana")),
    )
    .await;
}

/// Three replicas behind a round-robin: 8 clients run 50 turns each on 16 agents, every
/// request to the next replica. Every turn is answered, none with a server error, and each
/// agent's history holds its turns once, in order. Two agents sharing a block, each written on
/// every replica at once, keep every edit, each with its history row.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_clients_on_three_replicas_lose_nothing() {
    const AGENTS: usize = 16;
    const TURNS: usize = 50;
    const CLIENTS: usize = 8;
    let mock = MockLlm::start(Script::Brain).await;
    let url = engram_test_postgres::database().url();
    let mut replicas = Vec::new();
    for _ in 0..3 {
        replicas.push(replica(&url, Some(&mock)).await);
    }
    let bases: Arc<Vec<String>> = Arc::new(replicas.iter().map(|r| r.base.clone()).collect());
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let pick = {
        let (bases, next) = (bases.clone(), next.clone());
        move || bases[next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % bases.len()].clone()
    };
    let body = |name: String| agent_body(&name, &mock);
    let mut agents = Vec::new();
    for n in 0..AGENTS {
        let made = ok(
            &pick(),
            Method::POST,
            "/v1/agents/",
            Some(body(format!("a{n}"))),
        )
        .await;
        agents.push(made["id"].as_str().unwrap().to_owned());
    }

    let mut clients = Vec::new();
    for c in 0..CLIENTS {
        let mine: Vec<String> = agents.iter().skip(c).step_by(CLIENTS).cloned().collect();
        let pick = pick.clone();
        clients.push(tokio::spawn(async move {
            for turn in 0..TURNS {
                for agent in &mine {
                    let path = format!("/v1/agents/{agent}/messages");
                    let (status, v) = call(
                        &pick(),
                        Method::POST,
                        &path,
                        Some(user_says(&format!("note {turn}"))),
                    )
                    .await;
                    assert_eq!(status, StatusCode::OK, "{agent} turn {turn}: {v}");
                }
            }
        }));
    }
    for c in clients {
        c.await.unwrap();
    }
    for agent in &agents {
        let path = format!("/v1/agents/{agent}/messages?limit=1000&order=asc");
        let history = ok(&pick(), Method::GET, &path, None).await;
        let users: Vec<String> = history
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["message_type"] == "user_message")
            .filter_map(|m| m["content"].as_str().map(str::to_owned))
            .collect();
        let expected: Vec<String> = (0..TURNS).map(|t| format!("note {t}")).collect();
        assert_eq!(users, expected, "{agent}");
    }

    // Two agents share one `human` block; each learns ten names, on every replica at once.
    let first = ok(
        &pick(),
        Method::POST,
        "/v1/agents/",
        Some({
            let mut b = body("sharer one".into());
            b["memory_blocks"] = json!([{"label": "human", "value": "", "limit": 20000}]);
            b
        }),
    )
    .await;
    let block = first["memory"]["blocks"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let second = ok(
        &pick(),
        Method::POST,
        "/v1/agents/",
        Some({
            let mut b = body("sharer two".into());
            b["block_ids"] = json!([block]);
            b
        }),
    )
    .await;
    let mut writers = Vec::new();
    for (agent, who) in [(&first, "One"), (&second, "Two")] {
        let path = format!("/v1/agents/{}/messages", agent["id"].as_str().unwrap());
        let pick = pick.clone();
        writers.push(tokio::spawn(async move {
            for n in 0..10 {
                let said = format!("my name is {who}{n}");
                let (status, v) = call(&pick(), Method::POST, &path, Some(user_says(&said))).await;
                assert_eq!(status, StatusCode::OK, "{said}: {v}");
            }
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    let shared = ok(&pick(), Method::GET, &format!("/v1/blocks/{block}"), None).await;
    let value = shared["value"].as_str().unwrap();
    for who in ["One", "Two"] {
        for n in 0..10 {
            assert!(
                value.contains(&format!("Name: {who}{n}\n"))
                    || value.ends_with(&format!("Name: {who}{n}")),
                "{who}{n} lost: {value}"
            );
        }
    }
    let history = replicas[0]
        .engram
        .blocks()
        .history(
            &engram_core::AgentId::from(first["id"].as_str().unwrap().to_owned()),
            "human",
        )
        .await
        .unwrap();
    assert_eq!(history.len(), 20, "one history row per edit");
}

/// `engram serve --database postgres://…` starts on the database, answers `/healthz`, and
/// keeps what it is given there (a second engine on the database sees it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engram_serve_runs_on_the_database_it_is_given() {
    let url = engram_test_postgres::database().url();
    let home = tempfile::tempdir().unwrap();
    let mut child = engram_suite::cli_command(home.path())
        .args(["serve", "--port", "0", "--no-auth", "--database", &url])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next().expect("engram serve exited early").unwrap();
    let addr = line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();
    let health = ok(&addr, Method::GET, "/healthz", None).await;
    assert_eq!(health["status"], "ok");
    let made = ok(
        &addr,
        Method::POST,
        "/v1/agents/",
        Some(json!({"name": "Kept", "model": "openai/gpt-4o-mini", "embedding": "none"})),
    )
    .await;
    let _ = child.kill();
    let _ = child.wait();

    let other = replica(&url, None).await;
    let id = made["id"].as_str().unwrap();
    let seen = ok(&other.base, Method::GET, &format!("/v1/agents/{id}"), None).await;
    assert_eq!(seen["name"], "Kept");

    // The CLI's own commands work on the database too: a user added there is every
    // replica's, and the agents listed are the database's.
    let cli = |args: &[&str]| {
        let out = engram_suite::cli_command(home.path())
            .arg("--database")
            .arg(&url)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    cli(&["user", "add", "ana"]);
    assert!(
        cli(&["agent", "list"]).contains(id),
        "the database's agents are listed"
    );
    cli(&["sleeptime", "set", id, "--on", "--frequency", "3"]);
    let shown: serde_json::Value =
        serde_json::from_str(&cli(&["sleeptime", "show", id, "--json"])).unwrap();
    assert_eq!(shown["settings"]["frequency"], 3, "{shown}");
    // A command that has not moved onto the interface says so, rather than looking in the
    // data directory's own database.
    let refused = engram_suite::cli_command(home.path())
        .arg("--database")
        .arg(&url)
        .args(["mcp", "list"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("`engram mcp` does not work on a shared server's database yet"),
        "{said}"
    );
    let users = other.engram.users().list().await.unwrap();
    assert_eq!(
        users.iter().map(|u| u.name.as_str()).collect::<Vec<_>>(),
        ["ana"]
    );
}

/// The database restarted under two replicas, one of them mid-conversation: both come back
/// on their own, the windows of each are told to read everything again (`agents_changed`:
/// notices sent meanwhile are lost), and the conversation goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_recover_from_a_database_restart_and_windows_read_again() {
    let cluster = engram_test_postgres::Cluster::start().unwrap();
    let url = cluster.database().unwrap().url();
    let mock = MockLlm::start(Script::Brain).await;
    let (a, b) = two_replicas(&url, &mock).await;
    let id = agent_on(&a.base, &mock).await;
    let path = format!("/v1/agents/{id}/messages");
    ok(
        &b.base,
        Method::POST,
        &path,
        Some(user_says("my name is Ana")),
    )
    .await;
    // Both replicas hear the bus before the restart.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut heard = a.engram.notices();

    cluster.stop().unwrap();
    let (status, _) = call(&b.base, Method::GET, "/healthz", None).await;
    assert_eq!(
        status,
        StatusCode::SERVICE_UNAVAILABLE,
        "the health check says the database is gone"
    );
    cluster.restart().unwrap();

    let read_again = async {
        loop {
            if let Notice::AgentsChanged = heard.recv().await.unwrap() {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(15), read_again)
        .await
        .expect("replica A tells its windows to read everything again");
    for r in [&a, &b] {
        ok(&r.base, Method::GET, "/healthz", None).await;
    }
    let answer = ok(
        &a.base,
        Method::POST,
        &path,
        Some(user_says("what is my name?")),
    )
    .await;
    assert!(said(&answer).contains("Ana"), "{answer}");
}

/// A replica's process, killed when the test ends however it ends.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An `engram serve --database url` process of its own (a replica that can be killed or
/// paused), on the scripted model, with leases of `lease_ttl` seconds; its base URL.
fn serve_process(
    url: &str,
    home: &std::path::Path,
    mock: &MockLlm,
    lease_ttl: &str,
) -> (Proc, String) {
    let mut child = engram_suite::cli_command(home)
        .args(["serve", "--port", "0", "--no-auth", "--database", url])
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "sk-test")
        .env("ENGRAM_LEASE_TTL", lease_ttl)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next().expect("engram serve exited early").unwrap();
    let base = line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();
    (Proc(child), base)
}

fn signal(replica: &Proc, sig: &str) {
    let status = std::process::Command::new("kill")
        .args([sig, &replica.0.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// The agent's history as `(message_type, text)`, oldest first, the text of a tool call being
/// its name.
async fn history(base: &str, agent: &str) -> Vec<(String, String)> {
    let path = format!("/v1/agents/{agent}/messages?limit=1000&order=asc");
    ok(base, Method::GET, &path, None)
        .await
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = m["content"]
                .as_str()
                .or(m["tool_call"]["name"].as_str())
                .unwrap_or_default();
            (
                m["message_type"].as_str().unwrap_or_default().to_owned(),
                text.to_owned(),
            )
        })
        .collect()
}

/// The person's message `text` and the run it started: nothing from that run after the
/// message itself when the next thing in `history` is the person's `next` message.
fn run_left_nothing(history: &[(String, String)], text: &str, next: &str) {
    let at = history
        .iter()
        .position(|(kind, t)| kind == "user_message" && t == text)
        .unwrap_or_else(|| panic!("{text:?} is kept as the person sent it: {history:?}"));
    assert_eq!(
        history.get(at + 1),
        Some(&("user_message".to_owned(), next.to_owned())),
        "the stopped run wrote after {text:?}: {history:?}"
    );
}

/// An agent on the scripted model made through `base`; its id.
async fn agent_on(base: &str, mock: &MockLlm) -> String {
    let made = ok(
        base,
        Method::POST,
        "/v1/agents/",
        Some(agent_body("Replicated", mock)),
    )
    .await;
    made["id"].as_str().unwrap().to_owned()
}

/// A replica killed while its run waits on the model: the next message, on another replica,
/// waits out the dead run's lease (2 s) and completes; the killed step left nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_step_leaves_nothing_and_another_takes_over() {
    let mock = MockLlm::start(Script::Brain).await;
    let url = engram_test_postgres::database().url();
    let (home_a, home_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut a, base_a) = serve_process(&url, home_a.path(), &mock, "2");
    let (_b, base_b) = serve_process(&url, home_b.path(), &mock, "2");
    let agent = agent_on(&base_a, &mock).await;
    let path = format!("/v1/agents/{agent}/messages");
    let doomed = tokio::spawn({
        let url = format!("{base_a}{path}");
        async move {
            reqwest::Client::new()
                .post(url)
                .json(&user_says("slow: doomed"))
                .send()
                .await
        }
    });
    // The scripted model holds a "slow:" message 5 s: kill the replica while it waits.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let _ = a.0.kill();
    let _ = a.0.wait();
    assert!(
        doomed.await.unwrap().is_err(),
        "the killed replica answered"
    );

    let taken_over = std::time::Instant::now();
    let answer = ok(
        &base_b,
        Method::POST,
        &path,
        Some(user_says("my name is Ana")),
    )
    .await;
    assert!(
        taken_over.elapsed() < Duration::from_secs(10),
        "the other replica waited {:?}",
        taken_over.elapsed()
    );
    assert!(answer.to_string().contains("Ana"), "{answer}");
    // The person's message was kept when the run started; the killed step wrote nothing.
    let h = history(&base_b, &agent).await;
    run_left_nothing(&h, "slow: doomed", "my name is Ana");
}

/// A replica paused past its run's lease (its renewals stop with it) while another replica
/// takes the agent over: when it resumes, its step is refused with `lease_lost` and writes
/// nothing; the other replica's turn stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_paused_past_its_lease_cannot_commit_when_it_resumes() {
    let mock = MockLlm::start(Script::Brain).await;
    let url = engram_test_postgres::database().url();
    let (home_a, home_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, base_a) = serve_process(&url, home_a.path(), &mock, "2");
    let (_b, base_b) = serve_process(&url, home_b.path(), &mock, "2");
    let agent = agent_on(&base_a, &mock).await;
    let path = format!("/v1/agents/{agent}/messages");
    let stale = tokio::spawn({
        let (base, path) = (base_a.clone(), path.clone());
        async move { call(&base, Method::POST, &path, Some(user_says("slow: stale"))).await }
    });
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    signal(&a, "-STOP");
    // B waits out A's lease (2 s) and runs its own turn meanwhile.
    ok(
        &base_b,
        Method::POST,
        &path,
        Some(user_says("my name is Ana")),
    )
    .await;
    // The model's 5 s pass while A sleeps; it wakes with a reply to commit under a lost lease.
    tokio::time::sleep(Duration::from_secs(5)).await;
    signal(&a, "-CONT");
    let (status, answer) = stale.await.unwrap();
    assert!(
        answer.to_string().contains("lease_lost"),
        "{status}: {answer}"
    );
    let h = history(&base_b, &agent).await;
    run_left_nothing(&h, "slow: stale", "my name is Ana");
    assert!(
        h.iter()
            .any(|(kind, t)| kind == "assistant_message" && t.contains("Ana")),
        "{h:?}"
    );
}

/// A run command of the window (`/app/regenerate`, …) on `base`: its Server-Sent Events, in
/// order, up to `done`.
async fn run_events(base: &str, command: &str, args: Value) -> Vec<Value> {
    let resp = reqwest::Client::new()
        .post(format!("{base}/app/{command}"))
        .json(&args)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK, "{command}");
    resp.text()
        .await
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// The conversation as the chat window loads it from `base`: `(role, content)` oldest first,
/// and the messages themselves.
async fn window(base: &str, agent: &str) -> (Vec<(String, String)>, Vec<Value>) {
    let w = ok(
        base,
        Method::POST,
        "/app/message_window",
        Some(json!({"agent_id": agent, "at": {"kind": "latest"}, "limit": 50})),
    )
    .await;
    assert_eq!(w["has_older"], false, "{w}");
    let messages = w["messages"].as_array().unwrap().clone();
    let pairs = messages
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (pairs, messages)
}

/// The chat window's own actions on a server on PostgreSQL, each from either replica: the
/// conversation loads after a reload with the diffs under its tool calls and the compiled
/// context; a block is added and the agent copied; regenerate and edit & resend roll the
/// turn back (its memory edit too) and run it again; a message's text is changed (Letta's
/// modify); a message is deleted with its tool results; the context window is emptied. A
/// change while a run holds the agent on the other replica waits for its lease, then is
/// refused having changed nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_windows_actions_work_from_any_replica() {
    let mock = MockLlm::start(Script::Brain).await;
    let url = engram_test_postgres::database().url();
    let (a, b) = two_replicas(&url, &mock).await;
    let id = created(&a.base, agent_with_memory("Chatter", &mock)).await;
    ok(
        &a.base,
        Method::POST,
        &format!("/v1/agents/{id}/messages"),
        Some(user_says("my name is Ana")),
    )
    .await;
    let human = |base: String| {
        let id = id.clone();
        async move {
            ok(
                &base,
                Method::GET,
                &format!("/v1/agents/{id}/core-memory/blocks/human"),
                None,
            )
            .await["value"]
                .as_str()
                .unwrap()
                .to_owned()
        }
    };
    assert_eq!(human(a.base.clone()).await, "Name: Ana");

    // The other replica's window reloads the chat from the database.
    let (pairs, messages) = window(&b.base, &id).await;
    assert_eq!(pairs[0], ("user".into(), "my name is Ana".into()));
    assert!(pairs.iter().any(|(role, _)| role == "tool"), "{pairs:?}");
    let mut runs: Vec<String> = messages
        .iter()
        .filter_map(|m| m["run_id"].as_str().map(str::to_owned))
        .collect();
    runs.dedup();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let edits = ok(
        &b.base,
        Method::POST,
        "/app/run_edits",
        Some(json!({"agent_id": id, "run_ids": runs})),
    )
    .await;
    assert_eq!(edits.as_array().unwrap().len(), 1, "{edits}");
    assert_eq!(edits[0]["label"], "human");
    assert_eq!(edits[0]["edit"]["new_value"], "Name: Ana");
    let view = ok(
        &b.base,
        Method::POST,
        "/app/context_view",
        Some(json!({"agent_id": id})),
    )
    .await;
    assert_eq!(view["messages"][0]["role"], "system");
    assert!(
        view["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("Name: Ana")
    );
    assert!(
        view["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["content"] == "my name is Ana"),
        "{view}"
    );

    // A block added from the other replica's memory panel is the agent's everywhere.
    let notes = ok(
        &b.base,
        Method::POST,
        "/app/create_agent_block",
        Some(json!({"agent_id": id, "new": {"label": "notes", "value": "Bring the keys."}})),
    )
    .await;
    assert_eq!(notes["label"], "notes", "{notes}");
    let listed = ok(
        &a.base,
        Method::GET,
        &format!("/v1/agents/{id}/core-memory/blocks/notes"),
        None,
    )
    .await;
    assert_eq!(listed["value"], "Bring the keys.");
    let shared = ok(&a.base, Method::POST, "/app/shared_blocks", None).await;
    let with_notes = shared
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["block"]["id"] == listed["id"])
        .expect("the new block is listed");
    assert_eq!(with_notes["agents"][0]["id"], json!(id), "{with_notes}");

    // A copy made on one replica holds the memory and the conversation, on every replica.
    let twin = ok(
        &b.base,
        Method::POST,
        "/app/clone_agent",
        Some(json!({"agent_id": id, "name": "Chatter twin"})),
    )
    .await;
    let twin = twin["id"].as_str().unwrap().to_owned();
    assert_ne!(twin, id);
    let copied = ok(&a.base, Method::GET, &format!("/v1/agents/{twin}"), None).await;
    assert_eq!(copied["name"], "Chatter twin");
    let (twin_said, _) = window(&a.base, &twin).await;
    assert_eq!(twin_said, window(&a.base, &id).await.0);
    let twin_notes = ok(
        &a.base,
        Method::GET,
        &format!("/v1/agents/{twin}/core-memory/blocks/notes"),
        None,
    )
    .await;
    assert_eq!(twin_notes["value"], "Bring the keys.");
    assert_ne!(twin_notes["id"], listed["id"], "a block of its own");

    // Regenerate on the other replica: the turn and its memory edit go, the run comes again.
    let plan = ok(
        &b.base,
        Method::POST,
        "/app/regenerate_preview",
        Some(json!({"agent_id": id})),
    )
    .await;
    assert_eq!(plan["runs"], json!(runs), "{plan}");
    assert_eq!(plan["blocks"][0]["label"], "human");
    assert_eq!(plan["blocks"][0]["restored_value"], "");
    let events = run_events(&b.base, "regenerate", json!({"agent_id": id})).await;
    assert_eq!(events.last().unwrap()["type"], "done", "{events:?}");
    let (pairs, messages) = window(&a.base, &id).await;
    let asked: Vec<_> = pairs.iter().filter(|(r, _)| r == "user").collect();
    assert_eq!(asked, [&("user".to_owned(), "my name is Ana".to_owned())]);
    assert!(
        messages.iter().all(|m| m["run_id"] != json!(runs[0])),
        "a new run"
    );
    assert_eq!(human(a.base.clone()).await, "Name: Ana");
    let history = ok(
        &a.base,
        Method::POST,
        "/app/block_history",
        Some(json!({"agent_id": id, "label": "human"})),
    )
    .await;
    assert!(
        history
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["editor"]["kind"] == "rollback"),
        "{history}"
    );

    // Edit & resend on the first replica.
    let first = messages[0]["id"].as_str().unwrap().to_owned();
    let preview = ok(
        &a.base,
        Method::POST,
        "/app/rollback_preview",
        Some(json!({"agent_id": id, "message_id": first})),
    )
    .await;
    assert_eq!(preview["from_message"], first);
    let events = run_events(
        &a.base,
        "edit_and_resend",
        json!({"agent_id": id, "message_id": first, "text": "my name is Bo"}),
    )
    .await;
    assert_eq!(events.last().unwrap()["type"], "done", "{events:?}");
    assert_eq!(human(b.base.clone()).await, "Name: Bo");
    let (pairs, messages) = window(&b.base, &id).await;
    assert_eq!(pairs[0], ("user".into(), "my name is Bo".into()));
    assert!(!pairs.iter().any(|(_, c)| c.contains("Ana")), "{pairs:?}");

    // Letta's message modify on the other replica: the text the chat shows, and the model's.
    let asked = messages[0]["id"].as_str().unwrap().to_owned();
    let changed = ok(
        &b.base,
        Method::PATCH,
        &format!("/v1/agents/{id}/messages/{asked}"),
        Some(json!({"message_type": "user_message", "content": "my name is Bo, hello"})),
    )
    .await;
    assert_eq!(changed["content"], "my name is Bo, hello", "{changed}");
    let (pairs, messages) = window(&a.base, &id).await;
    assert_eq!(pairs[0], ("user".into(), "my name is Bo, hello".into()));
    let view = ok(
        &a.base,
        Method::POST,
        "/app/context_view",
        Some(json!({"agent_id": id})),
    )
    .await;
    assert!(
        view["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["content"] == "my name is Bo, hello"),
        "{view}"
    );

    // A delete on the other replica takes the call's result along.
    let tool_call = messages
        .iter()
        .find(|m| m["role"] == "assistant" && !m["tool_calls"].as_array().unwrap().is_empty())
        .expect("the run's tool call");
    let removed = ok(
        &b.base,
        Method::POST,
        "/app/delete_message",
        Some(json!({"agent_id": id, "message_id": tool_call["id"]})),
    )
    .await;
    assert_eq!(removed.as_array().unwrap().len(), 2, "{removed}");
    let (left, _) = window(&a.base, &id).await;
    assert_eq!(left.len(), pairs.len() - 2);
    assert!(!left.iter().any(|(role, _)| role == "tool"), "{left:?}");

    // While a slow run holds the agent on one replica, a change on the other waits for the
    // lease (a second here), then is refused having changed nothing.
    mock.push(Reply::Delayed(
        Duration::from_millis(3000),
        Box::new(Reply::text("slowly")),
    ));
    let slow = {
        let (base, id) = (a.base.clone(), id.clone());
        tokio::spawn(async move {
            call(
                &base,
                Method::POST,
                &format!("/v1/agents/{id}/messages"),
                Some(user_says("take your time")),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(700)).await;
    let (status, body) = call(
        &b.base,
        Method::POST,
        "/app/reset_messages",
        Some(json!({"agent_id": id})),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("agent_busy")),
        "{body}"
    );
    let (status, answered) = slow.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{answered}");
    assert_eq!(said(&answered), "slowly");
    let in_context = ok(
        &b.base,
        Method::POST,
        "/app/context_view",
        Some(json!({"agent_id": id})),
    )
    .await["messages"]
        .as_array()
        .unwrap()
        .len();
    assert!(in_context > 3, "the refused reset emptied nothing");

    // Once the run is over, the reset goes through (Letta's route, on the other replica).
    ok(
        &b.base,
        Method::PATCH,
        &format!("/v1/agents/{id}/reset-messages"),
        None,
    )
    .await;
    let view = ok(
        &a.base,
        Method::POST,
        "/app/context_view",
        Some(json!({"agent_id": id})),
    )
    .await;
    assert_eq!(view["messages"].as_array().unwrap().len(), 1, "{view}");
    let (all, _) = window(&a.base, &id).await;
    assert!(all.len() > 3, "recall keeps every message: {all:?}");
}

/// A base URL an agent file names waits on a shared server for a person to accept it, from
/// either replica: a run meanwhile uses the provider's own URL; dismissed, it is gone; accepted
/// (on the other replica), it is the agent's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_base_url_waits_for_acceptance_on_any_replica() {
    let mock = MockLlm::start(Script::Brain).await;
    let url = engram_test_postgres::database().url();
    let (a, b) = two_replicas(&url, &mock).await;
    let id = created(&a.base, agent_body("Faraway", &mock)).await;
    // The file names another host wherever it gives the agent's base URL.
    let file = ok(
        &a.base,
        Method::GET,
        &format!("/v1/agents/{id}/export"),
        None,
    )
    .await
    .to_string()
    .replace(&mock.base_url(), "http://10.0.0.5:8000/v1");
    let import = |name: &'static str| {
        let (base, file) = (a.base.clone(), file.clone());
        async move {
            let report = ok(
                &base,
                Method::POST,
                "/app/import_agent_file",
                Some(json!({"contents": file, "file_name": name})),
            )
            .await;
            report["agents"][0].as_str().unwrap().to_owned()
        }
    };
    let far = import("far.af").await;
    let shown = ok(
        &b.base,
        Method::POST,
        "/app/agent_endpoints",
        Some(json!({"agent_id": far})),
    )
    .await;
    assert_eq!(shown["llm_base_url"], Value::Null, "{shown}");
    assert_eq!(
        shown["pending"][0]["kind"], "llm",
        "the chat model's first: {shown}"
    );
    assert_eq!(shown["pending"][0]["base_url"], "http://10.0.0.5:8000/v1");
    assert_eq!(shown["pending"][0]["source"], "far.af");
    // Meanwhile a run goes to the provider's own URL, never to the file's.
    let answered = ok(
        &b.base,
        Method::POST,
        &format!("/v1/agents/{far}/messages"),
        Some(user_says("hello")),
    )
    .await;
    assert!(!said(&answered).is_empty(), "{answered}");

    let dismissed = ok(
        &a.base,
        Method::POST,
        "/app/dismiss_endpoint",
        Some(json!({"agent_id": far, "kind": "llm"})),
    )
    .await;
    let kinds: Vec<&Value> = dismissed["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["kind"])
        .collect();
    assert!(!kinds.contains(&&json!("llm")), "{dismissed}");
    assert_eq!(dismissed["llm_base_url"], Value::Null);

    let near = import("near.af").await;
    let accepted = ok(
        &b.base,
        Method::POST,
        "/app/accept_endpoint",
        Some(json!({"agent_id": near})),
    )
    .await;
    assert_eq!(accepted["pending"], json!([]), "{accepted}");
    assert_eq!(accepted["llm_base_url"], "http://10.0.0.5:8000/v1");
    let agent = ok(&a.base, Method::GET, &format!("/v1/agents/{near}"), None).await;
    assert_eq!(
        agent["llm_config"]["model_endpoint"], "http://10.0.0.5:8000/v1",
        "{agent}"
    );
    let (status, again) = call(
        &a.base,
        Method::POST,
        "/app/accept_endpoint",
        Some(json!({"agent_id": near})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memory_panel_and_model_settings_read_the_same_on_every_replica() {
    let mock = MockLlm::start(Script::Brain).await;
    let url = engram_test_postgres::database().url();
    let (a, b) = two_replicas(&url, &mock).await;
    let id = created(&a.base, agent_with_memory("Costly", &mock)).await;
    ok(
        &a.base,
        Method::POST,
        &format!("/v1/agents/{id}/messages"),
        Some(user_says("my name is Ana")),
    )
    .await;
    // The window leaves out what a replica does not offer; each of those is refused (501),
    // never answered from the replica's own machine.
    let info = ok(&b.base, Method::POST, "/app/app_info", None).await;
    let unavailable: Vec<&str> = info["unavailable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    let refused = [
        ("folders", "list_folders"),
        ("mcp", "list_mcp_servers"),
        ("built_in_models", "list_local_models"),
        ("provider_setup", "set_provider"),
        ("reranker", "reranker_status"),
        ("tool_python", "tool_python"),
    ];
    assert_eq!(
        unavailable,
        refused.iter().map(|(f, _)| *f).collect::<Vec<_>>()
    );
    for (feature, command) in refused {
        let (status, body) = call(&b.base, Method::POST, &format!("/app/{command}"), None).await;
        assert_eq!(status, StatusCode::NOT_IMPLEMENTED, "{feature}: {body}");
    }
    let templates = ok(&b.base, Method::POST, "/app/list_templates", None).await;
    assert!(!templates.as_array().unwrap().is_empty(), "{templates}");

    // The cost line: the steps A ran, priced on B once a price is set on A.
    let cost = |base: String| {
        let id = id.clone();
        async move {
            ok(
                &base,
                Method::POST,
                "/app/usage_cost",
                Some(json!({"agent_id": id})),
            )
            .await
        }
    };
    let unpriced = cost(b.base.clone()).await;
    let (prompt, completion) = (
        unpriced["prompt_tokens"].as_f64().unwrap(),
        unpriced["completion_tokens"].as_f64().unwrap(),
    );
    assert!(unpriced["step_count"].as_u64().unwrap() >= 1, "{unpriced}");
    assert!(prompt > 0.0, "{unpriced}");
    assert_eq!(unpriced["cost_usd"], Value::Null);
    assert_eq!(unpriced["unpriced_models"], json!(["openai/mock-small"]));
    let price = json!({"model": "openai/mock-small", "input_per_mtok": 2.0,
                       "output_per_mtok": 4.0, "source": "user"});
    ok(
        &a.base,
        Method::POST,
        "/app/set_model_price",
        Some(json!({"price": price})),
    )
    .await;
    let prices = ok(&b.base, Method::POST, "/app/model_prices", None).await;
    assert!(prices.as_array().unwrap().contains(&price), "{prices}");
    let priced = cost(b.base.clone()).await;
    let expected = (prompt * 2.0 + completion * 4.0) / 1e6;
    assert!(
        (priced["cost_usd"].as_f64().unwrap() - expected).abs() < 1e-12,
        "{priced}"
    );
    assert_eq!(priced["unpriced_models"], json!([]));
    ok(
        &b.base,
        Method::POST,
        "/app/delete_model_price",
        Some(json!({"model": "openai/mock-small"})),
    )
    .await;
    assert_eq!(cost(a.base.clone()).await["cost_usd"], Value::Null);

    // A context window set in the model picker on one replica moves agents on the other.
    ok(
        &b.base,
        Method::POST,
        "/app/set_model_window",
        Some(json!({"handle": "openai/mock-large", "context_window": 20_000})),
    )
    .await;
    let windows = ok(&a.base, Method::POST, "/app/model_windows", None).await;
    assert_eq!(
        windows,
        json!([{"handle": "openai/mock-large", "context_window": 20_000}])
    );
    let fits = ok(
        &a.base,
        Method::POST,
        "/app/check_model",
        Some(json!({"handle": "openai/mock-large", "agent_id": id})),
    )
    .await;
    assert_eq!(fits, Value::Null);
    ok(
        &b.base,
        Method::POST,
        "/app/set_model_window",
        Some(json!({"handle": "openai/mock-tiny", "context_window": 50})),
    )
    .await;
    let too_small = ok(
        &a.base,
        Method::POST,
        "/app/check_model",
        Some(json!({"handle": "openai/mock-tiny", "agent_id": id})),
    )
    .await;
    assert!(
        too_small.as_str().unwrap().contains("mock-tiny offers 50"),
        "{too_small}"
    );
    let moved = ok(
        &a.base,
        Method::POST,
        "/app/use_model_for",
        Some(json!({"agent_ids": [id], "handle": "openai/mock-large"})),
    )
    .await;
    assert_eq!(moved[0]["llm"]["model"], "openai/mock-large", "{moved}");
    let agent = ok(&b.base, Method::GET, &format!("/v1/agents/{id}"), None).await;
    assert_eq!(agent["llm_config"]["context_window"], 20_000, "{agent}");
    assert_eq!(
        ok(
            &b.base,
            Method::POST,
            "/app/agent_model_problem",
            Some(json!({"agent_id": id})),
        )
        .await,
        Value::Null
    );

    // Providers are each replica's own: one without the scripted model says what is missing.
    let bare = replica(&url, None).await;
    let problem = ok(
        &bare.base,
        Method::POST,
        "/app/agent_model_problem",
        Some(json!({"agent_id": id})),
    )
    .await;
    assert!(
        problem["summary"].as_str().unwrap().contains("openai"),
        "{problem}"
    );
    let stranded = ok(&bare.base, Method::POST, "/app/agents_without_model", None).await;
    assert!(
        stranded
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["agent_id"] == id.as_str()),
        "{stranded}"
    );

    // A passage written on A, changed from B's memory panel and by Letta's route on A.
    let passage = ok(
        &a.base,
        Method::POST,
        "/app/add_passage",
        Some(json!({"agent_id": id, "text": "Ana lives in Lisbon", "tags": ["home"]})),
    )
    .await;
    let pid = passage["id"].as_str().unwrap();
    let edited = ok(
        &b.base,
        Method::POST,
        "/app/edit_passage",
        Some(json!({"agent_id": id, "passage_id": pid, "text": "Ana moved to Porto"})),
    )
    .await;
    assert_eq!(edited["text"], "Ana moved to Porto");
    assert_eq!(edited["tags"], json!(["home"]));
    let patched = ok(
        &a.base,
        Method::PATCH,
        &format!("/v1/agents/{id}/archival-memory/{pid}"),
        Some(json!({"tags": ["home", "moves"]})),
    )
    .await;
    assert_eq!(patched[0]["text"], "Ana moved to Porto", "{patched}");
    let found = ok(
        &b.base,
        Method::POST,
        "/app/search_archival",
        Some(json!({"agent_id": id, "query": "Porto", "top_k": 5})),
    )
    .await;
    assert_eq!(found[0]["passage"]["id"], pid, "{found}");
    assert_eq!(found[0]["passage"]["tags"], json!(["home", "moves"]));
    let listed = ok(
        &b.base,
        Method::GET,
        &format!("/v1/agents/{id}/archival-memory"),
        None,
    )
    .await;
    let texts: Vec<&Value> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["text"])
        .collect();
    assert_eq!(texts, [&json!("Ana moved to Porto")], "{listed}");
}

/// Waits until none of `agent`'s passages lacks a vector; how many are left when it gives up.
async fn vectors_filled(pg: &PgStore, agent: &engram_core::AgentId) -> u64 {
    use engram_store_api::PassageStore;
    let mut left = u64::MAX;
    for _ in 0..200 {
        left = pg.count_passages_without_vectors(agent).await.unwrap();
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    left
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passages_imported_without_vectors_get_them_on_the_server() {
    use engram_store_api::{MessageStore, PassageStore};
    let mock = MockLlm::start(Script::Brain).await;
    let url = engram_test_postgres::database().url();
    let pg = PgStore::connect_with_pool_size(&url, 2).await.unwrap();
    let (a, b) = two_replicas(&url, &mock).await;
    let id = created(&a.base, agent_body("Librarian", &mock)).await;
    for text in [
        "Ana's locker is number 4471",
        "Bo plays chess on Sundays",
        "The office closes at six",
    ] {
        ok(
            &a.base,
            Method::POST,
            &format!("/v1/agents/{id}/archival-memory"),
            Some(json!({"text": text})),
        )
        .await;
    }
    let original = engram_core::AgentId::from(id.clone());
    assert_eq!(
        pg.count_passages_without_vectors(&original).await.unwrap(),
        0,
        "written on the server: embedded before they were stored"
    );

    // An agent file brings its passages without vectors; the replica that imports it fills
    // them in, in the background, and search works by words meanwhile.
    let file = ok(
        &a.base,
        Method::GET,
        &format!("/v1/agents/{id}/export"),
        None,
    )
    .await;
    let report = ok(
        &b.base,
        Method::POST,
        "/app/import_agent_file",
        Some(json!({"contents": file.to_string(), "file_name": "librarian.af"})),
    )
    .await;
    let copy = engram_core::AgentId::from(report["agents"][0].as_str().unwrap());
    assert_eq!(pg.count_passages(&copy).await.unwrap(), 3);
    assert_eq!(vectors_filled(&pg, &copy).await, 0, "the import's backfill");
    let vectors = pg.passage_vectors(&copy).await.unwrap();
    assert_eq!(vectors.len(), 3);
    assert!(vectors.iter().all(|(_, v)| !v.is_empty()));

    // A backfill a quit cut short goes on when a replica starts: passages left without a
    // vector are found on the server, not in the replica's own database.
    pg.insert_passages(
        &copy,
        &[engram_core::NewPassage {
            text: "The spare key is under the mat".into(),
            ..Default::default()
        }],
    )
    .await
    .unwrap();
    assert_eq!(pg.count_passages_without_vectors(&copy).await.unwrap(), 1);
    let c = replica(&url, Some(&mock)).await;
    c.engram.archival().resume_backfills().unwrap();
    assert_eq!(vectors_filled(&pg, &copy).await, 0, "resumed on start");

    // And on demand (`engram --database … archival backfill`).
    pg.insert_passages(
        &copy,
        &[engram_core::NewPassage {
            text: "Deliveries come on Tuesdays".into(),
            ..Default::default()
        }],
    )
    .await
    .unwrap();
    let done = a.engram.archival().backfill(&copy).await.unwrap();
    assert_eq!((done.embedded, done.remaining), (1, 0), "{done:?}");
    let hits = ok(
        &c.base,
        Method::GET,
        &format!("/v1/agents/{copy}/archival-memory/search?query=deliveries%20tuesday"),
        None,
    )
    .await;
    assert_eq!(
        hits["results"][0]["content"], "Deliveries come on Tuesdays",
        "{hits}"
    );

    // Its conversation gets vectors too, once a run on any replica is done, for recall search
    // by meaning.
    ok(
        &b.base,
        Method::POST,
        &format!("/v1/agents/{copy}/messages"),
        Some(user_says("Where is the spare key?")),
    )
    .await;
    let mut left = u64::MAX;
    for _ in 0..200 {
        left = pg.count_messages_without_vectors(&copy).await.unwrap();
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(left, 0, "the run's messages were embedded");
    let recalled = ok(
        &c.base,
        Method::POST,
        "/app/search_recall",
        Some(json!({"agent_id": copy, "query": "Where is the spare key?", "limit": 5})),
    )
    .await;
    assert!(
        recalled.to_string().contains("Where is the spare key?"),
        "{recalled}"
    );
}

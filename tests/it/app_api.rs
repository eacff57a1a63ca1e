//! The desktop UI's HTTP transport (`/app/…`) over real HTTP, with the scripted model: the
//! same commands the Tauri shell offers, the run streamed as SSE of `RunEvent`s, app-wide
//! notices, `{code, message}` errors, and the built UI served beside the API.

use engram_mock_llm::{MockLlm, Script};
use engram_secrets::MemoryStore;
use engram_server::{Auth, ServerConfig};
use futures::StreamExt;
use reqwest::StatusCode;
use secrecy::SecretString;
use serde_json::{Value, json};
use std::sync::Arc;

const TOKEN: &str = "app-test-token-42";

struct App {
    base: String,
    http: reqwest::Client,
    mock: MockLlm,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

impl App {
    async fn start() -> App {
        let mock = MockLlm::start(Script::Brain).await;
        let home = tempfile::tempdir().unwrap();
        let ui = tempfile::tempdir().unwrap();
        std::fs::write(
            ui.path().join("index.html"),
            "<!doctype html><title>Engram</title>",
        )
        .unwrap();
        std::fs::write(ui.path().join("app.js"), "console.log('engram')").unwrap();
        let engram = engram_suite::open(home.path(), Arc::new(MemoryStore::default()));
        let config = ServerConfig {
            ui_dir: Some(ui.path().to_owned()),
            ..ServerConfig::new(Auth::Token(SecretString::from(TOKEN)))
        };
        let base = engram_suite::serve(engram, config).await;
        App {
            base,
            http: reqwest::Client::new(),
            mock,
            _dirs: (home, ui),
        }
    }

    fn post(&self, command: &str) -> reqwest::RequestBuilder {
        self.http
            .post(format!("{}/app/{command}", self.base))
            .bearer_auth(TOKEN)
    }

    /// Calls a command; returns the status and the JSON answer.
    async fn call(&self, command: &str, args: Value) -> (StatusCode, Value) {
        let resp = self.post(command).json(&args).send().await.unwrap();
        let status = resp.status();
        (status, resp.json().await.unwrap())
    }

    /// Calls a command that must succeed.
    async fn ok(&self, command: &str, args: Value) -> Value {
        let (status, body) = self.call(command, args).await;
        assert_eq!(status, StatusCode::OK, "{command}: {body}");
        body
    }

    /// Sets the scripted model up as the `openai` provider and makes an agent on it.
    async fn agent(&self, name: &str) -> String {
        self.ok(
            "set_provider",
            json!({"setup": {"name": "openai", "base_url": self.mock.base_url(), "api_key": "sk-app-test"}}),
        )
        .await;
        let state = self
            .ok(
                "create_agent",
                json!({"new": {"name": name, "llm": {"model": "openai/mock-small", "context_window": 32000},
                               "blocks": [{"label": "human", "value": ""}, {"label": "persona", "value": "I am Sam."}]}}),
            )
            .await;
        state["id"].as_str().unwrap().to_owned()
    }

    /// Sends a message and returns the streamed events.
    async fn send(&self, agent: &str, text: &str) -> Vec<Value> {
        let resp = self
            .post("send_message")
            .json(&json!({"agent_id": agent, "text": text}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert!(
            resp.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        let text = resp.text().await.unwrap();
        text.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }
}

#[tokio::test]
async fn a_chat_streams_run_events_and_the_memory_edit_is_visible() {
    let app = App::start().await;
    let agent = app.agent("Sam").await;
    let events = app.send(&agent, "Hi! my name is Bob").await;
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"run_started"), "{types:?}");
    assert_eq!(types.last(), Some(&"done"), "{types:?}");
    assert_eq!(events.last().unwrap()["stop_reason"], "end_turn");
    let edit = events
        .iter()
        .find(|e| e["type"] == "memory_changed")
        .expect("a memory_changed event");
    assert_eq!(edit["block"]["label"], "human");
    assert!(edit["block"]["value"].as_str().unwrap().contains("Bob"));
    let reply: String = events
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert!(!reply.is_empty(), "no streamed text: {types:?}");

    let blocks = app.ok("list_blocks", json!({"agent_id": agent})).await;
    let human = blocks
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["label"] == "human")
        .unwrap();
    assert!(human["value"].as_str().unwrap().contains("Name: Bob"));
    let history = app
        .ok(
            "block_history",
            json!({"agent_id": agent, "label": "human"}),
        )
        .await;
    assert_eq!(history[0]["editor"]["kind"], "agent");

    // Scrolling back: the newest two, then the ones before them, oldest first each time.
    let newest = app
        .ok("list_messages", json!({"agent_id": agent, "limit": 2}))
        .await;
    let newest = newest.as_array().unwrap();
    assert_eq!(newest.len(), 2);
    assert!(newest[0]["seq"].as_i64() < newest[1]["seq"].as_i64());
    let older = app
        .ok(
            "list_messages",
            json!({"agent_id": agent, "limit": 50, "before": newest[0]["id"]}),
        )
        .await;
    let older = older.as_array().unwrap();
    assert!(!older.is_empty());
    assert!(
        older
            .iter()
            .all(|m| m["seq"].as_i64() < newest[0]["seq"].as_i64())
    );
    assert!(
        older
            .iter()
            .any(|m| m["role"] == "user" && m["content"] == "Hi! my name is Bob")
    );
}

#[tokio::test]
async fn notices_tell_other_windows_what_changed_whoever_changed_it() {
    let app = App::start().await;
    let agent = app.agent("Sam").await;
    let resp = app
        .http
        .get(format!("{}/app/notices", app.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.bytes_stream();
    // A hand edit through the app API, then a Letta-API edit: both are announced.
    app.ok(
        "update_block",
        json!({"agent_id": agent, "label": "persona", "patch": {"value": "I am Sam, still."}}),
    )
    .await;
    let resp = app
        .http
        .patch(format!(
            "{}/v1/agents/{agent}/core-memory/blocks/human",
            app.base
        ))
        .bearer_auth(TOKEN)
        .json(&json!({"value": "Name: Alice"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let mut seen = Vec::new();
    let mut buffer = String::new();
    while seen.len() < 2 {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), body.next())
            .await
            .expect("a notice within 10 s")
            .unwrap()
            .unwrap();
        buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            if let Some(data) = event.lines().find_map(|l| l.strip_prefix("data: ")) {
                seen.push(serde_json::from_str::<Value>(data).unwrap());
            }
        }
    }
    let expected = json!({"type": "memory_changed", "agent_id": agent});
    assert_eq!(seen, vec![expected.clone(), expected]);
}

#[tokio::test]
async fn providers_never_give_the_key_back() {
    let app = App::start().await;
    let info = app
        .ok(
            "set_provider",
            json!({"setup": {"name": "openai", "base_url": app.mock.base_url(), "api_key": "sk-secret-123"}}),
        )
        .await;
    assert_eq!(info["key_set"], true);
    let listed = app.ok("list_providers", json!({})).await;
    assert!(!listed.to_string().contains("sk-secret-123"), "{listed}");
    let models = app.ok("test_provider", json!({"name": "openai"})).await;
    assert!(!models.as_array().unwrap().is_empty());
    // The key reached the model server, so it is in use, not merely stored.
    let auth = app.mock.requests().last().unwrap().authorization.clone();
    assert_eq!(auth.as_deref(), Some("Bearer sk-secret-123"));
}

#[tokio::test]
async fn archival_pages_carry_the_total_and_search_finds_passages() {
    let app = App::start().await;
    let agent = app.agent("Sam").await;
    for text in ["Bob likes tea", "Bob plays chess", "Alya bakes cherry pie"] {
        app.ok(
            "add_passage",
            json!({"agent_id": agent, "text": text, "tags": ["facts"]}),
        )
        .await;
    }
    let page = app
        .ok(
            "list_passages",
            json!({"agent_id": agent, "list": {"offset": 0, "limit": 2}}),
        )
        .await;
    assert_eq!(
        (page["total"].as_u64(), page["offset"].as_u64()),
        (Some(3), Some(0))
    );
    assert_eq!(page["passages"].as_array().unwrap().len(), 2);
    // Newest first unless asked otherwise; the last page holds the oldest passage.
    assert_eq!(page["passages"][0]["text"], "Alya bakes cherry pie");
    let last = app
        .ok(
            "list_passages",
            json!({"agent_id": agent, "list": {"offset": 2, "limit": 2}}),
        )
        .await;
    assert_eq!(last["passages"][0]["text"], "Bob likes tea");
    let filtered = app
        .ok(
            "list_passages",
            json!({"agent_id": agent, "list": {"search": "bob", "offset": 0, "limit": 10}}),
        )
        .await;
    assert_eq!(filtered["total"], 2);
    // Edit a passage's text and tags in place; a tag filter then finds it, and only it.
    let first = last["passages"][0]["id"].clone();
    let edited = app
        .ok(
            "edit_passage",
            json!({"agent_id": agent, "passage_id": first,
                   "text": "Bob likes green tea", "tags": ["drinks"]}),
        )
        .await;
    assert_eq!(edited["tags"], json!(["drinks"]));
    let drinks = app
        .ok(
            "list_passages",
            json!({"agent_id": agent, "list": {"tags": ["drinks"], "offset": 0, "limit": 10}}),
        )
        .await;
    assert_eq!(drinks["total"], 1);
    assert_eq!(drinks["passages"][0]["text"], "Bob likes green tea");
    let (status, err) = app
        .call(
            "edit_passage",
            json!({"agent_id": agent, "passage_id": first, "text": "  "}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert_eq!(err["code"], "invalid_input");
    let found = app
        .ok(
            "search_archival",
            json!({"agent_id": agent, "query": "bob", "tags": ["drinks"]}),
        )
        .await;
    assert_eq!(found.as_array().unwrap().len(), 1, "{found}");
    assert_eq!(found[0]["passage"]["text"], "Bob likes green tea");
    let none = app
        .ok(
            "search_archival",
            json!({"agent_id": agent, "query": "bob", "end": "2001-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(none, json!([]));
    let hits = app
        .ok(
            "search_archival",
            json!({"agent_id": agent, "query": "cherry pie"}),
        )
        .await;
    assert_eq!(hits[0]["passage"]["text"], "Alya bakes cherry pie");
    let id = hits[0]["passage"]["id"].clone();
    app.ok(
        "delete_passage",
        json!({"agent_id": agent, "passage_id": id}),
    )
    .await;
    let page = app
        .ok(
            "list_passages",
            json!({"agent_id": agent, "list": {"offset": 0, "limit": 10}}),
        )
        .await;
    assert_eq!(page["total"], 2);
}

#[tokio::test]
async fn a_clone_is_a_separate_agent_with_its_own_blocks() {
    let app = App::start().await;
    let agent = app.agent("Sam").await;
    let copy = app
        .ok("clone_agent", json!({"agent_id": agent, "name": "Sam 2"}))
        .await;
    assert_eq!(copy["name"], "Sam 2");
    assert_ne!(copy["id"], json!(agent));
    let copy_id = copy["id"].clone();
    app.ok(
        "update_block",
        json!({"agent_id": copy_id, "label": "persona", "patch": {"value": "I am the copy."}}),
    )
    .await;
    let original = app.ok("get_agent", json!({"agent_id": agent})).await;
    let persona = original["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["label"] == "persona")
        .unwrap();
    assert_eq!(persona["value"], "I am Sam.");
    let agents = app.ok("list_agents", json!({})).await;
    assert_eq!(agents.as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn errors_are_code_and_message() {
    let app = App::start().await;
    let (status, body) = app
        .call("get_agent", json!({"agent_id": "agent-missing"}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["code"], "not_found");
    assert!(body["message"].as_str().unwrap().contains("agent-missing"));

    let (status, body) = app.call("get_agent", json!({"wrong": 1})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["code"], "invalid_input");

    let agent = app.agent("Sam").await;
    let (status, body) = app
        .call(
            "update_block",
            json!({"agent_id": agent, "label": "human", "patch": {"value": "x".repeat(6000)}}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["code"], "invalid_input");

    // A run that cannot start answers JSON, not a stream.
    let (status, body) = app
        .call("send_message", json!({"agent_id": agent, "text": "  "}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["code"], "invalid_input");
}

#[tokio::test]
async fn the_ui_is_served_without_a_token_and_the_api_is_not() {
    let app = App::start().await;
    for path in ["/", "/agents/some-deep-link"] {
        let resp = app
            .http
            .get(format!("{}{path}", app.base))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{path}");
        let csp = resp.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(csp.contains("script-src 'self'"), "{csp}");
        assert!(resp.text().await.unwrap().contains("<title>Engram</title>"));
    }
    let js = app
        .http
        .get(format!("{}/app.js", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(js.text().await.unwrap(), "console.log('engram')");

    let no_token = app
        .http
        .post(format!("{}/app/list_agents", app.base))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(no_token.status(), StatusCode::UNAUTHORIZED);
    // Unknown API paths are JSON 404s, not the UI's index page.
    let (status, body) = app.call("no_such_command", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["code"], "not_found");
}

#[tokio::test]
async fn tools_are_written_tried_and_attached_and_templates_make_agents() {
    let app = App::start().await;
    let templates = app.ok("list_templates", json!({})).await;
    assert!(
        templates
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == "task-queue"),
        "{templates}"
    );
    app.ok(
        "set_provider",
        json!({"setup": {"name": "openai", "base_url": app.mock.base_url(), "api_key": "sk-t"}}),
    )
    .await;
    let queue = app
        .ok(
            "create_agent",
            json!({"template": "task-queue", "new": {"name": "Planner",
                   "llm": {"model": "openai/mock-small", "context_window": 32000}}}),
        )
        .await;
    assert!(
        queue["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["label"] == "tasks" && b["value"] == "[]"),
        "{queue}"
    );
    assert!(
        queue["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("task_queue_push"))
    );

    let source = "def shout(agent_state, text: str) -> str:\n    \"\"\"Say it louder.\n\n    Args:\n        text: What to say.\n    \"\"\"\n    agent_state.memory.update_block_value('human', text.upper())\n    return text.upper()\n";
    let tool = app
        .ok("upsert_tool", json!({"new": {"source_code": source}}))
        .await;
    assert_eq!(tool["name"], "shout");
    assert_eq!(
        tool["json_schema"]["parameters"]["properties"]["text"]["type"],
        "string"
    );
    let agent = app.agent("Sam").await;
    let trial = app
        .ok(
            "try_tool",
            json!({"tool_id": tool["id"], "agent_id": agent, "args": {"text": "hi"}}),
        )
        .await;
    assert_eq!(trial["status"], "OK", "{trial}");
    assert_eq!(trial["message"], "HI");
    assert_eq!(
        trial["block_changes"],
        json!([{"label": "human", "value": "HI"}])
    );
    // Trying stores nothing.
    let human = app.ok("get_agent", json!({"agent_id": agent})).await["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["label"] == "human")
        .unwrap()["value"]
        .clone();
    assert_eq!(human, "");
    let tools = app
        .ok(
            "attach_tool",
            json!({"agent_id": agent, "tool_id": tool["id"]}),
        )
        .await;
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "shout")
    );
    let tools = app
        .ok(
            "detach_tool",
            json!({"agent_id": agent, "tool_id": tool["id"]}),
        )
        .await;
    assert!(
        !tools
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "shout")
    );
}

#[tokio::test]
async fn imported_code_and_endpoints_wait_for_the_trust_commands() {
    let app = App::start().await;
    let agent = app.agent("Sam").await;
    let source = "def shout(text: str) -> str:\n    \"\"\"Shout.\"\"\"\n    return text.upper()\n";
    let file = json!({
        "agents": [{"id": "agent-0", "name": "Shouter", "tool_ids": ["tool-0"], "messages": [],
                    "in_context_message_ids": [], "block_ids": []}],
        "tools": [{"id": "tool-0", "name": "shout", "source_type": "python", "source_code": source,
                   "json_schema": {"name": "shout", "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}}],
        "blocks": [],
        "engram": {"version": 1, "agents": {"agent-0": {
            "loop_style": "tool_loop", "max_steps": 5,
            "llm": {"model": "openai/mock-small", "base_url": "http://127.0.0.1:9/v1", "context_window": 8000},
            "tools": ["shout"], "created_at": "2025-01-01T00:00:00Z", "updated_at": "2025-01-01T00:00:00Z"}}}
    });
    let report = app
        .ok(
            "import_agent_file",
            json!({"contents": file.to_string(), "file_name": "shouter.af"}),
        )
        .await;
    assert_eq!(report["file_name"], "shouter.af");
    let tool = &report["details"][0]["tools"][0];
    assert_eq!(tool["name"], "shout");
    assert_eq!(tool["trusted"], false);
    assert_eq!(tool["origin"]["kind"], "agent_file");
    let imported = report["agents"][0].as_str().unwrap();
    assert_eq!(
        report["details"][0]["endpoints"][0]["base_url"],
        "http://127.0.0.1:9/v1"
    );

    let (status, err) = app
        .call(
            "trust_tool",
            json!({"tool": "shout", "expected_hash": "0".repeat(64)}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{err}");
    assert_eq!(err["code"], "conflict");
    let trusted = app
        .ok(
            "trust_tool",
            json!({"tool": "shout", "expected_hash": tool["source_hash"]}),
        )
        .await;
    assert_eq!(trusted["trusted"], true);
    let listed = app.ok("list_tools", json!({})).await;
    let shout = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "shout")
        .unwrap();
    assert_eq!(shout["trusted"], true);
    let untrusted = app.ok("untrust_tool", json!({"tool": "shout"})).await;
    assert_eq!(untrusted["trusted"], false);

    let shown = app
        .ok("agent_endpoints", json!({"agent_id": imported}))
        .await;
    assert_eq!(shown["llm_base_url"], Value::Null);
    assert_eq!(shown["pending"].as_array().unwrap().len(), 1);
    let accepted = app
        .ok("accept_endpoint", json!({"agent_id": imported}))
        .await;
    assert_eq!(accepted["llm_base_url"], "http://127.0.0.1:9/v1");
    assert!(accepted["pending"].as_array().unwrap().is_empty());
    let set = app
        .ok(
            "set_agent_base_url",
            json!({"agent_id": agent, "kind": "llm", "base_url": app.mock.base_url()}),
        )
        .await;
    assert_eq!(set["llm_base_url"], app.mock.base_url());
    let (status, _) = app
        .call(
            "set_agent_base_url",
            json!({"agent_id": agent, "kind": "llm", "base_url": "file:///etc/passwd"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let cleared = app
        .ok(
            "set_agent_base_url",
            json!({"agent_id": agent, "kind": "llm", "base_url": null}),
        )
        .await;
    assert_eq!(cleared["llm_base_url"], Value::Null);
}

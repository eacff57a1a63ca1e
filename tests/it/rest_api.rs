//! The REST API over real HTTP: the router bound to 127.0.0.1:0, the scripted model behind it,
//! requests from reqwest. Security rules first, then the routes the Letta tutorial uses.

use engram_mock_llm::{MockLlm, Reply, Script};
use engram_secrets::MemoryStore;
use engram_server::{Auth, ServerConfig};
use reqwest::StatusCode;
use secrecy::SecretString;
use serde_json::{Value, json};
use std::sync::Arc;

const TOKEN: &str = "test-token-0123456789";

struct Api {
    base: String,
    http: reqwest::Client,
    mock: MockLlm,
    _dir: tempfile::TempDir,
}

impl Api {
    async fn start(script: Script) -> Api {
        Self::start_with(script, |_| {}).await
    }

    async fn start_with(script: Script, adjust: impl FnOnce(&mut ServerConfig)) -> Api {
        let mock = MockLlm::start(script).await;
        let dir = tempfile::tempdir().unwrap();
        let engram = engram_suite::open(dir.path(), Arc::new(MemoryStore::default()));
        let mut config = ServerConfig::new(Auth::Token(SecretString::from(TOKEN)));
        adjust(&mut config);
        let base = engram_suite::serve(engram, config).await;
        Api {
            base,
            http: reqwest::Client::new(),
            mock,
            _dir: dir,
        }
    }

    fn req(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut r = self.req(method, path);
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

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call(reqwest::Method::GET, path, None).await
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    async fn patch(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(reqwest::Method::PATCH, path, Some(body)).await
    }

    async fn agent(&self, agent_type: &str) -> String {
        let (status, body) = self
            .post(
                "/v1/agents/",
                json!({
                    "name": "Sam",
                    "agent_type": agent_type,
                    "memory_blocks": [
                        {"label": "human", "value": ""},
                        {"label": "persona", "value": "I am Sam."}
                    ],
                    "model": "openai/mock-small",
                    "llm_config": {"model": "mock-small", "model_endpoint_type": "openai",
                                   "model_endpoint": self.mock.base_url(), "context_window": 32000}
                }),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["id"].as_str().unwrap().to_owned()
    }

    async fn send(&self, agent: &str, text: &str) -> Value {
        let (status, body) = self
            .post(
                &format!("/v1/agents/{agent}/messages"),
                json!({"messages": [{"role": "user", "content": text}]}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    /// The `data:` payloads of an SSE response.
    async fn stream(&self, agent: &str, body: Value) -> Vec<String> {
        let resp = self
            .req(
                reqwest::Method::POST,
                &format!("/v1/agents/{agent}/messages/stream"),
            )
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let text = resp.text().await.unwrap();
        text.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(str::to_owned)
            .collect()
    }
}

fn assert_detail(body: &Value) {
    assert!(body["detail"].is_string(), "not Letta-shaped: {body}");
}

#[tokio::test]
async fn requests_without_the_token_are_refused() {
    let api = Api::start(Script::Brain).await;
    for auth in [None, Some("Bearer wrong"), Some(TOKEN)] {
        let mut r = api.http.get(format!("{}/v1/agents/", api.base));
        if let Some(a) = auth {
            r = r.header("authorization", a);
        }
        let resp = r.send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
        assert_detail(&resp.json().await.unwrap());
    }
    let health = api
        .http
        .get(format!("{}/v1/health/", api.base))
        .send()
        .await
        .unwrap();
    assert_eq!(
        health.status(),
        StatusCode::OK,
        "the health check needs no token"
    );
    // A load balancer's readiness check: the database answers.
    let ready = api
        .http
        .get(format!("{}/healthz", api.base))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    let body: serde_json::Value = ready.json().await.unwrap();
    assert_eq!(body["status"], "ok", "{body}");
    assert_eq!(api.get("/v1/agents/").await, (StatusCode::OK, json!([])));
}

#[tokio::test]
async fn auth_can_be_switched_off_explicitly() {
    let api = Api::start_with(Script::Brain, |c| c.auth = Auth::Disabled).await;
    let resp = api
        .http
        .get(format!("{}/v1/agents", api.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test]
async fn foreign_host_and_origin_are_forbidden() {
    let api = Api::start(Script::Brain).await;
    let host = api
        .req(reqwest::Method::GET, "/v1/agents/")
        .header("host", "attacker.example:8283")
        .send()
        .await
        .unwrap();
    assert_eq!(host.status(), StatusCode::FORBIDDEN);
    assert_detail(&host.json().await.unwrap());
    let origin = api
        .req(reqwest::Method::GET, "/v1/agents/")
        .header("origin", "http://attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(origin.status(), StatusCode::FORBIDDEN);
    let local = api
        .req(reqwest::Method::GET, "/v1/agents/")
        .header("origin", "http://localhost:5173")
        .header("host", "localhost")
        .send()
        .await
        .unwrap();
    assert_eq!(local.status(), StatusCode::OK);
}

#[tokio::test]
async fn oversize_bodies_get_413() {
    let api = Api::start_with(Script::Brain, |c| c.body_limit = 1024).await;
    let big = json!({"name": "x".repeat(4096)});
    let (status, body) = api.post("/v1/agents/", big).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_detail(&body);
}

#[tokio::test]
async fn malformed_requests_and_unknown_ids_are_letta_shaped_4xx() {
    let api = Api::start(Script::Brain).await;
    let resp = api
        .req(reqwest::Method::POST, "/v1/agents/")
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_detail(&resp.json().await.unwrap());

    let (status, body) = api
        .post("/v1/agents/", json!({"memory_blocks": "nope"}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_detail(&body);

    for path in [
        "/v1/agents/agent-missing",
        "/v1/agents/agent-missing/messages",
        "/v1/agents/agent-missing/core-memory/blocks/human",
        "/v1/agents/agent-missing/archival-memory",
        "/v1/blocks/block-missing",
        "/v1/tools/tool-missing",
        "/v1/no-such-route",
    ] {
        let (status, body) = api.get(path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert_detail(&body);
    }
    let (status, body) = api
        .post(
            "/v1/agents/agent-missing/messages",
            json!({"messages": [{"role": "user", "content": "hi"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_detail(&body);
    let (status, _) = api.get("/v1/agents/?limit=lots").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn agents_round_trip_in_letta_shape() {
    let api = Api::start(Script::Brain).await;
    let id = api.agent("memgpt_v2_agent").await;
    let (status, agent) = api.get(&format!("/v1/agents/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(agent["agent_type"], "memgpt_agent");
    assert_eq!(agent["llm_config"]["model_endpoint_type"], "openai");
    assert_eq!(agent["llm_config"]["context_window"], 32000);
    assert!(agent["embedding_config"]["embedding_dim"].is_number());
    assert_eq!(agent["memory"]["blocks"].as_array().unwrap().len(), 2);
    assert!(
        agent["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "send_message")
    );
    assert!(agent["message_ids"].is_array());
    assert!(chrono::DateTime::parse_from_rfc3339(agent["created_at"].as_str().unwrap()).is_ok());

    let (_, renamed) = api
        .patch(&format!("/v1/agents/{id}"), json!({"name": "Samantha"}))
        .await;
    assert_eq!(renamed["name"], "Samantha");
    let (status, created) = api
        .post(
            "/v1/agents/",
            json!({"name": "bare", "include_base_tools": false, "tools": ["send_message"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    assert_eq!(created["tools"].as_array().unwrap().len(), 1);

    let (_, list) = api.get("/v1/agents/?limit=1").await;
    assert_eq!(list.as_array().unwrap().len(), 1);
    let (_, next) = api
        .get(&format!(
            "/v1/agents/?limit=1&after={}",
            list[0]["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(next[0]["name"], "bare");
    let (_, end) = api
        .get(&format!(
            "/v1/agents/?after={}",
            next[0]["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(end, json!([]), "paging ends with an empty page");

    let (status, _) = api
        .call(reqwest::Method::DELETE, &format!("/v1/agents/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        api.get(&format!("/v1/agents/{id}")).await.0,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn tutorial_flow_over_http() {
    let api = Api::start(Script::Brain).await;
    let id = api.agent("letta_v1_agent").await;

    let reply = api.send(&id, "my name is Bob").await;
    assert_eq!(reply["stop_reason"]["stop_reason"], "end_turn");
    assert!(reply["usage"]["step_count"].as_u64().unwrap() >= 1);
    let kinds: Vec<&str> = reply["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["message_type"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"tool_call_message") && kinds.contains(&"assistant_message"),
        "{kinds:?}"
    );
    let (_, human) = api
        .get(&format!("/v1/agents/{id}/core-memory/blocks/human"))
        .await;
    assert!(human["value"].as_str().unwrap().contains("Bob"), "{human}");

    let (status, created) = api
        .post(
            &format!("/v1/agents/{id}/archival-memory"),
            json!({"text": "The tulips bloom in April.", "tags": ["garden"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let (_, passages) = api.get(&format!("/v1/agents/{id}/archival-memory")).await;
    assert_eq!(passages[0]["text"], "The tulips bloom in April.");
    let (_, hits) = api
        .get(&format!(
            "/v1/agents/{id}/archival-memory/search?query=tulips&tags=garden&tags=other"
        ))
        .await;
    assert_eq!(hits["count"], 1, "{hits}");

    let reply = api
        .send(&id, "search your archival memory for tulips")
        .await;
    let call = reply["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["message_type"] == "tool_call_message")
        .unwrap();
    assert_eq!(call["tool_call"]["name"], "archival_memory_search");

    let chunks = api
        .stream(&id, json!({"messages": [{"role": "user", "content": "What is my name?"}], "stream_tokens": true}))
        .await;
    assert_eq!(chunks.last().map(String::as_str), Some("[DONE]"));
    let parsed: Vec<Value> = chunks[..chunks.len() - 1]
        .iter()
        .map(|c| serde_json::from_str(c).unwrap())
        .collect();
    let deltas: Vec<&Value> = parsed
        .iter()
        .filter(|c| c["message_type"] == "assistant_message")
        .collect();
    assert!(
        deltas.len() > 1,
        "token streaming sends several deltas: {parsed:?}"
    );
    assert!(
        deltas.iter().all(|d| d["id"] == deltas[0]["id"]),
        "deltas share one id"
    );
    let text: String = deltas
        .iter()
        .map(|d| d["content"].as_str().unwrap())
        .collect();
    assert!(text.contains("Bob"), "{text}");
    let n = parsed.len();
    assert_eq!(parsed[n - 2]["message_type"], "stop_reason");
    assert_eq!(parsed[n - 1]["message_type"], "usage_statistics");

    let (_, page) = api.get(&format!("/v1/agents/{id}/messages?limit=2")).await;
    let page = page.as_array().unwrap().clone();
    assert!(!page.is_empty() && page.len() <= 3, "{page:?}");
    let (_, all) = api
        .get(&format!("/v1/agents/{id}/messages?order=asc&limit=1000"))
        .await;
    assert!(
        all.as_array()
            .unwrap()
            .iter()
            .any(|m| m["message_type"] == "user_message" && m["content"] == "my name is Bob")
    );

    let (_, block) = api
        .post("/v1/blocks/", json!({"label": "tasks", "value": "[]"}))
        .await;
    let block_id = block["id"].as_str().unwrap();
    let (_, listed) = api.get("/v1/blocks/?label=tasks").await;
    assert_eq!(listed[0]["id"], block_id);
    let (status, attached) = api
        .patch(
            &format!("/v1/agents/{id}/core-memory/blocks/attach/{block_id}"),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        attached["memory"]["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["label"] == "tasks")
    );
    let (_, edited) = api
        .patch(
            &format!("/v1/agents/{id}/core-memory/blocks/tasks"),
            json!({"value": "[\"water tulips\"]"}),
        )
        .await;
    assert_eq!(edited["value"], "[\"water tulips\"]");
    let (_, detached) = api
        .patch(
            &format!("/v1/agents/{id}/core-memory/blocks/detach/{block_id}"),
            json!({}),
        )
        .await;
    assert_eq!(detached["memory"]["blocks"].as_array().unwrap().len(), 2);

    let (_, tools) = api.get("/v1/tools/").await;
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "archival_memory_search")
    );
    assert!(
        api.mock.violations().is_empty(),
        "{:#?}",
        api.mock.violations()
    );
}

#[tokio::test]
async fn a_provider_failure_ends_the_run_with_an_error_and_keeps_the_history_valid() {
    let api = Api::start(Script::Queue).await;
    let id = api.agent("letta_v1_agent").await;
    let fail = || Reply::Error {
        status: 400,
        body: json!({"error": {"message": "bad request (mock)", "type": "invalid_request_error"}}),
        retry_after: None,
    };
    api.mock.push(fail());
    let reply = api.send(&id, "hello").await;
    assert_eq!(reply["stop_reason"]["stop_reason"], "llm_api_error");
    assert!(reply["error"]["message"].is_string(), "{reply}");

    api.mock.push(fail());
    let chunks = api
        .stream(
            &id,
            json!({"messages": [{"role": "user", "content": "again"}]}),
        )
        .await;
    let parsed: Vec<Value> = chunks
        .iter()
        .filter(|c| *c != "[DONE]")
        .map(|c| serde_json::from_str(c).unwrap())
        .collect();
    let kinds: Vec<&str> = parsed
        .iter()
        .map(|c| c["message_type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["error_message", "stop_reason", "usage_statistics"]);
    assert_eq!(parsed[1]["stop_reason"], "llm_api_error");

    api.mock.push(Reply::text("All good now."));
    let reply = api.send(&id, "still there?").await;
    assert_eq!(reply["stop_reason"]["stop_reason"], "end_turn");
    assert!(
        api.mock.violations().is_empty(),
        "{:#?}",
        api.mock.violations()
    );
}

#[tokio::test]
async fn agents_export_and_import_as_agent_files() {
    let api = Api::start(Script::Brain).await;
    let id = api.agent("letta_v1_agent").await;
    api.send(&id, "my name is Bob").await;
    let resp = api
        .req(reqwest::Method::GET, &format!("/v1/agents/{id}/export"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let file = resp.bytes().await.unwrap();
    let parsed: Value = serde_json::from_slice(&file).unwrap();
    assert!(parsed["agents"].is_array(), "an Agent File v2");

    let boundary = "engram-test-boundary";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"sam.af\"\r\n\
         Content-Type: application/json\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(&file);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let resp = api
        .req(reqwest::Method::POST, "/v1/agents/import")
        .header(
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let report: Value = resp.json().await.unwrap();
    // Engram's report rides along, naming the uploaded file as the origin.
    assert_eq!(report["report"]["file_name"], "sam.af", "{report}");
    let new_id = report["agent_ids"][0].as_str().unwrap();
    assert_ne!(new_id, id);
    let (_, human) = api
        .get(&format!("/v1/agents/{new_id}/core-memory/blocks/human"))
        .await;
    assert!(human["value"].as_str().unwrap().contains("Bob"), "{human}");
    assert_eq!(
        api.get("/v1/agents/agent-missing/export").await.0,
        StatusCode::NOT_FOUND
    );
}

/// `bytes` as a one-file multipart form (field `file`), with its content type.
fn multipart(name: &str, bytes: &[u8]) -> (String, Vec<u8>) {
    const BOUNDARY: &str = "engram-upload-boundary-7f3a";
    let mut body = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n\
         Content-Type: text/plain\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={BOUNDARY}"), body)
}

/// A ship's log of `bytes` bytes or a little more, a numbered line each.
fn ships_log(bytes: usize) -> Vec<u8> {
    let mut text = String::with_capacity(bytes + 100);
    let mut i = 0;
    while text.len() < bytes {
        i += 1;
        text.push_str(&format!(
            "Entry {i}: the ferry left the harbour at dawn with {} passengers and calm seas.\n",
            i % 97
        ));
    }
    text.into_bytes()
}

impl Api {
    async fn folder(&self, name: &str) -> String {
        let (status, body) = self.post("/v1/folders/", json!({ "name": name })).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["id"].as_str().unwrap().to_owned()
    }

    /// Sends only the head of a `POST` announcing a `length`-byte body, asking to continue
    /// (`Expect: 100-continue`, as clients sending big files do), and reads the answer: a route
    /// that refuses the size answers before any of the body is sent, so the check is exact
    /// (writing the whole body would race the server closing the connection).
    async fn announce(&self, path: &str, content_type: &str, length: usize) -> (StatusCode, Value) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let host = self.base.trim_start_matches("http://");
        let mut tcp = tokio::net::TcpStream::connect(host).await.unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: {content_type}\r\nContent-Length: {length}\r\n\
             Expect: 100-continue\r\nConnection: close\r\n\r\n"
        );
        tcp.write_all(head.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        tcp.read_to_end(&mut answer).await.unwrap();
        let answer = String::from_utf8(answer).unwrap();
        let status: u16 = answer[9..12].parse().unwrap();
        let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        (
            StatusCode::from_u16(status).unwrap(),
            serde_json::from_str(body).unwrap_or(Value::String(body.to_owned())),
        )
    }

    async fn upload(&self, path: &str, name: &str, bytes: &[u8]) -> (StatusCode, Value) {
        let (content_type, body) = multipart(name, bytes);
        let resp = self
            .req(reqwest::Method::POST, path)
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        let status = resp.status();
        (status, resp.json().await.unwrap_or(Value::Null))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_over_the_default_body_limit_upload_through_both_routes() {
    let api = Api::start(Script::Brain).await;
    let folder = api.folder("logs").await;
    // Over the 8 MiB every other route takes, under the 64 MiB a document may have.
    let log = ships_log(9 * 1024 * 1024);
    let (status, file) = api
        .upload(&format!("/v1/folders/{folder}/upload"), "log.txt", &log)
        .await;
    assert_eq!(status, StatusCode::OK, "{file}");
    assert_eq!(file["processing_status"], "completed", "{file}");
    assert_eq!(file["file_size"], log.len(), "{file}");

    // The window's route carries the bytes as base64 in JSON: 12 MiB on the wire.
    use base64::Engine as _;
    let data = base64::engine::general_purpose::STANDARD.encode(&log);
    assert!(data.len() > engram_server::DEFAULT_BODY_LIMIT);
    let (status, added) = api
        .post(
            "/app/upload_folder_file",
            json!({ "folder_id": folder, "file_name": "copy.txt", "data_base64": data }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{added}");
    let (_, files) = api.get(&format!("/v1/folders/{folder}/files")).await;
    let names: Vec<&str> = files
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["copy.txt", "log.txt"], "{files}");
    let (_, text) = api
        .get(&format!("/v1/folders/{folder}/files?include_content=true"))
        .await;
    let last = std::str::from_utf8(&log).unwrap().lines().last().unwrap();
    assert!(
        text[1]["content"]
            .as_str()
            .is_some_and(|t| t.trim_end().ends_with(last)),
        "the end of the file was not read: {}",
        text[1]["content"].as_str().map_or(0, str::len)
    );

    // Every other route keeps the small limit, and says what it is.
    let (status, body) = api
        .announce("/v1/agents/", "application/json", 9 * 1024 * 1024)
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("at most 8.0 MiB (8388608 bytes)"),
        "{body}"
    );
}

#[tokio::test]
async fn an_upload_over_the_upload_limit_is_refused_with_the_limit_named_and_nothing_stored() {
    let api = Api::start_with(Script::Brain, |c| c.upload_limit = 1024 * 1024).await;
    let folder = api.folder("logs").await;
    let (content_type, _) = multipart("log.txt", b"");
    let (status, body) = api
        .announce(
            &format!("/v1/sources/{folder}/upload"),
            &content_type,
            3 * 1024 * 1024 / 2,
        )
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("at most 1.0 MiB (1048576 bytes)"),
        "{body}"
    );
    let (status, body) = api
        .announce("/app/upload_folder_file", "application/json", 2 << 20)
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    let (_, files) = api.get(&format!("/v1/folders/{folder}/files")).await;
    assert_eq!(files, json!([]));
    // Under the limit, the same route takes it.
    let (status, file) = api
        .upload(
            &format!("/v1/sources/{folder}/upload"),
            "log.txt",
            &ships_log(512 * 1024),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{file}");
}

//! Users of a shared `engram serve`: each with tokens of their own (shown once, kept hashed),
//! reaching only the agents they made or were given. Another user's token is walked through
//! every route the server has (read from the router's source, so a route added later is
//! walked too): nothing of the owner's agent comes back, nothing of it changes. The walks and
//! the sharing run on both stores: the desktop's SQLite file and a server on PostgreSQL.

use engram_mock_llm::{MockLlm, Script};
use engram_secrets::MemoryStore;
use engram_server::{Auth, ServerConfig};
use engram_service::{Engram, Options};
use engram_store_pg::PgStore;
use reqwest::{Method, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};
use std::sync::Arc;

const ADMIN: &str = "admin-token-0123456789";
/// A value only Ana's agent holds: no answer to anyone else may contain it.
const SECRET: &str = "Ana's locker code is 4471";

/// Where the server keeps its agents.
#[derive(Clone, Copy, Debug)]
enum Store {
    /// One SQLite file in the data directory (the desktop's default).
    Sqlite,
    /// A fresh database in the test cluster, the engine one replica of a shared server.
    Postgres,
}

/// Two tests of one body: `$sqlite` on the SQLite store, `$pg` on PostgreSQL.
macro_rules! on_both_stores {
    ($sqlite:ident, $pg:ident, $body:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $sqlite() {
            $body(Store::Sqlite).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $pg() {
            $body(Store::Postgres).await;
        }
    };
}

struct Server {
    home: tempfile::TempDir,
    engram: Arc<Engram>,
    /// The database's URL when on PostgreSQL.
    database: Option<String>,
    base: String,
    http: reqwest::Client,
    mock: MockLlm,
}

impl Server {
    async fn start() -> Server {
        Server::on(Store::Sqlite).await
    }

    async fn on(store: Store) -> Server {
        let mock = MockLlm::start(Script::Brain).await;
        let home = tempfile::tempdir().unwrap();
        let (engram, database) = match store {
            Store::Sqlite => (
                engram_suite::open(home.path(), Arc::new(MemoryStore::default())),
                None,
            ),
            Store::Postgres => {
                let url = engram_test_postgres::database().url();
                let pg = Arc::new(PgStore::connect(&url).await.unwrap());
                let options = Options {
                    home: Some(home.path().to_owned()),
                    secrets: Arc::new(MemoryStore::default()),
                    env: Arc::new(|_| None),
                };
                let engram = Engram::open_shared(options, pg.clone(), pg).unwrap();
                (engram, Some(url))
            }
        };
        let config = ServerConfig::new(Auth::Token(SecretString::from(ADMIN)));
        let base = engram_suite::serve(engram.clone(), config).await;
        Server {
            home,
            engram,
            database,
            base,
            http: reqwest::Client::new(),
            mock,
        }
    }

    /// The administrator's `engram` command on this server's data: its data directory, and
    /// its database when on PostgreSQL. Asserts it succeeded; its stdout.
    fn cli(&self, args: &[&str]) -> String {
        let mut cmd = engram_suite::cli_command(self.home.path());
        if let Some(url) = &self.database {
            cmd.arg("--database").arg(url);
        }
        engram_suite::stdout_ok(&cmd.args(args).output().expect("run engram"))
    }

    /// A user and a token of theirs.
    async fn user(&self, name: &str) -> String {
        let users = self.engram.users();
        users.create(name).await.unwrap();
        users
            .issue_token(name, "test")
            .await
            .unwrap()
            .expose_secret()
            .to_owned()
    }

    async fn call(
        &self,
        token: &str,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, String) {
        let mut r = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token);
        if let Some(b) = body {
            r = r.json(&b);
        }
        let resp = r.send().await.unwrap();
        (resp.status(), resp.text().await.unwrap())
    }

    async fn ok(&self, token: &str, method: Method, path: &str, body: Option<Value>) -> Value {
        let (status, text) = self.call(token, method.clone(), path, body).await;
        assert_eq!(status, StatusCode::OK, "{method} {path}: {text}");
        serde_json::from_str(&text).unwrap()
    }

    /// The body creating an agent on the scripted model with `human` (holding [`SECRET`]) and
    /// `persona` blocks, `extra`'s fields added or replacing those.
    fn agent_body(&self, name: &str, extra: Value) -> Value {
        let mut body = json!({
            "name": name,
            "memory_blocks": [{"label": "human", "value": SECRET}, {"label": "persona", "value": "I help."}],
            "model": "openai/mock-small",
            "llm_config": {"model": "mock-small", "model_endpoint_type": "openai",
                           "model_endpoint": self.mock.base_url(), "context_window": 32000}
        });
        if let (Some(b), Some(x)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(x.clone());
        }
        body
    }

    async fn agent(&self, token: &str, name: &str, extra: Value) -> Value {
        let body = self.agent_body(name, extra);
        self.ok(token, Method::POST, "/v1/agents/", Some(body))
            .await
    }
}

/// The id of the agent's block labelled `label`, from an agent as the API shows it.
fn block_id(agent: &Value, label: &str) -> String {
    agent["memory"]["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["label"] == label)
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Every route pattern the server registers, from its source: `.route("…")` literals and the
/// folder routes written with `format!` under both of their names.
fn route_patterns() -> Vec<String> {
    let source = include_str!("../../crates/server/src/routes/mod.rs");
    let mut out = Vec::new();
    for piece in source.split('"').skip(1).step_by(2) {
        if !piece.starts_with("/v1/") {
            continue;
        }
        let pattern = piece.replace("{{", "{").replace("}}", "}");
        for kind in ["folders", "sources"] {
            let p = pattern.replace("{kind}", kind);
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out.push("/app/{command}".to_owned());
    out
}

/// A route pattern with its parameters filled in.
fn fill(pattern: &str, ids: &[(&str, String)]) -> String {
    let mut path = pattern.to_owned();
    for (name, value) in ids {
        path = path.replace(&format!("{{{name}}}"), value);
    }
    assert!(!path.contains('{'), "a parameter without a value: {path}");
    path
}

on_both_stores!(
    another_users_token_reaches_nothing_of_an_agent_through_any_route,
    another_users_token_reaches_nothing_of_an_agent_through_any_route_on_postgres,
    walk_every_route
);

async fn walk_every_route(store: Store) {
    let s = Server::on(store).await;
    let ana = s.user("ana").await;
    let ben = s.user("ben").await;
    let owned = AnasAgent::make(&s, &ana).await;
    let (agent_id, block_id, passage_id) =
        (owned.id.clone(), owned.block.clone(), owned.passage.clone());
    let ids = [
        ("agent_id", agent_id.clone()),
        ("block_id", block_id.clone()),
        ("*label", "human".to_owned()),
        ("message_id", owned.message.clone()),
        ("memory_id", passage_id.clone()),
        (
            "folder_id",
            "source-00000000-0000-0000-0000-000000000000".to_owned(),
        ),
        ("file_id", "file-x".to_owned()),
        ("tool_id", "tool-x".to_owned()),
        ("name", "docs".to_owned()),
        ("tool", "t".to_owned()),
        ("mcp_server_id", "mcp_server-x".to_owned()),
        ("group_id", "group-x".to_owned()),
        // The window's commands are walked one by one below; this one is the administrator's.
        ("command", "list_providers".to_owned()),
    ];
    let patterns = route_patterns();
    assert!(patterns.len() > 60, "read the routes: {patterns:?}");
    let mut walked = 0;
    for pattern in &patterns {
        let path = fill(pattern, &ids);
        for method in [
            Method::GET,
            Method::POST,
            Method::PATCH,
            Method::PUT,
            Method::DELETE,
        ] {
            let (status, text) = s.call(&ben, method.clone(), &path, Some(json!({}))).await;
            walked += 1;
            assert_ne!(status, StatusCode::UNAUTHORIZED, "{method} {path}: {text}");
            // An id Ben sent may come back in an error; nothing else of Ana's may.
            for own in [SECRET, &agent_id, &block_id, &passage_id] {
                assert!(
                    path.contains(own) || !text.contains(own),
                    "{method} {path} answered {status} with Ana's {own}: {text}"
                );
            }
            if status.is_success() {
                // Only routes that show nothing of others' agents may answer.
                let makes_a_block = method == Method::POST && pattern.starts_with("/v1/blocks");
                assert!(
                    makes_a_block
                        || ["/v1/health", "/v1/models", "/v1/agents"]
                            .iter()
                            .any(|open| pattern.starts_with(open)),
                    "{method} {path} answered {status}: {text}"
                );
            }
        }
    }
    assert!(walked > 300, "walked {walked} requests");

    // Nothing of Ana's changed, and she still reaches all of it.
    owned.unchanged(&s, &ana).await;
    // Ben's list holds only what Ben made during the walk; the administrator sees Ana's too.
    let listed = s.ok(&ana, Method::GET, "/v1/agents/", None).await;
    assert_eq!(listed.as_array().unwrap().len(), 1);
    let all = s.ok(ADMIN, Method::GET, "/v1/agents/", None).await;
    assert!(all.to_string().contains(&agent_id));
}

on_both_stores!(
    a_shared_agent_allows_what_its_access_says,
    a_shared_agent_allows_what_its_access_says_on_postgres,
    share_an_agent
);

async fn share_an_agent(store: Store) {
    let s = Server::on(store).await;
    let ana = s.user("ana").await;
    let ben = s.user("ben").await;
    let agent = s.agent(&ana, "Support memory", json!({})).await;
    let id = agent["id"].as_str().unwrap().to_owned();
    let human = block_id(&agent, "human");
    let send = json!({"messages": [{"role": "user", "content": "hi"}]});
    let edit = json!({"value": "edited by Ben"});

    s.engram
        .users()
        .share(
            &id.as_str().into(),
            "ben",
            Some(engram_core::AgentAccess::Read),
        )
        .await
        .unwrap();
    let seen = s
        .ok(&ben, Method::GET, &format!("/v1/agents/{id}"), None)
        .await;
    assert_eq!(seen["name"], "Support memory");
    let block = s
        .ok(&ben, Method::GET, &format!("/v1/blocks/{human}"), None)
        .await;
    assert_eq!(block["value"], SECRET);
    let listed = s.ok(&ben, Method::GET, "/v1/agents/", None).await;
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    for (method, path, body) in [
        (
            Method::POST,
            format!("/v1/agents/{id}/messages"),
            send.clone(),
        ),
        (Method::PATCH, format!("/v1/blocks/{human}"), edit.clone()),
        (
            Method::PATCH,
            format!("/v1/agents/{id}/core-memory/blocks/human"),
            edit.clone(),
        ),
    ] {
        let (status, text) = s.call(&ben, method.clone(), &path, Some(body)).await;
        assert_eq!(
            status,
            StatusCode::FORBIDDEN,
            "read only: {method} {path}: {text}"
        );
    }
    // Bringing the shared block into an agent of his own needs write access.
    let (status, _) = s
        .call(
            &ben,
            Method::POST,
            "/v1/agents/",
            Some(s.agent_body("Ben's", json!({"memory_blocks": [], "block_ids": [human]}))),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Raised with the administrator's command, as a person would.
    s.cli(&["user", "share", &id, "ben", "--access", "write"]);
    s.ok(
        &ben,
        Method::POST,
        &format!("/v1/agents/{id}/messages"),
        Some(send),
    )
    .await;
    let edited = s
        .ok(
            &ben,
            Method::PATCH,
            &format!("/v1/blocks/{human}"),
            Some(edit),
        )
        .await;
    assert_eq!(edited["value"], "edited by Ben");
    let own = s
        .agent(
            &ben,
            "Ben's",
            json!({"memory_blocks": [], "block_ids": [human]}),
        )
        .await;
    assert_eq!(own["memory"]["blocks"][0]["value"], "edited by Ben");
    let (status, _) = s
        .call(&ben, Method::DELETE, &format!("/v1/agents/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "only the owner deletes");

    // Taken back: gone from Ben's view, as if it did not exist.
    s.engram
        .users()
        .share(&id.as_str().into(), "ben", None)
        .await
        .unwrap();
    let (status, _) = s
        .call(&ben, Method::GET, &format!("/v1/agents/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = s
        .call(&ana, Method::DELETE, &format!("/v1/agents/{id}"), None)
        .await;
    assert!(status.is_success(), "the owner deletes");

    // A block made on its own (the shared-memory tutorial's first step) is its maker's:
    // she puts it on a new agent; Ben neither sees it nor may take it in.
    let team = s
        .ok(
            &ana,
            Method::POST,
            "/v1/blocks",
            Some(json!({"label": "team", "value": SECRET})),
        )
        .await;
    let team = team["id"].as_str().unwrap().to_owned();
    let (status, _) = s
        .call(&ben, Method::GET, &format!("/v1/blocks/{team}"), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = s.call(&ben, Method::GET, "/v1/blocks", None).await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "the list of all blocks is not a user's"
    );
    let with_team = s.agent(&ana, "Team", json!({"block_ids": [team]})).await;
    let labels: Vec<_> = with_team["memory"]["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["label"].as_str().unwrap().to_owned())
        .collect();
    assert!(labels.contains(&"team".to_owned()), "{labels:?}");
    let (status, _) = s
        .call(
            &ben,
            Method::POST,
            "/v1/agents/",
            Some(s.agent_body("Ben's", json!({"memory_blocks": [], "block_ids": [team]}))),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_is_shown_once_kept_hashed_and_revocable() {
    let s = Server::start().await;
    let home = s.home.path();
    let out = engram_suite::cli(home, &["user", "add", "carl"]);
    engram_suite::stdout_ok(&out);
    let token = engram_suite::stdout_ok(&engram_suite::cli(
        home,
        &["user", "token", "carl", "--label", "laptop"],
    ))
    .trim()
    .to_owned();
    assert!(
        token.starts_with("engram-user-") && token.len() == 12 + 64,
        "{token}"
    );

    let mine = s.agent(&token, "Carl's", json!({})).await;
    assert!(mine["id"].is_string());
    let (status, _) = s
        .call(&token, Method::POST, "/app/list_providers", None)
        .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "the window's settings are the administrator's"
    );

    // Neither the token nor its hex appears anywhere in the data directory's files.
    let mut files = vec![home.to_owned()];
    while let Some(p) = files.pop() {
        if p.is_dir() {
            files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else {
            let bytes = std::fs::read(&p).unwrap_or_default();
            let hex = &token["engram-user-".len()..];
            assert!(
                !bytes.windows(hex.len()).any(|w| w == hex.as_bytes()),
                "{} holds the token",
                p.display()
            );
        }
    }

    let revoked = engram_suite::stdout_ok(&engram_suite::cli(home, &["user", "revoke", "carl"]));
    assert_eq!(revoked.trim(), "revoked 1 token(s)");
    let (status, _) = s.call(&token, Method::GET, "/v1/agents/", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = s
        .call("engram-user-not-a-token", Method::GET, "/v1/agents/", None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_takes_its_token_from_a_secrets_file_it_alone_may_read() {
    use std::io::BufRead as _;
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("secrets.toml");
    std::fs::write(
        &file,
        "rest_api_token = \"file-token-0123456789\"\n[providers]\nopenai = \"sk-from-file\"\n",
    )
    .unwrap();
    let serve = |mode: u32| {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        engram_suite::cli_command(home.path())
            .arg("--secrets-file")
            .arg(&file)
            .args(["serve", "--port", "0", "--show-token"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    #[cfg(unix)]
    {
        let refused = serve(0o644).wait_with_output().unwrap();
        assert!(!refused.status.success());
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(said.contains("chmod 600"), "{said}");
    }
    let mut child = serve(0o600);
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = lines.next().unwrap().unwrap();
    let base = addr.strip_prefix("listening on ").unwrap().to_owned();
    assert_eq!(
        lines.next().unwrap().unwrap(),
        "token: file-token-0123456789"
    );
    let status = reqwest::Client::new()
        .get(format!("{base}/v1/agents/"))
        .bearer_auth("file-token-0123456789")
        .send()
        .await
        .unwrap()
        .status();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(status, StatusCode::OK);
    // The key was never copied into the data directory.
    let db = std::fs::read(home.path().join("engram.db")).unwrap();
    assert!(!db.windows(12).any(|w| w == b"sk-from-file"));
}

/// Arguments for any window command: every field a command may name, filled with `agent` and
/// Ana's ids (unknown fields are ignored; a command whose shapes do not fit answers 400).
fn app_args(agent: &str, ana: &AnasAgent) -> Value {
    json!({
        "agent_id": agent,
        "agent_ids": [agent],
        "passage_id": ana.passage,
        "message_id": ana.message,
        "block_id": ana.block,
        "run_id": ana.run,
        "run_ids": [ana.run],
        "label": "human",
        "text": "overwritten",
        "query": "locker",
        "limit": 50,
        "patch": {"value": "overwritten", "name": "taken"},
        "list": {},
        "new": {"name": "Ben's copy", "block_ids": [ana.block]},
        "name": "Ben's",
        "tags": [],
        "before": null,
        "at": {"newest": null},
        "format": "agent_file",
        "handle": "openai/mock-small"
    })
}

/// Ana's agent with what no one else may read or change: a block holding [`SECRET`], a
/// passage, a message and the run that wrote it, and how many messages it has.
struct AnasAgent {
    id: String,
    block: String,
    passage: String,
    message: String,
    run: String,
    messages: Value,
}

impl AnasAgent {
    /// Makes it with `ana`'s token: an archived passage and one chat turn.
    async fn make(s: &Server, ana: &str) -> AnasAgent {
        let agent = s.agent(ana, "Ana's helper", json!({})).await;
        let id = agent["id"].as_str().unwrap().to_owned();
        let passage = s
            .ok(
                ana,
                Method::POST,
                &format!("/v1/agents/{id}/archival-memory"),
                Some(json!({"text": format!("{SECRET}, archived")})),
            )
            .await;
        s.ok(
            ana,
            Method::POST,
            &format!("/v1/agents/{id}/messages"),
            Some(json!({"messages": [{"role": "user", "content": "hello"}]})),
        )
        .await;
        let messages = s
            .ok(ana, Method::GET, &format!("/v1/agents/{id}/messages"), None)
            .await;
        let run = s
            .engram
            .runs()
            .records(&engram_core::AgentId::from(id.as_str()), None)
            .await
            .unwrap()[0]
            .id
            .to_string();
        let count = s
            .ok(
                ana,
                Method::GET,
                &format!("/v1/agents/{id}/messages/count"),
                None,
            )
            .await;
        AnasAgent {
            block: block_id(&agent, "human"),
            passage: passage[0]["id"].as_str().unwrap().to_owned(),
            message: messages[0]["id"].as_str().unwrap().to_owned(),
            run,
            messages: count,
            id,
        }
    }

    /// Asserts, with `ana`'s token, that its block, messages and passage are as made.
    async fn unchanged(&self, s: &Server, ana: &str) {
        let id = &self.id;
        let block = s
            .ok(
                ana,
                Method::GET,
                &format!("/v1/agents/{id}/core-memory/blocks/human"),
                None,
            )
            .await;
        assert_eq!(block["value"], SECRET);
        let count = s
            .ok(
                ana,
                Method::GET,
                &format!("/v1/agents/{id}/messages/count"),
                None,
            )
            .await;
        assert_eq!(count, self.messages);
        let passages = s
            .ok(
                ana,
                Method::GET,
                &format!("/v1/agents/{id}/archival-memory"),
                None,
            )
            .await;
        assert_eq!(passages.as_array().unwrap().len(), 1);
        assert_eq!(passages[0]["text"], format!("{SECRET}, archived"));
    }
}

on_both_stores!(
    another_users_window_reaches_nothing_of_an_agent_through_any_command,
    another_users_window_reaches_nothing_of_an_agent_through_any_command_on_postgres,
    walk_every_command
);

async fn walk_every_command(store: Store) {
    let s = Server::on(store).await;
    let ana = s.user("ana").await;
    let ben = s.user("ben").await;
    let ids = AnasAgent::make(&s, &ana).await;
    let agent_id = ids.id.clone();

    // Ben's window: his own agent, made through the window's API, is his.
    let made = s
        .ok(
            &ben,
            Method::POST,
            "/app/create_agent",
            Some(
                json!({"new": {"name": "Ben's", "blocks": [{"label": "human", "value": "Ben"}],
                                "llm": {"model": "openai/mock-small", "base_url": s.mock.base_url(),
                                        "context_window": 32000}}}),
            ),
        )
        .await;
    let bens_agent = made["id"].as_str().unwrap().to_owned();
    let listed = s.ok(&ben, Method::POST, "/app/list_agents", None).await;
    let names: Vec<_> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].clone())
        .collect();
    assert_eq!(names, [json!(bens_agent)]);
    let info = s.ok(&ben, Method::POST, "/app/app_info", None).await;
    assert_eq!(
        (info["user"].as_str(), info["home"].as_str()),
        (Some("ben"), Some(""))
    );

    // Every command of the window, first on Ana's agent, then on Ben's own with Ana's ids.
    let mut answered = Vec::new();
    // Deleting Ben's agent goes last, so every other command finds it.
    let mut defs: Vec<_> = engram_service::commands::list()
        .iter()
        .filter(|d| d.http)
        .collect();
    defs.sort_by_key(|d| d.name == "delete_agent");
    for def in defs {
        for (on, target) in [("ana's", &agent_id), ("ben's", &bens_agent)] {
            let path = format!("/app/{}", def.name);
            let (status, text) = s
                .call(&ben, Method::POST, &path, Some(app_args(target, &ids)))
                .await;
            assert_ne!(status, StatusCode::UNAUTHORIZED, "{path} on {on}: {text}");
            assert!(
                !text.contains(SECRET),
                "{path} on {on} showed Ana's block: {text}"
            );
            if on == "ben's" {
                // Ana's agent id was not sent: nothing may name it.
                assert!(
                    !text.contains(&agent_id),
                    "{path} on {on} named Ana's agent: {text}"
                );
            }
            if status.is_success() {
                answered.push(format!("{} on {on}", def.name));
                // Ana's ids were sent, but a command that went through shows none of them.
                for own in [&ids.block, &ids.passage, &ids.message, &ids.run] {
                    assert!(
                        !text.contains(own.as_str()),
                        "{path} on {on} showed Ana's {own}: {text}"
                    );
                }
                // On Ana's agent only commands that name no agent may answer.
                let agentless = [
                    "app_info",
                    "list_agents",
                    "list_templates",
                    "get_default_model",
                ];
                assert!(
                    agentless.contains(&def.name) || on == "ben's",
                    "{path} answered {status} on Ana's agent: {text}"
                );
                assert_ne!(
                    def.access,
                    engram_service::commands::Access::Admin,
                    "{path}: {text}"
                );
            }
        }
    }
    assert!(
        answered.iter().any(|a| a == "send_message on ben's")
            && answered.iter().any(|a| a == "list_passages on ben's"),
        "Ben's window works on his agent: {answered:?}"
    );

    // Nothing of Ana's changed.
    ids.unchanged(&s, &ana).await;
    assert_eq!(
        s.ok(&ana, Method::GET, "/v1/agents/", None).await[0]["name"],
        "Ana's helper"
    );
}

/// Reads the notice stream at `path` with `token` until `want` appears or `wait` passes;
/// returns what arrived.
async fn notices_until(s: &Server, token: &str, want: &str, wait: std::time::Duration) -> String {
    use futures::StreamExt;
    let resp = s
        .http
        .get(format!("{}/app/notices", s.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.bytes_stream();
    let mut seen = String::new();
    let _ = tokio::time::timeout(wait, async {
        while let Some(Ok(chunk)) = body.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains(want) {
                break;
            }
        }
    })
    .await;
    seen
}

on_both_stores!(
    a_users_window_hears_of_their_agents_only,
    a_users_window_hears_of_their_agents_only_on_postgres,
    hear_own_agents
);

async fn hear_own_agents(store: Store) {
    let s = std::sync::Arc::new(Server::on(store).await);
    let ana = s.user("ana").await;
    let ben = s.user("ben").await;
    let anas = s.agent(&ana, "Ana's helper", json!({})).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let bens = s.agent(&ben, "Ben's helper", json!({})).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let wait = std::time::Duration::from_secs(3);
    let (s1, s2, ben1, anas1, bens1) = (
        s.clone(),
        s.clone(),
        ben.clone(),
        anas.clone(),
        bens.clone(),
    );
    let admin = tokio::spawn(async move { notices_until(&s1, ADMIN, &anas1, wait).await });
    let bens_stream = tokio::spawn(async move { notices_until(&s2, &ben1, &bens1, wait).await });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    for (token, agent) in [(&ana, &anas), (&ben, &bens)] {
        s.ok(
            token,
            Method::POST,
            &format!("/v1/agents/{agent}/archival-memory"),
            Some(json!({"text": "a note"})),
        )
        .await;
    }
    let (admin, bens_stream) = (admin.await.unwrap(), bens_stream.await.unwrap());
    assert!(
        admin.contains(&anas),
        "the administrator hears of Ana's agent: {admin}"
    );
    assert!(
        bens_stream.contains(&bens),
        "Ben hears of his agent: {bens_stream}"
    );
    assert!(
        !bens_stream.contains(&anas),
        "Ben heard of Ana's agent: {bens_stream}"
    );
}

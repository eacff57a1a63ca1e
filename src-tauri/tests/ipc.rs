//! The shell's commands through Tauri's real IPC layer (mock runtime, no display): the
//! capability file lets the main window call them, arguments arrive in snake_case as the UI
//! sends them, results and errors come back as the UI expects, and notices are emitted.

use engram_desktop::{Desktop, NOTICE_EVENT};
use engram_mock_llm::{MockLlm, Script};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tauri::test::{INVOKE_KEY, MockRuntime, get_ipc_response, mock_builder};
use tauri::webview::InvokeRequest;
use tauri::{Listener, Manager, WebviewWindow};

/// An engine on the data directory `home` with the in-memory keychain `secrets`.
fn engine(
    home: &std::path::Path,
    secrets: Arc<engram_secrets::MemoryStore>,
) -> Arc<engram_service::Engram> {
    engram_service::Engram::open(engram_service::Options {
        home: Some(home.to_owned()),
        secrets,
        env: Arc::new(|_| None),
    })
    .unwrap()
}

struct Shell {
    _app: tauri::App<MockRuntime>,
    window: WebviewWindow<MockRuntime>,
    _home: Option<tempfile::TempDir>,
}

impl Shell {
    fn start() -> Shell {
        Self::open(
            tempfile::tempdir().unwrap(),
            Arc::new(engram_secrets::MemoryStore::default()),
        )
    }

    /// A shell on the data directory `home` with the keychain `secrets`.
    fn open(home: tempfile::TempDir, secrets: Arc<engram_secrets::MemoryStore>) -> Shell {
        let mut shell = Self::open_at(home.path(), secrets);
        shell._home = Some(home);
        shell
    }

    /// A shell on a data directory the caller keeps (a restart keeps it and the keychain).
    fn open_at(home: &std::path::Path, secrets: Arc<engram_secrets::MemoryStore>) -> Shell {
        let engram = engine(home, secrets);
        let app = engram_desktop::builder(mock_builder(), engram)
            .build(tauri::generate_context!(test = true))
            .expect("app builds");
        // The mock runtime has no event loop, so the builder's setup never runs.
        engram_desktop::start(app.handle());
        let window = match app.get_webview_window("main") {
            Some(w) => w,
            None => tauri::WebviewWindowBuilder::new(&app, "main", Default::default())
                .build()
                .unwrap(),
        };
        Shell {
            _app: app,
            window,
            _home: None,
        }
    }

    /// Invokes a command as the window's JavaScript would; `Err` is the rejection value.
    fn invoke(&self, cmd: &str, args: Value) -> Result<Value, Value> {
        get_ipc_response(
            &self.window,
            InvokeRequest {
                cmd: cmd.into(),
                callback: tauri::ipc::CallbackFn(0),
                error: tauri::ipc::CallbackFn(1),
                url: "tauri://localhost".parse().unwrap(),
                body: tauri::ipc::InvokeBody::Json(args),
                headers: Default::default(),
                invoke_key: INVOKE_KEY.to_string(),
            },
        )
        .map(|body| body.deserialize::<Value>().unwrap())
    }
}

#[test]
fn every_command_is_registered_and_allowed() {
    let shell = Shell::start();
    for name in engram_core::commands::names() {
        // Wrong arguments on purpose: a registered, allowed command rejects them with its own
        // argument error, never with "not found" or "not allowed".
        if let Err(e) = shell.invoke(name, json!({"agent_id": 7, "name": 7, "setup": 7})) {
            let text = e.to_string();
            assert!(
                !text.contains("not found") && !text.contains("not allowed"),
                "{name}: {text}"
            );
        }
    }
    let unknown = shell.invoke("no_such_command", json!({})).unwrap_err();
    assert!(unknown.to_string().contains("not found"), "{unknown}");
}

#[test]
fn every_command_parses_its_arguments_as_one_typed_struct() {
    let shell = Shell::start();
    for def in engram_service::commands::list() {
        if matches!(def.name, "import_from_file" | "pick_rerank_model_dir") {
            // They take no arguments: they open a native dialog (absent here).
            continue;
        }
        // No command takes an array: each refuses it as bad input before doing anything.
        let e = shell.invoke(def.name, json!([7])).unwrap_err();
        assert_eq!(e["code"], "invalid_input", "{}: {e}", def.name);
        assert!(
            e["message"].as_str().unwrap().contains(def.name),
            "{}: {e}",
            def.name
        );
    }
    // The folder dialog's command looks for the folder before opening any dialog.
    let e = shell
        .invoke("pick_watch_dir", json!({"folder_id": "source-gone"}))
        .unwrap_err();
    assert_eq!(e["code"], "not_found", "{e}");
    // A renamed argument is refused naming the field, never read as absent.
    let e = shell
        .invoke("get_agent", json!({"agentId": "agent-1"}))
        .unwrap_err();
    assert!(e["message"].as_str().unwrap().contains("agent_id"), "{e}");
}

#[test]
fn a_run_streams_through_the_dispatch_and_is_stored() {
    let shell = Shell::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mock = runtime.block_on(MockLlm::start(Script::Brain));
    shell
        .invoke(
            "set_provider",
            json!({"setup": {"name": "openai", "base_url": mock.base_url(), "api_key": "sk-ipc"}}),
        )
        .unwrap();
    let agent = shell
        .invoke(
            "create_agent",
            json!({"new": {"name": "Ray", "llm": {"model": "openai/mock-small", "context_window": 32000}}}),
        )
        .unwrap();
    let id = agent["id"].as_str().unwrap().to_owned();
    // Without the window's channel the run does not start.
    let e = shell
        .invoke("send_message", json!({"agent_id": id, "text": "hi"}))
        .unwrap_err();
    assert_eq!(e["code"], "invalid_input", "{e}");
    assert!(e["message"].as_str().unwrap().contains("on_event"), "{e}");
    // With one, the call resolves after the run ended, and the turn is stored.
    shell
        .invoke(
            "send_message",
            json!({"agent_id": id, "text": "My name is Ray.", "on_event": "__CHANNEL__:7"}),
        )
        .unwrap();
    let messages = shell
        .invoke("list_messages", json!({"agent_id": id, "limit": 50}))
        .unwrap();
    let roles: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert!(
        roles.contains(&"user") && roles.contains(&"assistant"),
        "{messages}"
    );
    assert!(messages.to_string().contains("My name is Ray."));
    let runs = shell
        .invoke("run_records", json!({"agent_id": id}))
        .unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
}

#[test]
fn agents_and_memory_round_trip_through_ipc() {
    let shell = Shell::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mock = runtime.block_on(MockLlm::start(Script::Brain));
    let info = shell
        .invoke(
            "set_provider",
            json!({"setup": {"name": "openai", "base_url": mock.base_url(), "api_key": "sk-ipc-secret"}}),
        )
        .unwrap();
    assert_eq!(info["key_set"], true);
    assert!(!info.to_string().contains("sk-ipc-secret"));

    let notices = Arc::new(Mutex::new(Vec::<Value>::new()));
    let seen = notices.clone();
    shell.window.listen_any(NOTICE_EVENT, move |event| {
        seen.lock()
            .unwrap()
            .push(serde_json::from_str(event.payload()).unwrap());
    });

    let agent = shell
        .invoke(
            "create_agent",
            json!({"new": {"name": "Sam", "llm": {"model": "openai/mock-small", "context_window": 32000}}}),
        )
        .unwrap();
    let id = agent["id"].as_str().unwrap().to_owned();
    assert_eq!(agent["name"], "Sam");
    let labels: Vec<&str> = agent["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["persona", "human"]);

    let block = shell
        .invoke(
            "update_block",
            json!({"agent_id": id, "label": "human", "patch": {"value": "Name: Bob"}}),
        )
        .unwrap();
    assert_eq!(block["value"], "Name: Bob");
    let history = shell
        .invoke("block_history", json!({"agent_id": id, "label": "human"}))
        .unwrap();
    assert_eq!(history[0]["editor"]["kind"], "user");
    let window = shell
        .invoke(
            "message_window",
            json!({"agent_id": id, "at": {"kind": "latest"}, "limit": 40}),
        )
        .unwrap();
    assert_eq!(window["messages"], json!([]));
    assert_eq!(window["has_older"], false);
    let bad = shell
        .invoke(
            "message_window",
            json!({"agent_id": id, "at": {"kind": "around", "id": "message-nope"}, "limit": 40}),
        )
        .unwrap_err();
    assert_eq!(bad["code"], "not_found", "{bad}");

    let over = shell
        .invoke(
            "update_block",
            json!({"agent_id": id, "label": "human", "patch": {"value": "x".repeat(6000)}}),
        )
        .unwrap_err();
    assert_eq!(over["code"], "invalid_input", "{over}");
    assert!(
        over["message"].as_str().unwrap().contains("limit"),
        "{over}"
    );

    let missing = shell
        .invoke("get_agent", json!({"agent_id": "agent-nope"}))
        .unwrap_err();
    assert_eq!(missing["code"], "not_found");

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while notices.lock().unwrap().len() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let notices = notices.lock().unwrap().clone();
    assert!(
        notices.contains(&json!({"type": "agents_changed"})),
        "{notices:?}"
    );
    assert!(
        notices.contains(&json!({"type": "memory_changed", "agent_id": id})),
        "{notices:?}"
    );
    let state = shell.window.state::<Desktop>();
    let agents = runtime.block_on(state.engram.agents().list()).unwrap();
    assert_eq!(agents.len(), 1);
}

#[test]
fn imported_code_waits_for_trust_through_ipc() {
    let shell = Shell::start();
    let source = "def shout(text: str) -> str:\n    \"\"\"Shout.\"\"\"\n    return text.upper()\n";
    let file = json!({
        "agents": [{"id": "agent-0", "name": "Shouter", "tool_ids": ["tool-0"], "messages": [],
                    "in_context_message_ids": []}],
        "tools": [{"id": "tool-0", "name": "shout", "source_type": "python", "source_code": source,
                   "json_schema": {"name": "shout", "parameters": {"type": "object", "properties": {}}}}]
    });
    let report = shell
        .invoke(
            "import_agent_file",
            json!({"contents": file.to_string(), "file_name": "shouter.af"}),
        )
        .unwrap();
    assert_eq!(report["file_name"], "shouter.af");
    let tool = &report["details"][0]["tools"][0];
    assert_eq!(tool["trusted"], false);
    let refused = shell
        .invoke(
            "trust_tool",
            json!({"tool": "shout", "expected_hash": "0".repeat(64)}),
        )
        .unwrap_err();
    assert_eq!(refused["code"], "conflict", "{refused}");
    let trusted = shell
        .invoke(
            "trust_tool",
            json!({"tool": "shout", "expected_hash": tool["source_hash"]}),
        )
        .unwrap();
    assert_eq!(trusted["trusted"], true);
    let agent = report["agents"][0].as_str().unwrap();
    let endpoints = shell
        .invoke(
            "set_agent_base_url",
            json!({"agent_id": agent, "kind": "llm", "base_url": "http://127.0.0.1:9/v1"}),
        )
        .unwrap();
    assert_eq!(endpoints["llm_base_url"], "http://127.0.0.1:9/v1");
}

#[test]
fn ask_before_running_is_set_and_read_through_ipc() {
    let shell = Shell::start();
    let agent = shell
        .invoke(
            "create_agent",
            json!({"new": {"name": "Careful", "llm": {"model": "openai/mock-small", "context_window": 32000}}}),
        )
        .unwrap();
    let id = agent["id"].as_str().unwrap().to_owned();
    let updated = shell
        .invoke(
            "set_tool_approval",
            json!({"agent_id": id, "tool": "core_memory_append", "on": true}),
        )
        .unwrap();
    assert_eq!(
        updated["tool_rules"],
        json!([{"type": "requires_approval", "tool_name": "core_memory_append"}])
    );
    let err = shell
        .invoke(
            "set_tool_approval",
            json!({"agent_id": id, "tool": "not_a_tool", "on": true}),
        )
        .unwrap_err();
    assert_eq!(err["code"], "invalid_input", "{err}");
    assert_eq!(
        shell
            .invoke("pending_approval", json!({"agent_id": id}))
            .unwrap(),
        Value::Null
    );
}

#[test]
fn message_actions_answer_through_ipc() {
    let shell = Shell::start();
    let agent = shell
        .invoke(
            "create_agent",
            json!({"new": {"name": "Ann", "llm": {"model": "openai/mock-small", "context_window": 32000}}}),
        )
        .unwrap();
    let id = agent["id"].as_str().unwrap().to_owned();
    // Nothing said yet: nothing to regenerate, said as bad input, not a crash.
    let none = shell
        .invoke("regenerate_preview", json!({"agent_id": id}))
        .unwrap_err();
    assert_eq!(none["code"], "invalid_input", "{none}");
    let missing = shell
        .invoke(
            "rollback_preview",
            json!({"agent_id": id, "message_id": "message-nope"}),
        )
        .unwrap_err();
    assert_eq!(missing["code"], "not_found", "{missing}");
    assert_eq!(
        shell
            .invoke("run_records", json!({"agent_id": id}))
            .unwrap(),
        json!([])
    );
    assert_eq!(
        shell
            .invoke("run_edits", json!({"agent_id": id, "run_ids": []}))
            .unwrap(),
        json!([])
    );
    assert_eq!(
        shell
            .invoke("reset_messages", json!({"agent_id": id}))
            .unwrap(),
        json!(0)
    );
}

#[test]
fn mcp_servers_are_configured_through_ipc_with_secrets_kept_out_of_answers() {
    let shell = Shell::start();
    assert_eq!(
        shell.invoke("list_mcp_servers", json!({})).unwrap(),
        json!([])
    );
    let added = shell
        .invoke(
            "add_mcp_server",
            json!({"server": {"name": "web", "transport": {"type": "streamable_http", "url": "http://127.0.0.1:9/mcp", "token": "tok-ipc-secret"}}}),
        )
        .unwrap();
    assert_eq!(added["transport"]["has_token"], true);
    assert!(!added.to_string().contains("tok-ipc-secret"));
    let bad = shell
        .invoke(
            "add_mcp_server",
            json!({"server": {"name": "bad-name", "transport": {"type": "stdio", "command": "x"}}}),
        )
        .unwrap_err();
    assert_eq!(bad["code"], "invalid_input", "{bad}");
    let imported = shell
        .invoke(
            "import_mcp_servers",
            json!({"text": r#"{"mcpServers": {"pasted": {"command": "true"}}}"#}),
        )
        .unwrap();
    assert_eq!(imported[0]["active"], false);
    assert_eq!(imported[0]["source"], "pasted config");
    let accepted = shell
        .invoke(
            "set_mcp_server_active",
            json!({"server": "pasted", "active": true}),
        )
        .unwrap();
    assert_eq!(accepted["active"], true);
    shell
        .invoke("remove_mcp_server", json!({"server": "web"}))
        .unwrap();
    let left = shell.invoke("list_mcp_servers", json!({})).unwrap();
    assert_eq!(left.as_array().unwrap().len(), 1);
}

/// A second engine served over HTTPS on 127.0.0.1 with a self-signed certificate, as
/// `engram serve --tls-self-signed` serves it: the server a desktop connects to.
struct RemoteServer {
    engram: Arc<engram_service::Engram>,
    url: String,
    fingerprint: String,
    _home: tempfile::TempDir,
}

const SERVER_TOKEN: &str = "engram-server-token-for-the-desktop-test";

impl RemoteServer {
    fn start(rt: &tokio::runtime::Runtime) -> RemoteServer {
        let home = tempfile::tempdir().unwrap();
        let engram = engine(home.path(), Arc::default());
        let identity = engram_server::tls::TlsIdentity::self_signed(
            &home.path().join("tls"),
            &["localhost".into()],
        )
        .unwrap();
        let tcp = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = tcp.local_addr().unwrap().port();
        let listener = engram_server::tls::TlsListener::new(tcp, &identity);
        let config = engram_server::ServerConfig::new(engram_server::Auth::Token(
            engram_secrets::SecretString::from(SERVER_TOKEN),
        ));
        rt.spawn(engram_server::serve_tls(
            listener,
            engram.clone(),
            config,
            std::future::pending(),
        ));
        RemoteServer {
            engram,
            url: format!("https://localhost:{port}"),
            fingerprint: identity.fingerprint,
            _home: home,
        }
    }
}

#[test]
fn the_window_works_on_a_remote_server_with_its_certificate_pinned() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = RemoteServer::start(&rt);
    let mock = rt.block_on(MockLlm::start(Script::Brain));
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path().to_owned();
    let secrets = Arc::new(engram_secrets::MemoryStore::default());
    let shell = Shell::open(home, secrets.clone());
    assert_eq!(
        shell.invoke("server_connection", json!({})).unwrap(),
        Value::Null
    );

    // Another certificate than the pinned one: refused before the token is sent.
    let other = "00:".repeat(31) + "00";
    let e = shell
        .invoke(
            "connect_server",
            json!({"url": server.url, "token": SERVER_TOKEN, "fingerprint": other}),
        )
        .unwrap_err();
    assert_eq!(e["code"], "backend_unreachable", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("fingerprint"),
        "{e}"
    );
    // No fingerprint: the self-signed certificate is vouched for by no one.
    let e = shell
        .invoke(
            "connect_server",
            json!({"url": server.url, "token": SERVER_TOKEN}),
        )
        .unwrap_err();
    assert_eq!(e["code"], "backend_unreachable", "{e}");
    // The right certificate, a wrong token.
    let e = shell
        .invoke(
            "connect_server",
            json!({"url": server.url, "token": "engram-wrong", "fingerprint": server.fingerprint}),
        )
        .unwrap_err();
    assert_eq!(e["code"], "unauthorized", "{e}");
    // Plain HTTP to another machine is refused outright.
    let e = shell
        .invoke(
            "connect_server",
            json!({"url": "http://desk.lan:8283", "token": SERVER_TOKEN}),
        )
        .unwrap_err();
    assert_eq!(e["code"], "invalid_input", "{e}");
    assert_eq!(
        shell.invoke("server_connection", json!({})).unwrap(),
        Value::Null
    );

    // The address as `engram serve` prints it, with the token in its fragment.
    let link = shell
        .invoke(
            "connect_server",
            json!({"url": format!("{}/#token={SERVER_TOKEN}", server.url), "fingerprint": server.fingerprint}),
        )
        .unwrap();
    assert_eq!(link["connected"], true, "{link}");
    assert_eq!(link["host"], "localhost");
    assert_eq!(link["user"], Value::Null, "the administrator's token");
    assert_eq!(link["fingerprint"], server.fingerprint);
    assert!(!link.to_string().contains(SERVER_TOKEN), "{link}");
    assert_eq!(shell.invoke("server_connection", json!({})).unwrap(), link);

    let notices = Arc::new(Mutex::new(Vec::<Value>::new()));
    let seen = notices.clone();
    shell.window.listen_any(NOTICE_EVENT, move |event| {
        seen.lock()
            .unwrap()
            .push(serde_json::from_str(event.payload()).unwrap());
    });

    // Everything now happens on the server.
    shell
        .invoke(
            "set_provider",
            json!({"setup": {"name": "openai", "base_url": mock.base_url(), "api_key": "sk-remote"}}),
        )
        .unwrap();
    let agent = shell
        .invoke(
            "create_agent",
            json!({"new": {"name": "Remy", "llm": {"model": "openai/mock-small", "context_window": 32000}}}),
        )
        .unwrap();
    let id = agent["id"].as_str().unwrap().to_owned();
    assert_eq!(rt.block_on(server.engram.agents().list()).unwrap().len(), 1);
    let state = shell.window.state::<Desktop>();
    assert!(
        rt.block_on(state.engram.agents().list())
            .unwrap()
            .is_empty(),
        "nothing made here"
    );

    let block = shell
        .invoke(
            "update_block",
            json!({"agent_id": id, "label": "human", "patch": {"value": "Name: Remy"}}),
        )
        .unwrap();
    assert_eq!(block["value"], "Name: Remy");
    let stale = shell
        .invoke(
            "update_block",
            json!({"agent_id": id, "label": "human", "patch": {"value": "x", "version": 1}}),
        )
        .unwrap_err();
    assert_eq!(
        stale["code"], "stale_version",
        "the server's error as it sent it: {stale}"
    );

    shell
        .invoke(
            "send_message",
            json!({"agent_id": id, "text": "My name is Remy.", "on_event": "__CHANNEL__:7"}),
        )
        .unwrap();
    let messages = shell
        .invoke("list_messages", json!({"agent_id": id, "limit": 50}))
        .unwrap();
    assert!(
        messages.to_string().contains("My name is Remy."),
        "{messages}"
    );
    let on_server = rt
        .block_on(
            server
                .engram
                .recall()
                .list(&engram_core::AgentId::from(id.clone()), None, 50),
        )
        .unwrap();
    assert!(
        on_server
            .iter()
            .any(|m| m.content.contains("My name is Remy."))
    );
    // Not running: joining answers false.
    assert_eq!(
        shell
            .invoke(
                "attach_run",
                json!({"agent_id": id, "on_event": "__CHANNEL__:8"})
            )
            .unwrap(),
        false
    );

    // The server's notices reach the window. The stream opens in the background after the
    // link is made, so an edit made at once may come before it: wait until the run's notices
    // arrived, then edit memory again.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let listening = json!({"type": "messages_changed", "agent_id": id});
    while !notices.lock().unwrap().contains(&listening) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    shell
        .invoke(
            "update_block",
            json!({"agent_id": id, "label": "human", "patch": {"value": "Name: Remy, on a server"}}),
        )
        .unwrap();
    let changed = json!({"type": "memory_changed", "agent_id": id});
    while !notices.lock().unwrap().contains(&changed) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        notices.lock().unwrap().contains(&changed),
        "{:?}",
        notices.lock().unwrap()
    );

    // This computer's own things are refused while connected, saying so.
    let e = shell
        .invoke("set_rest_api", json!({"enabled": true}))
        .unwrap_err();
    assert!(e["message"].as_str().unwrap().contains("localhost"), "{e}");

    // The token went to the keychain, not the database.
    let (kept, token) = state.engram.trust().linked_server().unwrap().unwrap();
    assert_eq!(
        kept.fingerprint.as_deref(),
        Some(server.fingerprint.as_str())
    );
    assert_eq!(
        engram_secrets::ExposeSecret::expose_secret(&token),
        SERVER_TOKEN
    );
    state.engram.checkpoint().unwrap();
    let db = std::fs::read(home_path.join(engram_service::DB_FILE)).unwrap();
    assert!(
        !db.windows(SERVER_TOKEN.len())
            .any(|w| w == SERVER_TOKEN.as_bytes())
    );

    // Back to this computer.
    assert_eq!(
        shell.invoke("disconnect_server", json!({})).unwrap(),
        Value::Null
    );
    assert_eq!(shell.invoke("list_agents", json!({})).unwrap(), json!([]));
    assert_eq!(
        shell.invoke("server_connection", json!({})).unwrap(),
        Value::Null
    );
    assert!(state.engram.trust().linked_server().unwrap().is_none());
}

#[test]
fn a_kept_server_that_cannot_be_reached_leaves_the_window_on_this_computer_saying_why() {
    let home = tempfile::tempdir().unwrap();
    let secrets = Arc::new(engram_secrets::MemoryStore::default());
    {
        // A link kept from an earlier run, to a server that is gone now.
        let engram = engine(home.path(), secrets.clone());
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("https://127.0.0.1:{}/", closed.local_addr().unwrap().port());
        drop(closed);
        engram
            .trust()
            .link_server(
                &engram_service::ServerLink {
                    url,
                    fingerprint: Some("AB:".repeat(31) + "AB"),
                },
                &engram_service::SecretString::from("engram-gone"),
            )
            .unwrap();
    }
    let shell = Shell::open(home, secrets);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut link = Value::Null;
    while link.is_null() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
        link = shell.invoke("server_connection", json!({})).unwrap();
    }
    assert_eq!(link["connected"], false, "{link}");
    assert_eq!(link["host"], "127.0.0.1");
    assert!(
        link["error"].as_str().unwrap().contains("not answering"),
        "{link}"
    );
    // The window works on this computer's engine meanwhile.
    assert_eq!(shell.invoke("list_agents", json!({})).unwrap(), json!([]));
    // Giving up the link forgets it.
    shell.invoke("disconnect_server", json!({})).unwrap();
    assert_eq!(
        shell.invoke("server_connection", json!({})).unwrap(),
        Value::Null
    );
}

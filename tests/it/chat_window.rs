//! The chat window's paging over real HTTP: Letta's `GET …/messages` with cursors
//! in both orders, `/app/message_window` jumps (start, around a message, a date) with the
//! compaction divider, and `/app/attach_run` joining a run in flight (a reload during
//! a run).

use engram_core::{AgentId, LoopStyle, MessageId, NewMessage};
use engram_mock_llm::{MockLlm, Reply, Script};
use engram_server::{Auth, ServerConfig};
use engram_suite::Home;
use reqwest::StatusCode;
use secrecy::SecretString;
use serde_json::{Value, json};
use std::time::Duration;

const TOKEN: &str = "chat-window-token-7";

struct Served {
    base: String,
    http: reqwest::Client,
    agent: AgentId,
    ids: Vec<MessageId>,
    _mock: MockLlm,
    _dir: tempfile::TempDir,
}

/// An agent with `n` user messages `m1..mn`, one hour apart from 2024-03-01 00:00 UTC, the
/// first `evicted` folded into a summary, served over HTTP.
async fn served(n: usize, evicted: usize, script: Script) -> Served {
    let mock = MockLlm::start(script).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    let start = chrono::DateTime::parse_from_rfc3339("2024-03-01T00:00:00Z")
        .unwrap()
        .to_utc();
    let msgs: Vec<_> = (1..=n)
        .map(|i| NewMessage {
            created_at: Some(start + chrono::Duration::hours(i as i64 - 1)),
            ..NewMessage::user(format!("m{i}"))
        })
        .collect();
    let stored = home
        .engram
        .store()
        .messages()
        .append(&agent, &msgs)
        .unwrap();
    let ids: Vec<_> = stored.iter().map(|m| m.id.clone()).collect();
    if evicted > 0 {
        home.engram
            .store()
            .messages()
            .evict(&agent, &ids[..evicted], "Bob counted messages.")
            .unwrap();
    }
    let Home { dir, engram } = home;
    let base = engram_suite::serve(
        engram,
        ServerConfig::new(Auth::Token(SecretString::from(TOKEN))),
    )
    .await;
    Served {
        base,
        http: reqwest::Client::new(),
        agent,
        ids,
        _mock: mock,
        _dir: dir,
    }
}

impl Served {
    async fn get(&self, path: &str) -> Value {
        let resp = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{path}");
        resp.json().await.unwrap()
    }

    async fn app(&self, command: &str, args: Value) -> (StatusCode, Value) {
        let resp = self
            .http
            .post(format!("{}/app/{command}", self.base))
            .bearer_auth(TOKEN)
            .json(&args)
            .send()
            .await
            .unwrap();
        (resp.status(), resp.json().await.unwrap_or(Value::Null))
    }

    async fn window(&self, at: Value, limit: usize) -> Value {
        let (status, body) = self
            .app(
                "message_window",
                json!({"agent_id": self.agent, "at": at, "limit": limit}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    fn id(&self, n: usize) -> &str {
        self.ids[n - 1].as_str()
    }
}

fn texts(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

fn names(r: std::ops::RangeInclusive<usize>) -> Vec<String> {
    r.map(|i| format!("m{i}")).collect()
}

#[tokio::test]
async fn rest_messages_page_by_cursor_in_both_orders() {
    let s = served(60, 0, Script::Brain).await;
    let a = &s.agent;
    let desc = s.get(&format!("/v1/agents/{a}/messages?limit=5")).await;
    assert_eq!(texts(&desc), ["m60", "m59", "m58", "m57", "m56"]);
    // Newest first, `after` walks towards older messages.
    let next = s
        .get(&format!(
            "/v1/agents/{a}/messages?limit=5&after={}",
            s.id(56)
        ))
        .await;
    assert_eq!(texts(&next), ["m55", "m54", "m53", "m52", "m51"]);
    let asc = s
        .get(&format!("/v1/agents/{a}/messages?order=asc&limit=4"))
        .await;
    assert_eq!(texts(&asc), names(1..=4));
    let asc_next = s
        .get(&format!(
            "/v1/agents/{a}/messages?order=asc&limit=4&after={}",
            s.id(4)
        ))
        .await;
    assert_eq!(texts(&asc_next), names(5..=8));
    // Between two cursors, and the end of the list.
    let between = s
        .get(&format!(
            "/v1/agents/{a}/messages?order=asc&limit=100&after={}&before={}",
            s.id(10),
            s.id(14)
        ))
        .await;
    assert_eq!(texts(&between), names(11..=13));
    let end = s
        .get(&format!(
            "/v1/agents/{a}/messages?order=asc&after={}",
            s.id(60)
        ))
        .await;
    assert_eq!(end, json!([]));
    // A cursor that is not this agent's message is a 404, not an empty page.
    let resp = s
        .http
        .get(format!(
            "{}/v1/agents/{a}/messages?after=message-nope",
            s.base
        ))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_window_jumps_to_the_start_a_message_and_a_date_with_the_divider() {
    let s = served(300, 120, Script::Brain).await;
    let latest = s.window(json!({"kind": "latest"}), 50).await;
    assert_eq!(texts(&latest["messages"]), names(251..=300));
    assert_eq!(
        (latest["has_older"].as_bool(), latest["has_newer"].as_bool()),
        (Some(true), Some(false))
    );
    assert_eq!(
        latest["compactions"],
        json!([]),
        "the divider is further up"
    );

    let start = s.window(json!({"kind": "start"}), 50).await;
    assert_eq!(texts(&start["messages"]), names(1..=50));
    assert_eq!(start["has_older"], false);

    let hit = s
        .window(json!({"kind": "around", "id": s.id(120)}), 21)
        .await;
    assert_eq!(texts(&hit["messages"]), names(110..=130));
    assert_eq!(hit["anchor"], s.id(120));
    let divider = &hit["compactions"][0];
    assert_eq!(divider["summary"], "Bob counted messages.");
    assert_eq!(divider["evicted"], 120);
    assert_eq!(divider["seq"], hit["messages"][10]["seq"], "after m120");

    // m49 was written at 2024-03-03T00:00Z; 23:30 the day before opens on it.
    let day = s
        .window(json!({"kind": "date", "at": "2024-03-02T23:30:00Z"}), 11)
        .await;
    assert_eq!(day["anchor"], s.id(49));
    assert_eq!(texts(&day["messages"]), names(44..=54));

    let back = s
        .window(json!({"kind": "before", "id": s.id(44)}), 10)
        .await;
    assert_eq!(texts(&back["messages"]), names(34..=43));
    let down = s.window(json!({"kind": "after", "id": s.id(54)}), 10).await;
    assert_eq!(texts(&down["messages"]), names(55..=64));

    let (status, body) = s
        .app(
            "message_window",
            json!({"agent_id": s.agent, "at": {"kind": "around", "id": "message-nope"}, "limit": 5}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["code"], "not_found");
    let (status, _) = s
        .app(
            "message_window",
            json!({"agent_id": s.agent, "at": {"kind": "sideways"}, "limit": 5}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_window_that_reloads_mid_run_attaches_and_sees_the_reply_arrive() {
    let s = served(2, 0, Script::Brain).await;
    let (status, none) = s.app("attach_run", json!({"agent_id": s.agent})).await;
    assert_eq!((status, none), (StatusCode::OK, Value::Null), "not running");

    // A slow model: the run is in flight for a while after it started.
    s._mock.push(Reply::Delayed(
        Duration::from_millis(1500),
        Box::new(Reply::text("late but here")),
    ));
    let sender = {
        let req = s
            .http
            .post(format!("{}/app/send_message", s.base))
            .bearer_auth(TOKEN)
            .json(&json!({"agent_id": s.agent, "text": "are you there?"}));
        tokio::spawn(async move { req.send().await.unwrap().text().await.unwrap() })
    };
    // The first window is gone (a reload); a new one attaches while the model thinks.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let resp = s
        .http
        .post(format!("{}/app/attach_run", s.base))
        .bearer_auth(TOKEN)
        .json(&json!({"agent_id": s.agent}))
        .send()
        .await
        .unwrap();
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let events: Vec<Value> = resp
        .text()
        .await
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types.first(),
        Some(&"run_started"),
        "from the start: {types:?}"
    );
    assert_eq!(types.last(), Some(&"done"), "{types:?}");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "message" && e["message"]["content"] == "are you there?"),
        "the user's message, committed before the attach, is replayed"
    );
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "late but here");
    sender.await.unwrap();
    let (_, after) = s.app("attach_run", json!({"agent_id": s.agent})).await;
    assert_eq!(after, Value::Null, "the run is over");
    let (status, _) = s
        .app("attach_run", json!({"agent_id": "agent-unknown"}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_run_is_stopped_by_its_run_id_and_another_id_stops_nothing() {
    let s = served(2, 0, Script::Brain).await;
    s._mock.push(Reply::Hang);
    let mut resp = s
        .http
        .post(format!("{}/app/send_message", s.base))
        .bearer_auth(TOKEN)
        .json(&json!({"agent_id": s.agent, "text": "hello?"}))
        .send()
        .await
        .unwrap();
    // Read the stream until the run names itself.
    let mut seen = String::new();
    let run_id = loop {
        let chunk = resp.chunk().await.unwrap().expect("the run streams");
        seen.push_str(&String::from_utf8_lossy(&chunk));
        let started = seen
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .find(|e| e["type"] == "run_started");
        if let Some(e) = started {
            break e["run_id"].as_str().unwrap().to_owned();
        }
    };
    let other = "run-00000000-0000-4000-8000-000000000000";
    let (status, n) = s
        .app("cancel_run", json!({"agent_id": s.agent, "run_id": other}))
        .await;
    assert_eq!((status, n), (StatusCode::OK, json!(0)), "another run id");
    let (_, n) = s
        .app("cancel_run", json!({"agent_id": s.agent, "run_id": run_id}))
        .await;
    assert_eq!(n, json!(1), "the run in flight, by its id");
    let rest = resp.text().await.unwrap();
    let done: Value = rest
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find(|e| e["type"] == "done")
        .expect("the run ends with done");
    assert_eq!(done["run_id"], json!(run_id));
    assert_eq!(done["stop_reason"], "cancelled");
    let (_, after) = s.app("attach_run", json!({"agent_id": s.agent})).await;
    assert_eq!(after, Value::Null, "the run left the registry");
}

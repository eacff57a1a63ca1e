//! Shared helpers: configs, requests, a delta collector, a one-route server.

use engram_core::ToolCall;
use engram_providers::{
    ChatMessage, ChatRequest, ChatResponse, Delta, ProviderConfig, ProviderError, ProviderKind,
    RetryPolicy, Timeouts, ToolChoice, ToolSpec, chat_model,
};
use serde_json::json;
use std::sync::Mutex;
use std::time::Duration;

/// The key every test uses; it must never show up in an error message.
pub const KEY: &str = "sk-test-very-secret-key-0123456789";

/// A config for `base_url` with fast retries and short timeouts.
pub fn config(kind: ProviderKind, base_url: &str) -> ProviderConfig {
    ProviderConfig {
        kind,
        base_url: base_url.to_owned(),
        api_key: Some(secrecy::SecretString::from(KEY.to_owned())),
        retry: RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(2),
        },
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            read: Duration::from_secs(5),
        },
    }
}

/// The `core_memory_append` tool.
pub fn append_tool() -> ToolSpec {
    ToolSpec {
        name: "core_memory_append".into(),
        description: "Append to a memory block.".into(),
        parameters: json!({"type": "object", "properties": {"label": {"type": "string"}, "content": {"type": "string"}}, "required": ["label", "content"]}),
    }
}

/// A `send_message` tool.
pub fn send_tool() -> ToolSpec {
    ToolSpec {
        name: "send_message".into(),
        description: "Reply to the user.".into(),
        parameters: json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
    }
}

/// System + one user message, both tools offered.
pub fn request(stream: bool) -> ChatRequest {
    ChatRequest {
        model: "mock-small".into(),
        messages: vec![
            ChatMessage::System {
                content: "You are a test agent.".into(),
            },
            ChatMessage::User {
                content: "My name is Bob.".into(),
            },
        ],
        tools: vec![append_tool(), send_tool()],
        tool_choice: ToolChoice::Auto,
        max_tokens: Some(256),
        temperature: None,
        stream,
    }
}

/// A conversation with a parallel tool-call turn answered by two tool results, then a heartbeat.
pub fn history(stream: bool) -> ChatRequest {
    let mut req = request(stream);
    req.tool_choice = ToolChoice::Required;
    req.messages.extend([
        ChatMessage::Assistant {
            content: "Saving that.".into(),
            tool_calls: vec![
                ToolCall {
                    id: "call_1".into(),
                    name: "core_memory_append".into(),
                    arguments: r#"{"label":"human","content":"Name: Bob"}"#.into(),
                },
                ToolCall {
                    id: "call_2".into(),
                    name: "send_message".into(),
                    arguments: r#"{"message":"Hi Bob"}"#.into(),
                },
            ],
        },
        ChatMessage::Tool {
            tool_call_id: "call_1".into(),
            name: "core_memory_append".into(),
            content: "OK".into(),
        },
        ChatMessage::Tool {
            tool_call_id: "call_2".into(),
            name: "send_message".into(),
            content: "sent".into(),
        },
        ChatMessage::User {
            content: r#"{"type":"heartbeat","reason":"continue"}"#.into(),
        },
    ]);
    req
}

/// Collects streamed deltas.
#[derive(Default)]
pub struct Deltas(Mutex<Vec<Delta>>);

impl Deltas {
    /// The callback to hand to `complete`.
    pub fn push(&self, d: Delta) {
        self.0.lock().unwrap().push(d);
    }

    /// All text deltas joined.
    pub fn text(&self) -> String {
        self.joined(|d| match d {
            Delta::Text(t) => Some(t),
            _ => None,
        })
    }

    /// All reasoning deltas joined.
    pub fn reasoning(&self) -> String {
        self.joined(|d| match d {
            Delta::Reasoning(t) => Some(t),
            _ => None,
        })
    }

    /// The pieces `pick` finds, joined in arrival order.
    fn joined(&self, pick: impl Fn(&Delta) -> Option<&String>) -> String {
        let deltas = self.0.lock().unwrap();
        deltas.iter().filter_map(pick).map(String::as_str).collect()
    }

    /// How many deltas arrived.
    pub fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

/// One `request(stream)` through a fresh client for `cfg`, its deltas into `deltas`.
pub async fn call_into(
    cfg: ProviderConfig,
    stream: bool,
    deltas: &Deltas,
) -> Result<ChatResponse, ProviderError> {
    chat_model(cfg)
        .expect("a client for the config")
        .complete(&request(stream), &|d| deltas.push(d))
        .await
}

/// One `request(stream)` through a fresh client for `cfg`, its deltas dropped.
pub async fn call(cfg: ProviderConfig, stream: bool) -> Result<ChatResponse, ProviderError> {
    call_into(cfg, stream, &Deltas::default()).await
}

/// Serves `router` on a free port; returns `http://127.0.0.1:PORT/v1`.
pub async fn serve(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{addr}/v1")
}

/// An SSE response of `frames` (each a JSON value or `[DONE]`), optionally with named events.
pub fn sse(frames: &[String]) -> axum::response::Response {
    let body: String = frames.iter().map(|f| format!("data: {f}\n\n")).collect();
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .body(axum::body::Body::from(body))
        .unwrap()
}

/// A base URL where nothing listens.
pub async fn dead_base_url() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/v1")
}

//! Control endpoints for harnesses in other languages (Python, Node) that run the `mock-llm`
//! binary: `POST /_mock/push` queues replies, `GET /_mock/requests` and
//! `GET /_mock/violations` read the log, `POST /_mock/limits` sets [`Limits`] (JSON `null`
//! turns them off). Replies travel as [`ReplySpec`] JSON.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::state::Shared;
use crate::{Call, Limits, Reply};

/// A [`Reply`] as JSON, tagged by `type`, e.g. `{"type":"text","text":"hi"}`,
/// `{"type":"tool_calls","calls":[{"name":"send_message","arguments":{"message":"hi"}}]}`,
/// `{"type":"error","status":429,"body":{…},"retry_after":2}`, `{"type":"hang"}`,
/// `{"type":"delayed","ms":500,"reply":{…}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReplySpec {
    /// [`Reply::Text`].
    Text {
        /// The text.
        text: String,
    },
    /// [`Reply::Reasoning`].
    Reasoning {
        /// The reasoning.
        reasoning: String,
        /// The visible text.
        text: String,
    },
    /// [`Reply::ToolCalls`], or [`Reply::TextWithToolCalls`] when `text` is given.
    ToolCalls {
        /// The calls.
        calls: Vec<CallSpec>,
        /// Optional text next to the calls.
        #[serde(default)]
        text: Option<String>,
    },
    /// [`Reply::Error`].
    Error {
        /// HTTP status.
        status: u16,
        /// JSON body.
        #[serde(default)]
        body: Value,
        /// `Retry-After` seconds.
        #[serde(default)]
        retry_after: Option<u64>,
    },
    /// [`Reply::ContextLengthExceeded`].
    ContextLengthExceeded,
    /// [`Reply::Hang`].
    Hang,
    /// [`Reply::Garbage`].
    Garbage,
    /// [`Reply::Delayed`].
    Delayed {
        /// Delay in milliseconds.
        ms: u64,
        /// What to answer afterwards.
        reply: Box<ReplySpec>,
    },
}

/// A tool call in a [`ReplySpec`]. `arguments` is a JSON value sent as its JSON text; a JSON
/// *string* is sent verbatim instead (so malformed arguments can be scripted).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallSpec {
    /// Tool name.
    pub name: String,
    /// Arguments (see the type's docs).
    #[serde(default)]
    pub arguments: Value,
    /// Optional fixed id.
    #[serde(default)]
    pub id: Option<String>,
}

impl From<ReplySpec> for Reply {
    fn from(spec: ReplySpec) -> Reply {
        let calls = |calls: Vec<CallSpec>| -> Vec<Call> {
            calls
                .into_iter()
                .map(|c| {
                    let arguments = match c.arguments {
                        Value::String(raw) => raw,
                        Value::Null => "{}".to_string(),
                        other => other.to_string(),
                    };
                    Call {
                        name: c.name,
                        arguments,
                        id: c.id,
                    }
                })
                .collect()
        };
        match spec {
            ReplySpec::Text { text } => Reply::Text(text),
            ReplySpec::Reasoning { reasoning, text } => Reply::Reasoning { reasoning, text },
            ReplySpec::ToolCalls {
                calls: c,
                text: None,
            } => Reply::ToolCalls(calls(c)),
            ReplySpec::ToolCalls {
                calls: c,
                text: Some(text),
            } => Reply::TextWithToolCalls {
                text,
                calls: calls(c),
            },
            ReplySpec::Error {
                status,
                body,
                retry_after,
            } => Reply::Error {
                status,
                body,
                retry_after,
            },
            ReplySpec::ContextLengthExceeded => Reply::ContextLengthExceeded,
            ReplySpec::Hang => Reply::Hang,
            ReplySpec::Garbage => Reply::Garbage,
            ReplySpec::Delayed { ms, reply } => {
                Reply::Delayed(Duration::from_millis(ms), Box::new((*reply).into()))
            }
        }
    }
}

/// `POST /_mock/push`: one spec or a list of them.
pub(crate) async fn push(State(shared): State<Arc<Shared>>, Json(body): Json<Value>) -> Response {
    let specs = match body {
        Value::Array(items) => items,
        one => vec![one],
    };
    let parsed: Result<Vec<ReplySpec>, _> = specs.into_iter().map(serde_json::from_value).collect();
    match parsed {
        Ok(specs) => {
            let n = specs.len();
            shared.push(specs.into_iter().map(Reply::from).collect());
            Json(json!({"queued": n})).into_response()
        }
        Err(e) => (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": format!("not a reply spec: {e}")})),
        )
            .into_response(),
    }
}

/// `GET /_mock/requests`: the request log (control calls are not logged).
pub(crate) async fn requests(State(shared): State<Arc<Shared>>) -> Json<Value> {
    let (requests, _) = shared.log_snapshot();
    Json(Value::Array(
        requests
            .into_iter()
            .map(|r| json!({"path": r.path, "body": r.body, "authorization": r.authorization, "api_key_header": r.api_key_header}))
            .collect(),
    ))
}

/// `GET /_mock/violations`: the violations found so far.
pub(crate) async fn violations(State(shared): State<Arc<Shared>>) -> Json<Value> {
    let (_, violations) = shared.log_snapshot();
    Json(json!(violations))
}

/// `POST /_mock/limits`: a [`Limits`] object, or `null` to turn limits off.
pub(crate) async fn limits(State(shared): State<Arc<Shared>>, Json(body): Json<Value>) -> Response {
    match serde_json::from_value::<Option<Limits>>(body) {
        Ok(limits) => {
            shared.set_limits(limits.clone());
            Json(json!({"limits": limits})).into_response()
        }
        Err(e) => (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": format!("not a limits object: {e}")})),
        )
            .into_response(),
    }
}

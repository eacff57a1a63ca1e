//! A scripted model server for Engram's tests.
//!
//! No LLM is reachable where Engram's tests run, so the real provider code is pointed at this
//! server instead: it speaks the OpenAI chat-completions API (`POST /v1/chat/completions`,
//! streaming and not), the Anthropic Messages API (`POST /v1/messages`), OpenAI embeddings
//! (`POST /v1/embeddings`) and lists models (`GET /v1/models`), all on `127.0.0.1`.
//!
//! What it answers comes from a [`Script`]: a queue of canned [`Reply`]s pushed by the test, a
//! closure over the parsed request ([`ChatView`]), or the built-in rule-based [`brain()`] that plays
//! a memory agent well enough for end-to-end tests. Replies can also be faults (rate limits,
//! server errors, context-length errors, hangs, broken bodies) so retry and error paths run for
//! real. [`Limits`] make it behave like a real local server: a context length it refuses longer
//! prompts by, a tokenizer that counts differently from Engram's estimate, a summariser that
//! ignores `max_tokens`. Every request is recorded ([`MockLlm::requests`]) and checked against
//! the protocols' rules ([`MockLlm::violations`]): an unanswered tool call is caught here, in
//! the test that caused it, instead of as a 400 from a real provider in production.
//!
//! ```no_run
//! # async fn demo() {
//! use engram_mock_llm::{Call, MockLlm, Reply, Script};
//! let mock = MockLlm::start(Script::Queue).await;
//! mock.push(Reply::ToolCalls(vec![Call::new("core_memory_append", serde_json::json!({"label": "human", "content": "Name: Bob"}))]));
//! mock.push(Reply::Text("Nice to meet you, Bob!".into()));
//! // point the provider at mock.base_url(), run the agent, then:
//! assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
//! # }
//! ```

mod anthropic;
pub mod brain;
mod control;
mod embeddings;
mod limits;
mod openai;
mod server;
mod state;
mod validate;
mod view;
mod wire;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use brain::brain;
pub use control::{CallSpec, ReplySpec};
pub use embeddings::{EMBEDDING_DIMS, embed};
pub use limits::Limits;
pub use server::MockLlm;
pub use state::StreamStyle;
pub use view::{Api, ChatView, ToolResultView, ViewCall, ViewMessage};

/// One request as the server received it.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    /// The request path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// The parsed JSON body; `Value::Null` for bodies that are empty or not JSON (the latter is
    /// also a violation).
    pub body: serde_json::Value,
    /// The `Authorization` header, verbatim (`Bearer …`).
    pub authorization: Option<String>,
    /// The `x-api-key` header (Anthropic's way of sending the key).
    pub api_key_header: Option<String>,
}

/// What the mock model answers to one chat request (OpenAI or Anthropic).
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// Assistant text.
    Text(String),
    /// Reasoning plus text: `reasoning_content` on the OpenAI API (as DeepSeek and vLLM send it),
    /// a `thinking` block on the Anthropic API.
    Reasoning {
        /// The reasoning / inner monologue.
        reasoning: String,
        /// The visible answer.
        text: String,
    },
    /// One or several parallel tool calls in one response.
    ToolCalls(Vec<Call>),
    /// Text and tool calls in one response (e.g. inner monologue next to a call in the classic
    /// MemGPT loop).
    TextWithToolCalls {
        /// The text content of the assistant message.
        text: String,
        /// The tool calls.
        calls: Vec<Call>,
    },
    /// An HTTP error: `status` with `body` as the JSON body, and a `Retry-After: <seconds>`
    /// header when `retry_after` is set.
    Error {
        /// HTTP status code, e.g. 429 or 500.
        status: u16,
        /// The JSON body, sent as is.
        body: serde_json::Value,
        /// Seconds for the `Retry-After` header.
        retry_after: Option<u64>,
    },
    /// A 400 context-length error in the provider's own words: OpenAI's
    /// `code: "context_length_exceeded"`, Anthropic's `prompt is too long: …`.
    ContextLengthExceeded,
    /// Accept the request and never answer, until the client gives up (or the server stops).
    Hang,
    /// A 200 whose body is not valid JSON (non-streaming) or an SSE stream that breaks off in
    /// the middle of a chunk and then drops the connection (streaming).
    Garbage,
    /// Answer with the inner reply after a delay (the delay comes before the response headers,
    /// like a slow model's time to first token).
    Delayed(Duration, Box<Reply>),
}

impl Reply {
    /// Shorthand for [`Reply::Text`].
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::Text(text.into())
    }

    /// A 429 rate-limit error in OpenAI's shape, with an optional `Retry-After` header.
    pub fn rate_limited(retry_after: Option<u64>) -> Reply {
        Reply::Error {
            status: 429,
            body: serde_json::json!({"error": {"message": "Rate limit reached for requests (mock)", "type": "requests", "param": null, "code": "rate_limit_exceeded"}}),
            retry_after,
        }
    }

    /// A 500 internal server error in OpenAI's shape.
    pub fn server_error() -> Reply {
        Reply::Error {
            status: 500,
            body: serde_json::json!({"error": {"message": "The server had an error while processing your request (mock)", "type": "server_error", "param": null, "code": null}}),
            retry_after: None,
        }
    }
}

/// One tool call in a [`Reply`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// The tool's name.
    pub name: String,
    /// The arguments as raw JSON text; may be deliberately malformed.
    pub arguments: String,
    /// The tool-call id; the server makes a unique one (`call_N` / `toolu_N`) when `None`.
    pub id: Option<String>,
}

impl Call {
    /// A call with well-formed JSON arguments.
    pub fn new(name: impl Into<String>, args: serde_json::Value) -> Call {
        Call {
            name: name.into(),
            arguments: args.to_string(),
            id: None,
        }
    }

    /// A call whose arguments are sent exactly as given (e.g. malformed JSON).
    pub fn raw(name: impl Into<String>, args_text: impl Into<String>) -> Call {
        Call {
            name: name.into(),
            arguments: args_text.into(),
            id: None,
        }
    }

    /// The same call with a fixed id (to provoke duplicate ids, or to assert on them).
    pub fn with_id(mut self, id: impl Into<String>) -> Call {
        self.id = Some(id.into());
        self
    }
}

/// A function from the parsed request to the reply, for [`Script::Rules`].
pub type Rule = Arc<dyn Fn(&ChatView) -> Reply + Send + Sync>;

/// Where replies come from when the queue of pushed replies is empty. Queued replies (from
/// [`MockLlm::push`]) always take precedence.
#[derive(Clone)]
pub enum Script {
    /// Only pushed replies; an empty queue answers `Text("ok")`.
    Queue,
    /// A function of the request.
    Rules(Rule),
    /// The built-in rule-based memory agent, see [`mod@brain`].
    Brain,
}

impl Script {
    /// Wraps a closure as [`Script::Rules`].
    pub fn rules(f: impl Fn(&ChatView) -> Reply + Send + Sync + 'static) -> Script {
        Script::Rules(Arc::new(f))
    }

    /// The reply this script gives to `view` (the queue is consulted before this).
    pub fn answer(&self, view: &ChatView) -> Reply {
        match self {
            Script::Queue => Reply::Text("ok".into()),
            Script::Rules(f) => f(view),
            Script::Brain => brain(view),
        }
    }
}

impl fmt::Debug for Script {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Script::Queue => "Script::Queue",
            Script::Rules(_) => "Script::Rules(..)",
            Script::Brain => "Script::Brain",
        })
    }
}

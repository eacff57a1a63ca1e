//! Turning HTTP statuses, transport errors and bodies into [`ProviderError`]s that say what to do.
//!
//! Every message is one line and names the provider; server text is quoted only after the API
//! key has been scrubbed from it (some servers echo what they were sent).

use crate::types::{ProviderConfig, ProviderError, ProviderKind};
use engram_core::error::ProviderFault;
use reqwest::StatusCode;
use secrecy::ExposeSecret;
use std::time::Duration;

/// Longest piece of server text quoted in a message, in characters.
const MAX_QUOTE_CHARS: usize = 300;

/// Phrases (lower-case) by which servers say the prompt does not fit: OpenAI, vLLM, Anthropic,
/// llama.cpp, LM Studio, OpenRouter, Ollama.
const CONTEXT_LENGTH_MARKERS: &[&str] = &[
    "context_length_exceeded",
    "maximum context length",
    "prompt is too long",
    "context window",
    "too many tokens",
    "context length",
    "context size",
    "exceeds the available context",
    "input is too long",
];

/// A failed attempt: the error to report, and whether another attempt may succeed.
#[derive(Debug)]
pub(crate) struct Failure {
    /// What to report if no retry follows.
    pub error: ProviderError,
    /// 429, 5xx and connect errors may succeed on a later attempt.
    pub retryable: bool,
    /// The server's `Retry-After`, when it sent one.
    pub retry_after: Option<Duration>,
}

impl Failure {
    /// A failure no retry can fix.
    pub fn fatal(error: ProviderError) -> Self {
        Self {
            error,
            retryable: false,
            retry_after: None,
        }
    }
}

/// What the error messages need to know about the provider.
#[derive(Clone, Debug)]
pub(crate) struct ErrorContext {
    /// Human name: "OpenAI", "Ollama", or "the server at <base_url>".
    pub label: String,
    /// The configured base URL.
    pub base_url: String,
    /// The wire protocol, named in bad-response advice.
    pub kind: ProviderKind,
    /// Whether a key was configured (changes the 401 advice).
    pub has_key: bool,
    /// The key itself, only to scrub it from quoted server text.
    key: Option<String>,
    /// The read timeout, quoted in timeout messages.
    pub read_timeout: Duration,
    /// The connect timeout, quoted in timeout messages.
    pub connect_timeout: Duration,
}

impl ErrorContext {
    /// The context of `config`.
    pub fn new(config: &ProviderConfig) -> Self {
        let key = config
            .api_key
            .as_ref()
            .map(|k| k.expose_secret().to_owned())
            .filter(|k| !k.is_empty());
        Self {
            label: provider_label(config),
            base_url: config.base_url.clone(),
            kind: config.kind,
            has_key: key.is_some(),
            key,
            read_timeout: config.timeouts.read,
            connect_timeout: config.timeouts.connect,
        }
    }

    /// `text` made safe to show: no key, one line, at most [`MAX_QUOTE_CHARS`] characters.
    pub fn quote(&self, text: &str) -> String {
        let mut text = text.to_owned();
        if let Some(key) = &self.key {
            text = text.replace(key.as_str(), "<redacted>");
        }
        let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if one_line.chars().count() > MAX_QUOTE_CHARS {
            let cut: String = one_line.chars().take(MAX_QUOTE_CHARS).collect();
            format!("{cut}…")
        } else {
            one_line
        }
    }

    /// The classified error of an HTTP answer with a non-success `status`.
    pub fn status_failure(
        &self,
        status: StatusCode,
        body: &str,
        retry_after: Option<Duration>,
    ) -> Failure {
        let code = status.as_u16();
        let detail = self.quote(&server_message(body));
        let said = if detail.is_empty() {
            String::new()
        } else {
            format!(": {detail}")
        };
        let label = &self.label;
        let (fault, message, retryable) = match code {
            401 | 403 if self.has_key => (
                ProviderFault::Auth,
                format!(
                    "{label} refused the API key (HTTP {code}{said}); check the API key for {label}"
                ),
                false,
            ),
            401 | 403 => (
                ProviderFault::Auth,
                format!(
                    "{label} wants an API key (HTTP {code}{said}); check the API key for {label}"
                ),
                false,
            ),
            429 => (
                ProviderFault::RateLimited,
                format!(
                    "{label} is rate-limiting requests (HTTP 429{said}); wait a minute and try again, \
                     or check your plan's limits"
                ),
                true,
            ),
            500..=599 => (
                ProviderFault::Server,
                format!("{label} had a server error (HTTP {code}{said}); try again later"),
                true,
            ),
            _ if is_context_length(body) => (
                ProviderFault::ContextLength,
                format!("the prompt does not fit the model's context window (HTTP {code}{said})"),
                false,
            ),
            404 => (
                ProviderFault::BadRequest,
                format!(
                    "{label} answered HTTP 404{said}; check the model name and the base URL {}",
                    self.base_url
                ),
                false,
            ),
            _ => (
                ProviderFault::BadRequest,
                format!("{label} rejected the request (HTTP {code}{said})"),
                false,
            ),
        };
        Failure {
            error: ProviderError {
                fault,
                message,
                status: Some(code),
            },
            retryable,
            retry_after: if retryable { retry_after } else { None },
        }
    }

    /// The classified error of a request that got no HTTP answer.
    pub fn transport_failure(&self, err: &reqwest::Error) -> Failure {
        let label = &self.label;
        if err.is_connect() {
            // A connect timeout is still a connect error: the server may come up, so retry it.
            let message = if err.is_timeout() || has_timeout_source(err) {
                format!(
                    "could not connect to {label} within {} s; is the server running at {}?",
                    secs(self.connect_timeout),
                    self.base_url
                )
            } else {
                format!(
                    "could not connect to {label}; is the server running at {}?",
                    self.base_url
                )
            };
            let fault = if err.is_timeout() || has_timeout_source(err) {
                ProviderFault::Timeout
            } else {
                ProviderFault::Unreachable
            };
            return Failure {
                error: ProviderError::new(fault, message),
                retryable: true,
                retry_after: None,
            };
        }
        if err.is_redirect() {
            // Only the policy's own words: reqwest's message quotes the request URL.
            let mut source = std::error::Error::source(err);
            let mut why = String::from("redirect not followed");
            while let Some(s) = source {
                if let Some(r) = s.downcast_ref::<CrossOriginRedirect>() {
                    why = r.to_string();
                }
                source = s.source();
            }
            return Failure::fatal(ProviderError::new(
                ProviderFault::NotConfigured,
                format!(
                    "{label} at {} answered with a redirect to another server ({why}); Engram does not follow it, so the API key and your messages go only to the configured server: set the provider's base URL to the server's own address",
                    self.base_url,
                ),
            ));
        }
        if err.is_timeout() {
            return Failure::fatal(self.timeout());
        }
        if err.is_builder() {
            return Failure::fatal(ProviderError::new(
                ProviderFault::NotConfigured,
                format!(
                    "the base URL {} is not a valid URL; check the provider settings",
                    self.base_url
                ),
            ));
        }
        // Connected, then the exchange broke (closed or reset before a complete answer): the
        // server misbehaved. Not retried, as the request may have been acted on.
        Failure::fatal(self.dropped(&format!(
            "closed before a complete answer: {}",
            error_chain(err)
        )))
    }

    /// No answer, or no new stream chunk, within the read timeout.
    pub fn timeout(&self) -> ProviderError {
        ProviderError::new(
            ProviderFault::Timeout,
            format!(
                "{} did not answer within {} s; try again, or raise the read timeout for slow local models",
                self.label,
                secs(self.read_timeout)
            ),
        )
    }

    /// A stream that stopped sending chunks for longer than the read timeout.
    pub fn stalled(&self) -> ProviderError {
        ProviderError::new(
            ProviderFault::Timeout,
            format!(
                "{} stopped streaming for {} s; try again, or raise the read timeout for slow local models",
                self.label,
                secs(self.read_timeout)
            ),
        )
    }

    /// The connection broke in the middle of an answer (the server died, was restarted or
    /// closed the stream early): said as such, not as an unreadable answer. The
    /// loop keeps the part of the reply that arrived; `what` is the transport's detail.
    pub fn dropped(&self, what: &str) -> ProviderError {
        ProviderError::new(
            ProviderFault::Unreachable,
            format!(
                "the connection to {} dropped in the middle of the answer ({}); the part that \
                 arrived is kept — retry when the server at {} is back",
                self.label,
                self.quote(what),
                self.base_url
            ),
        )
    }

    /// A body or stream we cannot read (`what` says how).
    pub fn bad_response(&self, what: &str) -> ProviderError {
        let api = match self.kind {
            ProviderKind::OpenAi => "OpenAI Chat Completions",
            ProviderKind::Anthropic => "Anthropic Messages",
        };
        ProviderError::new(
            ProviderFault::BadResponse,
            format!(
                "{} sent an answer Engram cannot read ({}); check that {} speaks the {api} API",
                self.label,
                self.quote(what),
                self.base_url
            ),
        )
    }

    /// An error the server reported inside a stream (OpenAI `{"error":…}` chunk, Anthropic
    /// `error` event). Overload and rate limits may be retried if nothing was streamed yet.
    pub fn stream_error(&self, error: &serde_json::Value) -> Failure {
        let kind = error
            .get("type")
            .and_then(|v| v.as_str())
            .unwrap_or_default();
        let code = error
            .get("code")
            .and_then(|v| v.as_str())
            .unwrap_or_default();
        let text = error
            .get("message")
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .unwrap_or_else(|| error.to_string());
        let detail = self.quote(&text);
        let label = &self.label;
        let (fault, message, retryable) = if is_context_length(&format!("{kind} {code} {text}")) {
            (
                ProviderFault::ContextLength,
                format!("the prompt does not fit the model's context window ({detail})"),
                false,
            )
        } else if kind.contains("rate_limit") || code.contains("rate_limit") {
            (
                ProviderFault::RateLimited,
                format!(
                    "{label} is rate-limiting requests ({detail}); wait a minute and try again"
                ),
                true,
            )
        } else if kind.contains("authentication") || kind.contains("permission") {
            (
                ProviderFault::Auth,
                format!("{label} refused the request ({detail}); check the API key for {label}"),
                false,
            )
        } else if kind.contains("invalid_request") {
            (
                ProviderFault::BadRequest,
                format!("{label} rejected the request ({detail})"),
                false,
            )
        } else {
            (
                ProviderFault::Server,
                format!("{label} reported an error while answering ({detail}); try again later"),
                true,
            )
        };
        Failure {
            error: ProviderError::new(fault, message),
            retryable,
            retry_after: None,
        }
    }
}

/// True when an error body says the prompt is longer than the model's context window.
pub(crate) fn is_context_length(body: &str) -> bool {
    let lower = body.to_lowercase();
    CONTEXT_LENGTH_MARKERS.iter().any(|m| lower.contains(m))
}

/// The human part of an error body: OpenAI `{"error":{"message"}}`, Anthropic
/// `{"type":"error","error":{"message"}}`, Ollama `{"error":"…"}`, FastAPI `{"detail":"…"}`, or
/// the raw text.
pub(crate) fn server_message(body: &str) -> String {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(body) else {
        return body.trim().to_owned();
    };
    let pick = |v: &serde_json::Value| -> Option<String> {
        match v {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Object(o) => {
                o.get("message").and_then(|m| m.as_str()).map(str::to_owned)
            }
            _ => None,
        }
    };
    value
        .get("error")
        .and_then(pick)
        .or_else(|| {
            value
                .get("message")
                .and_then(|m| m.as_str())
                .map(str::to_owned)
        })
        .or_else(|| value.get("detail").and_then(pick))
        .unwrap_or_else(|| body.trim().to_owned())
}

/// A readable name for the provider behind `config`: the known services and local servers by
/// their default base URL, else "the server at <base_url>".
pub(crate) fn provider_label(config: &ProviderConfig) -> String {
    let base = normalise(&config.base_url);
    let known = [
        ("https://api.openai.com/v1", "OpenAI"),
        ("https://api.anthropic.com/v1", "Anthropic"),
        ("https://openrouter.ai/api/v1", "OpenRouter"),
        ("http://127.0.0.1:11434/v1", "Ollama"),
        ("http://127.0.0.1:1234/v1", "LM Studio"),
        ("http://127.0.0.1:8000/v1", "vLLM"),
        ("http://127.0.0.1:8080/v1", "llama.cpp server"),
    ];
    known
        .iter()
        .find(|(url, _)| *url == base)
        .map(|(_, name)| (*name).to_owned())
        .unwrap_or_else(|| format!("the server at {}", config.base_url.trim_end_matches('/')))
}

/// `url` without a trailing slash and with `localhost` spelled as `127.0.0.1`.
fn normalise(url: &str) -> String {
    url.trim_end_matches('/')
        .replacen("://localhost", "://127.0.0.1", 1)
}

/// Whether a timeout hides in the error's source chain (hyper reports connect timeouts that way).
fn has_timeout_source(err: &reqwest::Error) -> bool {
    error_chain(err).to_lowercase().contains("timed out")
}

/// The error and its sources, joined with ": ".
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![err.to_string()];
    let mut source = err.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

/// A duration in seconds for messages: `2`, `0.5`.
fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s:.1}")
    }
}

/// Why a redirect was not followed (the target's scheme and host, or "too many redirects").
#[derive(Debug)]
pub(crate) struct CrossOriginRedirect(pub(crate) String);

impl std::fmt::Display for CrossOriginRedirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "redirect to {} not followed", self.0)
    }
}

impl std::error::Error for CrossOriginRedirect {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{RetryPolicy, Timeouts};

    fn ctx(key: Option<&str>) -> ErrorContext {
        ErrorContext::new(&ProviderConfig {
            kind: ProviderKind::OpenAi,
            base_url: "https://api.openai.com/v1/".into(),
            api_key: key.map(|k| secrecy::SecretString::from(k.to_owned())),
            retry: RetryPolicy::default(),
            timeouts: Timeouts::default(),
        })
    }

    #[test]
    fn statuses_map_to_faults() {
        let c = ctx(Some("sk-secret"));
        let f = |code: u16, body: &str| {
            c.status_failure(StatusCode::from_u16(code).unwrap(), body, None)
        };
        assert_eq!(f(401, "").error.fault, ProviderFault::Auth);
        assert_eq!(f(403, "").error.fault, ProviderFault::Auth);
        assert!(f(429, "").retryable);
        assert_eq!(f(429, "").error.fault, ProviderFault::RateLimited);
        assert_eq!(f(503, "").error.fault, ProviderFault::Server);
        assert!(f(503, "").retryable);
        assert!(!f(400, "").retryable);
        assert_eq!(
            f(
                400,
                r#"{"error":{"message":"bad","code":"context_length_exceeded"}}"#
            )
            .error
            .fault,
            ProviderFault::ContextLength
        );
        assert_eq!(
            f(400, r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#)
                .error
                .fault,
            ProviderFault::ContextLength
        );
        let bad = f(422, r#"{"error":{"message":"unknown field foo"}}"#).error;
        assert_eq!(bad.fault, ProviderFault::BadRequest);
        assert!(bad.message.contains("unknown field foo"), "{}", bad.message);
        assert_eq!(bad.status, Some(422));
        assert!(
            f(401, "")
                .error
                .message
                .contains("check the API key for OpenAI")
        );
    }

    #[test]
    fn quoted_text_never_carries_the_key() {
        let c = ctx(Some("sk-secret-123"));
        let e = c.status_failure(
            StatusCode::UNAUTHORIZED,
            r#"{"error":{"message":"Incorrect API key provided: sk-secret-123"}}"#,
            None,
        );
        assert!(
            !e.error.message.contains("sk-secret-123"),
            "{}",
            e.error.message
        );
        assert!(e.error.message.contains("<redacted>"));
    }

    #[test]
    fn quotes_are_one_short_line() {
        let c = ctx(None);
        let long = format!("line one\nline two {}", "x".repeat(1000));
        let q = c.quote(&long);
        assert!(!q.contains('\n'));
        assert!(q.chars().count() <= MAX_QUOTE_CHARS + 1);
    }

    #[test]
    fn server_messages_are_found_in_common_shapes() {
        assert_eq!(server_message(r#"{"error":{"message":"a"}}"#), "a");
        assert_eq!(server_message(r#"{"error":"b"}"#), "b");
        assert_eq!(server_message(r#"{"detail":"c"}"#), "c");
        assert_eq!(server_message(" plain "), "plain");
    }

    #[test]
    fn labels_name_known_providers() {
        assert_eq!(ctx(None).label, "OpenAI");
        let mut config =
            ProviderConfig::new(ProviderKind::OpenAi, "http://localhost:11434/v1", None);
        assert_eq!(provider_label(&config), "Ollama");
        config.base_url = "http://10.0.0.2:9000/v1/".into();
        assert_eq!(
            provider_label(&config),
            "the server at http://10.0.0.2:9000/v1"
        );
    }
}

//! One provider's HTTP side: the client with its timeouts and auth headers, sending with error
//! classification, reading bodies and server-sent events with the idle limit.

use crate::errors::{CrossOriginRedirect, ErrorContext, Failure};
use crate::retry;
use crate::types::{ProviderConfig, ProviderError, ProviderKind, RetryPolicy};
use engram_core::error::ProviderFault;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Method, RequestBuilder, Response};
use secrecy::{ExposeSecret, SecretString};
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

/// The `anthropic-version` header Engram speaks.
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";

/// An HTTP client bound to one provider's base URL, key, timeouts and retry policy.
pub(crate) struct Transport {
    http: reqwest::Client,
    base: String,
    kind: ProviderKind,
    key: Option<SecretString>,
    /// Time allowed for the response to start and between two body chunks.
    read: Duration,
    /// For error messages.
    pub ctx: ErrorContext,
    /// For callers that drive their own retry loop (streaming).
    pub retry: RetryPolicy,
}

/// One HTTP client per connect timeout, shared by every transport in the process. Building a
/// client loads the platform's root certificates (milliseconds), and a shared client keeps its
/// pooled connections between runs; clones are cheap handles to the same client.
/// `direct` clients use no proxy (see [`is_loopback_url`]).
fn shared_client(connect: Duration, direct: bool) -> Result<reqwest::Client, ProviderError> {
    static CLIENTS: LazyLock<Mutex<HashMap<(Duration, bool), reqwest::Client>>> =
        LazyLock::new(Default::default);
    let mut clients = CLIENTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(client) = clients.get(&(connect, direct)) {
        return Ok(client.clone());
    }
    let mut builder = reqwest::Client::builder()
        .connect_timeout(connect)
        .redirect(same_origin_redirects())
        .user_agent(concat!("engram/", env!("CARGO_PKG_VERSION")));
    if direct {
        builder = builder.no_proxy();
    }
    let client = builder.build().map_err(|e| {
        ProviderError::new(
            ProviderFault::NotConfigured,
            format!("could not set up the HTTP client: {e}"),
        )
    })?;
    clients.insert((connect, direct), client.clone());
    Ok(client)
}

/// Whether `url` names this machine (`localhost`, `127.x`, `::1`) by its parsed host. Such
/// servers (Ollama, LM Studio, a local MCP server) are reached directly: reqwest takes
/// `HTTP_PROXY`/`ALL_PROXY` from the environment without exempting loopback, which would send
/// a conversation (and any key or token) meant for this machine to the proxy.
pub fn is_loopback_url(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url.trim()) else {
        return false;
    };
    match parsed.host_str() {
        Some(h) if h.eq_ignore_ascii_case("localhost") => true,
        Some(h) => h
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

/// Most redirects followed within one origin.
const MAX_REDIRECTS: usize = 10;

/// Follows redirects only within the origin (scheme, host, port) the request went to. reqwest
/// drops `Authorization` on a cross-host redirect but not Anthropic's `x-api-key`, and a 307/308
/// would carry the conversation along too: a key and the text sent with it go only to the host
/// they were configured for (DESIGN.md §8b).
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let next = attempt.url();
        let same = attempt.previous().last().is_some_and(|prev| {
            prev.scheme() == next.scheme()
                && prev.host_str() == next.host_str()
                && prev.port_or_known_default() == next.port_or_known_default()
        });
        if !same {
            let to = format!(
                "{}://{}",
                next.scheme(),
                next.host_str().unwrap_or_default()
            );
            attempt.error(CrossOriginRedirect(to))
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(CrossOriginRedirect("too many redirects".into()))
        } else {
            attempt.follow()
        }
    })
}

impl Transport {
    /// A transport for `config`. Fails only when the HTTP client cannot be built.
    pub fn new(config: &ProviderConfig) -> Result<Self, ProviderError> {
        Ok(Self {
            http: shared_client(config.timeouts.connect, is_loopback_url(&config.base_url))?,
            base: config.base_url.trim_end_matches('/').to_owned(),
            kind: config.kind,
            key: config
                .api_key
                .clone()
                .filter(|k| !k.expose_secret().is_empty()),
            read: config.timeouts.read,
            ctx: ErrorContext::new(config),
            retry: config.retry.clone(),
        })
    }

    /// `{base}/{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("{}/{}", self.base, path.trim_start_matches('/'))
    }

    /// A request with the provider's auth headers (`Authorization: Bearer` for OpenAI-style
    /// servers, `x-api-key` + `anthropic-version` for Anthropic); no key header without a key.
    fn request(&self, method: Method, path: &str) -> RequestBuilder {
        let mut headers = HeaderMap::new();
        let key = self.key.as_ref().map(|k| k.expose_secret());
        match self.kind {
            ProviderKind::OpenAi => {
                if let Some(mut value) =
                    key.and_then(|k| HeaderValue::from_str(&format!("Bearer {k}")).ok())
                {
                    value.set_sensitive(true);
                    headers.insert(reqwest::header::AUTHORIZATION, value);
                }
            }
            ProviderKind::Anthropic => {
                if let Some(mut value) = key.and_then(|k| HeaderValue::from_str(k).ok()) {
                    value.set_sensitive(true);
                    headers.insert("x-api-key", value);
                }
                headers.insert(
                    "anthropic-version",
                    HeaderValue::from_static(ANTHROPIC_VERSION),
                );
            }
        }
        self.http.request(method, self.url(path)).headers(headers)
    }

    /// Sends once. `Ok` only for a 2xx answer whose headers arrived within the read timeout;
    /// anything else is classified (the error body read and quoted).
    async fn send(&self, request: RequestBuilder) -> Result<Response, Failure> {
        let response = match tokio::time::timeout(self.read, request.send()).await {
            Err(_) => return Err(Failure::fatal(self.ctx.timeout())),
            Ok(Err(e)) => return Err(self.ctx.transport_failure(&e)),
            Ok(Ok(r)) => r,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let after = retry::retry_after(response.headers());
        let body = self
            .read_body(response)
            .await
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        tracing::debug!(status = status.as_u16(), "provider answered with an error");
        Err(self.ctx.status_failure(status, &body, after))
    }

    /// POSTs `body` as JSON to `path`, once.
    pub async fn post(&self, path: &str, body: &serde_json::Value) -> Result<Response, Failure> {
        self.send(self.request(Method::POST, path).json(body)).await
    }

    /// POSTs `body` to `path` and parses the JSON answer, retrying per the policy.
    pub async fn post_json(
        &self,
        path: &str,
        body: &serde_json::Value,
    ) -> Result<serde_json::Value, ProviderError> {
        retry::with_retries(&self.retry, |_| async {
            let response = self.post(path, body).await?;
            self.read_json(response).await
        })
        .await
    }

    /// GETs `path` (with any query) and parses the JSON answer, retrying per the policy.
    pub async fn get_json(&self, path: &str) -> Result<serde_json::Value, ProviderError> {
        retry::with_retries(&self.retry, |_| async {
            let response = self.send(self.request(Method::GET, path)).await?;
            self.read_json(response).await
        })
        .await
    }

    /// The whole body, each chunk awaited at most the read timeout.
    async fn read_body(&self, mut response: Response) -> Result<Vec<u8>, Failure> {
        let mut body = Vec::new();
        loop {
            match tokio::time::timeout(self.read, response.chunk()).await {
                Err(_) => return Err(Failure::fatal(self.ctx.stalled())),
                Ok(Err(e)) => {
                    return Err(Failure::fatal(
                        self.ctx.bad_response(&format!("the body broke off: {e}")),
                    ));
                }
                Ok(Ok(None)) => return Ok(body),
                Ok(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
            }
        }
    }

    /// The body parsed as JSON.
    pub async fn read_json(&self, response: Response) -> Result<serde_json::Value, Failure> {
        let body = self.read_body(response).await?;
        serde_json::from_slice(&body).map_err(|e| {
            let start = String::from_utf8_lossy(&body[..body.len().min(80)]).into_owned();
            Failure::fatal(
                self.ctx
                    .bad_response(&format!("not JSON: {e}; body starts {start:?}")),
            )
        })
    }

    /// The body as server-sent events.
    pub fn events(&self, response: Response) -> Events<'_> {
        Events {
            inner: Box::pin(response.bytes_stream().eventsource()),
            transport: self,
        }
    }
}

/// True when the response is a server-sent event stream (some servers answer a streaming request
/// with one JSON body instead).
pub(crate) fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|v| !v.starts_with("application/json"))
}

type EventStream =
    Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// Server-sent events of one response, with the read timeout as the idle limit.
pub(crate) struct Events<'a> {
    inner: EventStream,
    transport: &'a Transport,
}

impl Events<'_> {
    /// The next event, `None` at the end of the stream. A gap longer than the read timeout ends
    /// with `Timeout`; a broken or unparsable stream with `BadResponse`.
    pub async fn next(&mut self) -> Result<Option<Event>, Failure> {
        let ctx = &self.transport.ctx;
        match tokio::time::timeout(self.transport.read, self.inner.next()).await {
            Err(_) => Err(Failure::fatal(ctx.stalled())),
            Ok(None) => Ok(None),
            Ok(Some(Ok(event))) => Ok(Some(event)),
            Ok(Some(Err(EventStreamError::Transport(e)))) => Err(Failure::fatal(
                ctx.dropped(&format!("the stream broke off: {e}")),
            )),
            Ok(Some(Err(e))) => Err(Failure::fatal(
                ctx.bad_response(&format!("the stream is not valid SSE: {e}")),
            )),
        }
    }

    /// The next event with its data parsed as JSON (events with empty data are skipped), `None`
    /// at the end of the stream.
    pub async fn next_json(&mut self) -> Result<Option<SseItem>, Failure> {
        loop {
            let Some(event) = self.next().await? else {
                return Ok(None);
            };
            let data = event.data.trim();
            if data.is_empty() {
                continue;
            }
            if data == "[DONE]" {
                return Ok(Some(SseItem::Done));
            }
            let value = serde_json::from_str(data).map_err(|e| {
                let start: String = data.chars().take(80).collect();
                Failure::fatal(self.transport.ctx.bad_response(&format!(
                    "a stream chunk is not JSON: {e}; it starts {start:?}"
                )))
            })?;
            return Ok(Some(SseItem::Json(value)));
        }
    }
}

/// One parsed server-sent event.
pub(crate) enum SseItem {
    /// An event whose `data:` is JSON (Anthropic repeats the event name in its `type`).
    Json(serde_json::Value),
    /// OpenAI's `data: [DONE]` terminator.
    Done,
}

#[cfg(test)]
mod tests {
    use super::is_loopback_url;

    #[test]
    fn loopback_is_told_by_the_parsed_host() {
        for local in [
            "http://localhost:11434/v1",
            "http://127.0.0.1:1234/v1",
            "http://127.9.9.9/",
            "http://[::1]:8080/v1",
        ] {
            assert!(is_loopback_url(local), "{local}");
        }
        for remote in [
            "https://api.openai.com/v1",
            "https://localhost.evil.example/v1",
            "https://evil.example/?u=http://127.0.0.1",
            "not a url",
        ] {
            assert!(!is_loopback_url(remote), "{remote}");
        }
    }
}

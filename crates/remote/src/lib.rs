//! The desktop's side of a remote `engram serve`: the window's commands (`POST /app/{name}`),
//! runs and joined runs (Server-Sent Events) and the notice stream (`/app/notices`), over
//! HTTPS with the person's token, so the desktop window can work on a server's engine exactly
//! as on its own.
//!
//! What is sent and trusted:
//! - **HTTPS only**, except to this machine (`http://127.0.0.1`, `localhost`, `::1`);
//! - **the certificate**: with a fingerprint (what `engram serve --tls-self-signed` prints),
//!   exactly that certificate and no other, whoever signed it; without one, a certificate the
//!   usual authorities vouch for (a server with `--tls-cert`);
//! - **the token** goes in the `Authorization` header to that server alone, never in a URL
//!   (an address pasted with `#token=…`, as `engram serve` prints it, is split first), and
//!   requests do not follow redirects, so it cannot be carried elsewhere;
//! - answers are the server's JSON, passed on as they are: this crate checks their shape only
//!   where it acts on them (an error's code, a run's `done`).

mod pin;

pub use pin::Fingerprint;

use engram_core::ErrorBody;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::Value;
use std::time::Duration;
use url::Url;

/// How long connecting (TCP and TLS) may take before the server counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one call may take in all (a 64 MiB upload on a slow link included); runs and the
/// notice stream have no such bound, as they stay open while the server works.
const CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// A failed request, in the engine's error shape (`{code, message, details?}`), so the window
/// shows a remote error exactly as a local one. Codes of its own: `backend_unreachable` (no
/// answer, a refused certificate, a stream cut short), `unauthorized` (the token was refused),
/// `not_supported` (the server does not know the command), `invalid_input` (a bad address or
/// fingerprint).
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteError(pub ErrorBody);

impl RemoteError {
    fn new(code: &str, message: impl Into<String>) -> Self {
        Self(ErrorBody {
            code: code.into(),
            message: message.into(),
            details: None,
        })
    }

    /// The error's code.
    pub fn code(&self) -> &str {
        &self.0.code
    }
}

impl std::fmt::Display for RemoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for RemoteError {}

/// What a request returns.
pub type RemoteResult<T> = Result<T, RemoteError>;

/// Where a server is and how to know it: what the desktop keeps (the token is kept apart, in
/// the keychain).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ServerAddress {
    /// The server's address, e.g. `https://desk.lan:8283` (no token, no fragment).
    pub url: String,
    /// The SHA-256 of its certificate, `AB:CD:…`, when it is pinned.
    pub fingerprint: Option<String>,
}

/// An address as a person may paste it, split: the address without its fragment, and the
/// token the fragment carried (`#token=…`, as `engram serve` prints it).
///
/// Errors: `invalid_input` for an address that is not `https://` (or `http://` to this
/// machine), or that carries a user name, password or query.
pub fn parse_address(text: &str) -> RemoteResult<(Url, Option<String>)> {
    let bad = |why: &str| RemoteError::new("invalid_input", format!("'{}' {why}", text.trim()));
    let mut url =
        Url::parse(text.trim()).map_err(|_| bad("is not an address like https://desk.lan:8283"))?;
    let token = url.fragment().and_then(|f| {
        f.split(['&', '?'])
            .find_map(|part| part.strip_prefix("token="))
            .map(str::to_owned)
    });
    url.set_fragment(None);
    if !url.username().is_empty() || url.password().is_some() || url.query().is_some() {
        return Err(bad(
            "carries a name, password or query; give the server's address alone",
        ));
    }
    let local = match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => return Err(bad("names no host")),
    };
    match url.scheme() {
        "https" => {}
        "http" if local => {}
        "http" => {
            return Err(bad(
                "is plain HTTP: a server on another machine is reached over HTTPS only (start it with --tls-self-signed)",
            ));
        }
        _ => return Err(bad("is not an https:// address")),
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok((url, token))
}

/// A connection to a remote `engram serve` with one person's token.
#[derive(Clone)]
pub struct Remote {
    base: Url,
    token: String,
    address: ServerAddress,
    client: reqwest::Client,
    /// What `app_info` answered (version, user).
    info: Value,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token.
        f.debug_struct("Remote")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl Remote {
    /// Connects to the server at `address` (see [`parse_address`]; a `#token=` there is used
    /// when `token` is `None`), pinning `fingerprint` when given, and checks the token with
    /// `app_info`.
    ///
    /// Errors: `invalid_input` (address, fingerprint, no token); `backend_unreachable` (no
    /// answer, or a certificate that is not the pinned one or not vouched for);
    /// `unauthorized` (the token was refused).
    pub async fn connect(
        address: &str,
        token: Option<&str>,
        fingerprint: Option<&str>,
    ) -> RemoteResult<Self> {
        let (base, pasted) = parse_address(address)?;
        let token = token
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .or(pasted)
            .ok_or_else(|| {
                RemoteError::new(
                    "invalid_input",
                    "a token is needed: `engram serve --show-token` prints the server's, `engram user token NAME` a user's",
                )
            })?;
        let pin = fingerprint
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(Fingerprint::parse)
            .transpose()
            .map_err(|e| RemoteError::new("invalid_input", e))?;
        let mut builder = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .https_only(base.scheme() == "https");
        if let Some(pin) = pin {
            let tls = pin::pinned_config(pin)
                .map_err(|e| RemoteError::new("internal", format!("TLS setup: {e}")))?;
            builder = builder.tls_backend_preconfigured(tls);
        }
        let client = builder
            .build()
            .map_err(|e| RemoteError::new("internal", format!("HTTP client: {e}")))?;
        let mut remote = Self {
            address: ServerAddress {
                url: base.to_string(),
                fingerprint: pin.map(|p| p.to_string()),
            },
            base,
            token,
            client,
            info: Value::Null,
        };
        remote.info = remote.call("app_info", &Value::Null).await?;
        Ok(remote)
    }

    /// Where the server is and its pinned fingerprint (what to keep to connect again).
    pub fn address(&self) -> &ServerAddress {
        &self.address
    }

    /// The token, to keep in the keychain.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The server's host name, e.g. `desk.lan`: how the window names it.
    pub fn host(&self) -> String {
        self.base.host_str().unwrap_or_default().to_owned()
    }

    /// The user the token belongs to, when it is a user's (not the administrator's).
    pub fn user(&self) -> Option<String> {
        self.info
            .get("user")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// The server's Engram version.
    pub fn version(&self) -> Option<String> {
        self.info
            .get("version")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    fn post(
        &self,
        command: &str,
        args: &Value,
        accept: &str,
    ) -> RemoteResult<reqwest::RequestBuilder> {
        let url = self
            .base
            .join(&format!("app/{command}"))
            .map_err(|e| RemoteError::new("invalid_input", format!("{command}: {e}")))?;
        Ok(self
            .client
            .post(url)
            .bearer_auth(&self.token)
            .header(reqwest::header::ACCEPT, accept)
            .json(args))
    }

    /// Calls `command` with `args` and returns its JSON result (`null` for none).
    ///
    /// Errors: the server's error as it sent it; `backend_unreachable`; `unauthorized`;
    /// `not_supported`.
    pub async fn call(&self, command: &str, args: &Value) -> RemoteResult<Value> {
        let response = self
            .post(command, args, "application/json")?
            .timeout(CALL_TIMEOUT)
            .send()
            .await
            .map_err(|e| self.unreachable(&e))?;
        if !response.status().is_success() {
            return Err(failure(response, command).await);
        }
        let text = response.text().await.map_err(|e| self.unreachable(&e))?;
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).map_err(|e| {
            RemoteError::new(
                "internal",
                format!(
                    "{} answered {command} with something that is not JSON: {e}",
                    self.host()
                ),
            )
        })
    }

    /// Starts the run `command` (or joins one: `attach_run`) and hands each of its events
    /// (JSON, as the server sent them) to `on_event` until `done`. Returns `false` when no run
    /// started (`attach_run` on an agent that is not running).
    ///
    /// Errors: as [`call`](Self::call) when the run does not start; `backend_unreachable`
    /// when the stream ends before `done` (the run may still be going on the server).
    pub async fn run(
        &self,
        command: &str,
        args: &Value,
        mut on_event: impl FnMut(Value),
    ) -> RemoteResult<bool> {
        let response = self
            .post(command, args, "text/event-stream")?
            .send()
            .await
            .map_err(|e| self.unreachable(&e))?;
        if !response.status().is_success() {
            return Err(failure(response, command).await);
        }
        let streamed = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !streamed {
            // A plain answer: `null` from attach_run when nothing runs.
            return Ok(false);
        }
        let mut events = response.bytes_stream().eventsource();
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| {
                RemoteError::new(
                    "backend_unreachable",
                    format!("the reply stream from {} broke off: {e}", self.host()),
                )
            })?;
            let Ok(value) = serde_json::from_str::<Value>(&event.data) else {
                continue;
            };
            let done = value.get("type").and_then(Value::as_str) == Some("done");
            on_event(value);
            if done {
                return Ok(true);
            }
        }
        Err(RemoteError::new(
            "backend_unreachable",
            format!(
                "the connection to {} dropped before the reply finished; the run may still be going there — reload to see it",
                self.host()
            ),
        ))
    }

    /// Listens to the server's notices and hands each (JSON) to `on_notice` until the
    /// callback returns `false`. A dropped stream is opened again (0.5 s, doubling to 10 s);
    /// after a reconnection `{"type": "agents_changed"}` comes first, as notices may have been
    /// missed meanwhile. Never returns otherwise.
    pub async fn notices(&self, mut on_notice: impl FnMut(Value) -> bool) {
        let mut attempt: u32 = 0;
        loop {
            if attempt > 0 {
                let wait = Duration::from_millis(500 * 2u64.pow(attempt.min(5)))
                    .min(Duration::from_secs(10));
                tokio::time::sleep(wait).await;
            }
            let opened = self
                .client
                .get(self.base.join("app/notices").expect("a fixed path"))
                .bearer_auth(&self.token)
                .header(reqwest::header::ACCEPT, "text/event-stream")
                .send()
                .await;
            match opened {
                Ok(response) if response.status().is_success() => {
                    if attempt > 0 && !on_notice(serde_json::json!({"type": "agents_changed"})) {
                        return;
                    }
                    attempt = 0;
                    let mut events = response.bytes_stream().eventsource();
                    while let Some(Ok(event)) = events.next().await {
                        if let Ok(value) = serde_json::from_str::<Value>(&event.data)
                            && value.get("type").is_some()
                            && !on_notice(value)
                        {
                            return;
                        }
                    }
                }
                Ok(response) => {
                    tracing::warn!(status = %response.status(), host = %self.host(), "the server refused the notice stream");
                }
                Err(e) => {
                    tracing::debug!(error = %e, host = %self.host(), "the notice stream is not reachable");
                }
            }
            attempt = attempt.saturating_add(1);
        }
    }

    fn unreachable(&self, e: &reqwest::Error) -> RemoteError {
        // The source chain holds the reason (a refused certificate, a refused connection).
        let mut why = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            why = format!("{why}: {s}");
            source = s.source();
        }
        RemoteError::new(
            "backend_unreachable",
            format!("{} is not answering ({why})", self.host()),
        )
    }
}

/// The error a failed answer carries: the engine's shape (`{code, message}`), the REST
/// shape (`{code, detail}`), or one made from the status.
async fn failure(response: reqwest::Response, command: &str) -> RemoteError {
    let status = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    let code = body.get("code").and_then(Value::as_str);
    let message = body
        .get("message")
        .or_else(|| body.get("detail"))
        .and_then(Value::as_str);
    if status == reqwest::StatusCode::UNAUTHORIZED {
        return RemoteError::new(
            "unauthorized",
            "the server refused the token: ask its administrator for a new one (`engram user token NAME`)",
        );
    }
    match (code, message) {
        (Some(code), Some(message)) => RemoteError(ErrorBody {
            code: code.to_owned(),
            message: message.to_owned(),
            details: body
                .get("details")
                .or_else(|| body.get("current"))
                .cloned()
                .map(|d| {
                    // The REST shape carries a stale block as `current`; the engine's as details.
                    if body.get("details").is_some() {
                        d
                    } else {
                        serde_json::json!({"current": d})
                    }
                }),
        }),
        _ if status == reqwest::StatusCode::NOT_FOUND => RemoteError::new(
            "not_supported",
            format!("the server does not offer \"{command}\" (an older Engram?)"),
        ),
        _ => RemoteError::new(
            "internal",
            format!("the server answered {status} to {command}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_https_or_this_machine_and_give_up_a_pasted_token() {
        let (url, token) = parse_address("https://desk.lan:8283/#token=engram-user-abc").unwrap();
        assert_eq!(url.as_str(), "https://desk.lan:8283/");
        assert_eq!(token.as_deref(), Some("engram-user-abc"));
        let (url, token) = parse_address(" https://example.org/engram ").unwrap();
        assert_eq!((url.as_str(), token), ("https://example.org/engram/", None));
        assert!(parse_address("http://127.0.0.1:8283").is_ok());
        assert!(parse_address("http://localhost:8283").is_ok());
        for bad in [
            "http://desk.lan:8283",
            "ftp://desk.lan",
            "desk.lan:8283",
            "https://ana:secret@desk.lan",
            "https://desk.lan/?token=x",
            "",
        ] {
            let e = parse_address(bad).unwrap_err();
            assert_eq!(e.code(), "invalid_input", "{bad}: {e}");
        }
    }
}

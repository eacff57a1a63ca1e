//! The gate every request passes: local `Host` and `Origin` only, then the bearer token.
//!
//! Binding to loopback is not enough on its own: a web page can point a DNS name at 127.0.0.1
//! (DNS rebinding) and talk to the API from the browser. Such requests carry the attacker's
//! `Host` (and usually `Origin`), so anything but a loopback name is refused with 403 before the
//! token is even looked at. The token then keeps out other local programs and users. The
//! server's own token is the administrator's; a user's token (see `engram_service::Users`)
//! passes too, and the request then carries its [`Principal`] for the [`access`](crate::access)
//! check.

use crate::access::Principal;
use crate::config::{Auth, ServerConfig};
use crate::errors::ApiError;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use engram_service::Engram;
use secrecy::ExposeSecret;
use std::sync::Arc;

/// Routes that answer without a token (they reveal nothing).
const OPEN_PATHS: &[&str] = &["/v1/health", "/v1/health/"];

/// Whether a path is part of the API (token required) rather than a file of the served UI.
fn needs_token(path: &str) -> bool {
    (path.starts_with("/v1/") || path.starts_with("/app/") || path == "/v1" || path == "/app")
        && !OPEN_PATHS.contains(&path)
}

/// What the gate checks, built once from the [`ServerConfig`].
pub struct Guard {
    token: Option<Vec<u8>>,
    extra_origins: Vec<String>,
    hosts: Vec<String>,
    users: Option<Arc<Engram>>,
}

impl Guard {
    /// The gate for `config`, taking the server's token alone.
    pub fn new(config: &ServerConfig) -> Self {
        Self {
            users: None,
            token: match &config.auth {
                Auth::Token(t) => Some(t.expose_secret().as_bytes().to_vec()),
                Auth::Disabled => None,
            },
            extra_origins: config.extra_origins.clone(),
            hosts: config.hosts.clone(),
        }
    }

    /// The same gate, also taking users' tokens, looked up in `engram`.
    pub fn with_users(self, engram: Arc<Engram>) -> Self {
        Self {
            users: Some(engram),
            ..self
        }
    }
}

/// The name in an authority (`Host` header value or an origin's), without its port and an IPv6
/// address's brackets.
fn authority_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        // [v6]:port
        rest.split(']').next().unwrap_or_default()
    } else {
        host.rsplit_once(':').map_or(host, |(h, port)| {
            if port.chars().all(|c| c.is_ascii_digit()) {
                h
            } else {
                host
            }
        })
    }
}

/// Whether `host` (a `Host` header value or an origin's authority) names this machine:
/// `localhost`, `127.0.0.1` (any `127.x`) or `[::1]`, with any port.
pub fn is_local_authority(host: &str) -> bool {
    let name = authority_name(host);
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    name.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// Whether an `Origin` header value is a local page (`http(s)://<local authority>`) or one of
/// the extra origins.
pub fn is_local_origin(origin: &str, extra: &[String]) -> bool {
    if extra.iter().any(|o| o == origin) {
        return true;
    }
    let Some(authority) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    !authority.contains('/') && is_local_authority(authority)
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).map(|v| v.to_str().unwrap_or("\u{fffd}"))
}

/// Constant-time comparison, so the token cannot be guessed byte by byte from timings.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Guard {
    /// Whether `host` is local or one of the names the server is reached by.
    fn allows_host(&self, host: &str) -> bool {
        is_local_authority(host) || {
            let name = authority_name(host);
            self.hosts.iter().any(|h| h.eq_ignore_ascii_case(name))
        }
    }

    /// Whether `origin` is a local page, an extra origin, or an HTTPS page of one of the
    /// names the server is reached by (the web UI it serves, opened by that name).
    fn allows_origin(&self, origin: &str) -> bool {
        is_local_origin(origin, &self.extra_origins)
            || origin
                .strip_prefix("https://")
                .is_some_and(|a| !a.contains('/') && !self.hosts.is_empty() && self.allows_host(a))
    }
}

/// The middleware: 403 for a foreign `Host`/`Origin`, 401 without the server's or a user's
/// bearer token; passes on whose token it was as a [`Principal`].
pub async fn check(State(guard): State<Arc<Guard>>, mut req: Request, next: Next) -> Response {
    let headers = req.headers();
    if let Some(host) = header_str(headers, header::HOST)
        && !guard.allows_host(host)
    {
        let answers = if guard.hosts.is_empty() {
            "localhost".to_owned()
        } else {
            format!("localhost and {}", guard.hosts.join(", "))
        };
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("Host '{host}' is not allowed: the API answers only to {answers}"),
        )
        .into_response();
    }
    if let Some(origin) = header_str(headers, header::ORIGIN)
        && !guard.allows_origin(origin)
    {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("Origin '{origin}' is not allowed"),
        )
        .into_response();
    }
    if let Some(expected) = &guard.token
        && needs_token(req.uri().path())
    {
        let given = header_str(headers, header::AUTHORIZATION)
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim);
        let principal = match given {
            Some(g) if same_bytes(g.as_bytes(), expected) => Some(Principal::Admin),
            Some(g) => match &guard.users {
                Some(e) => match e.users().authenticate(g).await {
                    Ok(user) => user.map(Principal::User),
                    Err(e) => return crate::errors::AppError(e).into_response(),
                },
                None => None,
            },
            None => None,
        };
        if let Some(p) = principal {
            req.extensions_mut().insert(p);
        } else {
            let mut response = ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "missing or wrong bearer token: pass the token `engram serve --show-token` \
                 prints (letta-client: token=… or api_key=…)",
            )
            .into_response();
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, "Bearer".parse().expect("static"));
            return response;
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_hosts_pass_and_others_do_not() {
        for ok in [
            "localhost",
            "localhost:8283",
            "127.0.0.1:9",
            "[::1]:8283",
            "127.1.2.3",
        ] {
            assert!(is_local_authority(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8283",
            "localhost.evil.example",
            "0.0.0.0:1",
            "10.0.0.1",
        ] {
            assert!(!is_local_authority(bad), "{bad}");
        }
    }

    #[test]
    fn origins_must_be_local_pages() {
        assert!(is_local_origin("http://localhost:5173", &[]));
        assert!(is_local_origin("https://127.0.0.1", &[]));
        assert!(!is_local_origin("http://evil.example", &[]));
        assert!(!is_local_origin("null", &[]));
        assert!(is_local_origin(
            "tauri://localhost",
            &["tauri://localhost".into()]
        ));
    }

    #[test]
    fn the_names_a_remote_server_is_reached_by_pass_too() {
        let mut config = ServerConfig::new(Auth::Disabled);
        config.hosts = vec!["engram.lan".into(), "192.168.1.20".into()];
        let guard = Guard::new(&config);
        for ok in [
            "engram.lan",
            "ENGRAM.lan:8283",
            "192.168.1.20:8283",
            "localhost:1",
        ] {
            assert!(guard.allows_host(ok), "{ok}");
        }
        for bad in ["evil.example", "engram.lan.evil.example", "192.168.1.21"] {
            assert!(!guard.allows_host(bad), "{bad}");
        }
        assert!(guard.allows_origin("https://engram.lan:8283"));
        assert!(
            !guard.allows_origin("http://engram.lan:8283"),
            "plain HTTP pages are not"
        );
        assert!(!guard.allows_origin("https://evil.example"));
        let local = Guard::new(&ServerConfig::new(Auth::Disabled));
        assert!(!local.allows_host("engram.lan"));
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same_bytes(b"abc", b"abc"));
        assert!(!same_bytes(b"abc", b"abd"));
        assert!(!same_bytes(b"abc", b"ab"));
    }
}

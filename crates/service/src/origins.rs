//! URL origins, which decide where a key may go: a key is sent only to the origin it was
//! stored for, and a loopback server may be reached without one.

/// Whether `base_url` names this machine (`localhost`, `127.x`, `::1`), by its parsed host —
/// never by text found elsewhere in the URL (`https://evil.example/?u=://127.0.0.1`).
pub(crate) fn is_loopback(base_url: &str) -> bool {
    match url::Url::parse(base_url.trim())
        .ok()
        .and_then(|u| u.host().map(|h| h.to_owned()))
    {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Whether two URLs have the same origin (scheme, host and port, default ports filled in).
/// Unparsable URLs match nothing.
pub(crate) fn same_origin(a: &str, b: &str) -> bool {
    match (url::Url::parse(a.trim()), url::Url::parse(b.trim())) {
        (Ok(a), Ok(b)) => {
            let (a, b) = (a.origin(), b.origin());
            a.is_tuple() && a == b
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{is_loopback, same_origin};

    #[test]
    fn loopback_is_judged_by_the_host_alone() {
        assert!(is_loopback("http://127.0.0.1:11434/v1"));
        assert!(is_loopback("http://localhost:1234/v1"));
        assert!(is_loopback("http://[::1]:8080"));
        assert!(!is_loopback("https://evil.example/?u=://127.0.0.1"));
        assert!(!is_loopback("https://evil.example/://localhost/v1"));
        assert!(!is_loopback("not a url"));
    }

    #[test]
    fn origins_compare_scheme_host_and_port() {
        assert!(same_origin(
            "https://api.openai.com/v1",
            "https://api.openai.com:443/x"
        ));
        assert!(!same_origin(
            "https://api.openai.com/v1",
            "http://api.openai.com/v1"
        ));
        assert!(!same_origin(
            "https://api.openai.com/v1",
            "https://api.openai.com.evil.io/v1"
        ));
        assert!(!same_origin(
            "http://127.0.0.1:8080/v1",
            "http://127.0.0.1:8081/v1"
        ));
        assert!(!same_origin("not a url", "not a url"));
    }
}

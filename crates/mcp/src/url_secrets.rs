//! Credentials written into an MCP server's URL (`https://user:pass@host/mcp`,
//! `…/mcp?api_key=…`, `?token=…`): found here so the service keeps them in the keychain, shows
//! and exports the URL without them, and scrubs them from error messages.
//!
//! A query parameter counts as a credential when its name (case-insensitive, `-` read as `_`)
//! contains one of [`SECRET_PARAM_WORDS`]; the match is broad on purpose: moving a harmless
//! parameter to the keychain costs nothing, leaking a key costs a lot. Credentials inside the
//! path (`/s/<secret>/mcp`) cannot be told from an ordinary path and are not detected.

use url::Url;

/// Words that mark a query parameter as a credential (`api_key`, `apikey`, `token`,
/// `access_token`, `auth`, `secret`, `password`, `sig`, `session`, `jwt`, `credential`, …).
pub const SECRET_PARAM_WORDS: &[&str] = &[
    "key",
    "token",
    "secret",
    "pass",
    "pwd",
    "auth",
    "sig",
    "session",
    "jwt",
    "credential",
];

/// What replaces a credential in the URL that is stored, shown and exported.
pub const HIDDEN: &str = "***";

/// Whether a query parameter named `name` carries a credential (see the module docs).
pub fn is_secret_param(name: &str) -> bool {
    let name = name.to_ascii_lowercase().replace('-', "_");
    SECRET_PARAM_WORDS.iter().any(|w| name.contains(w))
}

/// `url` with its credentials replaced by [`HIDDEN`] (user name and password, and the value of
/// every credential query parameter), and whether it had any. A URL that does not parse is
/// returned as given, with `false`.
pub fn hide(url: &str) -> (String, bool) {
    let Ok(mut parsed) = Url::parse(url) else {
        return (url.to_owned(), false);
    };
    let mut hidden = false;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        hidden = true;
        // Both always succeed on http(s) URLs with a host.
        let _ = parsed.set_username(HIDDEN);
        let _ = parsed.set_password(None);
    }
    let pairs: Vec<(String, String)> = parsed
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    if pairs.iter().any(|(k, _)| is_secret_param(k)) {
        hidden = true;
        let mut query = parsed.query_pairs_mut();
        query.clear();
        for (k, v) in &pairs {
            let v = if is_secret_param(k) { HIDDEN } else { v };
            query.append_pair(k, v);
        }
    }
    (
        if hidden {
            parsed.into()
        } else {
            url.to_owned()
        },
        hidden,
    )
}

/// `url` with its credentials taken out: no user name or password, and no credential query
/// parameter (the others stay, in order). `None` when it has none, or does not parse. Also
/// gives the value of the first credential query parameter, decoded (e.g. the `X` of
/// `?api_key=X`), which a caller may keep in the keychain instead.
pub fn without_credentials(url: &str) -> Option<(String, Option<String>)> {
    let mut parsed = Url::parse(url).ok()?;
    let mut found = false;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        found = true;
        let _ = parsed.set_username("");
        let _ = parsed.set_password(None);
    }
    let pairs: Vec<(String, String)> = parsed
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let mut key = None;
    let kept: Vec<&(String, String)> = pairs
        .iter()
        .filter(|(k, v)| {
            let secret = is_secret_param(k);
            if secret && key.is_none() && !v.is_empty() {
                key = Some(v.clone());
            }
            !secret
        })
        .collect();
    if kept.len() < pairs.len() {
        found = true;
        if kept.is_empty() {
            parsed.set_query(None);
        } else {
            parsed.query_pairs_mut().clear().extend_pairs(kept);
        }
    }
    found.then(|| (parsed.into(), key))
}

/// The credentials in `url` as they may appear in text (raw and percent-decoded), longest
/// first, for [`scrub`]. Empty for a URL without any.
pub fn secrets_in(url: &str) -> Vec<String> {
    let Ok(parsed) = Url::parse(url) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: &str| {
        // Very short values would scrub unrelated text; they are not worth a key's name.
        if s.len() >= 3 && !out.iter().any(|o| o == s) {
            out.push(s.to_owned());
        }
    };
    for raw in [parsed.username(), parsed.password().unwrap_or_default()] {
        push(raw);
        // The userinfo is kept percent-encoded; messages may show it decoded.
        let decoded = url::form_urlencoded::parse(format!("v={raw}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        push(&decoded);
    }
    for (k, v) in parsed.query_pairs() {
        if is_secret_param(&k) {
            push(&v);
        }
    }
    if let Some(q) = parsed.query() {
        for pair in q.split('&') {
            if let Some((k, v)) = pair.split_once('=')
                && is_secret_param(k)
            {
                push(v);
            }
        }
    }
    out.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out
}

/// `text` with every credential of `url` (see [`secrets_in`]) replaced by [`HIDDEN`].
pub fn scrub(text: &str, url: &str) -> String {
    secrets_in(url)
        .iter()
        .fold(text.to_owned(), |t, s| t.replace(s.as_str(), HIDDEN))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_a_url_are_hidden() {
        assert_eq!(
            hide("https://u:p4ss@example.com/mcp"),
            ("https://***@example.com/mcp".to_owned(), true)
        );
        assert_eq!(
            hide("https://example.com/mcp?api_key=s3cret&region=eu&X-Auth-Token=t0k"),
            (
                "https://example.com/mcp?api_key=***&region=eu&X-Auth-Token=***".to_owned(),
                true
            )
        );
        assert_eq!(
            hide("http://127.0.0.1:8000/mcp?verbose=1"),
            ("http://127.0.0.1:8000/mcp?verbose=1".to_owned(), false)
        );
    }

    #[test]
    fn credentials_are_taken_out_and_the_key_parameter_given_back() {
        assert_eq!(
            without_credentials("https://u:p4ss@example.com/v1"),
            Some(("https://example.com/v1".to_owned(), None))
        );
        assert_eq!(
            without_credentials("https://example.com/v1?region=eu&api_key=s3%2Fcret&x-token=t0k"),
            Some((
                "https://example.com/v1?region=eu".to_owned(),
                Some("s3/cret".to_owned())
            ))
        );
        assert_eq!(
            without_credentials("http://127.0.0.1:8080/v1?key=abc"),
            Some((
                "http://127.0.0.1:8080/v1".to_owned(),
                Some("abc".to_owned())
            ))
        );
        assert_eq!(
            without_credentials("http://localhost:1234/v1?mode=fast"),
            None
        );
        assert_eq!(without_credentials("not a url"), None);
    }

    #[test]
    fn error_text_is_scrubbed_of_every_form_of_the_credentials() {
        let url = "https://bob:pa%24%24word@example.com/mcp?token=abc%2Fdef&q=1";
        let text = format!("error sending request for url ({url}): pa$$word abc/def");
        let out = scrub(&text, url);
        for secret in ["pa%24%24word", "pa$$word", "abc%2Fdef", "abc/def", "bob"] {
            assert!(!out.contains(secret), "{secret} in {out}");
        }
        assert!(out.contains("example.com/mcp"), "{out}");
        assert_eq!(
            scrub("nothing here", "https://example.com/mcp"),
            "nothing here"
        );
    }
}

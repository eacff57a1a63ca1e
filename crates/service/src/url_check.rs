//! Base URLs of model providers and agents must not carry credentials
//! (`https://user:pass@host/v1`, `…/v1?api_key=…`): a base URL is stored in SQLite, shown in the
//! UI and written into exports, while a key belongs in the keychain. Such a URL is refused with
//! a pointer to the key field rather than stored in part, so what the user typed is never kept
//! half-hidden. MCP server URLs, which have no key field, keep their credentials in the keychain
//! instead (`mcp.rs`); both use the same detection (`engram_mcp::url_secrets`).

use engram_core::{Error, Result};
use engram_mcp::url_secrets;

/// Refuses `url` when it carries a user name, a password or a credential query parameter
/// (`api_key`, `token`, `key`, …; see [`url_secrets::is_secret_param`]). `what` names the
/// field in the message ("the base URL of provider 'x'"). Errors: `invalid_input`, whose
/// message shows the URL with the credential replaced by `***`, never the credential.
pub(crate) fn refuse_credentials(what: &str, url: &str) -> Result<()> {
    let (shown, has_secret) = url_secrets::hide(url);
    if has_secret {
        return Err(Error::invalid(format!(
            "{what} carries a credential ({shown}); give the URL without it and put the key in \
             the provider's API key field, which Engram keeps in the system keychain"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_with_user_info_or_key_parameters_are_refused_without_echoing_the_secret() {
        for url in [
            "https://sam:hunter2@api.example.com/v1",
            "https://api.example.com/v1?api_key=hunter2",
            "http://127.0.0.1:8080/v1?Token=hunter2&x=1",
        ] {
            let e = refuse_credentials("the base URL", url).unwrap_err();
            let text = e.to_string();
            assert!(matches!(e, Error::Invalid(_)), "{e:?}");
            assert!(!text.contains("hunter2"), "{text}");
            assert!(text.contains("***") && text.contains("key field"), "{text}");
        }
        for url in [
            "https://api.openai.com/v1",
            "http://127.0.0.1:11434/v1",
            "http://localhost:1234/v1?mode=fast",
        ] {
            refuse_credentials("the base URL", url).unwrap();
        }
    }
}

//! Base URLs of model providers and agents must not carry credentials
//! (`https://user:pass@host/v1`, `…/v1?api_key=…`): a base URL is stored in SQLite, shown in the
//! UI and written into exports, while a key belongs in the keychain. Such a URL is refused with
//! a pointer to the key field rather than stored in part, so what the user typed is never kept
//! half-hidden. MCP server URLs, which have no key field, keep their credentials in the keychain
//! instead (`mcp.rs`); both use the same detection (`engram_mcp::url_secrets`).
//!
//! Versions before this check stored such URLs as typed; [`Engram::clear_stored_credentials`]
//! takes the credentials out of them when a database is opened.

use crate::Engram;
use engram_core::{Error, Result};
use engram_mcp::url_secrets;
use engram_secrets::{SecretString, provider_key_name};
use engram_store::{BaseUrlOwner, BaseUrlRewrite};

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

/// The setting that marks a database whose stored base URLs have been cleared of credentials.
const CREDENTIALS_CLEARED: &str = "base_url_credentials_cleared";

impl Engram {
    /// Takes credentials out of the base URLs an older Engram stored with them (providers',
    /// agents' chat and embedding models', endpoints waiting for approval). Run at open.
    ///
    /// Each URL keeps everything but its user name, password and credential query parameters.
    /// A provider's `?api_key=…`-style value becomes its key in the keychain when it has none
    /// there, written before the database changes, so a keychain failure leaves that URL as it
    /// was for the next start. A waiting endpoint with a credential is dismissed, as an import
    /// now drops it. Failures are logged (the URL with `***`), never returned: opening goes on.
    pub(crate) fn clear_stored_credentials(&self) {
        // Once per database: since the check, nothing stores a credential in a base URL, and
        // reading every agent's settings would slow each start of a large database.
        if let Ok(Some(_)) = self.store.settings().get(CREDENTIALS_CLEARED) {
            return;
        }
        let stored = match self.store.agents().stored_base_urls() {
            Ok(stored) => stored,
            Err(e) => return tracing::warn!("could not check stored base URLs: {e}"),
        };
        let mut rewrites = Vec::new();
        let mut all = true;
        for s in stored {
            let Some((clean, key)) = url_secrets::without_credentials(&s.url) else {
                continue;
            };
            let (shown, _) = url_secrets::hide(&s.url);
            if let BaseUrlOwner::Provider(name) = &s.owner
                && let Some(key) = key
            {
                let name = provider_key_name(name);
                let kept = self.secrets.get(&name).and_then(|old| match old {
                    Some(_) => Ok(()),
                    None => self.secrets.set(&name, &SecretString::from(key)),
                });
                if let Err(e) = kept {
                    tracing::warn!(url = %shown, "the key in this stored base URL stays there: {e}");
                    all = false;
                    continue;
                }
            }
            tracing::warn!(url = %shown, owner = ?s.owner, "a stored base URL held a credential; it was taken out (keys belong in the keychain)");
            let to = match s.owner {
                BaseUrlOwner::Pending(..) => None,
                _ => Some(clean),
            };
            rewrites.push(BaseUrlRewrite {
                owner: s.owner,
                from: s.url,
                to,
            });
        }
        let done = self
            .store
            .agents()
            .rewrite_base_urls(&rewrites)
            .and_then(|_| {
                if all {
                    self.store.settings().set(CREDENTIALS_CLEARED, "1")
                } else {
                    Ok(())
                }
            });
        if let Err(e) = done {
            tracing::warn!("could not take credentials out of stored base URLs: {e}");
        }
    }
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

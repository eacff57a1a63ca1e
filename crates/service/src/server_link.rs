//! The server this desktop works on instead of its own engine, when the person connected one
//! ("Connect to a server"): its address and pinned certificate fingerprint in the settings,
//! the token in the keychain — never in the database, a log or an answer.

use crate::rooms::Trust;
use engram_core::{Error, Result};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

/// The settings key of the linked server's address (JSON; empty when none).
const SERVER_SETTING: &str = "desktop.server";

/// The secret-store name of the linked server's token.
const SERVER_TOKEN_SECRET: &str = "server-token";

/// Where the linked server is (see [`Trust::linked_server`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerLink {
    /// Its address, e.g. `https://desk.lan:8283/`.
    pub url: String,
    /// The SHA-256 of its certificate (`AB:CD:…`) when it is pinned.
    pub fingerprint: Option<String>,
}

impl Trust<'_> {
    /// The linked server and its token, if the person connected one and its token is still in
    /// the keychain (a link whose token is gone is no link).
    ///
    /// Errors: `secrets` when the keychain cannot be read; `storage`.
    pub fn linked_server(self) -> Result<Option<(ServerLink, SecretString)>> {
        let Some(text) = self
            .engram
            .store
            .settings()
            .get(SERVER_SETTING)?
            .filter(|t| !t.is_empty())
        else {
            return Ok(None);
        };
        let link: ServerLink = serde_json::from_str(&text).map_err(|e| {
            Error::Storage(format!("the linked server's setting is unreadable: {e}"))
        })?;
        let token = self
            .engram
            .secrets
            .get(SERVER_TOKEN_SECRET)?
            .filter(|t| !t.expose_secret().is_empty());
        Ok(token.map(|t| (link, t)))
    }

    /// Links the server at `link` with `token` (the token to the keychain first, so a link is
    /// never stored without it).
    ///
    /// Errors: `secrets` when the keychain cannot keep the token (nothing is stored then);
    /// `storage`.
    pub fn link_server(self, link: &ServerLink, token: &SecretString) -> Result<()> {
        self.engram.secrets.set(SERVER_TOKEN_SECRET, token)?;
        let text = serde_json::to_string(link)
            .map_err(|e| Error::Internal(format!("server link: {e}")))?;
        self.engram.store.settings().set(SERVER_SETTING, &text)
    }

    /// Forgets the linked server and its token. Errors: `secrets`; `storage`.
    pub fn unlink_server(self) -> Result<()> {
        self.engram.store.settings().set(SERVER_SETTING, "")?;
        self.engram.secrets.delete(SERVER_TOKEN_SECRET)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_keeps_its_token_in_the_keychain_and_goes_whole() {
        let dir = tempfile::tempdir().unwrap();
        let engram = crate::Engram::open_for_test(dir.path());
        assert!(engram.trust().linked_server().unwrap().is_none());
        let link = ServerLink {
            url: "https://desk.lan:8283/".into(),
            fingerprint: Some("AB:CD".into()),
        };
        let token = SecretString::from("engram-user-0123456789abcdef");
        engram.trust().link_server(&link, &token).unwrap();
        let (stored, kept) = engram.trust().linked_server().unwrap().unwrap();
        assert_eq!(stored, link);
        assert_eq!(kept.expose_secret(), token.expose_secret());
        // The database holds the address, never the token.
        engram.store().checkpoint().unwrap();
        let db = std::fs::read(dir.path().join(crate::DB_FILE)).unwrap();
        let holds = |needle: &str| db.windows(needle.len()).any(|w| w == needle.as_bytes());
        assert!(holds("desk.lan:8283"));
        assert!(!holds("0123456789abcdef"), "the token reached the database");

        engram.trust().unlink_server().unwrap();
        assert!(engram.trust().linked_server().unwrap().is_none());
    }
}

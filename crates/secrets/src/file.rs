//! [`FileOverride`]: secrets read from a file of the server's, for machines without a keychain
//! (a server, a container), so keys still never go into the database.
//!
//! The file is TOML, readable by its owner alone (like an SSH key; others may not even read
//! it, or it is refused):
//!
//! ```toml
//! rest_api_token = "a long random string"   # optional: the REST API's administrator token
//!
//! [providers]                               # keys by provider id
//! openai = "sk-…"
//! anthropic = "sk-ant-…"
//! ```

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use secrecy::SecretString;
use serde::Deserialize;

use crate::{Error, REST_TOKEN_NAME, Result, SecretStore, provider_key_name};

/// The file's shape.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SecretsFile {
    rest_api_token: Option<String>,
    #[serde(default)]
    providers: HashMap<String, String>,
}

/// A [`SecretStore`] wrapper answering the names its file holds from the file, and passing
/// every other name to the store it wraps. A name the file holds cannot be set or deleted
/// through it (the file is the user's to edit), so a key given this way is never copied.
pub struct FileOverride<S> {
    inner: S,
    path: PathBuf,
    values: HashMap<String, SecretString>,
}

impl<S> fmt::Debug for FileOverride<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<_> = self.values.keys().collect();
        names.sort();
        f.debug_struct("FileOverride")
            .field("path", &self.path)
            .field("names", &names)
            .finish_non_exhaustive()
    }
}

impl<S: SecretStore> FileOverride<S> {
    /// Reads `path` and wraps `inner`.
    ///
    /// Errors: [`Error::Secrets`] when the file cannot be read, is readable or writable by
    /// anyone but its owner (Unix), is not valid TOML of the shape above, or holds an empty
    /// value; the message names the file and never a value.
    pub fn open(path: &Path, inner: S) -> Result<Self> {
        let bad = |why: String| Error::Secrets(format!("secrets file {}: {why}", path.display()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(path)
                .map_err(|e| bad(e.to_string()))?
                .permissions()
                .mode();
            if mode & 0o077 != 0 {
                return Err(bad(format!(
                    "others may read or change it (mode {:o}); make it yours alone: chmod 600",
                    mode & 0o777
                )));
            }
        }
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        // The parser's message may quote the line, and so a value: say only where it broke.
        let file: SecretsFile = toml::from_str(&text).map_err(|e| {
            let at = e
                .span()
                .map(|s| text[..s.start.min(text.len())].lines().count().max(1));
            bad(match at {
                Some(line) => format!("not valid (line {line}); see the expected form in the docs"),
                None => "not valid TOML of the expected form".into(),
            })
        })?;
        let mut values = HashMap::new();
        let entries = file
            .providers
            .into_iter()
            .map(|(id, v)| (provider_key_name(&id), v))
            .chain(file.rest_api_token.map(|t| (REST_TOKEN_NAME.to_owned(), t)));
        for (name, value) in entries {
            if value.trim().is_empty() {
                return Err(bad(format!("the value for {name} is empty")));
            }
            values.insert(name, SecretString::from(value));
        }
        Ok(Self {
            inner,
            path: path.to_owned(),
            values,
        })
    }

    fn held(&self, name: &str) -> Result<()> {
        if self.values.contains_key(name) {
            return Err(Error::Secrets(format!(
                "{name} is set in the secrets file {}; change it there",
                self.path.display()
            )));
        }
        Ok(())
    }
}

impl<S: SecretStore> SecretStore for FileOverride<S> {
    fn get(&self, name: &str) -> Result<Option<SecretString>> {
        match self.values.get(name) {
            Some(v) => Ok(Some(v.clone())),
            None => self.inner.get(name),
        }
    }

    fn set(&self, name: &str, secret: &SecretString) -> Result<()> {
        self.held(name)?;
        self.inner.set(name, secret)
    }

    fn delete(&self, name: &str) -> Result<()> {
        self.held(name)?;
        self.inner.delete(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryStore;
    use secrecy::ExposeSecret;

    fn file(text: &str, mode: u32) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secrets.toml");
        std::fs::write(&path, text).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        #[cfg(not(unix))]
        let _ = mode;
        (dir, path)
    }

    #[test]
    fn the_files_names_come_from_it_and_the_rest_from_the_store() {
        let (_dir, path) = file(
            "rest_api_token = \"tok-1\"\n[providers]\nopenai = \"sk-file\"\n",
            0o600,
        );
        let inner = MemoryStore::default();
        inner
            .set("provider:anthropic", &SecretString::from("sk-kept"))
            .unwrap();
        let s = FileOverride::open(&path, inner).unwrap();
        let get = |n: &str| s.get(n).unwrap().map(|v| v.expose_secret().to_owned());
        assert_eq!(get("provider:openai").as_deref(), Some("sk-file"));
        assert_eq!(get("rest-api-token").as_deref(), Some("tok-1"));
        assert_eq!(get("provider:anthropic").as_deref(), Some("sk-kept"));
        let refused = s
            .set("provider:openai", &SecretString::from("sk-new"))
            .unwrap_err();
        assert!(refused.to_string().contains("change it there"), "{refused}");
        assert!(s.delete("provider:openai").is_err());
        s.set("provider:groq", &SecretString::from("gsk")).unwrap();
        assert_eq!(get("provider:groq").as_deref(), Some("gsk"));
        assert!(!format!("{s:?}").contains("sk-file"));
    }

    #[cfg(unix)]
    #[test]
    fn a_file_others_may_read_is_refused() {
        let (_dir, path) = file("[providers]\nopenai = \"sk-file\"\n", 0o644);
        let e = FileOverride::open(&path, MemoryStore::default()).unwrap_err();
        assert!(e.to_string().contains("chmod 600"), "{e}");
    }

    #[test]
    fn a_broken_file_is_refused_without_quoting_it() {
        let (_dir, path) = file("[providers]\nopenai = sk-secret-unquoted\n", 0o600);
        let e = FileOverride::open(&path, MemoryStore::default()).unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        assert!(!e.to_string().contains("sk-secret"), "{e}");
        let (_dir, path) = file("[providers]\nopenai = \"  \"\n", 0o600);
        assert!(FileOverride::open(&path, MemoryStore::default()).is_err());
        let (_dir, path) = file("api_key = \"x\"\n", 0o600);
        assert!(FileOverride::open(&path, MemoryStore::default()).is_err());
    }
}

//! [`KeyringStore`]: the OS keychain through the `keyring` crate.
//!
//! Entries are keyed by (service, name): service `"engram"` and user `"provider:openai"`, say. That is
//! a generic password with that service and account in the macOS Keychain, a credential named
//! `provider:openai.engram` in the Windows Credential Manager, an item with attributes
//! `service`/`username` in the Secret Service, and a key described `keyring-rs:provider:openai@engram`
//! in the kernel keyring.

use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use keyring::{Entry, Error as KeyringError};
use secrecy::{ExposeSecret, SecretString};

use crate::env_override::override_variable;
use crate::{DEFAULT_SERVICE, Error, Result, SecretStore, check_name, check_secret};

/// Serializes every keychain call in the process. keyring warns that concurrent access can fail on
/// Windows and Linux, and that rapid parallel D-Bus calls to the Secret Service are unreliable.
static KEYCHAIN: Mutex<()> = Mutex::new(());

fn keychain_lock() -> MutexGuard<'static, ()> {
    // The guarded data is `()`: a panic elsewhere leaves nothing inconsistent.
    KEYCHAIN.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The secret name used to check whether a keychain answers; never holds a real key.
#[cfg(target_os = "linux")]
const PROBE_NAME: &str = "engram-keychain-probe";

/// Which keychain a [`KeyringStore`] talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    /// The freedesktop Secret Service over D-Bus (GNOME Keyring, KWallet, KeePassXC).
    #[cfg(target_os = "linux")]
    SecretService,
    /// The Linux kernel key store (keyutils): in memory, forgotten at reboot.
    #[cfg(target_os = "linux")]
    KernelKeyring,
    /// The platform's keychain as `keyring` picks it (macOS Keychain, Windows Credential Manager).
    #[cfg(not(target_os = "linux"))]
    Native,
}

impl Backend {
    fn describe(self) -> &'static str {
        match self {
            #[cfg(target_os = "linux")]
            Self::SecretService => "Secret Service",
            #[cfg(target_os = "linux")]
            Self::KernelKeyring => "kernel keyring (keyutils)",
            #[cfg(all(not(target_os = "linux"), target_os = "macos"))]
            Self::Native => "macOS Keychain",
            #[cfg(all(not(target_os = "linux"), target_os = "windows"))]
            Self::Native => "Windows Credential Manager",
            #[cfg(not(any(target_os = "linux", target_os = "macos", target_os = "windows")))]
            Self::Native => "system keychain",
        }
    }

    /// The `keyring` entry for `name` under `service` in this keychain. Building an entry does not
    /// touch the keychain.
    fn entry(self, service: &str, name: &str) -> std::result::Result<Entry, KeyringError> {
        let credential: Box<keyring::Credential> = match self {
            #[cfg(target_os = "linux")]
            Self::SecretService => Box::new(
                keyring::secret_service::SsCredential::new_with_target(None, service, name)?,
            ),
            #[cfg(target_os = "linux")]
            Self::KernelKeyring => Box::new(
                keyring::keyutils::KeyutilsCredential::new_with_target(None, service, name)?,
            ),
            #[cfg(not(target_os = "linux"))]
            Self::Native => {
                keyring::default::default_credential_builder().build(None, service, name)?
            }
        };
        Ok(Entry::new_with_credential(credential))
    }
}

/// A [`SecretStore`] in the OS keychain: macOS Keychain, Windows Credential Manager, or on Linux the
/// Secret Service, falling back to the kernel keyutils store when no Secret Service is reachable.
///
/// The keychain is chosen on first use and kept for the life of the store. On Linux the Secret
/// Service is preferred; the kernel keyring is used when the Secret Service cannot be reached (no
/// D-Bus session, no keyring daemon) or has no usable collection, and only if a test key round-trips
/// through it. Kernel keys live in memory and are forgotten at reboot. When neither answers, there
/// is no keychain on this machine, so nothing can be stored in one: reads find no secret and
/// deletes have nothing to delete (a keyless local server or an MCP server without secrets works
/// without a keychain), while a write fails with [`Error::Secrets`] explaining how to get a
/// keychain. The choice is retried on the next call.
///
/// Calls block (D-Bus round trips, possibly an unlock prompt) and are serialized process-wide; async
/// callers use `tokio::task::spawn_blocking`.
#[derive(Clone, Debug)]
pub struct KeyringStore {
    service: String,
    backend: OnceLock<Backend>,
    /// Why no keychain may be chosen, when this store stands for a machine without one.
    none: Option<String>,
}

impl Default for KeyringStore {
    /// The app's store: service [`DEFAULT_SERVICE`] (`"engram"`).
    fn default() -> Self {
        Self::new(DEFAULT_SERVICE)
    }
}

impl KeyringStore {
    /// A store keeping its entries under the keychain service `service` (the app uses `"engram"`;
    /// tests use a unique name). Does not touch the keychain yet.
    pub fn new(service: impl Into<String>) -> Self {
        Self {
            service: service.into(),
            backend: OnceLock::new(),
            none: None,
        }
    }

    /// A store that finds no keychain to choose, as on a machine without one (`reason` says
    /// why, in its errors): for tests of that set-up through the same code paths.
    pub fn without_keychain(service: impl Into<String>, reason: &str) -> Self {
        Self {
            none: Some(reason.to_owned()),
            ..Self::new(service)
        }
    }

    /// The keychain service name entries are stored under.
    pub fn service(&self) -> &str {
        &self.service
    }

    /// Which keychain this store uses, e.g. `"Secret Service"` or `"kernel keyring (keyutils)"`,
    /// choosing it now if that has not happened yet. For diagnostics and settings screens.
    ///
    /// Errors: [`Error::Secrets`] when no keychain is reachable, saying how to get one.
    pub fn backend_name(&self) -> Result<&'static str> {
        self.backend().map(Backend::describe)
    }

    /// The chosen keychain, choosing it on first use.
    fn backend(&self) -> Result<Backend> {
        if let Some(backend) = self.backend.get() {
            return Ok(*backend);
        }
        let _guard = keychain_lock();
        if let Some(backend) = self.backend.get() {
            return Ok(*backend);
        }
        let chosen = match &self.none {
            Some(reason) => Err(reason.clone()),
            None => choose_backend(&self.service),
        };
        match chosen {
            Ok(backend) => {
                tracing::debug!(service = %self.service, backend = backend.describe(), "keychain chosen");
                Ok(*self.backend.get_or_init(|| backend))
            }
            Err(reason) => Err(Error::Secrets(format!(
                "{NO_KEYCHAIN}: {NO_KEYCHAIN_ADVICE} ({reason})"
            ))),
        }
    }

    /// The chosen keychain, or `None` when this machine has none (logged once per store, at
    /// debug level: having no keychain is normal for a keyless set-up, and writes say it loudly).
    fn backend_if_any(&self) -> Option<Backend> {
        match self.backend() {
            Ok(backend) => Some(backend),
            Err(e) => {
                tracing::debug!(service = %self.service, error = %e, "no keychain: nothing stored");
                None
            }
        }
    }

    fn entry(&self, backend: Backend, name: &str, op: &str) -> Result<Entry> {
        backend
            .entry(&self.service, name)
            .map_err(|e| self.failure(backend, op, name, e, None))
    }

    /// Turns a `keyring` error into an [`Error::Secrets`] that says what to do. The secret being
    /// stored, if any, is scrubbed from the message in case a platform echoes it back.
    fn failure(
        &self,
        backend: Backend,
        op: &str,
        name: &str,
        err: KeyringError,
        secret: Option<&SecretString>,
    ) -> Error {
        let keychain = backend.describe();
        let env_hint = match override_variable(name) {
            Some(var) => format!(", or set {var} instead"),
            None => String::new(),
        };
        let message = match err {
            KeyringError::NoStorageAccess(e) => format!(
                "the {keychain} refused to {op} \"{name}\": it is locked or access was denied ({e}); \
                 unlock it (e.g. log in to your desktop keyring) and try again{env_hint}"
            ),
            KeyringError::PlatformFailure(e) => format!(
                "the {keychain} failed to {op} \"{name}\" ({e}); check that it is running and \
                 unlocked{env_hint}"
            ),
            KeyringError::Ambiguous(items) => format!(
                "{} entries in the {keychain} match \"{name}\" (service \"{}\"); remove the \
                 duplicates with your keychain manager and set the key again",
                items.len(),
                self.service
            ),
            KeyringError::BadEncoding(_) => format!(
                "the {keychain} entry \"{name}\" is not UTF-8 text; delete it and set the key again"
            ),
            KeyringError::TooLong(field, limit) => format!(
                "the {keychain} cannot {op} \"{name}\": its {field} is longer than the limit of \
                 {limit} characters"
            ),
            KeyringError::Invalid(field, reason) => {
                format!("the {keychain} cannot {op} \"{name}\": {field} {reason}")
            }
            // Only reaches here from `set`: keyring reports the kernel's "access denied" this way.
            KeyringError::NoEntry => format!(
                "the {keychain} refused to {op} \"{name}\" (access denied); check that this user \
                 may use it{env_hint}"
            ),
            other => format!("the {keychain} failed to {op} \"{name}\" ({other}){env_hint}"),
        };
        Error::Secrets(scrub(message, secret))
    }
}

impl SecretStore for KeyringStore {
    fn get(&self, name: &str) -> Result<Option<SecretString>> {
        check_name(name)?;
        let Some(backend) = self.backend_if_any() else {
            return Ok(None);
        };
        let entry = self.entry(backend, name, "read")?;
        tracing::debug!(service = %self.service, name, "keychain get");
        let result = {
            let _guard = keychain_lock();
            entry.get_password()
        };
        match result {
            Ok(password) => Ok(Some(SecretString::from(password))),
            Err(KeyringError::NoEntry) => Ok(None),
            Err(e) => Err(self.failure(backend, "read", name, e, None)),
        }
    }

    fn set(&self, name: &str, secret: &SecretString) -> Result<()> {
        check_name(name)?;
        check_secret(name, secret)?;
        let backend = self.backend()?;
        let entry = self.entry(backend, name, "store")?;
        tracing::debug!(service = %self.service, name, "keychain set");
        let result = {
            let _guard = keychain_lock();
            entry.set_password(secret.expose_secret())
        };
        result.map_err(|e| self.failure(backend, "store", name, e, Some(secret)))
    }

    fn delete(&self, name: &str) -> Result<()> {
        check_name(name)?;
        let Some(backend) = self.backend_if_any() else {
            return Ok(());
        };
        let entry = self.entry(backend, name, "delete")?;
        tracing::debug!(service = %self.service, name, "keychain delete");
        let result = {
            let _guard = keychain_lock();
            entry.delete_credential()
        };
        match result {
            Ok(()) | Err(KeyringError::NoEntry) => Ok(()),
            Err(e) => Err(self.failure(backend, "delete", name, e, None)),
        }
    }
}

#[cfg(target_os = "linux")]
const NO_KEYCHAIN_ADVICE: &str = "start a Secret Service (gnome-keyring, KWallet or KeePassXC) in \
     your session and unlock its default keyring, or run Engram inside a kernel keyring session \
     (`keyctl session - engram …`); provider keys can also come from OPENAI_API_KEY / \
     ANTHROPIC_API_KEY";

/// How a write's error begins when the machine has no keychain (see [`crate::no_keychain`]).
pub(crate) const NO_KEYCHAIN: &str = "no keychain available";

#[cfg(not(target_os = "linux"))]
const NO_KEYCHAIN_ADVICE: &str = "check that the system keychain is available to your user; \
     provider keys can also come from OPENAI_API_KEY / ANTHROPIC_API_KEY";

/// Picks the keychain, or explains why there is none. Called with [`KEYCHAIN`] held.
#[cfg(target_os = "linux")]
fn choose_backend(service: &str) -> std::result::Result<Backend, String> {
    let secret_service = match Backend::SecretService
        .entry(service, PROBE_NAME)
        .and_then(|entry| entry.get_password())
    {
        // Answering at all (even "no such entry" or "two entries") means the service is usable.
        Ok(_)
        | Err(KeyringError::NoEntry | KeyringError::Ambiguous(_) | KeyringError::BadEncoding(_)) => {
            return Ok(Backend::SecretService);
        }
        // Reachable, but locked or without a default collection: typical of a keyring daemon that
        // D-Bus started on a headless machine. keyring cannot create a default collection, so this
        // store would fail on every write; use the kernel keyring if that works.
        Err(KeyringError::NoStorageAccess(e)) => {
            format!("it is locked or has no default keyring ({e})")
        }
        Err(e) => e.to_string(),
    };
    match probe_kernel_keyring(service) {
        Ok(()) => {
            tracing::warn!(
                "Secret Service unavailable ({secret_service}); keeping secrets in the kernel \
                 keyring, which forgets them at reboot"
            );
            Ok(Backend::KernelKeyring)
        }
        Err(kernel) => Err(format!(
            "Secret Service: {secret_service}; kernel keyring: {kernel}"
        )),
    }
}

/// Round-trips a throwaway key through the kernel keyring. Writing is the only honest test: in some
/// containers keys can be added to the session keyring but never found again.
#[cfg(target_os = "linux")]
fn probe_kernel_keyring(service: &str) -> std::result::Result<(), String> {
    const PROBE_VALUE: &str = "engram keychain probe";
    let entry = Backend::KernelKeyring
        .entry(service, PROBE_NAME)
        .map_err(|e| e.to_string())?;
    entry.set_password(PROBE_VALUE).map_err(|e| match e {
        // keyring reports the kernel's "access denied" as a missing entry.
        KeyringError::NoEntry => "the kernel refused to store a test key (no usable session \
             keyring)"
            .to_owned(),
        e => e.to_string(),
    })?;
    let read = entry.get_password();
    // Best effort: the probe key is harmless and lives only in kernel memory.
    let _ = entry.delete_credential();
    match read {
        Ok(value) if value == PROBE_VALUE => Ok(()),
        Ok(_) => Err("a test key read back differently".to_owned()),
        Err(KeyringError::NoEntry) => Err(
            "a test key could not be found after storing it (no usable session keyring)".to_owned(),
        ),
        Err(e) => Err(e.to_string()),
    }
}

/// Every platform has exactly one keychain; `keyring` knows which.
#[cfg(not(target_os = "linux"))]
fn choose_backend(_service: &str) -> std::result::Result<Backend, String> {
    Ok(Backend::Native)
}

/// `message` with every occurrence of the secret replaced by `<redacted>`.
fn scrub(message: String, secret: Option<&SecretString>) -> String {
    match secret.map(ExposeSecret::expose_secret) {
        Some(secret) if !secret.is_empty() && message.contains(secret) => {
            message.replace(secret, "<redacted>")
        }
        _ => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn any_backend() -> Backend {
        #[cfg(target_os = "linux")]
        return Backend::SecretService;
        #[cfg(not(target_os = "linux"))]
        return Backend::Native;
    }

    #[derive(Debug)]
    struct Echo(String);

    impl std::fmt::Display for Echo {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "platform said: {}", self.0)
        }
    }

    impl std::error::Error for Echo {}

    #[test]
    fn failures_never_echo_the_secret() {
        let store = KeyringStore::new("engram-unit");
        let secret = SecretString::from("sk-very-secret-value");
        for err in [
            KeyringError::PlatformFailure(Box::new(Echo("sk-very-secret-value".into()))),
            KeyringError::NoStorageAccess(Box::new(Echo("x sk-very-secret-value y".into()))),
            KeyringError::BadEncoding(b"sk-very-secret-value".to_vec()),
        ] {
            let e = store.failure(
                any_backend(),
                "store",
                "provider:openai",
                err,
                Some(&secret),
            );
            let shown = format!("{e} {e:?}");
            assert!(!shown.contains("sk-very-secret-value"), "{shown}");
            assert!(matches!(e, Error::Secrets(_)));
        }
    }

    #[test]
    fn failures_say_what_to_do() {
        let store = KeyringStore::new("engram-unit");
        let locked = store.failure(
            any_backend(),
            "read",
            "provider:openai",
            KeyringError::NoStorageAccess(Box::new(Echo("locked".into()))),
            None,
        );
        let text = locked.to_string();
        assert!(text.contains("unlock it"), "{text}");
        assert!(text.contains("OPENAI_API_KEY"), "{text}");
        assert_eq!(locked.code(), "secrets");

        let token = store.failure(
            any_backend(),
            "read",
            "rest-api-token",
            KeyringError::PlatformFailure(Box::new(Echo("gone".into()))),
            None,
        );
        assert!(!token.to_string().contains("API_KEY"), "{token}");
    }

    #[test]
    fn scrub_replaces_every_occurrence() {
        let secret = SecretString::from("abc");
        assert_eq!(
            scrub("abc and abc".into(), Some(&secret)),
            "<redacted> and <redacted>"
        );
        assert_eq!(scrub("nothing".into(), Some(&secret)), "nothing");
        assert_eq!(scrub("abc".into(), None), "abc");
    }

    #[test]
    fn store_knows_its_service_and_rejects_bad_input_before_touching_the_keychain() {
        let store = KeyringStore::default();
        assert_eq!(store.service(), DEFAULT_SERVICE);
        assert!(matches!(store.get(""), Err(Error::Invalid(_))));
        assert!(matches!(
            store.set("x", &SecretString::from("")),
            Err(Error::Invalid(_))
        ));
        assert!(
            store.backend.get().is_none(),
            "validation must not probe the keychain"
        );
    }

    #[test]
    fn without_a_keychain_reads_find_nothing_and_writes_say_what_to_do() {
        let store = KeyringStore::without_keychain("engram-test", "no keychain in this test");
        assert!(matches!(store.get("provider:local"), Ok(None)));
        assert!(store.delete("provider:local").is_ok());
        let err = store
            .set("provider:openai", &SecretString::from("sk-secret-value"))
            .unwrap_err();
        let Error::Secrets(message) = err else {
            panic!("expected a keychain error, got {err:?}");
        };
        assert!(message.contains("no keychain available"), "{message}");
        assert!(message.contains("no keychain in this test"), "{message}");
        assert!(!message.contains("sk-secret-value"), "{message}");
        assert!(store.backend_name().is_err());
    }
}

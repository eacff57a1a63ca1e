//! Round-trips secrets through the real OS keychain.
//!
//! Runs for real wherever a keychain answers: a desktop session, or CI under
//! `.ci/keychain-session.sh` (a throwaway D-Bus session with an unlocked gnome-keyring, else a fresh
//! kernel keyring session). When no keychain is reachable the tests skip with a printed reason,
//! unless `ENGRAM_REQUIRE_KEYCHAIN=1` (set in CI), where that is a failure.

use std::io::Write as _;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use engram_secrets::{ExposeSecret, KeyringStore, SecretStore, SecretString, provider_key_name};

/// A keychain service name no other run (or other test in this run) uses.
fn unique_service() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("engram-test-{}-{nanos}-{n}", std::process::id())
}

/// A store on a fresh service, or `None` (after saying why) when the test should be skipped.
fn keychain_or_skip(test: &str) -> Option<KeyringStore> {
    let required = std::env::var("ENGRAM_REQUIRE_KEYCHAIN").is_ok_and(|v| v == "1");
    let store = KeyringStore::new(unique_service());
    match store.backend_name() {
        Ok(backend) => {
            report(&format!(
                "{test}: using the {backend}, service {}",
                store.service()
            ));
            Some(store)
        }
        Err(e) if required => panic!("ENGRAM_REQUIRE_KEYCHAIN=1 but no keychain is reachable: {e}"),
        Err(e) => {
            report(&format!(
                "SKIPPED {test}: no OS keychain reachable ({e}). Run under .ci/keychain-session.sh, \
                 or set ENGRAM_REQUIRE_KEYCHAIN=1 to make this a failure."
            ));
            None
        }
    }
}

/// Writes past the test harness's output capture so a skip is visible in a plain `cargo test`.
fn report(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Deletes the entry even when an assertion fails, so failed runs leave nothing in the keychain.
struct Cleanup<'a>(&'a KeyringStore, &'a str);

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let _ = self.0.delete(self.1);
    }
}

fn read(store: &KeyringStore, name: &str) -> Option<String> {
    store
        .get(name)
        .expect("keychain read")
        .map(|s| s.expose_secret().to_owned())
}

#[test]
fn secrets_round_trip_through_the_os_keychain() {
    let Some(store) = keychain_or_skip("secrets_round_trip_through_the_os_keychain") else {
        return;
    };
    let name = provider_key_name("engram-test");
    let _cleanup = Cleanup(&store, &name);

    assert_eq!(read(&store, &name), None, "a fresh service starts empty");
    store
        .set(&name, &SecretString::from("sk-test-first ключ 🔑"))
        .expect("keychain store");
    assert_eq!(
        read(&store, &name).as_deref(),
        Some("sk-test-first ключ 🔑")
    );

    store
        .set(&name, &SecretString::from("sk-test-second"))
        .expect("keychain overwrite");
    assert_eq!(read(&store, &name).as_deref(), Some("sk-test-second"));

    let other = "rest-api-token";
    let _cleanup_other = Cleanup(&store, other);
    store
        .set(other, &SecretString::from("tok-test"))
        .expect("keychain store");
    assert_eq!(read(&store, other).as_deref(), Some("tok-test"));

    store.delete(&name).expect("keychain delete");
    assert_eq!(read(&store, &name), None, "deleted entries are gone");
    assert_eq!(
        read(&store, other).as_deref(),
        Some("tok-test"),
        "other entries are untouched"
    );
    store.delete(&name).expect("deleting a missing entry is Ok");
    store.delete(other).expect("keychain delete");
    assert_eq!(read(&store, other), None);
}

#[test]
fn services_do_not_see_each_other() {
    let Some(first) = keychain_or_skip("services_do_not_see_each_other") else {
        return;
    };
    let second = KeyringStore::new(unique_service());
    let name = provider_key_name("engram-test");
    let _cleanup = Cleanup(&first, &name);
    first
        .set(&name, &SecretString::from("sk-test-first-service"))
        .expect("keychain store");
    assert_eq!(read(&second, &name), None);
    assert_eq!(
        read(&first, &name).as_deref(),
        Some("sk-test-first-service")
    );
}

/// The documented way to call the store from async code; the sync Secret Service client must not
/// trip over the tokio runtime around it.
#[tokio::test(flavor = "multi_thread")]
async fn async_callers_use_spawn_blocking() {
    let Some(store) = keychain_or_skip("async_callers_use_spawn_blocking") else {
        return;
    };
    let store = std::sync::Arc::new(store);
    let name = provider_key_name("engram-test");
    let got = tokio::task::spawn_blocking({
        let store = std::sync::Arc::clone(&store);
        let name = name.clone();
        move || {
            let _cleanup = Cleanup(&store, &name);
            store
                .set(&name, &SecretString::from("sk-test-async"))
                .expect("keychain store");
            read(&store, &name)
        }
    })
    .await
    .expect("blocking task");
    assert_eq!(got.as_deref(), Some("sk-test-async"));
    let gone = tokio::task::spawn_blocking(move || read(&store, &name))
        .await
        .expect("blocking task");
    assert_eq!(gone, None);
}

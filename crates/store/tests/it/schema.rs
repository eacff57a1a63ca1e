//! Opening, migrations, PRAGMAs, and the promise that no key column exists.

use crate::support::{create, temp_store};
use engram_core::Error;
use engram_store::{ProviderRow, Store};
use rusqlite::Connection;

fn columns(conn: &Connection, table: &str) -> Vec<String> {
    let mut stmt = conn
        .prepare(&format!("PRAGMA table_info({table})"))
        .unwrap();
    stmt.query_map([], |r| r.get::<_, String>(1))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn fresh_file_is_migrated_and_reopens_with_its_data() {
    let (dir, store) = temp_store();
    let path = dir.path().join("data").join("engram.db");
    assert!(path.exists(), "open creates missing parent directories");
    assert_eq!(store.integrity_check().unwrap(), "ok");
    let (agent, _) = create(&store, "kept");
    store.settings().set("theme", "dark").unwrap();
    drop(store);

    let store = Store::open(&path).unwrap();
    assert_eq!(store.agents().get(&agent.id).unwrap(), agent);
    assert_eq!(
        store.settings().get("theme").unwrap().as_deref(),
        Some("dark")
    );
    drop(store);

    let conn = Connection::open(&path).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert!(version >= 2, "V1 and later migrations ran: {version}");
    let has_versions: bool = conn
        .query_row(
            "SELECT count(*) FROM pragma_table_info('blocks') WHERE name = 'version'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(has_versions, "BLOCK_VERSIONS added blocks.version");
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn a_file_that_is_not_a_database_is_a_storage_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("junk.db");
    std::fs::write(
        &path,
        b"this is definitely not sqlite, just some text padding it out",
    )
    .unwrap();
    assert!(matches!(Store::open(&path), Err(Error::Storage(_))));
}

#[test]
fn no_api_key_column_exists_anywhere() {
    let (dir, store) = temp_store();
    store
        .settings()
        .upsert_provider(&ProviderRow {
            name: "openai".into(),
            kind: "openai".into(),
            base_url: None,
            default_model: Some("gpt-4o-mini".into()),
        })
        .unwrap();
    drop(store);
    let conn = Connection::open(dir.path().join("data").join("engram.db")).unwrap();
    assert_eq!(
        columns(&conn, "providers"),
        [
            "name",
            "kind",
            "base_url",
            "default_model",
            "created_at",
            "updated_at"
        ]
    );
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table'")
        .unwrap();
    let tables: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for table in tables {
        for col in columns(&conn, &table) {
            let col = col.to_lowercase();
            for bad in ["api_key", "apikey", "secret", "password", "token_value"] {
                assert!(!col.contains(bad), "{table}.{col} looks like a secret");
            }
        }
    }
}

#[test]
fn providers_and_settings_round_trip() {
    let (_dir, store) = temp_store();
    let mut p = ProviderRow {
        name: "ollama".into(),
        kind: "openai".into(),
        base_url: Some("http://127.0.0.1:11434/v1".into()),
        default_model: None,
    };
    store.settings().upsert_provider(&p).unwrap();
    p.default_model = Some("llama3.1".into());
    store.settings().upsert_provider(&p).unwrap();
    store
        .settings()
        .upsert_provider(&ProviderRow {
            name: "anthropic".into(),
            kind: "anthropic".into(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(store.settings().get_provider("ollama").unwrap(), p);
    let names: Vec<_> = store
        .settings()
        .list_providers()
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["anthropic", "ollama"]);
    store.settings().delete_provider("ollama").unwrap();
    assert!(matches!(
        store.settings().get_provider("ollama"),
        Err(Error::NotFound {
            what: "provider",
            ..
        })
    ));
    assert!(matches!(
        store.settings().delete_provider("ollama"),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        store.settings().upsert_provider(&ProviderRow::default()),
        Err(Error::Invalid(_))
    ));

    assert_eq!(store.settings().get("missing").unwrap(), None);
    store
        .settings()
        .set("default_model", "openai/gpt-4o")
        .unwrap();
    store
        .settings()
        .set("default_model", "anthropic/claude")
        .unwrap();
    assert_eq!(
        store.settings().get("default_model").unwrap().as_deref(),
        Some("anthropic/claude")
    );
}

#[test]
fn a_model_calibration_survives_a_reopen() {
    use engram_store::Calibration;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("engram.db");
    let store = Store::open(&path).unwrap();
    assert_eq!(
        store
            .settings()
            .model_calibration("ollama/llama3.2")
            .unwrap(),
        None
    );
    let c = Calibration {
        ratio: 1.25,
        samples: 7,
    };
    store
        .settings()
        .set_model_calibration("ollama/llama3.2", &c)
        .unwrap();
    drop(store);
    let store = Store::open(&path).unwrap();
    assert_eq!(
        store
            .settings()
            .model_calibration("ollama/llama3.2")
            .unwrap(),
        Some(c)
    );
    assert_eq!(
        store.settings().model_calibration("ollama/other").unwrap(),
        None
    );
    // A value that is not a calibration reads as none rather than failing the run.
    store
        .settings()
        .set("calibration.ollama/other", "not json")
        .unwrap();
    assert_eq!(
        store.settings().model_calibration("ollama/other").unwrap(),
        None
    );
}

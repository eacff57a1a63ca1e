//! Credentials written into a provider's or an agent's base URL (`https://user:pass@host/v1`,
//! `…/v1?api_key=…`) are refused with a pointer to the key field, at every way in: provider
//! settings, agent creation and changes, the agent's endpoint setting, and Agent File imports
//! (whose credentialed endpoints are dropped with a warning). Rows an older version stored
//! with credentials are cleaned when the database is opened. Real SQLite file, real export.

use engram_core::{AgentPatch, EndpointKind, Error, LlmConfig, NewAgent};
use engram_secrets::{ExposeSecret, MemoryStore, SecretStore, provider_key_name};
use engram_service::{DB_FILE, ExportFormat, ProviderSetup};
use engram_suite::Home;
use std::sync::Arc;

const SECRET: &str = "hunter2-4711";

fn credentialed() -> [String; 3] {
    [
        format!("https://sam:{SECRET}@api.example.com/v1"),
        format!("https://api.example.com/v1?api_key={SECRET}"),
        format!("http://127.0.0.1:9/v1?x=1&token={SECRET}"),
    ]
}

fn refused(what: &str, r: Result<impl std::fmt::Debug, Error>) {
    match r {
        Err(e @ Error::Invalid(_)) => {
            let text = e.to_string();
            assert!(
                !text.contains(SECRET),
                "{what}: the error shows the secret: {text}"
            );
            assert!(text.contains("key field"), "{what}: {text}");
        }
        other => panic!("{what}: not refused: {other:?}"),
    }
}

fn llm(url: Option<String>) -> LlmConfig {
    let mut llm = LlmConfig::new("openai/mock-small");
    llm.base_url = url;
    llm.context_window = 32_000;
    llm
}

fn db_text(home: &Home) -> String {
    home.engram.checkpoint().unwrap();
    files_text(home.path())
}

/// Every file of the data directory, as text.
fn files_text(dir: &std::path::Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            text.push_str(&String::from_utf8_lossy(&std::fs::read(path).unwrap()));
        }
    }
    text
}

#[tokio::test]
async fn base_urls_with_credentials_are_refused_everywhere_and_never_stored() {
    let home = Home::new();
    let e = &home.engram;
    let agent = e
        .agents()
        .create(NewAgent {
            name: "Sam".into(),
            llm: Some(llm(Some("http://127.0.0.1:9/v1".into()))),
            ..NewAgent::default()
        })
        .await
        .unwrap()
        .agent;

    for url in credentialed() {
        refused(
            "set_provider",
            e.providers().set(ProviderSetup {
                name: "proxy".into(),
                base_url: Some(url.clone()),
                ..ProviderSetup::default()
            }),
        );
        refused(
            "create_agent",
            e.agents()
                .create(NewAgent {
                    name: "Leaky".into(),
                    llm: Some(llm(Some(url.clone()))),
                    ..NewAgent::default()
                })
                .await,
        );
        refused(
            "update_agent",
            e.agents()
                .update(
                    &agent.id,
                    &AgentPatch {
                        llm: Some(llm(Some(url.clone()))),
                        ..AgentPatch::default()
                    },
                )
                .await,
        );
        refused(
            "set_agent_base_url",
            e.trust()
                .set_base_url(&agent.id, EndpointKind::Llm, Some(&url))
                .await,
        );
    }
    // Nothing of it was stored: no provider, no second agent, the first agent unchanged.
    assert!(
        e.providers()
            .list()
            .unwrap()
            .iter()
            .all(|p| p.name != "proxy")
    );
    assert_eq!(e.agents().list().await.unwrap().len(), 1);
    assert_eq!(
        e.agents()
            .get(&agent.id)
            .await
            .unwrap()
            .agent
            .llm
            .base_url
            .as_deref(),
        Some("http://127.0.0.1:9/v1")
    );
    // A URL without credentials (a harmless query included) is fine.
    e.providers()
        .set(ProviderSetup {
            name: "proxy".into(),
            base_url: Some("http://127.0.0.1:9/v1?mode=fast".into()),
            ..ProviderSetup::default()
        })
        .unwrap();

    // An agent file whose endpoint carries a credential: imported, the endpoint dropped with
    // a warning that shows it hidden.
    let clean = String::from_utf8(
        e.agent_files()
            .export(std::slice::from_ref(&agent.id))
            .await
            .unwrap(),
    )
    .unwrap();
    assert!(clean.contains("http://127.0.0.1:9/v1"), "{clean}");
    let leaky = clean.replace(
        "http://127.0.0.1:9/v1",
        &format!("http://sam:{SECRET}@127.0.0.1:9/v1"),
    );
    let report = e.agent_files().import(leaky.as_bytes()).await.unwrap();
    let warnings = report.warnings.join("\n");
    assert!(warnings.contains("carries a credential"), "{warnings}");
    assert!(warnings.contains("***"), "{warnings}");
    assert!(!warnings.contains(SECRET), "{warnings}");
    let imported = &report.agents[0];
    let endpoints = e.trust().endpoints(imported).await.unwrap();
    assert!(
        endpoints
            .pending
            .iter()
            .all(|p| !p.base_url.contains(SECRET)),
        "{endpoints:?}"
    );

    // Neither the database files nor an export of everything hold the secret.
    assert!(
        !db_text(&home).contains(SECRET),
        "the database holds the secret"
    );
    let export = e
        .agent_files()
        .export_all(None, ExportFormat::Af)
        .await
        .unwrap();
    assert!(
        !export.contents.contains(SECRET),
        "the export holds the secret"
    );
}

#[tokio::test]
async fn credentials_an_older_version_stored_in_base_urls_are_taken_out_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let secrets: Arc<MemoryStore> = Arc::new(MemoryStore::default());
    let agent = {
        let e = engram_suite::open(dir.path(), secrets.clone());
        e.providers()
            .set(ProviderSetup {
                name: "proxy".into(),
                base_url: Some("https://api.example.com/v1".into()),
                ..ProviderSetup::default()
            })
            .unwrap();
        let agent = e
            .agents()
            .create(NewAgent {
                name: "Sam".into(),
                llm: Some(llm(Some("http://127.0.0.1:9/v1".into()))),
                ..NewAgent::default()
            })
            .await
            .unwrap()
            .agent
            .id;
        e.checkpoint().unwrap();
        agent
    };
    // What an Engram from before the check wrote: the URLs as typed, credentials and all, and
    // no mark that its base URLs were ever cleared.
    {
        let db = rusqlite::Connection::open(dir.path().join(DB_FILE)).unwrap();
        let marked = db
            .execute(
                "DELETE FROM settings WHERE key = 'base_url_credentials_cleared'",
                [],
            )
            .unwrap();
        assert_eq!(marked, 1, "a new database is marked as cleared");
        db.execute(
            "UPDATE providers SET base_url = ?1 WHERE name = 'proxy'",
            [format!(
                "https://api.example.com/v1?region=eu&api_key={SECRET}"
            )],
        )
        .unwrap();
        db.execute(
            "UPDATE agents SET llm = json_set(llm, '$.base_url', ?1),
                 embedding = json_set(coalesce(embedding, '{}'), '$.base_url', ?2) WHERE id = ?3",
            [
                format!("http://sam:{SECRET}@127.0.0.1:9/v1"),
                format!("http://127.0.0.1:9/v1?token={SECRET}"),
                agent.to_string(),
            ],
        )
        .unwrap();
        db.execute(
            "INSERT INTO pending_endpoints (agent_id, kind, base_url, source, created_at)
             VALUES (?1, 'llm', ?2, 'an old import', 0)",
            [
                agent.to_string(),
                format!("https://x:{SECRET}@evil.example/v1"),
            ],
        )
        .unwrap();
    }
    assert!(files_text(dir.path()).contains(SECRET));

    let e = engram_suite::open(dir.path(), secrets.clone());
    let provider = e
        .providers()
        .list()
        .unwrap()
        .into_iter()
        .find(|p| p.name == "proxy")
        .unwrap();
    assert_eq!(
        provider.base_url.as_deref(),
        Some("https://api.example.com/v1?region=eu")
    );
    // The key in the URL became the provider's key, in the keychain.
    let key = secrets.get(&provider_key_name("proxy")).unwrap().unwrap();
    assert_eq!(key.expose_secret(), SECRET);
    let shown = e.agents().get(&agent).await.unwrap().agent;
    assert_eq!(shown.llm.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
    assert_eq!(
        shown.embedding.and_then(|m| m.base_url).as_deref(),
        Some("http://127.0.0.1:9/v1")
    );
    assert!(
        e.trust()
            .endpoints(&agent)
            .await
            .unwrap()
            .pending
            .is_empty()
    );

    // No copy is left in the database file, its log, or an export.
    drop(e);
    assert!(
        !files_text(dir.path()).contains(SECRET),
        "the database files still hold the secret"
    );
    let e = engram_suite::open(dir.path(), secrets);
    let export = e
        .agent_files()
        .export_all(None, ExportFormat::Af)
        .await
        .unwrap();
    assert!(!export.contents.contains(SECRET));
}

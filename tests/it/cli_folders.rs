//! `engram folder …` through the real binary: create, add a directory (a symlink in it is
//! skipped), list, attach (the agent gets the file tools), detach, remove a file and the folder.

use engram_mock_llm::{MockLlm, Script};
use engram_suite::{cli, cli_agent, stdout_ok};
use serde_json::Value;

#[tokio::test]
async fn the_folder_commands_add_list_attach_and_remove() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = tempfile::tempdir().unwrap();
    let agent = cli_agent(home.path(), &mock);
    let id = stdout_ok(&cli(
        home.path(),
        &["folder", "create", "guides", "--embedding", "none"],
    ));
    assert!(id.trim().starts_with("source-"), "{id}");

    let docs = tempfile::tempdir().unwrap();
    std::fs::copy(
        "/usr/share/doc/base-passwd/users-and-groups.html",
        docs.path().join("users.html"),
    )
    .unwrap();
    std::fs::write(
        docs.path().join("notes.md"),
        "# Notes\n\nthe shadow group\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("/etc", docs.path().join("etc")).unwrap();
    let dir = docs.path().to_str().unwrap();
    let out = stdout_ok(&cli(home.path(), &["folder", "add", "guides", dir]));
    assert!(
        out.contains("notes.md  completed, 3 lines, 1 passages"),
        "{out}"
    );
    assert!(out.contains("users.html  completed"), "{out}");
    assert!(out.contains("etc: a symbolic link: not followed"), "{out}");
    let again = stdout_ok(&cli(home.path(), &["folder", "add", "guides", dir]));
    assert!(again.contains("unchanged  notes.md"), "{again}");

    let listed: Value = serde_json::from_str(&stdout_ok(&cli(
        home.path(),
        &["folder", "ls", "guides", "--json"],
    )))
    .unwrap();
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["notes.md", "users.html"]);
    assert_eq!(listed[0]["status"], "completed");

    stdout_ok(&cli(
        home.path(),
        &["folder", "attach", "guides", agent.as_str()],
    ));
    let context: Value = serde_json::from_str(&stdout_ok(&cli(
        home.path(),
        &["context", agent.as_str(), "--json"],
    )))
    .unwrap();
    assert!(context["files"].as_u64().unwrap() > 0, "{context}");
    let engram = engram_suite::open(
        home.path(),
        std::sync::Arc::new(engram_secrets::MemoryStore::default()),
    );
    let tools = engram.store().agents().get(&agent).unwrap().tools;
    assert!(tools.iter().any(|t| t == "grep_files"), "{tools:?}");
    drop(engram);

    stdout_ok(&cli(
        home.path(),
        &["folder", "detach", "guides", agent.as_str()],
    ));
    stdout_ok(&cli(home.path(), &["folder", "rm", "guides", "notes.md"]));
    let left = stdout_ok(&cli(home.path(), &["folder", "ls", "guides"]));
    assert!(
        !left.contains("notes.md") && left.contains("users.html"),
        "{left}"
    );
    stdout_ok(&cli(home.path(), &["folder", "rm", "guides"]));
    let none = stdout_ok(&cli(home.path(), &["folder", "ls"]));
    assert!(none.trim().is_empty(), "{none}");
    let missing = cli(home.path(), &["folder", "ls", "guides"]);
    assert!(!missing.status.success());
}

/// `engram folder watch` links a directory and syncs it once; a running `engram serve` then
/// keeps the folder in step (here: a file written after the server started reaches its REST
/// listing); `unwatch` removes the link and keeps the files.
#[tokio::test]
async fn a_folder_linked_by_the_cli_is_kept_in_step_by_the_server() {
    let home = tempfile::tempdir().unwrap();
    let docs = tempfile::tempdir().unwrap();
    std::fs::write(
        docs.path().join("first.md"),
        "# First\n\nruddy turnstones\n",
    )
    .unwrap();
    std::fs::write(docs.path().join(".hidden.md"), "left out\n").unwrap();
    std::os::unix::fs::symlink("/etc/hostname", docs.path().join("host.txt")).unwrap();
    let id = stdout_ok(&cli(
        home.path(),
        &["folder", "create", "desk", "--embedding", "none"],
    ));
    let id = id.trim();
    let dir = docs.path().to_str().unwrap();
    let out = stdout_ok(&cli(home.path(), &["folder", "watch", "desk", dir]));
    assert!(
        out.contains("1 read (0 failed), 0 unchanged, 0 removed, 1 symbolic links not followed"),
        "{out}"
    );
    let listed = stdout_ok(&cli(home.path(), &["folder", "ls"]));
    assert!(
        listed.contains("watches ") && listed.contains("(linked)"),
        "{listed}"
    );
    let files = stdout_ok(&cli(home.path(), &["folder", "ls", "desk"]));
    assert!(
        files.contains("host.txt  error: a symbolic link pointing outside the watched directory"),
        "{files}"
    );

    let served = engram_suite::serve::Served::start(home.path(), &[]);
    std::fs::write(docs.path().join("second.md"), "# Second\n\ngrey plovers\n").unwrap();
    let url = format!("{}/v1/folders/{id}/files", served.base);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let body: Value = reqwest::get(&url).await.unwrap().json().await.unwrap();
        let names: Vec<&str> = body
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["file_name"].as_str())
            .collect();
        if names.contains(&"second.md") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the server did not pick up second.md: {body}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // The file shows up while its sync is still going (the directory's own change starts a
    // full one); the server records `watching` when it ends. Killed before that, the record
    // would rightly say the sync never finished.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut listed = stdout_ok(&cli(home.path(), &["folder", "ls"]));
    while !listed.contains("(watching)") && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        listed = stdout_ok(&cli(home.path(), &["folder", "ls"]));
    }
    drop(served);
    let listed = stdout_ok(&cli(home.path(), &["folder", "ls"]));
    assert!(listed.contains("(watching)"), "{listed}");
    stdout_ok(&cli(home.path(), &["folder", "unwatch", "desk"]));
    let listed = stdout_ok(&cli(home.path(), &["folder", "ls"]));
    assert!(!listed.contains("watches "), "{listed}");
    assert!(listed.contains("3 files"), "{listed}");
}

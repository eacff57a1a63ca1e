//! The `engram` CLI end to end: a real process, a real data directory, the scripted model.

use engram_mock_llm::{MockLlm, Script};
use engram_suite::{cli, stdout_ok};
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_quick_start_works() {
    let mock = MockLlm::start(Script::Brain).await;
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let url = mock.base_url();
    let run = |args: &[&str]| cli(h, args);

    let persona = h.join("system.txt");
    std::fs::write(&persona, "You are Sam.\n\n{CORE_MEMORY}").unwrap();
    let out = run(&[
        "agent",
        "create",
        "--name",
        "Sam",
        "--model",
        "openai/mock-small",
        "--base-url",
        &url,
        "--system",
        persona.to_str().unwrap(),
        "--block",
        "persona=I am Sam.",
        "--block",
        "human=",
    ]);
    let id = stdout_ok(&out).trim().to_owned();
    assert!(id.starts_with("agent-"), "{id}");
    assert!(stdout_ok(&run(&["agent", "list"])).contains(&id));
    let shown: Value = serde_json::from_str(&stdout_ok(&run(&["agent", "show", &id]))).unwrap();
    assert_eq!(shown["system"], "You are Sam.\n\n{CORE_MEMORY}");

    let reply = stdout_ok(&run(&["chat", &id, "--message", "my name is Bob"]));
    assert!(reply.contains("Bob"), "{reply}");
    let json: Value = serde_json::from_str(&stdout_ok(&run(&[
        "chat",
        &id,
        "--message",
        "what is my name?",
        "--json",
    ])))
    .unwrap();
    assert_eq!(json["stop_reason"]["stop_reason"], "end_turn");
    assert_eq!(json["usage"]["message_type"], "usage_statistics");
    assert!(json["usage"]["step_count"].as_u64().unwrap() >= 1);
    let assistant: Vec<&Value> = json["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["message_type"] == "assistant_message")
        .collect();
    assert!(assistant[0]["content"].as_str().unwrap().contains("Bob"));

    let blocks: Value =
        serde_json::from_str(&stdout_ok(&run(&["memory", "show", &id, "--json"]))).unwrap();
    let human = blocks
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["label"] == "human")
        .unwrap();
    assert_eq!(human["value"], "Name: Bob");
    stdout_ok(&run(&[
        "memory",
        "set",
        &id,
        "persona",
        "I am Sam, a gardener.",
    ]));
    assert!(stdout_ok(&run(&["memory", "show", &id])).contains("I am Sam, a gardener."));
    assert!(stdout_ok(&run(&["memory", "history", &id, "human"])).contains("Name: Bob"));

    stdout_ok(&run(&[
        "archival",
        "add",
        &id,
        "The tulips bloom in April.",
        "--tag",
        "garden",
    ]));
    stdout_ok(&run(&["archival", "add", &id, "Bob's car is blue."]));
    let hits: Value = serde_json::from_str(&stdout_ok(&run(&[
        "archival", "search", &id, "tulip", "--json",
    ])))
    .unwrap();
    assert_eq!(hits[0]["passage"]["text"], "The tulips bloom in April.");
    assert_eq!(hits[0]["passage"]["tags"][0], "garden");
    let tagged: Value = serde_json::from_str(&stdout_ok(&run(&[
        "archival", "search", &id, "blue", "--tag", "garden", "--json",
    ])))
    .unwrap();
    // The tag filter applies before ranking: the blue car is not tagged "garden", so only the
    // tagged passage can come back (by meaning, when the agent has an embedding model).
    let tagged = tagged.as_array().unwrap();
    assert!(
        tagged.iter().all(|h| h["passage"]["tags"][0] == "garden"),
        "tag filter applies: {tagged:?}"
    );
    assert!(
        !tagged
            .iter()
            .any(|h| h["passage"]["text"] == "Bob's car is blue.")
    );
    let listed: Value = serde_json::from_str(&stdout_ok(&run(&[
        "archival", "list", &id, "--tag", "garden", "--json",
    ])))
    .unwrap();
    assert_eq!(listed[0]["text"], "The tulips bloom in April.");
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    let oldest: Value = serde_json::from_str(&stdout_ok(&run(&[
        "archival",
        "list",
        &id,
        "--oldest-first",
        "--offset",
        "1",
        "--since",
        "2001-01-01T00:00:00Z",
        "--json",
    ])))
    .unwrap();
    assert_eq!(oldest.as_array().unwrap().len(), 1, "{oldest}");
    assert_eq!(oldest[0]["text"], "Bob's car is blue.");
    let recall: Value = serde_json::from_str(&stdout_ok(&run(&[
        "recall", "search", &id, "Bob", "--role", "user", "--json",
    ])))
    .unwrap();
    assert!(
        recall
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["message"]["content"] == "my name is Bob")
    );

    stdout_ok(&run(&["provider", "set", "local", "--base-url", &url]));
    let list = stdout_ok(&run(&["provider", "list"]));
    assert!(
        list.contains("local") && list.contains("key not set"),
        "{list}"
    );
    let test = stdout_ok(&run(&["provider", "test", "local"]));
    assert!(test.starts_with("local: OK"), "{test}");

    let context = stdout_ok(&run(&["context", &id]));
    assert!(context.contains("core memory"), "{context}");

    stdout_ok(&run(&["agent", "delete", &id]));
    assert!(!stdout_ok(&run(&["agent", "list"])).contains(&id));
    assert!(mock.violations().is_empty(), "{:#?}", mock.violations());
}

#[tokio::test]
async fn errors_are_one_clear_line_and_a_failure_exit() {
    let home = tempfile::tempdir().unwrap();
    let out = cli(home.path(), &["agent", "show", "agent-nope"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim(), "error: agent not found: agent-nope");

    let out = cli(
        home.path(),
        &["agent", "create", "--name", "Sam", "--block", "nonsense"],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("label=value"));

    let mock = MockLlm::start(Script::Queue).await;
    let url = mock.base_url();
    let id = stdout_ok(&cli(
        home.path(),
        &[
            "agent",
            "create",
            "--name",
            "Sam",
            "--base-url",
            &url,
            "--block",
            "human=hi",
        ],
    ));
    let long = "y".repeat(6_000);
    let out = cli(home.path(), &["memory", "set", id.trim(), "human", &long]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error: Edit failed: Exceeds 5000 character limit (requested 6000)"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1);
    let blocks = stdout_ok(&cli(home.path(), &["memory", "show", id.trim()]));
    assert!(
        blocks.contains("[human] 2/5000 chars"),
        "unchanged: {blocks}"
    );
}

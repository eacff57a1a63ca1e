//! `engram db copy`: a desktop's SQLite database onto a server's PostgreSQL and back again,
//! through the storage interface. Every agent's Agent File export is the same after the
//! round trip (ids, memory and its history, conversation, passages, steps, tags, tools with
//! their trust); runs, users and their access come along; a second copy into the same
//! database is refused; what is not copied is said.

use engram_core::{AgentAccess, LoopStyle, ModelPrice, NewBlock, NewTool, PriceSource};
use engram_mock_llm::{MockLlm, Script};
use engram_suite::Home;
use serde_json::{Value, json};
use std::process::Output;

const TOOL: &str = "def roll_die(sides: int) -> int:\n    \"\"\"Rolls a die.\n\n    Args:\n        sides: How many sides it has.\n    \"\"\"\n    return 4\n";

fn copy(home: &std::path::Path, from: &str, to: &str) -> Output {
    engram_suite::cli(home, &["db", "copy", "--from", from, "--to", to])
}

/// The export of every agent, by agent, without the time of the export.
async fn exports(home: &Home) -> Vec<Value> {
    let mut agents = home.engram.agents().list().await.unwrap();
    agents.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
    let mut out = Vec::new();
    for a in agents {
        let bytes = home
            .engram
            .agent_files()
            .export(std::slice::from_ref(&a.id))
            .await
            .unwrap();
        let mut file: Value = serde_json::from_slice(&bytes).unwrap();
        file.as_object_mut().unwrap().remove("created_at");
        out.push(file);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_copied_to_postgres_and_back_exports_the_same_agents() {
    let mock = MockLlm::start(Script::Brain).await;
    let desk = Home::new();
    let sam = desk.agent(&mock, LoopStyle::Classic).await;
    desk.chat(&sam, "my name is Bob").await;
    desk.chat(&sam, "I like chess").await;
    for text in ["Bob's locker is 4471", "Bob plays on Sundays"] {
        desk.engram
            .archival()
            .insert(&sam, text, vec!["bob".into()])
            .await
            .unwrap();
    }
    desk.engram
        .agents()
        .set_tags(&sam, &["support".into(), "eu".into()])
        .await
        .unwrap();
    let tool = desk
        .engram
        .tools()
        .upsert(NewTool {
            source_code: TOOL.into(),
            ..NewTool::default()
        })
        .await
        .unwrap();
    desk.engram.tools().attach(&sam, &tool.id).await.unwrap();
    // A second agent shares Sam's human block; a third block belongs to no agent.
    let team = desk
        .agent_with(&mock, LoopStyle::ToolLoop, |n| {
            n.name = "Team".into();
            n.blocks = vec![NewBlock::new("persona", "I keep the team's notes.")];
        })
        .await;
    let human = desk.engram.blocks().by_label(&sam, "human").await.unwrap();
    desk.engram.blocks().attach(&team, &human.id).await.unwrap();
    let loose = desk
        .engram
        .blocks()
        .create(&NewBlock::new("policies", "Refunds within 30 days."))
        .await
        .unwrap();
    desk.engram.users().create("ana").await.unwrap();
    desk.engram
        .users()
        .share(&team, "ana", Some(AgentAccess::Write))
        .await
        .unwrap();
    // An agent from a file whose base URL waits for the person's acceptance.
    let file = desk
        .engram
        .agent_files()
        .export(std::slice::from_ref(&sam))
        .await
        .unwrap();
    let mut far: Value = serde_json::from_slice(&file).unwrap();
    far["agents"][0]["name"] = json!("Far");
    far["agents"][0]["llm_config"]["model_endpoint"] = json!("http://10.0.0.5:8000/v1");
    let far = desk
        .engram
        .agent_files()
        .import_named(&serde_json::to_vec(&far).unwrap(), "far.af")
        .await
        .unwrap()
        .agents[0]
        .clone();
    let waiting = desk.engram.trust().endpoints(&far).await.unwrap().pending;
    assert_eq!(waiting.len(), 1);
    // The model settings people make: a price and a context window.
    let price = ModelPrice {
        model: "openai/mock-small".into(),
        input_per_mtok: 0.5,
        output_per_mtok: 1.5,
        source: PriceSource::User,
    };
    desk.engram.models().set_price(&price).await.unwrap();
    desk.engram
        .models()
        .set_window("openai/mock-small", 24_000)
        .await
        .unwrap();
    let before = exports(&desk).await;
    let runs = desk.engram.runs().records(&sam, None).await.unwrap();
    assert_eq!(runs.len(), 2);

    // Onto the server's database.
    let url = engram_test_postgres::database().url();
    let db = desk.path().join(engram_service::DB_FILE);
    let out = copy(desk.path(), &format!("sqlite:{}", db.display()), &url);
    let said = engram_suite::stdout_ok(&out);
    assert!(said.starts_with("copied 3 agent(s), 6 block(s)"), "{said}");
    assert!(
        !said.contains("base URL"),
        "nothing is left behind of them: {said}"
    );
    assert!(
        said.contains("1 user(s) were copied without their tokens"),
        "{said}"
    );

    // The copy is refused a second time: the database is no longer empty.
    let again = copy(desk.path(), &format!("sqlite:{}", db.display()), &url);
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("already holds"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );

    // And back into a new desktop database.
    let other = tempfile::tempdir().unwrap();
    let back = other.path().join(engram_service::DB_FILE);
    engram_suite::stdout_ok(&copy(
        desk.path(),
        &url,
        &format!("sqlite:{}", back.display()),
    ));
    let copied = Home {
        engram: engram_suite::open(
            other.path(),
            std::sync::Arc::new(engram_secrets::MemoryStore::default()),
        ),
        dir: other,
    };
    let after = exports(&copied).await;
    assert_eq!(after.len(), 3);
    for (a, b) in before.iter().zip(&after) {
        assert_eq!(a, b, "the export of {} changed", a["agents"][0]["name"]);
    }
    assert_eq!(
        copied.engram.runs().records(&sam, None).await.unwrap(),
        runs
    );
    assert_eq!(
        copied.engram.blocks().get(&loose.id).await.unwrap().value,
        "Refunds within 30 days."
    );
    let users = copied.engram.users().list().await.unwrap();
    assert_eq!(users.len(), 1);
    let access = copied.engram.users().agents(&users[0].id).await.unwrap();
    assert_eq!(access, [(team.clone(), AgentAccess::Write)]);
    assert_eq!(
        copied.engram.trust().endpoints(&far).await.unwrap().pending,
        waiting,
        "the base URL still waits for acceptance"
    );
    let prices = copied.engram.models().prices().await.unwrap();
    assert!(prices.contains(&price), "{prices:?}");
    let windows = copied.engram.models().windows().await.unwrap();
    assert!(
        windows
            .iter()
            .any(|w| w.handle == "openai/mock-small" && w.context_window == 24_000),
        "{windows:?}"
    );
    // The copy chats on as the original would.
    let (outcome, _) = copied.chat(&sam, "what is my name?").await;
    assert!(format!("{outcome:?}").contains("Bob"), "{outcome:?}");
}

#[test]
fn a_database_is_named_as_a_file_or_a_server() {
    let home = tempfile::tempdir().unwrap();
    let out = copy(home.path(), "engram.db", "sqlite:/tmp/x.db");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("sqlite:PATH or postgres://"), "{err}");
    let missing = home.path().join("missing.db");
    let out = copy(
        home.path(),
        &format!("sqlite:{}", missing.display()),
        "sqlite:/tmp/y.db",
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("there is no database"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!missing.exists());
}

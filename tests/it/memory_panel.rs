//! The memory panel's writes and views: blocks added, renamed, limited, made
//! read-only, attached and deleted with their versions; undo of an older edit keeping later
//! ones; the compiled context exactly as the model receives it; the model picker's models,
//! stored context windows and per-agent sampling settings.

use engram_core::{AgentPatch, BlockPatch, Error, LoopStyle, NewBlock};
use engram_mock_llm::{MockLlm, Reply, Script};
use engram_service::ProviderSetup;
use engram_suite::Home;
use serde_json::Value;

fn patch(f: impl FnOnce(&mut BlockPatch)) -> BlockPatch {
    let mut p = BlockPatch::default();
    f(&mut p);
    p
}

#[tokio::test]
async fn blocks_are_added_renamed_limited_locked_shared_and_deleted_by_version() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let e = &home.engram;
    let sam = home.agent(&mock, LoopStyle::ToolLoop).await;
    let ada = home
        .agent_with(&mock, LoopStyle::ToolLoop, |a| a.name = "Ada".into())
        .await;

    // Add: created and attached at once, after the others; a taken label is refused whole.
    let notes = e
        .blocks()
        .create_for_agent(&sam, &NewBlock::new("notes", "likes tea"))
        .await
        .unwrap();
    assert_eq!(notes.version, 1);
    let labels: Vec<String> = e
        .blocks()
        .of_agent(&sam)
        .await
        .unwrap()
        .into_iter()
        .map(|b| b.label)
        .collect();
    assert_eq!(labels, ["persona", "human", "notes"]);
    let before = e.blocks().list(None).await.unwrap().len();
    assert!(matches!(
        e.blocks()
            .create_for_agent(&sam, &NewBlock::new("notes", "again"))
            .await,
        Err(Error::Conflict(_))
    ));
    assert!(matches!(
        e.blocks()
            .create_for_agent(&sam, &NewBlock::new("bad<label>", ""))
            .await,
        Err(Error::Invalid(_))
    ));
    assert_eq!(
        e.blocks().list(None).await.unwrap().len(),
        before,
        "nothing half-made"
    );

    // Rename by version; a window still at the old version is refused with the current block.
    let renamed = e
        .blocks()
        .update_by_label(
            &sam,
            "notes",
            &patch(|p| {
                p.label = Some("topics".into());
                p.version = Some(1);
            }),
        )
        .await
        .unwrap();
    assert_eq!((renamed.label.as_str(), renamed.version), ("topics", 2));
    match e
        .blocks()
        .update_by_label(
            &sam,
            "topics",
            &patch(|p| {
                p.limit = Some(500);
                p.version = Some(1);
            }),
        )
        .await
    {
        Err(Error::StaleVersion { current, .. }) => assert_eq!(current.version, 2),
        other => panic!("expected stale_version, got {other:?}"),
    }
    assert!(matches!(
        e.blocks()
            .update_by_label(&sam, "topics", &patch(|p| p.label = Some("human".into())))
            .await,
        Err(Error::Conflict(_))
    ));

    // A limit below the value is refused; one that fits is kept; read-only toggles.
    assert!(matches!(
        e.blocks()
            .update_by_label(
                &sam,
                "topics",
                &patch(|p| {
                    p.limit = Some(3);
                    p.version = Some(2);
                })
            )
            .await,
        Err(Error::Invalid(_))
    ));
    let limited = e
        .blocks()
        .update_by_label(
            &sam,
            "topics",
            &patch(|p| {
                p.limit = Some(500);
                p.version = Some(2);
            }),
        )
        .await
        .unwrap();
    assert_eq!((limited.limit, limited.version), (500, 3));
    let locked = e
        .blocks()
        .update_by_label(
            &sam,
            "topics",
            &patch(|p| {
                p.read_only = Some(true);
                p.version = Some(3);
            }),
        )
        .await
        .unwrap();
    assert!(locked.read_only);

    // Shared: attach to Ada; both see one row, and the listing says where it is attached.
    e.blocks().attach(&ada, &notes.id).await.unwrap();
    let shared = e.blocks().shared().await.unwrap();
    let row = shared.iter().find(|s| s.block.id == notes.id).unwrap();
    let names: Vec<&str> = row.agents.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["Sam", "Ada"]);
    e.blocks()
        .update_by_label(
            &ada,
            "topics",
            &patch(|p| {
                p.value = Some("likes green tea".into());
                p.version = Some(4);
            }),
        )
        .await
        .unwrap();
    assert_eq!(home.block(&sam, "topics"), "likes green tea");
    // Ada cannot take a second block labelled `human`.
    let other = e
        .blocks()
        .create(&NewBlock::new("human", "x"))
        .await
        .unwrap();
    assert!(matches!(
        e.blocks().attach(&ada, &other.id).await,
        Err(Error::Conflict(_))
    ));

    // Detach from one agent keeps it for the other; delete removes it everywhere.
    e.blocks().detach(&ada, &notes.id).await.unwrap();
    assert!(e.blocks().by_label(&ada, "topics").await.is_err());
    assert_eq!(home.block(&sam, "topics"), "likes green tea");
    e.blocks().delete(&notes.id).await.unwrap();
    assert!(e.blocks().by_label(&sam, "topics").await.is_err());
    assert!(
        e.blocks()
            .shared()
            .await
            .unwrap()
            .iter()
            .all(|s| s.block.id != notes.id)
    );
}

#[tokio::test]
async fn undoing_an_older_edit_keeps_the_later_ones_or_says_what_is_lost() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let e = &home.engram;
    let sam = home.agent(&mock, LoopStyle::ToolLoop).await;
    let set = async |v: &str| {
        e.blocks().set_value(&sam, "human", v).await.unwrap();
    };
    set("Name: Bob").await;
    set("Name: Bob\nLikes tea").await;
    set("Name: Bob\nLikes tea\nLives in Oslo").await;
    let history = e.blocks().history(&sam, "human").await.unwrap();
    let tea = history[1].clone(); // newest first: [Oslo, tea, Bob]
    assert_eq!(tea.new_value, "Name: Bob\nLikes tea");

    let plan = e.blocks().undo_plan(&tea.id).await.unwrap();
    assert_eq!(plan.later_edits, 1);
    assert_eq!(plan.reverted.as_deref(), Some("Name: Bob\nLives in Oslo"));
    assert_eq!(plan.restored, "Name: Bob");
    let current = e.blocks().by_label(&sam, "human").await.unwrap();
    let undone = e
        .blocks()
        .undo(&tea.id, Some(current.version))
        .await
        .unwrap();
    assert_eq!(
        undone.value, "Name: Bob\nLives in Oslo",
        "the later edit stays"
    );
    assert_eq!(undone.version, current.version + 1);
    let last = e.blocks().history(&sam, "human").await.unwrap().remove(0);
    assert!(matches!(last.editor, engram_core::Editor::Undo { ref edit_id } if *edit_id == tea.id));

    // A later edit rewrote the text the first edit wrote: it cannot be undone on its own.
    set("Name: Robert\nLives in Oslo").await;
    set("Name: Rob\nLives in Oslo").await;
    let history = e.blocks().history(&sam, "human").await.unwrap();
    let robert = history[1].clone();
    let plan = e.blocks().undo_plan(&robert.id).await.unwrap();
    assert_eq!(plan.reverted, None);
    assert_eq!(plan.later_edits, 1);
    let now = e.blocks().by_label(&sam, "human").await.unwrap();
    assert!(matches!(
        e.blocks().undo(&robert.id, Some(now.version)).await,
        Err(Error::Conflict(_))
    ));
    assert_eq!(
        home.block(&sam, "human"),
        "Name: Rob\nLives in Oslo",
        "nothing written"
    );
    // The person saw what is lost and chose the whole restore, from the version they saw.
    assert!(matches!(
        e.blocks().restore(&robert.id, Some(now.version - 1)).await,
        Err(Error::StaleVersion { .. })
    ));
    let restored = e
        .blocks()
        .restore(&robert.id, Some(now.version))
        .await
        .unwrap();
    assert_eq!(restored.value, "Name: Bob\nLives in Oslo");
}

fn chat_requests(mock: &MockLlm) -> Vec<Value> {
    mock.requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| r.body)
        .collect()
}

#[tokio::test]
async fn the_context_view_is_what_the_model_receives_with_the_sampling_settings() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let e = &home.engram;
    let sam = home.agent(&mock, LoopStyle::ToolLoop).await;
    mock.push(Reply::text("Hello Bob."));
    home.chat(&sam, "my name is Bob").await;

    // Temperature and max output tokens are stored per agent and sent.
    let mut llm = e.agents().get(&sam).await.unwrap().agent.llm;
    llm.temperature = Some(0.25);
    llm.max_tokens = Some(321);
    e.agents()
        .update(
            &sam,
            &AgentPatch {
                llm: Some(llm),
                ..AgentPatch::default()
            },
        )
        .await
        .unwrap();

    let view = e.agents().context_view(&sam).await.unwrap();
    assert_eq!(view.messages[0].part, "system");
    assert!(view.messages[0].content.contains("<memory_blocks>"));
    assert_eq!((view.temperature, view.max_tokens), (Some(0.25), Some(321)));
    let per_message: usize = view.messages[1..].iter().map(|m| m.tokens).sum();
    assert_eq!(
        per_message,
        view.breakdown.messages + view.breakdown.summary
    );
    let per_tool: usize = view.tools.iter().map(|t| t.tokens).sum();
    assert!(per_tool > 0 && view.breakdown.tools > 0);

    mock.push(Reply::text("Noted."));
    home.chat(&sam, "what is my name?").await;
    let sent = chat_requests(&mock).pop().unwrap();
    assert_eq!(sent["temperature"].as_f64(), Some(0.25));
    assert_eq!(sent["max_tokens"].as_u64(), Some(321));
    let sent_messages = sent["messages"].as_array().unwrap();
    assert_eq!(
        sent_messages.len(),
        view.messages.len() + 1,
        "the view plus the new message"
    );
    for (seen, sent) in view.messages.iter().zip(sent_messages) {
        assert_eq!(sent["role"], seen.role.as_str());
        assert_eq!(sent["content"].as_str().unwrap_or(""), seen.content);
    }
    let tool_names: Vec<&str> = sent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    let view_names: Vec<&str> = view.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tool_names, view_names);
}

#[tokio::test]
async fn the_model_picker_lists_chat_models_with_stored_windows() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let e = &home.engram;
    e.providers()
        .set(ProviderSetup {
            name: "mock".into(),
            base_url: Some(mock.base_url()),
            ..ProviderSetup::default()
        })
        .unwrap();
    let models = e.models().chat("mock").await.unwrap();
    let got: Vec<(&str, Option<u32>, bool)> = models
        .iter()
        .map(|m| (m.handle.as_str(), m.context_window, m.stored))
        .collect();
    assert_eq!(
        got,
        [
            ("mock/mock-small", Some(8192), false),
            ("mock/mock-large", Some(32768), false)
        ],
        "the embedding model is not offered for chat"
    );

    assert!(matches!(
        e.models().set_window("mock-small", 100).await,
        Err(Error::Invalid(_))
    ));
    e.models()
        .set_window("mock/mock-large", 16_000)
        .await
        .unwrap();
    let models = e.models().chat("mock").await.unwrap();
    assert_eq!(
        (models[1].context_window, models[1].stored),
        (Some(16_000), true)
    );
    assert_eq!(e.models().windows().await.unwrap().len(), 1);

    // With one provider, its default model is the default for new agents (no `default_model`
    // setting needed), with the window stored for it.
    let fresh = Home::new();
    fresh
        .engram
        .store()
        .settings()
        .upsert_provider(&engram_store::ProviderRow {
            name: "mock".into(),
            kind: "openai".into(),
            base_url: Some(mock.base_url()),
            default_model: Some("mock/mock-large".into()),
        })
        .unwrap();
    fresh
        .engram
        .models()
        .set_window("mock/mock-large", 24_000)
        .await
        .unwrap();
    assert_eq!(
        fresh.engram.models().default_chat().unwrap(),
        "mock/mock-large"
    );
    let agent = fresh
        .engram
        .agents()
        .create(engram_core::NewAgent {
            name: "Default".into(),
            ..engram_core::NewAgent::default()
        })
        .await
        .unwrap();
    assert_eq!(agent.agent.llm.model, "mock/mock-large");
    assert_eq!(agent.agent.llm.context_window, 24_000);
}

#[tokio::test]
async fn the_cli_shows_the_full_context_and_undoes_one_edit_or_restores_the_whole_value() {
    use engram_suite::{cli, stdout_ok};
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let sam = home.agent(&mock, LoopStyle::ToolLoop).await;
    let view: Value = serde_json::from_str(&stdout_ok(&cli(
        home.path(),
        &["context", sam.as_str(), "--full", "--json"],
    )))
    .unwrap();
    assert_eq!(view["messages"][0]["part"], "system");
    assert!(
        view["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("<memory_blocks>")
    );
    assert!(!view["tools"].as_array().unwrap().is_empty());
    let text = stdout_ok(&cli(home.path(), &["context", sam.as_str(), "--full"]));
    assert!(
        text.contains("system (system,") && text.contains("core_memory_append"),
        "{text}"
    );

    let e = &home.engram;
    e.blocks()
        .set_value(&sam, "human", "Name: Bob")
        .await
        .unwrap();
    e.blocks()
        .set_value(&sam, "human", "Name: Robert")
        .await
        .unwrap();
    e.blocks()
        .set_value(&sam, "human", "Name: Rob")
        .await
        .unwrap();
    let robert = e.blocks().history(&sam, "human").await.unwrap()[1]
        .id
        .clone();
    let refused = cli(home.path(), &["memory", "undo", robert.as_str()]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("cannot be undone on its own"));
    stdout_ok(&cli(
        home.path(),
        &["memory", "undo", robert.as_str(), "--whole"],
    ));
    assert_eq!(home.block(&sam, "human"), "Name: Bob");
}

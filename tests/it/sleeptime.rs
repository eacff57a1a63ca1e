//! Sleep-time passes tidying memory, with the scripted model playing both the chat and the
//! sleep-time agent (on two servers: the pass uses a model of its own). A contradicted fact and
//! duplicated lines are tidied after twenty turns; a hand edit and a chat run made during a pass
//! survive it; duplicated passages are merged; undo puts every block and passage back. What
//! bounds a pass is in `sleeptime_guards`.

use engram_core::{
    AgentId, LlmConfig, LoopStyle, NewBlock, PassChangeKind, PassStatus, PassTrigger,
    SleeptimeSettings,
};
use engram_mock_llm::{Call, MockLlm, Reply, Script};
use engram_service::{Notice, PassageList, PassageQuery};
use engram_suite::{Home, last_tool_results};
use serde_json::json;
use std::time::Duration;

/// Settings with passes on, run by the model on `sleep`.
pub(crate) fn settings(sleep: &MockLlm, frequency: u32) -> SleeptimeSettings {
    let mut llm = LlmConfig::new("openai/mock-sleep");
    llm.base_url = Some(sleep.base_url());
    llm.context_window = 32_000;
    SleeptimeSettings {
        enabled: true,
        frequency,
        llm: Some(llm),
        timeout_secs: 30,
        ..SleeptimeSettings::default()
    }
}

pub(crate) async fn search(
    home: &Home,
    agent: &AgentId,
    q: &str,
    include_superseded: bool,
) -> Vec<String> {
    let q = PassageQuery {
        query: q.into(),
        top_k: 10,
        include_superseded,
        ..PassageQuery::default()
    };
    let mut texts: Vec<String> = home
        .engram
        .archival()
        .search_by(agent, q)
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.passage.text)
        .collect();
    texts.sort();
    texts
}

async fn passage_id(home: &Home, agent: &AgentId, text: &str) -> String {
    let all = home
        .engram
        .archival()
        .list(
            agent,
            &PassageList {
                limit: 100,
                include_superseded: true,
                ..PassageList::default()
            },
        )
        .await
        .unwrap();
    all.iter()
        .find(|p| p.text == text)
        .unwrap_or_else(|| panic!("no passage {text:?} in {all:#?}"))
        .id
        .to_string()
}

/// Waits until the agent has `n` recorded passes and none runs.
pub(crate) async fn passes_settle(
    home: &Home,
    agent: &AgentId,
    n: usize,
) -> Vec<engram_core::SleeptimePass> {
    for _ in 0..200 {
        let passes = home.engram.sleeptime().passes(agent, 10).await.unwrap();
        if passes.len() >= n && !home.engram.sleeptime().running(agent) {
            return passes;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the agent never reached {n} passes");
}

/// The chat's replies for turn `i` (1-based) of the twenty-turn conversation, and its text.
fn turn(i: usize) -> (&'static str, Vec<Reply>) {
    let append = |text: &str| {
        Call::new(
            "core_memory_append",
            json!({"label": "human", "content": text}),
        )
    };
    let save = |text: &str| Call::new("archival_memory_insert", json!({"content": text}));
    let answer = |calls: Vec<Call>, text: &str| vec![Reply::ToolCalls(calls), Reply::text(text)];
    match i {
        1 => (
            "Hi, I'm Ana.",
            answer(vec![append("Name: Ana")], "Nice to meet you, Ana."),
        ),
        2 => (
            "I live in Lisbon.",
            answer(
                vec![append("Lives in Lisbon"), save("Ana lives in Lisbon")],
                "Lovely city.",
            ),
        ),
        3 => (
            "I like green tea.",
            answer(vec![append("Likes green tea")], "Noted."),
        ),
        8 => (
            "Remember: green tea is my favourite.",
            answer(
                vec![Call::new(
                    "memory_insert",
                    json!({"label": "human", "new_str": "Likes green tea", "insert_line": 0}),
                )],
                "I will.",
            ),
        ),
        15 => (
            "Big news: I moved to Porto last week.",
            answer(
                vec![append("Moved to Porto"), save("Ana moved to Porto")],
                "Congratulations!",
            ),
        ),
        _ => ("How are you today?", vec![Reply::text("ok")]),
    }
}

#[tokio::test]
async fn twenty_turns_then_a_pass_replaces_the_old_fact_once_and_undo_restores_all() {
    let chat = MockLlm::start(Script::Queue).await;
    let sleep = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&chat, LoopStyle::ToolLoop).await;
    home.engram
        .sleeptime()
        .set_settings(&agent, &settings(&sleep, 20))
        .await
        .unwrap();
    let mut notices = home.engram.notices();
    let mut before = String::new();
    for i in 1..=20 {
        let (text, replies) = turn(i);
        chat.push_all(replies);
        if i == 20 {
            // Read before the last turn, which writes no memory: its pass may end before the
            // turn's answer is read.
            before = home.block(&agent, "human");
            // The facts are in place; script the sleep-time agent before the turn that
            // reaches the frequency.
            let lisbon = passage_id(&home, &agent, "Ana lives in Lisbon").await;
            let porto = passage_id(&home, &agent, "Ana moved to Porto").await;
            sleep.push_all([
                Reply::ToolCalls(vec![
                    Call::new(
                        "memory_rethink",
                        json!({"label": "human", "new_memory": "Name: Ana\nLives in Porto\nLikes green tea"}),
                    ),
                    Call::new(
                        "archival_supersede",
                        json!({"passage_id": lisbon, "successor_id": porto}),
                    ),
                    Call::new("archival_memory_insert", json!({"content": "Ana's favourite drink is green tea"})),
                ]),
                Reply::ToolCalls(vec![Call::new("finish", json!({"summary": "moved to Porto"}))]),
            ]);
        }
        let (out, _) = home.chat(&agent, text).await;
        assert!(out.error.is_none(), "turn {i}: {:?}", out.error);
        if i < 20 {
            assert!(
                home.engram
                    .sleeptime()
                    .passes(&agent, 10)
                    .await
                    .unwrap()
                    .is_empty()
            );
        }
    }
    assert_eq!(
        before, "Likes green tea\nName: Ana\nLives in Lisbon\nLikes green tea\nMoved to Porto",
        "the chat left a contradiction and a duplicate"
    );

    let passes = passes_settle(&home, &agent, 1).await;
    let pass = &passes[0];
    assert_eq!(pass.status, PassStatus::Done, "{:?}", pass.reason);
    assert_eq!(pass.trigger, PassTrigger::Turns);
    assert_eq!(pass.model_calls, 2);
    assert!(pass.tokens() > 0);
    assert!(pass.messages_read >= 40, "{}", pass.messages_read);
    assert_eq!(pass.model, "openai/mock-sleep");
    // The pass ran on its own model: the chat's server saw none of it.
    assert_eq!(sleep.chat_requests().len(), 2);
    assert!(sleep.violations().is_empty(), "{:#?}", sleep.violations());

    let after = home.block(&agent, "human");
    assert_eq!(after, "Name: Ana\nLives in Porto\nLikes green tea");
    assert_eq!(after.matches("Likes green tea").count(), 1);
    assert!(!after.contains("Lisbon"));
    // (Search also admits passages written next to a hit, so only these two are checked.)
    let current = search(&home, &agent, "Lisbon Porto", false).await;
    assert!(
        current.contains(&"Ana moved to Porto".to_owned()),
        "{current:?}"
    );
    assert!(
        !current.contains(&"Ana lives in Lisbon".to_owned()),
        "only current facts by default: {current:?}"
    );
    let history = search(&home, &agent, "Lisbon Porto", true).await;
    assert!(
        history.contains(&"Ana lives in Lisbon".to_owned()),
        "{history:?}"
    );
    assert!(
        history.contains(&"Ana moved to Porto".to_owned()),
        "{history:?}"
    );
    let kinds: Vec<&str> = pass
        .changes
        .iter()
        .map(|c| match &c.kind {
            PassChangeKind::BlockEdit { .. } => "block",
            PassChangeKind::PassageSuperseded { .. } => "superseded",
            PassChangeKind::PassageAdded { .. } => "added",
        })
        .collect();
    assert_eq!(kinds, ["block", "superseded", "added"]);
    let mut saw_notice = false;
    while let Ok(n) = notices.try_recv() {
        saw_notice |= matches!(
            n,
            Notice::SleeptimePass {
                status: PassStatus::Done,
                ..
            }
        );
    }
    assert!(saw_notice, "the pass was announced");

    // The chat's own search tool says when the old fact was replaced, and by what.
    chat.push_all([
        Reply::ToolCalls(vec![Call::new(
            "archival_memory_search",
            json!({"query": "Ana lives Lisbon", "include_superseded": true}),
        )]),
        Reply::text("You used to live in Lisbon."),
    ]);
    home.chat(&agent, "Where did I live before?").await;
    let results = last_tool_results(&chat);
    let message = results.last().unwrap()["message"].as_str().unwrap();
    let found: serde_json::Value = serde_json::from_str(message).expect(message);
    let old = found
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["content"] == "Ana lives in Lisbon")
        .expect("the old fact is in the history");
    assert_eq!(old["replaced_by"], "Ana moved to Porto");
    assert_eq!(old["replaced_how"], "superseded");
    assert!(old["replaced_at"].is_string());

    // Undo of the whole pass puts every block and passage back.
    let undone = home.engram.sleeptime().undo_pass(&pass.id).await.unwrap();
    assert_eq!(undone.status, PassStatus::Undone);
    assert!(undone.changes.iter().all(|c| c.undone_at.is_some()));
    assert_eq!(home.block(&agent, "human"), before);
    assert_eq!(
        search(&home, &agent, "Lisbon Porto", false).await,
        ["Ana lives in Lisbon", "Ana moved to Porto"],
        "both current again, and the added passage gone"
    );
    assert!(
        search(&home, &agent, "favourite drink", true)
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn a_hand_edit_and_a_chat_run_during_a_pass_both_survive_it() {
    let chat = MockLlm::start(Script::Queue).await;
    let sleep = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home
        .agent_with(&chat, LoopStyle::ToolLoop, |a| {
            a.blocks = vec![NewBlock::new(
                "human",
                "Name: Ana\nLives in Lisbon\nLikes tea\nLikes tea",
            )];
        })
        .await;
    home.engram
        .sleeptime()
        .set_settings(&agent, &settings(&sleep, 50))
        .await
        .unwrap();
    // The sleep-time agent thinks for a while before it rewrites the block.
    sleep.push_all([
        Reply::Delayed(
            Duration::from_millis(1500),
            Box::new(Reply::ToolCalls(vec![Call::new(
                "memory_rethink",
                json!({"label": "human", "new_memory": "Name: Ana\nLives in Porto\nLikes tea"}),
            )])),
        ),
        Reply::ToolCalls(vec![Call::new("finish", json!({}))]),
    ]);
    let meanwhile = async {
        while sleep.chat_requests().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let block = home
            .engram
            .blocks()
            .by_label(&agent, "human")
            .await
            .unwrap();
        home.engram
            .blocks()
            .set_value(&agent, "human", &format!("{}\nHas a cat", block.value))
            .await
            .unwrap();
        chat.push_all([
            Reply::ToolCalls(vec![Call::new(
                "core_memory_append",
                json!({"label": "human", "content": "Plays chess"}),
            )]),
            Reply::text("Chess, nice."),
        ]);
        let started = std::time::Instant::now();
        let (out, _) = home.chat(&agent, "I play chess.").await;
        assert!(out.error.is_none(), "{:?}", out.error);
        // The chat did not wait for the pass.
        assert!(
            home.engram.sleeptime().running(&agent),
            "the pass is still thinking"
        );
        assert!(started.elapsed() < Duration::from_millis(1200));
    };
    let (pass, ()) = tokio::join!(home.engram.sleeptime().run_pass(&agent), meanwhile);
    let pass = pass.unwrap();
    assert_eq!(pass.status, PassStatus::Done, "{:?}", pass.reason);
    assert_eq!(
        home.block(&agent, "human"),
        "Name: Ana\nLives in Porto\nLikes tea\nHas a cat\nPlays chess"
    );
    // Undoing the pass takes back only what it wrote.
    home.engram.sleeptime().undo_pass(&pass.id).await.unwrap();
    assert_eq!(
        home.block(&agent, "human"),
        "Name: Ana\nLives in Lisbon\nLikes tea\nLikes tea\nHas a cat\nPlays chess"
    );
}

#[tokio::test]
async fn duplicated_passages_are_merged_into_one_and_the_merge_undone() {
    let chat = MockLlm::start(Script::Queue).await;
    let sleep = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&chat, LoopStyle::ToolLoop).await;
    home.engram
        .sleeptime()
        .set_settings(&agent, &settings(&sleep, 50))
        .await
        .unwrap();
    let a = home
        .engram
        .archival()
        .insert(&agent, "Ana likes green tea", vec![])
        .await
        .unwrap();
    let b = home
        .engram
        .archival()
        .insert(&agent, "Ana's favourite tea is green", vec![])
        .await
        .unwrap();
    sleep.push_all([
        Reply::ToolCalls(vec![Call::new(
            "archival_merge",
            json!({"passage_ids": [a.id, b.id], "content": "Ana's favourite tea is green tea"}),
        )]),
        // Replacing a passage already merged in this pass is refused to the model.
        Reply::ToolCalls(vec![Call::new(
            "archival_supersede",
            json!({"passage_id": a.id, "new_content": "again"}),
        )]),
        Reply::ToolCalls(vec![Call::new("finish", json!({}))]),
    ]);
    let pass = home.engram.sleeptime().run_pass(&agent).await.unwrap();
    assert_eq!(pass.status, PassStatus::Done, "{:?}", pass.reason);
    let told = sleep.chat_requests()[2].body.to_string();
    assert!(told.contains("already replaced in this pass"), "{told}");
    assert_eq!(
        search(&home, &agent, "tea", false).await,
        ["Ana's favourite tea is green tea"]
    );
    assert_eq!(search(&home, &agent, "tea", true).await.len(), 3);
    let merged = home.engram.store().passages().get(&a.id).unwrap();
    assert_eq!(
        merged.superseded.map(|s| s.kind),
        Some(engram_core::SupersedeKind::Merged)
    );
    home.engram.sleeptime().undo_pass(&pass.id).await.unwrap();
    assert_eq!(
        search(&home, &agent, "tea", true).await,
        ["Ana likes green tea", "Ana's favourite tea is green"]
    );
}

//! Sleep-time settings and the history of facts that changed in agent files: Engram → .af →
//! Engram keeps the settings and every superseded passage with its successor; the Letta part
//! of the file alone (as Letta reads it) carries `enable_sleeptime` and a sleep-time group with
//! the frequency, which an import turns back into the settings.

use engram_core::{LoopStyle, SleeptimeSettings, SupersedeKind};
use engram_mock_llm::{MockLlm, Script};
use engram_service::PassageList;
use engram_suite::Home;

async fn all(home: &Home, agent: &engram_core::AgentId) -> Vec<engram_core::Passage> {
    home.engram
        .archival()
        .list(
            agent,
            &PassageList {
                limit: 100,
                ascending: true,
                include_superseded: true,
                ..PassageList::default()
            },
        )
        .await
        .unwrap()
}

#[tokio::test]
async fn settings_and_replaced_facts_round_trip_through_an_agent_file() {
    let mock = MockLlm::start(Script::Queue).await;
    let home = Home::new();
    let agent = home.agent(&mock, LoopStyle::ToolLoop).await;
    let settings = SleeptimeSettings {
        enabled: true,
        frequency: 3,
        passes_per_day: Some(4),
        ..SleeptimeSettings::default()
    };
    home.engram
        .sleeptime()
        .set_settings(&agent, &settings)
        .await
        .unwrap();
    // A pass replaced Lisbon by Porto.
    let sleep = MockLlm::start(Script::Queue).await;
    let old = home
        .engram
        .archival()
        .insert(&agent, "Ana lives in Lisbon", vec![])
        .await
        .unwrap();
    sleep.push_all([
        engram_mock_llm::Reply::ToolCalls(vec![engram_mock_llm::Call::new(
            "archival_supersede",
            serde_json::json!({"passage_id": old.id, "new_content": "Ana lives in Porto"}),
        )]),
        engram_mock_llm::Reply::ToolCalls(vec![engram_mock_llm::Call::new(
            "finish",
            serde_json::json!({}),
        )]),
    ]);
    let mut with_model = settings.clone();
    let mut llm = engram_core::LlmConfig::new("openai/mock-sleep");
    llm.base_url = Some(sleep.base_url());
    with_model.llm = Some(llm);
    home.engram
        .sleeptime()
        .set_settings(&agent, &with_model)
        .await
        .unwrap();
    let pass = home.engram.sleeptime().run_pass(&agent).await.unwrap();
    assert_eq!(pass.changes.len(), 2, "{pass:#?}");

    let file = home
        .engram
        .agent_files()
        .export(std::slice::from_ref(&agent))
        .await
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&file).unwrap();
    assert_eq!(json["agents"][0]["enable_sleeptime"], true);
    let group = &json["groups"][0];
    assert_eq!(group["manager_config"]["manager_type"], "sleeptime");
    assert_eq!(group["manager_config"]["sleeptime_agent_frequency"], 3);
    assert_eq!(
        group["manager_config"]["manager_agent_id"],
        json["agents"][0]["id"]
    );
    assert_eq!(json["agents"][0]["group_ids"][0], group["id"]);

    // Engram → Engram: everything, the settings whole and the history linked.
    let back = home
        .engram
        .agent_files()
        .import(&file)
        .await
        .unwrap()
        .agents[0]
        .clone();
    assert_eq!(
        home.engram.sleeptime().settings(&back).await.unwrap(),
        with_model
    );
    let passages = all(&home, &back).await;
    let texts: Vec<&str> = passages.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(texts, ["Ana lives in Lisbon", "Ana lives in Porto"]);
    let replaced = passages[0].superseded.as_ref().expect("still history");
    assert_eq!(replaced.kind, SupersedeKind::Superseded);
    assert_eq!(replaced.by.as_ref(), Some(&passages[1].id));
    assert!(passages[1].superseded.is_none());

    // Letta's part alone: passes on at the group's frequency.
    let mut letta_only = json.clone();
    letta_only.as_object_mut().unwrap().remove("engram");
    let bytes = serde_json::to_vec(&letta_only).unwrap();
    let plain = home
        .engram
        .agent_files()
        .import(&bytes)
        .await
        .unwrap()
        .agents[0]
        .clone();
    let s = home.engram.sleeptime().settings(&plain).await.unwrap();
    assert!(s.enabled);
    assert_eq!(s.frequency, 3);
}

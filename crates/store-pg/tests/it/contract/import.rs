//! Bulk import: a bundle of agents — a block two of them share, history, a conversation part
//! of which left the context under a summary, passages one of which was superseded, steps,
//! tags, extras, a pending endpoint, sleep-time settings and a tool — lands whole, as given;
//! a bundle whose ids are taken or whose block is over its limit writes nothing; a tool whose
//! name is taken by another tool is stored under a new name the agents follow.

use super::{agent, code};
use crate::harness::{Harness, on_both_backends};
use chrono::{DateTime, Utc};
use engram_core::{
    Block, BlockEdit, BlockId, EditId, Editor, EndpointKind, NewMessage, NewPassage,
    PendingEndpoint, RunId, SleeptimeSettings, Step, StepId, SupersedeKind, Tool, ToolId,
    ToolLanguage, ToolOrigin, trust::ImportedToolStatus,
};
use engram_store_api::{
    AgentStore, BlockStore, ContextStore, EXTRAS_SETTING_PREFIX, ImportAgent, ImportBlock,
    ImportBundle, ImportMessage, ImportStore, ImportSupersession, MessageStore, PassageRange,
    PassageStore, SeqOrder, SettingStore, SleeptimeStore, StepStore, ToolStore,
};
use serde_json::json;

on_both_backends!(
    a_bundle_lands_whole_as_given,
    a_bundle_that_cannot_land_writes_nothing,
    a_waiting_endpoint_is_accepted_or_dismissed_once,
);

fn at(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_700_000_000 + secs, 123_456_000).unwrap()
}

fn block(label: &str, value: &str) -> Block {
    Block {
        id: BlockId::new(),
        label: label.into(),
        value: value.into(),
        limit: 100,
        description: format!("the {label}"),
        read_only: false,
        version: 2,
        created_at: at(1),
        updated_at: at(2),
    }
}

fn tool(name: &str, body: &str) -> Tool {
    Tool {
        id: ToolId::new(),
        name: name.into(),
        description: "A tool.".into(),
        json_schema: json!({"name": name, "description": "A tool.",
                            "parameters": {"type": "object", "properties": {}}}),
        source_code: Some(format!("def {name}():\n    return {body}\n")),
        language: ToolLanguage::Python,
        return_char_limit: 100,
        tags: vec![],
        network: false,
        allow_unsandboxed: false,
        available: true,
        unavailable_reason: None,
        origin: ToolOrigin::User,
        trusted_hash: None,
        source_hash: None,
        trusted: false,
        mcp: None,
        created_at: at(0),
        updated_at: at(0),
    }
}

fn said(text: &str, secs: i64) -> NewMessage {
    NewMessage {
        created_at: Some(at(secs)),
        ..NewMessage::user(text)
    }
}

/// Two agents sharing `team`; Ana's has the rest of what a bundle can carry.
fn bundle() -> ImportBundle {
    let team = block("team", "Ships on Fridays");
    let human = block("human", "Name: Ana");
    let persona = block("persona", "I help.");
    let edit = BlockEdit {
        id: EditId::new(),
        block_id: human.id.clone(),
        editor: Editor::User,
        old_value: String::new(),
        new_value: "Name: Ana".into(),
        old_version: Some(1),
        new_version: Some(2),
        step_id: None,
        created_at: at(2),
    };
    let mut ana = agent("Ana's helper");
    ana.created_at = at(0);
    ana.updated_at = at(3);
    ana.summary = Some("Ana said hello twice.".into());
    ana.tools = vec!["weather".into()];
    let run = RunId::new();
    let step = Step {
        id: StepId::new(),
        agent_id: ana.id.clone(),
        run_id: run,
        index: 0,
        model: "gpt-4o-mini".into(),
        prompt_tokens: 120,
        completion_tokens: 8,
        finish_reason: Some("stop".into()),
        started_at: at(5),
        llm_ms: 300,
        step_ms: 320,
    };
    let mut ben = agent("Ben's helper");
    ben.created_at = at(0);
    ben.updated_at = at(0);
    ImportBundle {
        blocks: vec![
            ImportBlock {
                block: team.clone(),
                history: vec![],
            },
            ImportBlock {
                block: human.clone(),
                history: vec![edit],
            },
            ImportBlock {
                block: persona.clone(),
                history: vec![],
            },
        ],
        agents: vec![
            ImportAgent {
                agent: ana.clone(),
                block_ids: vec![persona.id, human.id, team.id.clone()],
                messages: vec![
                    ImportMessage {
                        message: said("hello", 4),
                        in_context: false,
                    },
                    ImportMessage {
                        message: said("hello again", 5),
                        in_context: false,
                    },
                    ImportMessage {
                        message: said("what do we ship on?", 6),
                        in_context: true,
                    },
                ],
                passages: vec![
                    NewPassage {
                        text: "Ana lives in Lyon".into(),
                        created_at: Some(at(4)),
                        ..NewPassage::default()
                    },
                    NewPassage {
                        text: "Ana moved to Porto".into(),
                        tags: vec!["moves".into()],
                        embedding: Some(vec![0.5, 0.25]),
                        created_at: Some(at(6)),
                    },
                ],
                passage_ids: vec![],
                extras: Some(json!({"tool_rules": [], "letta_only": true})),
                tags: vec!["support".into(), "eu".into()],
                steps: vec![step],
                pending_endpoints: vec![PendingEndpoint {
                    agent_id: ana.id.clone(),
                    kind: EndpointKind::Llm,
                    base_url: "http://10.0.0.5:8000/v1".into(),
                    source: "ana.af".into(),
                    created_at: at(7),
                }],
                sleeptime: Some(SleeptimeSettings {
                    enabled: true,
                    ..SleeptimeSettings::default()
                }),
                superseded: vec![ImportSupersession {
                    passage: 0,
                    by: Some(1),
                    kind: SupersedeKind::Superseded,
                    at: at(6),
                }],
            },
            ImportAgent {
                agent: ben,
                block_ids: vec![team.id],
                messages: vec![],
                passages: vec![],
                passage_ids: vec![],
                extras: None,
                tags: vec![],
                steps: vec![],
                pending_endpoints: vec![],
                sleeptime: None,
                superseded: vec![],
            },
        ],
        tools: vec![tool("weather", "'sunny'")],
    }
}

async fn a_bundle_lands_whole_as_given<H: Harness>(h: H) {
    let b = h.backend();
    // A different tool already has the bundle's tool's name.
    b.upsert_tool(&tool("weather", "'rain'")).await.unwrap();
    let bundle = bundle();
    let ids = b.import_bundle(&bundle).await.unwrap();
    let (ana, ben) = (&bundle.agents[0], &bundle.agents[1]);
    assert_eq!(ids.agents, [ana.agent.id.clone(), ben.agent.id.clone()]);
    assert_eq!(ids.blocks.len(), 3);
    assert_eq!(ids.tools[0].status, ImportedToolStatus::Renamed);
    assert_eq!(ids.tools[0].tool.name, "weather_2");
    assert!(
        ids.tools[0]
            .tool
            .source_code
            .as_deref()
            .unwrap()
            .starts_with("def weather_2():")
    );

    // The agent as given (times to the microsecond), its tool list following the rename.
    let stored = b.get_agent(&ana.agent.id).await.unwrap();
    assert_eq!(stored.name, "Ana's helper");
    assert_eq!(stored.created_at, at(0));
    assert_eq!(stored.updated_at, at(3));
    assert_eq!(stored.tools, ["weather_2"]);
    assert_eq!(stored.summary, ana.agent.summary);
    assert_eq!(
        b.agent_tags(&ana.agent.id).await.unwrap(),
        ["support", "eu"]
    );
    assert!(b.agent_tags(&ben.agent.id).await.unwrap().is_empty());

    // Blocks in the given order, the shared one once, with history.
    let labels = |blocks: Vec<Block>| blocks.into_iter().map(|b| b.label).collect::<Vec<_>>();
    assert_eq!(
        labels(b.agent_blocks(&ana.agent.id).await.unwrap()),
        ["persona", "human", "team"]
    );
    assert_eq!(
        labels(b.agent_blocks(&ben.agent.id).await.unwrap()),
        ["team"]
    );
    let team = &bundle.blocks[0].block;
    assert_eq!(b.get_block(&team.id).await.unwrap(), *team);
    let mut shared = b.block_agents(&team.id).await.unwrap();
    shared.sort_by(|x, y| x.as_str().cmp(y.as_str()));
    let mut both = vec![ana.agent.id.clone(), ben.agent.id.clone()];
    both.sort_by(|x, y| x.as_str().cmp(y.as_str()));
    assert_eq!(shared, both);
    let human = &bundle.blocks[1];
    assert_eq!(
        b.block_history(&human.block.id, 10).await.unwrap(),
        human.history
    );

    // The conversation: in order, in or out of context as given, the summary where it took
    // over.
    let history = b
        .page_messages(&ana.agent.id, None, None, 10, SeqOrder::Asc)
        .await
        .unwrap();
    assert_eq!(
        history
            .iter()
            .map(|m| (m.content.as_str(), m.in_context, m.created_at))
            .collect::<Vec<_>>(),
        [
            ("hello", false, at(4)),
            ("hello again", false, at(5)),
            ("what do we ship on?", true, at(6)),
        ]
    );
    let in_context = b.in_context_messages(&ana.agent.id).await.unwrap();
    assert_eq!(in_context.len(), 1);

    // Passages with the supersession and the vector.
    let passages = b
        .list_passages(
            &ana.agent.id,
            &PassageRange {
                limit: 10,
                ascending: true,
                include_superseded: true,
                ..PassageRange::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(passages.len(), 2);
    let gone = passages[0].superseded.as_ref().expect("superseded");
    assert_eq!(
        (gone.by.as_ref(), gone.kind, gone.at),
        (Some(&passages[1].id), SupersedeKind::Superseded, at(6))
    );
    assert_eq!(passages[1].tags, ["moves"]);
    assert_eq!(b.count_passages(&ana.agent.id).await.unwrap(), 1);
    assert_eq!(
        b.passage_vectors(&ana.agent.id).await.unwrap(),
        [(passages[1].id.clone(), vec![0.5, 0.25])]
    );

    // Steps, sleep-time settings and extras.
    let steps = b.list_steps(&ana.agent.id, None).await.unwrap();
    assert_eq!(steps, ana.steps);
    assert!(b.sleeptime_settings(&ana.agent.id).await.unwrap().enabled);
    assert!(!b.sleeptime_settings(&ben.agent.id).await.unwrap().enabled);
    assert_eq!(
        b.pending_endpoints(&ana.agent.id).await.unwrap(),
        ana.pending_endpoints,
        "a base URL waiting for acceptance"
    );
    assert!(b.pending_endpoints(&ben.agent.id).await.unwrap().is_empty());
    let extras = b
        .get_setting(&format!("{EXTRAS_SETTING_PREFIX}{}", ana.agent.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&extras).unwrap(),
        json!({"tool_rules": [], "letta_only": true})
    );

    // The same bundle again: its ids are taken, nothing more is written.
    assert_eq!(code(b.import_bundle(&bundle).await), "conflict");
    assert_eq!(b.list_agents().await.unwrap().len(), 2);
    assert_eq!(b.list_tools().await.unwrap().len(), 2);
}

async fn a_bundle_that_cannot_land_writes_nothing<H: Harness>(h: H) {
    let b = h.backend();
    let mut over = bundle();
    over.blocks[2].block.value = "x".repeat(101);
    assert_eq!(code(b.import_bundle(&over).await), "invalid_input");
    let mut elsewhere = bundle();
    elsewhere.agents[1].block_ids = vec![BlockId::new()];
    assert_eq!(code(b.import_bundle(&elsewhere).await), "not_found");
    let mut twice = bundle();
    twice.agents[1]
        .block_ids
        .push(twice.blocks[0].block.id.clone());
    assert_eq!(code(b.import_bundle(&twice).await), "conflict");
    let mut blank = bundle();
    blank.agents[0].passages[1].text = " ".into();
    assert_eq!(code(b.import_bundle(&blank).await), "invalid_input");
    // A supersession naming a passage outside the bundle fails mid-write: rolled back.
    let mut stray = bundle();
    stray.agents[0].superseded[0].by = Some(7);
    assert_eq!(code(b.import_bundle(&stray).await), "invalid_input");
    assert!(b.list_agents().await.unwrap().is_empty());
    assert!(b.list_tools().await.unwrap().is_empty());
    assert!(b.list_blocks(None).await.unwrap().is_empty());
}

async fn a_waiting_endpoint_is_accepted_or_dismissed_once<H: Harness>(h: H) {
    let b = h.backend();
    let mut bundle = bundle();
    let ben = bundle.agents[1].agent.id.clone();
    bundle.agents[1].pending_endpoints = [EndpointKind::Llm, EndpointKind::Embedding]
        .into_iter()
        .map(|kind| PendingEndpoint {
            agent_id: ben.clone(),
            kind,
            base_url: "http://10.0.0.6:8000/v1".into(),
            source: "ben.af".into(),
            created_at: at(8),
        })
        .collect();
    b.import_bundle(&bundle).await.unwrap();
    let ana = &bundle.agents[0].agent;

    assert_eq!(
        code(b.accept_endpoint(&ana.id, EndpointKind::Embedding).await),
        "not_found"
    );
    let accepted = b.accept_endpoint(&ana.id, EndpointKind::Llm).await.unwrap();
    assert_eq!(
        accepted.llm.base_url.as_deref(),
        Some("http://10.0.0.5:8000/v1")
    );
    assert_eq!(accepted.updated_at, at(3), "accepting completes the import");
    assert_eq!(b.get_agent(&ana.id).await.unwrap(), accepted);
    assert!(b.pending_endpoints(&ana.id).await.unwrap().is_empty());
    assert_eq!(
        code(b.accept_endpoint(&ana.id, EndpointKind::Llm).await),
        "not_found",
        "accepted once"
    );

    // Ben has no embedding model to give his embedding endpoint to: refused, nothing changes.
    assert_eq!(
        code(b.accept_endpoint(&ben, EndpointKind::Embedding).await),
        "invalid_input"
    );
    assert_eq!(b.pending_endpoints(&ben).await.unwrap().len(), 2);
    b.dismiss_endpoint(&ben, EndpointKind::Embedding)
        .await
        .unwrap();
    assert_eq!(
        code(b.dismiss_endpoint(&ben, EndpointKind::Embedding).await),
        "not_found"
    );
    let left = b.pending_endpoints(&ben).await.unwrap();
    assert_eq!(
        left.iter().map(|p| p.kind).collect::<Vec<_>>(),
        [EndpointKind::Llm]
    );
    assert_eq!(b.get_agent(&ben).await.unwrap().llm.base_url, None);
}
